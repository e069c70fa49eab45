"""`diff` against hostile inputs (issue 21), through the CLI: thousands of renamed workloads in
linear time, and REV:PATH forms that are options, outside the repository, missing, folders, or
broken across lines. Each case asserts the exit code, the message and that no traceback is printed."""

from __future__ import annotations

import time

import pytest

from proposalkit.cli import main
from proposalkit.review import diff as review_diff
from proposalkit.review.sides import Version
from test_diff import git

N_RENAMED = 3000


def renamed_files(tmp_path, n: int) -> tuple:
    """n workloads, each with its own token count, all renamed, the new names sorting in the
    reverse order of the old: a search of the removed list for each added one goes to its end."""
    def text(prefix: str, reverse: bool) -> str:
        rows = [f"  - {{name: {prefix}-{(n - 1 - i) if reverse else i:05d}, kind: finetune, method: lora, "
                f"model: llama-3.1-8b, tokens: {1000 + i}M, throughput: {{tokens_per_second: 4000, gpu: a100-80gb, "
                "gpus: 1}, gpu: a100-80gb, gpus: 1}" for i in range(n)]
        return "workloads:\n" + "\n".join(rows) + "\n"

    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(text("old", False), encoding="utf-8")
    new.write_text(text("new", True), encoding="utf-8")
    return old, new


def test_thousands_of_renamed_workloads_pair_in_linear_time(tmp_path, capsys, monkeypatch):
    """3,000 renames: each workload's rename key is made once (before: once per pair tried, 4.5
    million; 2,000 renames took 170 s against 1.4 s to plan either file), and each pair is right."""
    old, new = renamed_files(tmp_path, N_RENAMED)
    calls = []
    real = Version.rename_key
    monkeypatch.setattr(Version, "rename_key", lambda self: calls.append(self.name) or real(self))
    start = time.perf_counter()
    assert main(["diff", str(old), str(new), "--format", "json"]) == 0
    seconds = time.perf_counter() - start
    import json

    result = json.loads(capsys.readouterr().out)
    assert len(calls) == 2 * N_RENAMED
    assert len(result["renamed"]) == N_RENAMED and not result["added"] and not result["removed"]
    # new-(n-1-i) has the tokens of old-i
    assert all(int(e["old_name"][4:]) == N_RENAMED - 1 - int(e["name"][4:]) for e in result["renamed"])
    assert seconds < 60, seconds      # about 6 s here (planning both files is most of it)


def test_identical_settings_pair_in_name_order(tmp_path, capsys):
    """Several removed workloads with the same settings: the first added (by name) takes the first
    removed (by name), as before the pairing was made linear."""
    row = ("  - {{name: {}, kind: finetune, method: lora, model: llama-3.1-8b, tokens: 10M, "
           "throughput: {{tokens_per_second: 4000, gpu: a100-80gb, gpus: 1}}, gpu: a100-80gb, gpus: 1}}\n")
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text("workloads:\n" + "".join(row.format(n) for n in ("c", "a", "b")), encoding="utf-8")
    new.write_text("workloads:\n" + "".join(row.format(n) for n in ("z", "x")), encoding="utf-8")
    assert main(["diff", str(old), str(new), "--format", "json"]) == 0
    import json

    result = json.loads(capsys.readouterr().out)
    assert [(e["old_name"], e["name"]) for e in result["renamed"]] == [("a", "x"), ("b", "z")]
    assert [e["name"] for e in result["removed"]] == ["c"]
    assert review_diff.CATEGORIES == ("added", "removed", "renamed", "changed", "unchanged")


# ----------------------------------------------------------------- REV:PATH


WORKLOAD = ("workloads:\n  - {name: a, kind: finetune, method: lora, model: llama-3.1-8b, tokens: 10M, "
            "throughput: {tokens_per_second: 4000, gpu: a100-80gb, gpus: 1}, gpu: a100-80gb, gpus: 1}\n")


@pytest.fixture
def repo(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    (root / "sub").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "w.yaml").write_text(WORKLOAD, encoding="utf-8")
    (root / "sub" / "w.yaml").write_text(WORKLOAD, encoding="utf-8")
    git(root, "add", "w.yaml", "sub")
    git(root, "commit", "-q", "-m", "v1")
    (tmp_path / "outside.yaml").write_text(WORKLOAD, encoding="utf-8")
    monkeypatch.chdir(root)
    return root


def diff(capsys, *argv) -> tuple[int, str, str]:
    code = main(["diff", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    return code, out, err


OPTION = ("cannot read it from git: the revision '{rev}' starts with '-', which git would take for an option (give "
          "REV:PATH with a revision such as HEAD or origin/main, or a file path)")


@pytest.mark.parametrize("argv, spec, rev", [
    (["--output=x:w.yaml", "w.yaml"], "--output=x:w.yaml", "--output=x"),          # argparse would take it
    (["w.yaml", "--upload-pack=touch pwned:w.yaml"], "--upload-pack=touch pwned:w.yaml", "--upload-pack=touch pwned"),
    (["--", "-p:w.yaml", "w.yaml"], "-p:w.yaml", "-p"),
    (["-:w.yaml", "w.yaml"], "-:w.yaml", "-"),
])
def test_a_revision_that_is_an_option_is_refused_by_name(repo, capsys, argv, spec, rev):
    code, out, err = diff(capsys, *argv)
    assert (code, out) == (2, "")
    assert err == f"{spec}: {OPTION.format(rev=rev)}\n"
    assert sorted(p.name for p in repo.iterdir()) == [".git", "sub", "w.yaml"]      # git wrote nothing


@pytest.mark.parametrize("spec, message", [
    ("HEAD:../outside.yaml", "cannot read it from git (fatal: '../outside.yaml' is outside repository at '{repo}')"),
    ("HEAD:/etc/passwd", "cannot read it from git (fatal: path '/etc/passwd' exists on disk, but not in 'HEAD')"),
    ("nosuchrev:w.yaml", "cannot read it from git (fatal: invalid object name 'nosuchrev'.)"),
    ("HEAD~3:w.yaml", "cannot read it from git (fatal: invalid object name 'HEAD~3'.)"),
    ("HEAD:missing.yaml", "cannot read it from git (fatal: path 'missing.yaml' does not exist in 'HEAD')"),
    ("HEAD:", "cannot read it from git: no PATH after the ':' (give REV:PATH of a workload file, e.g. "
              "HEAD:workloads/plan.yaml)"),
    ("HEAD:sub", "cannot read it from git: sub is a folder in HEAD, not a file (give REV:PATH of a workload file)"),
    ("HEAD:w.yaml\nx", "cannot read it from git: a line break or NUL in REV:PATH (give REV:PATH on one line, or a "
                       "file path)"),
    ("HEAD:w.yaml\x00", "cannot read it from git: a line break or NUL in REV:PATH (give REV:PATH on one line, or a "
                        "file path)"),
    ("$(touch pwned):w.yaml", "cannot read it from git (fatal: invalid object name '$(touch pwned)'.)"),
])
def test_rev_path_forms_that_cannot_be_read(repo, capsys, spec, message):
    code, out, err = diff(capsys, spec, "w.yaml")
    assert (code, out) == (2, "")
    shown = spec.replace("\n", "\\n").replace("\x00", "\\x00")
    assert err == f"{shown}: {message.format(repo=repo)}\n"
    assert not (repo / "pwned").exists()


def test_outside_a_repository(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    (tmp_path / "w.yaml").write_text(WORKLOAD, encoding="utf-8")
    code, out, err = diff(capsys, "HEAD:w.yaml", "w.yaml")
    assert code == 2
    assert err.startswith("HEAD:w.yaml: cannot read it from git (fatal: not a git repository")


@pytest.mark.parametrize("spec", ["HEAD:w.yaml", "HEAD:./w.yaml", "main:sub/w.yaml"])
def test_good_rev_path_forms_still_read(repo, capsys, spec):
    code, out, err = diff(capsys, spec, "w.yaml")
    assert (code, err) == (0, "")
    assert "no workload changed" in out
