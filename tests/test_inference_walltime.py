"""An inference run longer than the resource's walltime limit runs as consecutive jobs with the engine restarted
at each; it has no training checkpoint to chain through (its plan says 0 B of checkpoints). Through the CLI.

NCSA Delta's job limit is 48 h (catalog/resources.yaml, 'Running Jobs' partition table): a service kept up
100 h runs as ⌈100 ÷ 48⌉ = 3 jobs.
"""

from __future__ import annotations

import textwrap

from proposalkit.cli import main

SERVICE = """\
proposal: {title: t, pi: p, institution: i, resource: ncsa-delta-a100}
workloads:
  - {name: svc, kind: inference, model: llama-3.1-8b, context: 4k, batch: 8, hours: 100, gpu: a100-40gb, gpus: 1}
"""


def test_a_long_service_is_restarted_not_checkpointed(tmp_path, capsys):
    path = tmp_path / "w.yaml"
    path.write_text(textwrap.dedent(SERVICE), encoding="utf-8")
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out          # the plan's warnings follow its table
    assert ("svc: a run of 100.00 h exceeds ncsa-delta-a100's 48 h job limit: ⌈100.00 ÷ 48⌉ = 3 "
            "consecutive jobs, the engine restarted at each") in out
    assert "checkpoint/restart" not in out
    assert main(["report", str(path), "-o", str(tmp_path / "out"), "--format", "md"]) == 0
    capsys.readouterr()
    text = (tmp_path / "out" / "supplement.md").read_text(encoding="utf-8")
    assert "= 3 jobs per run, the engine restarted at each (nothing to checkpoint)" in text
    assert "chained through checkpoints" not in text
