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
    "malformed yaml": (
        "workloads:\n  - name: a\n    kind: [finetune\n",
        # libyaml's wording (PyYAML's wheels carry it); the pure-Python parser words it differently.
        "FILE:4: malformed YAML: while parsing a flow sequence, did not find expected ',' or ']'\n"
        if yaml.__with_libyaml__ else
        "FILE:4: malformed YAML: while parsing a flow sequence, expected ',' or ']', but got '<stream end>'\n",
    ),
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
        "FILE:9: workloads[0].mfu: not a finite number (got nan, expected a fraction above 0 and at most 1, e.g. 0.40)\n",
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
        "FILE:9: workloads[0].buffer: out of range (got 30, expected a fraction from 0 to 1; 0.30 adds 30%)\n",
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
    "lora on a parameter count": (
        GOOD.replace("model: llama-3.1-8b", "model: {params: 7B}"),
        "FILE:5: workloads[0].model: a parameter count alone cannot size LoRA adapters (got params only, expected "
        "a catalog id, config, or layers, hidden, heads, kv_heads, ffn_hidden and vocab)\n",
    ),
    "inference on a parameter count": (
        "workloads:\n  - name: serve\n    kind: inference\n    model: {params: 7B}\n    context: 4k\n    hours: 10\n",
        "FILE:4: workloads[0].model: a parameter count alone cannot size the KV cache of inference (got params "
        "only, expected a catalog id, config, or layers, hidden, heads, kv_heads, ffn_hidden and vocab)\n",
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
    assert err == "FILE:2: defaults.buffer: not a number (got 'lots', expected a fraction from 0 to 1; 0.30 adds 30%)\n"


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
