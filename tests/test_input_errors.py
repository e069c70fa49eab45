"""Bad input: exit code 2, FILE:LINE: field: message on stderr, every problem at once, no traceback."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import yaml

from proposalkit.cli import main

GOOD = """\
workloads:
  - name: sweep
    kind: finetune
    method: lora
    model: llama-3.1-8b
    tokens: 200M
    gpu: a100-80gb
    gpus: 1
"""


def run(tmp_path, content, capsys, name="w.yaml"):
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(textwrap.dedent(content), encoding="utf-8")
    else:
        path.write_bytes(content)
    code = main(["plan", str(path)])
    captured = capsys.readouterr()
    return code, captured.err.replace(str(path), "FILE"), captured.out


def test_good_file_plans(tmp_path, capsys):
    code, err, out = run(tmp_path, GOOD, capsys)
    assert code == 0, err
    assert "sweep" in out


CASES = {
    "empty file": ("", "FILE: the file is empty (expected a mapping with a 'workloads' list)\n"),
    "only a comment": ("# nothing yet\n", "FILE: the file is empty (expected a mapping with a 'workloads' list)\n"),
    "top-level list": (
        "- name: a\n  kind: finetune\n",
        "FILE:1: expected a mapping with a 'workloads' list at the top level, got a list\n",
    ),
    "no workloads": ("proposal:\n  title: X\n", "FILE:1: workloads: required field is missing\n"),
    "unknown kind": (
        GOOD.replace("kind: finetune", "kind: finetuning"),
        "FILE:3: workloads[0].kind: unknown kind (got 'finetuning', expected finetune, pretrain or inference; "
        "did you mean 'finetune'?)\n",
    ),
    "unknown method": (
        GOOD.replace("method: lora", "method: qlor"),
        "FILE:4: workloads[0].method: unknown method (got 'qlor', expected full, lora or qlora; did you mean 'qlora'?)\n",
    ),
    "unknown precision": (
        GOOD + "    precision: bfloat16\n",
        "FILE:9: workloads[0].precision: unknown precision (got 'bfloat16', expected fp32, bf16, fp16, fp8, "
        "int8 or int4; did you mean 'bf16'?)\n",
    ),
    "unknown field": (
        GOOD.replace("gpus: 1", "gpu_count: 1"),
        "FILE:8: workloads[0].gpu_count: unknown field 'gpu_count'; did you mean 'gpus'?\n",
    ),
    "unknown nested field": (
        GOOD.replace("tokens: 200M", "data: {samples: 1000, seqlen: 2048}"),
        "FILE:6: workloads[0].data.samples: \n",  # placeholder, replaced below
    ),
    "zero count": (
        GOOD.replace("gpus: 1", "gpus: 0"),
        "FILE:8: workloads[0].gpus: not a positive integer (got 0, expected a positive integer; "
        "suffixes k, M, B, T allowed)\n",
    ),
    "negative count": (
        GOOD + "    variants: -2\n",
        "FILE:9: workloads[0].variants: not a positive integer (got -2, expected a positive integer; "
        "suffixes k, M, B, T allowed)\n",
    ),
    "fractional count": (
        GOOD + "    variants: 2.5\n",
        "FILE:9: workloads[0].variants: not a positive integer (got 2.5, expected a positive integer; "
        "suffixes k, M, B, T allowed)\n",
    ),
    "nan": (
        GOOD + "    mfu: .nan\n",
        "FILE:9: workloads[0].mfu: not a finite number (got nan, expected a fraction from 0.01 to 1, e.g. 0.40 (Llama 3 "
        "measured 0.38–0.43; write 40% as 0.40))\n",
    ),
    "infinity": (
        GOOD.replace("tokens: 200M", "tokens: .inf"),
        "FILE:6: workloads[0].tokens: not a finite number (got inf, expected a positive integer; "
        "suffixes k, M, B, T allowed)\n",
    ),
    "boolean for a number": (
        GOOD.replace("gpus: 1", "gpus: true"),
        "FILE:8: workloads[0].gpus: not a number (got true, expected a positive integer; suffixes k, M, B, T allowed)\n",
    ),
    "word for a number": (
        GOOD.replace("gpus: 1", "gpus: eight"),
        "FILE:8: workloads[0].gpus: not a number (got 'eight', expected a positive integer; "
        "suffixes k, M, B, T allowed)\n",
    ),
    "word for a boolean": (
        GOOD + "    flash_attention: yes please\n",
        "FILE:9: workloads[0].flash_attention: not a boolean (got 'yes please', expected true or false)\n",
    ),
    "buffer out of range": (
        GOOD + "    buffer: 30\n",
        "FILE:9: workloads[0].buffer: out of range (got 30, expected a fraction from 0 to 1; 0.30 adds 30%; or auto)\n",
    ),
    "bad name": (
        GOOD.replace("name: sweep", "name: My Sweep"),
        "FILE:2: workloads[0].name: invalid name (got 'My Sweep', expected lower-case letters, digits, '-' and '_', "
        "starting with a letter or digit)\n",
    ),
    "unknown model": (
        GOOD.replace("llama-3.1-8b", "llama-3.1-8"),
        "FILE:5: workloads[0].model: unknown model (got 'llama-3.1-8', expected a catalog id; did you mean "
        "'llama-3.1-8b'? — see 'proposalkit catalog models', or give a mapping with params or config)\n",
    ),
    "unknown gpu": (
        GOOD.replace("gpu: a100-80gb", "gpu: a100-80"),
        "FILE:7: workloads[0].gpu: unknown GPU (got 'a100-80', expected a catalog id; did you mean 'a100-80gb'? — "
        "see 'proposalkit catalog gpus')\n",
    ),
    "missing config": (
        GOOD.replace("model: llama-3.1-8b", "model: {config: nowhere/config.json}"),
        "FILE:5: workloads[0].model.config: file not found (got 'nowhere/config.json', looked for "
        "DIR/nowhere/config.json; the path is relative to the workload file)\n",
    ),
    "duplicate key": (
        GOOD + "    gpus: 2\n",
        "FILE:9: workloads[0].gpus: duplicate key (first given on line 8)\n",
    ),
    "implausible tokens": (
        GOOD.replace("tokens: 200M", "tokens: 200T0"),
        "FILE:6: workloads[0].tokens: not a number (got '200T0', expected a positive integer; suffixes k, M, B, T "
        "allowed)\n",
    ),
    "tokens off by a suffix": (
        GOOD.replace("tokens: 200M", "tokens: 2000T"),
        "FILE:6: workloads[0].tokens: implausibly large (got '2000T', expected at most 10^15 tokens, 64× the 15.6T "
        "Llama 3 was pretrained on; check the suffix: k, M, B, T)\n",
    ),
    "service kept up for decades": (
        "workloads:\n  - {name: s, kind: inference, model: llama-3.1-8b, context: 4k, hours: 200000}\n",
        "FILE:2: workloads[0].hours: implausibly large (got 200000, expected at most 100,000 hours, 11 years kept "
        "up; use variants for several services)\n",
    ),
    "data beyond any training run": (
        GOOD.replace("tokens: 200M", "data: {samples: 1T, seq_len: 4k, epochs: 3}"),
        "FILE:6: workloads[0].data: implausibly large (got 1,000,000,000,000 samples × 4,000 tokens × 3 epochs = "
        "1.2e+16 tokens, expected at most 10^15 tokens, 64× the 15.6T Llama 3 was pretrained on)\n",
    ),
    "no tokens": (
        GOOD.replace("    tokens: 200M\n", ""),
        "FILE:2: workloads[0].tokens: required (expected tokens, e.g. 200M, or data: {samples, seq_len, epochs})\n",
    ),
}


@pytest.mark.parametrize("case", [c for c in CASES if c != "unknown nested field"])
def test_bad_input_message(case, tmp_path, capsys):
    content, expected = CASES[case]
    code, err, out = run(tmp_path, content, capsys)
    assert code == 2
    assert out == ""
    assert err.replace(str(tmp_path), "DIR") == expected


def test_unknown_nested_field_and_missing_sibling(tmp_path, capsys):
    code, err, _ = run(tmp_path, GOOD.replace("tokens: 200M", "data: {samples: 1000, seqlen: 2048}"), capsys)
    assert code == 2
    assert err == ("FILE:6: workloads[0].data.seq_len: required field is missing\n"
                   "FILE:6: workloads[0].data.seqlen: unknown field 'seqlen'; did you mean 'seq_len'?\n")


def test_not_utf8(tmp_path, capsys):
    code, err, _ = run(tmp_path, b"workloads:\n  - name: caf\xe9\n", capsys)
    assert code == 2
    assert err == "FILE:2: not UTF-8 text (byte 0xe9 at offset 24); save the file as UTF-8\n"


def test_binary(tmp_path, capsys):
    code, err, _ = run(tmp_path, b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", capsys)
    assert code == 2
    assert err == "FILE: this is a binary file, not YAML text\n"


def test_duplicate_names(tmp_path, capsys):
    content = GOOD + GOOD.replace("workloads:\n", "")
    code, err, _ = run(tmp_path, content, capsys)
    assert code == 2
    assert err == "FILE:9: workloads[1].name: duplicate name (got 'sweep', first used by workloads[0])\n"


def test_every_problem_of_a_file_at_once(tmp_path, capsys):
    content = GOOD.replace("kind: finetune", "kind: finetuning").replace("gpus: 1", "gpus: eight") + "    colour: red\n"
    code, err, _ = run(tmp_path, content, capsys)
    assert code == 2
    lines = err.splitlines()
    assert [line.split(":")[1] for line in lines] == ["3", "8", "9"]
    assert "workloads[0].colour: unknown field 'colour'" in lines[2]


def test_problem_set_in_defaults_points_at_defaults(tmp_path, capsys):
    content = "defaults:\n  buffer: lots\n" + GOOD
    code, err, _ = run(tmp_path, content, capsys)
    assert code == 2
    assert err == "FILE:2: defaults.buffer: not a number (got 'lots', expected a fraction from 0 to 1; 0.30 adds 30%; or auto)\n"


def test_defaults_that_do_not_suit_a_workload_say_so(tmp_path, capsys):
    content = "defaults:\n  method: lora\n" + GOOD.replace("    method: lora\n", "").replace(
        "kind: finetune", "kind: inference").replace("tokens: 200M", "context: 4k\n    hours: 10")
    code, err, _ = run(tmp_path, content, capsys)
    assert code == 2
    assert err == ("FILE:2: workloads[0].method: not used by inference (got method, expected it only on "
                   "finetune or pretrain)\n")


def test_problems_of_several_files(tmp_path, capsys):
    a = tmp_path / "a.yaml"
    b = tmp_path / "b.yaml"
    a.write_text(GOOD.replace("gpus: 1", "gpus: 0"))
    b.write_text(GOOD.replace("kind: finetune", "kind: train"))
    code = main(["plan", str(a), str(b)])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{a}:8: workloads[0].gpus" in err and f"{b}:3: workloads[0].kind" in err


def test_same_name_in_two_files(tmp_path, capsys):
    a = tmp_path / "a.yaml"
    b = tmp_path / "b.yaml"
    a.write_text(GOOD)
    b.write_text(GOOD)
    code = main(["plan", str(a), str(b)])
    err = capsys.readouterr().err
    assert code == 2
    assert err == f"{b}:2: workloads[0].name: duplicate name (got 'sweep', also in {a}:2)\n"


def test_missing_file(tmp_path, capsys):
    code = main(["plan", str(tmp_path / "nope.yaml")])
    assert code == 2
    assert capsys.readouterr().err == f"{tmp_path / 'nope.yaml'}: cannot read the file (No such file or directory)\n"


def test_no_traceback_from_the_installed_command(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_bytes(b"workloads: [\x00")
    result = subprocess.run([sys.executable, "-m", "proposalkit", "plan", str(path)], capture_output=True, text=True)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().endswith("this is a binary file, not YAML text")


# ----------------------------------------------------------------- YAML features

def test_values_equal_safe_load(tmp_path):
    """The loader builds values itself (one pass with the line map); they must be what
    yaml.safe_load gives for every YAML scalar type and for merge keys and aliases."""
    from proposalkit.input.yamlfile import Loader, parse_yaml

    assert not Loader.yaml_path_resolvers   # the loader skips tracking the path on that premise

    text = textwrap.dedent("""\
        base: &base {a: 1, b: two, c: [1.5, .inf, -.Inf, 0x1f, 0o17, 1_000, 1e3]}
        other: &other {b: three, d: null, e: ~, f: true, g: no, h: "yes"}
        merged:
          <<: [*base, *other]
          a: 10
        again: *base
        scalars: [2026-11-20, '007', 7B, 80GiB, !!str 12, !!float 3, +12, -0.5]
        """)
    parse_yaml("f.yaml", text.encode())   # twice: the second parse uses remembered tags
    data, source = parse_yaml("f.yaml", text.encode())
    expected = yaml.safe_load(text)
    expected["scalars"][0] = "2026-11-20"   # dates stay text (a title or date is not a datetime)
    assert data == expected
    assert data["merged"] == {"a": 10, "b": "two", "c": data["base"]["c"], "d": None, "e": None,
                              "f": True, "g": False, "h": "yes"}
    assert source.lines[("merged", "a")] == 5


def test_merge_key_in_a_workload(tmp_path, capsys):
    content = "shared: &w {kind: finetune, method: lora, model: llama-3.1-8b, gpu: a100-80gb, gpus: 1}\n"
    content += "workloads:\n  - <<: *w\n    name: a\n    tokens: 10M\n"
    code, err, _ = run(tmp_path, content, capsys)
    # `shared` is not a field; the merged workload itself is valid (no duplicate-key complaint).
    assert code == 2
    assert err == "FILE:1: shared: unknown field 'shared' (expected one of: proposal, defaults, workloads)\n"


def test_duplicate_key_inside_a_merged_mapping(tmp_path, capsys):
    content = ("workloads:\n  - <<: {kind: finetune}\n    name: a\n    kind: inference\n    name: b\n")
    code, err, _ = run(tmp_path, content, capsys)
    assert code == 2
    assert err.splitlines()[0] == "FILE:5: workloads[0].name: duplicate key (first given on line 3)"


def test_recursive_alias(tmp_path, capsys):
    code, err, _ = run(tmp_path, "workloads:\n  - &a\n    name: x\n    more: [*a]\n", capsys)
    assert code == 2
    assert err == "FILE:2: workloads[0].more[0]: an alias refers to a value that contains it (recursive alias)\n"


def test_list_as_a_key(tmp_path, capsys):
    code, err, _ = run(tmp_path, "workloads:\n  - name: x\n    ? [a, b]\n    : 1\n", capsys)
    assert code == 2
    assert err == "FILE:3: workloads[0]: a key must be a plain name, not a list or mapping\n"


def test_aliases_nested_in_aliases_do_not_blow_up(tmp_path, capsys):
    """'Billion laughs': 9 levels of 9 aliases would be 9^9 values if expanded."""
    lines = ['l0: &l0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, 10):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    content = "\n".join(lines) + "\n" + GOOD
    code, err, _ = run(tmp_path, content, capsys)
    assert code == 2
    assert err.splitlines()[0] == "FILE:1: l0: unknown field 'l0' (expected one of: proposal, defaults, workloads)"
    assert len(err.splitlines()) == 10


def test_unknown_ids_come_with_the_schema_errors(tmp_path, capsys):
    """One run reports every problem: unknown catalog ids are not held back until the
    schema errors are fixed (in the workload with the schema error and in the others)."""
    content = textwrap.dedent("""\
        proposal: {resource: ncsa-delt}
        workloads:
          - name: a
            kind: finetune
            method: lora
            model: llama-3.1-8c
            tokens: 200M
            gpus: zero
          - name: b
            kind: finetune
            method: lora
            model: llama-3.1-8b
            tokens: 200M
            gpu: a100-80
          - name: c
            kind: inference
            model: mistral-7b
            colour: red
            gpu: h100
            context: 4k
            hours: 10
        """)
    code, err, _ = run(tmp_path, content, capsys)
    assert code == 2
    assert [line.split(": ", 2)[:2] for line in err.splitlines()] == [
        ["FILE:1", "proposal.resource"],
        ["FILE:6", "workloads[0].model"],
        ["FILE:8", "workloads[0].gpus"],
        ["FILE:14", "workloads[1].gpu"],
        ["FILE:18", "workloads[2].colour"],
        ["FILE:19", "workloads[2].gpu"],
    ]
    assert "did you mean 'llama-3.1-8b'?" in err.splitlines()[1]


def test_an_id_without_its_variant_suggests_every_variant(tmp_path, capsys):
    code, err, _ = run(tmp_path, GOOD.replace("gpu: a100-80gb", "gpu: h100"), capsys)
    assert code == 2
    assert err == ("FILE:7: workloads[0].gpu: unknown GPU (got 'h100', expected a catalog id; did you mean "
                   "'h100-80gb' or 'h100-96gb-500w' or 'h100-pcie'? — see 'proposalkit catalog gpus')\n")


def test_a_field_with_its_own_error_is_not_also_an_unknown_id(tmp_path, capsys):
    # `gpu: [h100]` is not text: one problem (not text), not a second (unknown GPU).
    code, err, _ = run(tmp_path, GOOD.replace("gpu: a100-80gb", "gpu: [h100]").replace("gpus: 1", "gpus: 0"), capsys)
    assert code == 2
    assert len(err.splitlines()) == 2 and "unknown GPU" not in err


def test_a_key_that_yaml_reads_as_a_number_or_null(tmp_path, capsys):
    code, err, _ = run(tmp_path, GOOD + "    1: x\n    null: y\n", capsys)
    assert code == 2
    assert err == ("FILE:9: workloads[0]: a key must be a field name (got 1; quote it if it is meant as text)\n"
                   "FILE:10: workloads[0]: a key must be a field name (got null (empty); quote it if it is "
                   "meant as text)\n")


def test_unknown_access_tier(tmp_path, capsys):
    code, err, _ = run(tmp_path, "proposal: {access_tier: Explore}\n" + GOOD, capsys)
    assert code == 2
    assert err == ("FILE:1: proposal.access_tier: unknown access_tier (got 'Explore', expected explore, discover "
                   "or accelerate; did you mean 'explore'?)\n")


def test_anchor_inside_a_merge_reused_elsewhere(tmp_path, capsys):
    """An anchor defined inside a merge source and aliased later is the same mapping both
    times; its own merge is not mistaken for duplicate keys (yaml.safe_load: rank 16)."""
    content = GOOD.replace("    gpus: 1\n", "    gpus: 1\n    lora:\n      <<: &l\n        <<: {rank: 8}\n"
                                           "        rank: 16\n")
    content += GOOD.replace("workloads:\n", "").replace("sweep", "other").replace(
        "    gpus: 1\n", "    gpus: 1\n    lora: *l\n")
    path = tmp_path / "w.yaml"
    path.write_text(content)
    from proposalkit.input.loading import load_file

    assert [w.spec.lora.rank for w in load_file(str(path)).workloads] == [16, 16]
    assert yaml.safe_load(content)["workloads"][1]["lora"] == {"rank": 16}


def test_duplicate_key_inside_a_merge_source(tmp_path, capsys):
    code, err, _ = run(tmp_path, GOOD.replace("    kind: finetune\n    method: lora\n",
                                              "    <<: {kind: finetune, method: lora, method: full}\n"), capsys)
    assert code == 2
    assert "workloads[0].method: duplicate key (first given on line 3)" in err


def test_malformed_yaml_names_file_and_line(tmp_path, capsys):
    """The parser's own words after the location are PyYAML's (they differ between libyaml and
    the pure-Python parser, and between releases); the tool owns the file, the line and the prefix."""
    code, err, _ = run(tmp_path, "workloads:\n  - name: a\n    kind: [finetune\n", capsys)
    assert code == 2
    assert err.startswith("FILE:3: malformed YAML: ")   # the line with the '[' not closed
    assert err.count("\n") == 1 and "Traceback" not in err


def test_nesting_too_deep_is_an_input_error(tmp_path, capsys):
    """Whichever layer notices first (libyaml's own depth limit since PyYAML 6.0.3, or Python's
    recursion limit while the value is built), the answer is the tool's: exit 2, the file, and
    a message about nesting."""
    code, err, _ = run(tmp_path, GOOD + "    description: " + "[" * 2000 + "]" * 2000 + "\n", capsys)
    assert code == 2
    assert err.startswith("FILE:")
    assert "nested too deeply" in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_user_key_named_like_a_union_tag_is_reported_at_its_own_path(tmp_path, capsys):
    """pydantic puts the model union's tags ('id', 'shape') into error locations; a user's own
    `id:` in a model mapping is the unknown key, not the 'model' field itself."""
    from proposalkit.cli import main

    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n  - name: a\n    kind: finetune\n    method: full\n"
                    "    model: {id: m, params: 7B}\n    tokens: 1B\n", encoding="utf-8")
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:5: workloads[0].model.id: unknown field 'id' (expected one of: name, params,")
    assert "did you mean 'model'" not in err
