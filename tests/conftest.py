"""Shared fixtures."""

from __future__ import annotations

import json
import math
import os

import pytest
from hypothesis import settings

from proposalkit.cli import main

# Hypothesis profiles. "ci" (.ci/run, or wherever CI is set): the same examples on every run, so that a red
# build is a change's doing and not a new draw; "dev": new examples each run, where a bug not yet seen may
# turn up. HYPOTHESIS_PROFILE chooses one by name. Each test says its own number of examples.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


@pytest.fixture
def plan_workloads(tmp_path, capsys):
    """Write a workload file, plan it through the CLI as JSON (exit 0 expected), return the workloads by name."""
    def plan(text: str) -> dict:
        path = tmp_path / "w.yaml"
        path.write_text(text, encoding="utf-8")
        assert main(["plan", str(path), "--format", "json"]) == 0
        return {w["name"]: w for w in json.loads(capsys.readouterr().out)["workloads"]}
    return plan


@pytest.fixture
def plan_error(tmp_path, capsys):
    """Write a workload file, plan it through the CLI (exit `code` expected, nothing on stdout), return its
    stderr with the file's path written FILE."""
    def error(text: str, code: int = 2) -> str:
        path = tmp_path / "w.yaml"
        path.write_text(text, encoding="utf-8")
        assert main(["plan", str(path)]) == code
        out = capsys.readouterr()
        assert out.out == ""
        return out.err.replace(str(path), "FILE")
    return error


def records(workload: dict, kind: str) -> list[dict]:
    """A planned workload's notes of one kind (the plan JSON's assumption_records: kind, values, sources,
    text), so a test checks what a note states and its numbers, not its wording (render/notes.py)."""
    return [r for r in workload["assumption_records"] if r["kind"] == kind]


def weasyprint_available() -> bool:
    """Whether WeasyPrint and the Pango library under it load here (a PDF can be built)."""
    from proposalkit.render import pdf

    try:
        pdf._import_weasyprint()
    except (ImportError, OSError):
        return False
    return True


def printed(x: float) -> float:
    """Hours per run, a request or an amount as the plan carries and prints them: rounded up to the next 0.01,
    worked here on the count of hundredths (9.2288 h → 9.23; 47.996 → 48.00; 0.325 → 0.33; 9.23 stays 9.23)."""
    return math.ceil(round(x * 100, 9)) / 100


per_run = printed      # a run's hours are carried the same way


def requested(hours: float, gpus: int = 1, runs: int = 1, buffer: float = 0.3) -> float:
    """Requested GPU-hours by hand: hours per run as carried × GPUs × runs × (1 + buffer), as printed."""
    return printed(per_run(hours) * gpus * runs * (1 + buffer))
