"""The README's printed outputs are what the commands print today (run through the CLI).

The quick-start table once kept eval-service at 35.5 GiB after the service's memory became the one
at its planned concurrency (23.4 GiB); nothing held it.
"""

import re
from pathlib import Path

from proposalkit.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def block_after(marker: str) -> list[str]:
    """The lines of the first fenced block after `marker` (the fence lines left out)."""
    rest = README[README.index(marker):]
    body = re.search(r"```[a-z]*\n(.*?)```", rest, re.S).group(1)
    return body.rstrip("\n").splitlines()


def test_quick_start_plan_table_is_todays_output(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["plan", "workloads/code-models.yaml"]) == 0
    printed = capsys.readouterr().out.splitlines()
    shown = block_after("`.venv/bin/proposalkit plan workloads/code-models.yaml`")
    if shown[-1] == "...":      # the README elides the rest of the warnings
        shown = shown[:-1]
    assert printed[:len(shown)] == shown


def test_pilot_command_output_is_todays_output(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    shown = block_after("## Pilot runs")
    command = shown[0].removeprefix("$ proposalkit ").split()
    assert command[0] == "pilot"
    main(command)
    assert capsys.readouterr().out.rstrip("\n").splitlines() == shown[1:]
