"""Every exit code a command documents, run: one case each.

The codes are cli.EXIT_CODES (what --help, docs/cli.md and the README's command table print); each
(command, code) pair it lists must have a case below and each case must be listed, so the documented
codes and the commands cannot drift apart.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from proposalkit.cli import EXIT_CODES, main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = str(ROOT / "workloads" / "code-models.yaml")
ACCOUNTING = str(ROOT / "workloads" / "accounting" / "2026-10.sacct")

# Fits nowhere without any pin: a 70B full fine-tune held at ZeRO stage 0 keeps 16 bytes per
# parameter (bf16 weights and gradients, fp32 Adam states and master weights) on every GPU,
# about 1.1 TB, more than any GPU in the catalog at any count.
NOWHERE = "workloads:\n  - {name: huge, kind: finetune, method: full, model: llama-3.1-70b, tokens: 1M, zero_stage: 0}\n"
INVALID = "workloads:\n  - {name: a, kind: finetune, variants: ten}\n"


def documented() -> dict[str, set[int]]:
    """Command → the exit codes it documents (cli.EXIT_CODES: its --help, docs/cli.md and the README's
    table are made from it, and tests/test_docs.py holds those pages in step)."""
    return {command: {code for code, _meaning in codes} for command, codes in EXIT_CODES.items()}


def write_inputs(tmp_path) -> None:
    (tmp_path / "nowhere.yaml").write_text(NOWHERE, encoding="utf-8")
    (tmp_path / "invalid.yaml").write_text(INVALID, encoding="utf-8")
    (tmp_path / "a-file").write_text("", encoding="utf-8")


def cases(tmp_path):
    """(command, exit code) → its arguments, on the files write_inputs makes in tmp_path."""
    nowhere, invalid, a_file = tmp_path / "nowhere.yaml", tmp_path / "invalid.yaml", tmp_path / "a-file"
    out = tmp_path / "build"
    return {
        ("plan", 0): ["plan", EXAMPLE],
        ("plan", 1): ["plan", nowhere],
        ("plan", 2): ["plan", invalid],
        ("report", 0): ["report", EXAMPLE, "-o", out, "--format", "md"],
        ("report", 1): ["report", nowhere, "-o", out, "--format", "md"],
        ("report", 2): ["report", EXAMPLE, "-o", a_file / "sub", "--format", "md"],   # a file where a folder goes
        ("diff", 0): ["diff", "/dev/null", EXAMPLE],
        ("diff", 1): ["diff", EXAMPLE, nowhere],
        ("diff", 2): ["diff", EXAMPLE, invalid],
        ("check", 0): ["check", EXAMPLE],
        ("check", 1): ["check", nowhere],
        ("check", 2): ["check", invalid],
        ("catalog", 0): ["catalog", "resources"],
        ("catalog", 2): ["catalog", "nope"],
        ("schema", 0): ["schema"],
        ("pilot", 0): ["pilot", ROOT / "tests" / "data" / "pilot" / "megatron.log"],
        ("pilot", 2): ["pilot", a_file],         # an empty log
        ("usage", 0): ["usage", EXAMPLE, "--jobs", ACCOUNTING],
        ("usage", 1): ["usage", nowhere, "--jobs", ACCOUNTING],
        ("usage", 2): ["usage", EXAMPLE, "--jobs", a_file],      # an empty accounting file
    }


def exit_code(argv) -> int:
    try:
        return main([str(a) for a in argv])
    except SystemExit as stop:      # argparse's own errors
        return stop.code


def test_every_documented_code_has_a_case_and_no_other(tmp_path):
    table = {(command, code) for command, codes in documented().items() for code in codes}
    assert {"plan", "report", "diff", "check", "catalog", "schema", "pilot", "usage"} <= set(documented())
    assert table == set(cases(tmp_path))


@pytest.mark.parametrize("command, code", sorted(cases(Path("/nonexistent"))))
def test_documented_exit_code(command, code, tmp_path, capsys):
    write_inputs(tmp_path)
    assert exit_code(cases(tmp_path)[command, code]) == code
    out, err = capsys.readouterr()
    # A failure always says why, on stderr; a success may only warn (check: a pilot log and the
    # estimate more than 25% apart, FILE: warning: ...) or suggest (plan: FILE:LINE: field: hint: ...).
    said = "".join(line for line in err.splitlines(True) if ": warning: " not in line and ": hint: " not in line)
    assert (said == "") == (code == 0)
    assert "Traceback" not in err
