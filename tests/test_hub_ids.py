"""Hugging Face Hub ids: config.json from huggingface_hub's cache, never the network.

huggingface_hub reads HF_HUB_CACHE and HF_HUB_OFFLINE once, when it is
imported (huggingface_hub/constants.py), so the cases that reach it run the
CLI in a subprocess with the environment set: a test never depends on whether
another test imported it first. The cache fixture is the layout
huggingface_hub writes: models--ORG--NAME/refs/<revision> holds the commit hash,
snapshots/<hash>/config.json the file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from proposalkit.cli import main
from conftest import records

COMMIT = "a09a35458c702b33eeacc393d103063234e8bc28"   # any 40-hex commit hash
TAG_COMMIT = "0123456789abcdef0123456789abcdef01234567"
# Qwen/Qwen2.5-7B config.json (the keys read). Published total 7,615,616,512 parameters:
# Hugging Face API safetensors.total of Qwen/Qwen2.5-7B (issue11-data/PUBLISHED.md, [LLMFIT]).
QWEN = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
        "intermediate_size": 18944, "num_attention_heads": 28, "num_hidden_layers": 28,
        "num_key_value_heads": 4, "vocab_size": 152064, "max_position_embeddings": 131072,
        "tie_word_embeddings": False, "rms_norm_eps": 1e-06}
QWEN_PUBLISHED = 7_615_616_512

WORKLOAD = """workloads:
  - name: a
    kind: inference
    hours: 10
    context: 8k
    model: {model}
"""


def hub_cache(root, repo_id: str, refs: dict[str, str], config: dict) -> str:
    """A huggingface_hub cache holding `repo_id`'s config.json at each revision → commit of `refs`."""
    repo = root / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    for revision, commit in refs.items():
        (repo / "refs" / revision).write_text(commit)
        (repo / "snapshots" / commit).mkdir(parents=True, exist_ok=True)
        (repo / "snapshots" / commit / "config.json").write_text(json.dumps(config))
    return str(root)


def plan(tmp_path, model: str, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "w.yaml").write_text(WORKLOAD.format(model=model), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
    env.update(HF_HUB_CACHE=str(tmp_path / "hub"), HF_HOME=str(tmp_path / "hf-home"), HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-m", "proposalkit.cli", "plan", str(tmp_path / "w.yaml"), *args],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)


@pytest.fixture
def cached(tmp_path):
    hub_cache(tmp_path / "hub", "Qwen/Qwen2.5-7B", {"main": COMMIT, "v1.0": TAG_COMMIT}, QWEN)
    return tmp_path


def test_a_cached_hub_id_plans_citing_id_and_commit(cached):
    done = plan(cached, "Qwen/Qwen2.5-7B", "--format", "json")
    assert done.returncode == 0, done.stderr
    workload = json.loads(done.stdout)["workloads"][0]
    assert workload["model"]["id"] == "Qwen/Qwen2.5-7B"
    assert workload["model"]["params"] == QWEN_PUBLISHED
    [read] = records(workload, "config-from-hub")
    values = read["values"]
    assert (values["model"], values["repo_id"], values["revision"], values["commit"]) == (
        "Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-7B", None, COMMIT)
    # The citation (the model's source, Appendix B) names the commit read and links the model's page.
    assert "commit a09a35458c70" in values["source"]
    assert values["source"].endswith("https://huggingface.co/Qwen/Qwen2.5-7B")


def test_a_hf_mapping_with_a_revision_reads_that_revision(cached):
    done = plan(cached, "{hf: Qwen/Qwen2.5-7B, revision: v1.0}", "--format", "json")
    assert done.returncode == 0, done.stderr
    workload = json.loads(done.stdout)["workloads"][0]
    assert workload["model"]["params"] == QWEN_PUBLISHED
    [read] = records(workload, "config-from-hub")
    assert (read["values"]["revision"], read["values"]["commit"]) == ("v1.0", TAG_COMMIT)
    assert "revision v1.0, commit 0123456789ab" in read["values"]["source"]


def test_an_id_not_in_the_cache_offline_says_what_to_do(cached):
    done = plan(cached, "Qwen/Qwen2.5-72B")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        f"{cached / 'w.yaml'}:6: workloads[0].model: 'Qwen/Qwen2.5-72B' is not in the Hugging Face cache and "
        f"HF_HUB_OFFLINE is set (expected: to work offline, set HF_HUB_OFFLINE=1 after one run with network has "
        f"cached its config.json in {cached / 'hub'}, or give model: {{config: path/to/config.json}} with a local "
        "copy)\n")


def test_a_revision_not_in_the_cache_offline_names_it(cached):
    done = plan(cached, "{hf: Qwen/Qwen2.5-7B, revision: v2.0}")
    assert done.returncode == 2
    assert ("w.yaml:6: workloads[0].model.hf: 'Qwen/Qwen2.5-7B' at revision 'v2.0' is not in the Hugging Face "
            "cache and HF_HUB_OFFLINE is set (expected: to work offline," in done.stderr)


REVISIONS = {
    "an absolute path": "/etc/passwd",
    "a path up": "../../../../etc/passwd",
    "'..' inside": "main/../../x",
    "a trailing slash": "main/",
    "a backslash": "'..\\x'",
    "a space": "'v 1'",
    "a control character": '"v\\x01"',
    "a part starting with '.'": "refs/.hidden",
    "'.lock' at the end": "main.lock",
    "empty": "''",
}


@pytest.mark.parametrize("revision", REVISIONS.values(), ids=REVISIONS.keys())
def test_a_revision_that_is_no_ref_name_is_refused_before_huggingface_hub_reads_a_file(cached, revision):
    """huggingface_hub joins a revision to its cache folder (refs/REVISION): '/etc/passwd' would be read."""
    done = plan(cached, f"{{hf: Qwen/Qwen2.5-7B, revision: {revision}}}")
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.startswith(f"{cached / 'w.yaml'}:6: workloads[0].model.revision: not a revision (got ")
    assert done.stderr.endswith("expected a branch or tag name such as main or v1.0, or a 40-hex commit hash: "
                                "no '/' at the start, no '..', no spaces or \\)\n")
    assert "root:" not in done.stderr and done.stderr.count("\n") == 1


@pytest.mark.parametrize("revision", ["main", "v1.0", "refs/pr/1", TAG_COMMIT, "release-2024_01", "a.b"])
def test_ref_names_the_hub_uses_are_revisions(revision):
    from proposalkit.input.hub import revision_problem

    assert revision_problem(revision) is None


SHAPE = ("not a Hugging Face Hub id (got {got}, expected ORGANIZATION/NAME as on the model page, e.g. "
         "'Qwen/Qwen2.5-7B-Instruct': letters, digits, '-', '_' and '.', one '/', at most 96 characters{hint})")
BAD_IDS = {
    "two slashes": ("a/b/c", "model", "'a/b/c'", ""),
    "a space": ("'Qwen/Qwen 2.5'", "model", "'Qwen/Qwen 2.5'", ""),
    "a trailing slash": ("Qwen/", "model", "'Qwen/'", ""),
    "a path to a config.json": ("models/llama/config.json", "model", "'models/llama/config.json'",
                                "; a local config.json is given as model: {config: PATH}"),
    "hf with two slashes": ("{hf: a/b/c}", "model.hf", "'a/b/c'", ""),
    "a double dash": ("org/a--b", "model", "'org/a--b'", ""),
}


@pytest.mark.parametrize("model, field, got, hint", BAD_IDS.values(), ids=BAD_IDS.keys())
def test_a_badly_shaped_id_is_an_input_error(tmp_path, capsys, model, field, got, hint):
    (tmp_path / "w.yaml").write_text(WORKLOAD.format(model=model), encoding="utf-8")
    assert main(["plan", str(tmp_path / "w.yaml")]) == 2
    err = capsys.readouterr().err
    assert err == f"{tmp_path / 'w.yaml'}:6: workloads[0].{field}: {SHAPE.format(got=got, hint=hint)}\n"


MAPPINGS = {
    "config and hf": ("{hf: Qwen/Qwen2.5-7B, config: c.json}", "model",
                      "config and hf both given (expected one source of config.json: a local file, or a Hugging "
                      "Face Hub id)"),
    "revision alone": ("{params: 7B, revision: main}", "model.revision",
                       "a revision without hf (expected hf: ORG/NAME beside it; a revision names a branch, tag or "
                       "commit of a Hugging Face Hub repository)"),
}


@pytest.mark.parametrize("model, field, message", MAPPINGS.values(), ids=MAPPINGS.keys())
def test_hf_mapping_mistakes(tmp_path, capsys, model, field, message):
    (tmp_path / "w.yaml").write_text(WORKLOAD.format(model=model), encoding="utf-8")
    assert main(["plan", str(tmp_path / "w.yaml")]) == 2
    assert capsys.readouterr().err == f"{tmp_path / 'w.yaml'}:6: workloads[0].{field}: {message}\n"


def test_a_catalog_id_never_imports_huggingface_hub(tmp_path):
    """`plan` of catalog models stays fast: huggingface_hub (~0.4 s) is imported only for a Hub id."""
    (tmp_path / "w.yaml").write_text(WORKLOAD.format(model="llama-3.1-8b"), encoding="utf-8")
    code = ("import sys; from proposalkit.cli import main; code = main(['plan', 'w.yaml']); "
            "assert 'huggingface_hub' not in sys.modules; sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr


def _http_error(kind: str, status: int):
    import httpx2
    from huggingface_hub import errors

    request = httpx2.Request("HEAD", "https://huggingface.co/org/name/resolve/main/config.json")
    return getattr(errors, kind)("from the Hub", response=httpx2.Response(status, request=request))


HUB_ANSWERS = {
    "gated": ("GatedRepoError", 401, "meta-llama/Llama-3.2-1B",
              "'meta-llama/Llama-3.2-1B' is a gated model: its config.json needs a Hugging Face token of an account "
              "that accepted its license (expected: accept the license on https://huggingface.co/meta-llama/"
              "Llama-3.2-1B, then set HF_TOKEN or run 'hf auth login'; or give model: {config: "
              "path/to/config.json} with a local copy)"),
    "missing repo, close to a catalog row's Hub id": (
        "RepositoryNotFoundError", 401, "Qwen/Qwen-2.5-7B",
        "no model 'Qwen/Qwen-2.5-7B' on the Hugging Face Hub, or a private one (expected the id as on its "
        "model page, ORGANIZATION/NAME; did you mean 'Qwen/Qwen2.5-7B', or the catalog id 'qwen2.5-7b'?; for a "
        "private model set HF_TOKEN; built-in models: 'proposalkit catalog models')"),
    "missing repo, named like a catalog id": (
        "RepositoryNotFoundError", 401, "someone/mistral-7b",
        "no model 'someone/mistral-7b' on the Hugging Face Hub, or a private one (expected the id as on its "
        "model page, ORGANIZATION/NAME; did you mean the catalog id 'mistral-7b'?; for a private model set "
        "HF_TOKEN; built-in models: 'proposalkit catalog models')"),
    "missing revision": ("RevisionNotFoundError", 404, "{hf: Qwen/Qwen2.5-7B, revision: v9}",
                         "no revision 'v9' in 'Qwen/Qwen2.5-7B' (expected a branch, tag or commit hash of "
                         "https://huggingface.co/Qwen/Qwen2.5-7B, e.g. main)"),
    "no config.json": ("RemoteEntryNotFoundError", 404, "TheBloke/Some-GGUF",
                       "'TheBloke/Some-GGUF' has no config.json (expected a transformers model repository; or give "
                       "model: {config: path/to/config.json} with a local copy)"),
}


@pytest.mark.parametrize("kind, status, model, message", HUB_ANSWERS.values(), ids=HUB_ANSWERS.keys())
def test_what_the_hub_answers_is_an_input_error_saying_what_to_do(tmp_path, capsys, monkeypatch, kind, status,
                                                                  model, message):
    """The Hub's refusals, as huggingface_hub raises them (its requests replaced: no network)."""
    import huggingface_hub

    from proposalkit.input import hub

    def refuse(*args, **kwargs):
        raise _http_error(kind, status)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", refuse)
    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", refuse)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)   # whatever the runner's environment
    monkeypatch.setattr(hub, "_UNREACHABLE", [])
    hub.fetch_config.cache_clear()
    (tmp_path / "w.yaml").write_text(WORKLOAD.format(model=model), encoding="utf-8")
    try:
        assert main(["plan", str(tmp_path / "w.yaml")]) == 2
    finally:
        hub.fetch_config.cache_clear()
    field = "model.hf" if model.startswith("{") else "model"
    assert capsys.readouterr().err == f"{tmp_path / 'w.yaml'}:6: workloads[0].{field}: {message}\n"


def test_the_report_cites_the_hub_id_revision_and_commit(cached):
    (cached / "w.yaml").write_text(WORKLOAD.format(model="{hf: Qwen/Qwen2.5-7B, revision: v1.0}"), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
    env.update(HF_HUB_CACHE=str(cached / "hub"), HF_HUB_OFFLINE="1")
    done = subprocess.run([sys.executable, "-m", "proposalkit.cli", "report", "w.yaml", "-o", "out", "--format", "md"],
                          capture_output=True, text=True, env=env, cwd=cached, timeout=120)
    assert done.returncode == 0, done.stderr
    report = (cached / "out" / "supplement.md").read_text(encoding="utf-8")
    assert ("**Qwen/Qwen2.5-7B**. config.json of Qwen/Qwen2.5-7B on the Hugging Face Hub (revision v1.0, commit "
            "0123456789ab), `https://huggingface.co/Qwen/Qwen2.5-7B`") in report    # built from user text: no link
