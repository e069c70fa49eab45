"""Whatever the command line prints, user text never reaches the terminal with a raw
control character (ESC would let a file name set the title or clear the screen)."""

from __future__ import annotations

from pathlib import Path

import pytest

from proposalkit.cli import main

EXAMPLE = str(Path(__file__).resolve().parent.parent / "workloads" / "code-models.yaml")
CLEAR = "\x1b[2J"


def run(capsys, *argv):
    try:
        code = main([str(a) for a in argv])
    except SystemExit as stop:      # argparse's own errors
        code = stop.code
    out, err = capsys.readouterr()
    assert "\x1b" not in out + err
    return code, out, err


def test_unwritable_output_folder(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    code, _, err = run(capsys, "report", EXAMPLE, "-o", f"{blocker}/x{CLEAR}", "--format", "md")
    assert code == 2 and f"-o {blocker}/x\\x1b[2J: cannot write " in err


def test_unknown_report_format(capsys):
    code, _, err = run(capsys, "report", EXAMPLE, "--format", f"md,x{CLEAR}")
    assert (code, err) == (2, "proposalkit report: --format: unknown format x\\x1b[2J "
                              "(expected md, html, pdf, comma-separated)\n")


def test_argparse_errors(capsys):
    code, _, err = run(capsys, "catalog", f"x{CLEAR}")
    assert code == 2
    assert err.splitlines()[-1] == ("proposalkit catalog: error: argument what: invalid choice: 'x\\x1b[2J' "
                                    "(choose from 'gpus', 'models', 'resources')")


def test_report_prints_the_paths_it_wrote_escaped(tmp_path, capsys):
    code, out, _ = run(capsys, "report", EXAMPLE, "-o", tmp_path / f"out{CLEAR}", "--format", "md")
    assert code == 0 and out.splitlines()[0] == f"{tmp_path}/out\\x1b[2J/report.md"
    assert all(line.startswith(f"{tmp_path}/out\\x1b[2J/") for line in out.splitlines())
    assert (tmp_path / f"out{CLEAR}" / "report.md").is_file()


@pytest.mark.parametrize("command", ["plan", "check"])
def test_a_file_name_in_an_infeasible_message(tmp_path, capsys, command):
    path = tmp_path / f"w{CLEAR}.yaml"
    path.write_text("workloads:\n  - {name: huge, kind: finetune, method: full, model: llama-3.1-70b, tokens: 1M,"
                    " zero_stage: 0}\n", encoding="utf-8")
    code, _, err = run(capsys, command, path)
    assert code == 1 and err.startswith(f"{tmp_path}/w\\x1b[2J.yaml:2: workloads[0]: huge does not fit")
