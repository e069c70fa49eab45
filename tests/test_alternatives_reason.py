"""A GPU type the planner rejects says why in the figures the GPUs-considered table prints beside it, and with
the settings it was tried at (issue 23: a reviewer reads "400× a100-40gb | 70.74 | 39.50 | does not fit" and must
see that sharding over the largest job did not help, and the same 70.74 in the reason as in the column)."""

from __future__ import annotations

import json
from pathlib import Path

from proposalkit.cli import main
from proposalkit.units import gib_shown

ROOT = Path(__file__).resolve().parent.parent


def test_a_rejected_gpu_type_names_the_settings_tried_and_the_tables_figures(capsys, tmp_path):
    # Pinned micro-batch 4 of 4,096 tokens without checkpointing: the activations alone exceed an A100-40GB and
    # an A40 whatever the count, so the largest job of each Delta partition (100 nodes × 4 GPUs) is tried at
    # ZeRO stage 3, the smallest memory, and still does not fit.
    assert main(["plan", str(ROOT / "workloads" / "code-models.yaml"), "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    (pretrain,) = [w for w in plan["workloads"] if w["name"] == "code-1b-pretrain"]
    rejected = [a for a in pretrain["alternatives"] if not a["fits"]]
    assert {(a["gpu"], a["count"]) for a in rejected} == {("a100-40gb", 400), ("a40", 400)}
    for a in rejected:
        assert a["reason"] == (f"does not fit: needs {gib_shown(a['per_gpu_bytes']):,} GiB per GPU with ZeRO stage 3 "
                               f"and activation checkpointing off, {a['gpu']} has {gib_shown(a['usable_bytes']):,} GiB")
    # and the supplement's table row carries the same figures as its reason
    assert main(["report", str(ROOT / "workloads" / "code-models.yaml"), "-o", str(tmp_path), "--format", "md"]) == 0
    capsys.readouterr()
    text = (tmp_path / "supplement.md").read_text()
    for a in rejected:
        (row,) = [r for r in text.splitlines() if r.startswith(f"| 400× {a['gpu']} |")]
        cells = [c.strip() for c in row.split("|")[1:-1]]
        assert cells[1] == f"{gib_shown(a['per_gpu_bytes']):,}" and cells[2] == f"{gib_shown(a['usable_bytes']):,}"
        assert cells[-1] == a["reason"]
