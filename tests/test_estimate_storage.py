"""One storage record per workload and one totals record, both from estimate/storage.py:
the planner makes them, the plan carries them, render and the plan JSON read them as they are."""

from __future__ import annotations

from pathlib import Path

from proposalkit.estimate.storage import StorageTotals, WorkloadStorage
from proposalkit.input.loading import load_files
from proposalkit.planning.planner import plan_files
from proposalkit.render.context import report_context
from proposalkit.render.output import plan_dict
from proposalkit.units import bytes_of_gib, gib_shown

GOLDEN = Path(__file__).resolve().parent / "golden" / "workloads.yaml"


def test_plan_carries_the_estimate_records_and_render_reads_them():
    plan = plan_files(load_files([str(GOLDEN)]))
    records = [w.storage for w in plan.workloads if w.storage is not None]
    assert records and all(type(r) is WorkloadStorage for r in records)
    totals = plan.storage_totals()
    assert type(totals) is StorageTotals
    assert totals.scratch_bytes == max(r.peak_scratch_bytes for r in records)      # one after another
    # Project space adds each workload's sizes as printed (GiB to 0.01, units.gib_shown), a model file once:
    # eval-service serves llama-3.1-8b in bf16, the file lora-sweep starts from.
    assert [r.model_weights_shared_with for r in records] == [None, None, "lora-sweep"]
    assert totals.project_bytes == bytes_of_gib(sum(
        sum(map(gib_shown, (r.dataset_raw_bytes, r.dataset_bytes, r.model_weights_bytes)))
        + gib_shown(r.final_weights_bytes) * r.variants for r in records if r.model_weights_shared_with is None))
    context = report_context(plan)
    assert context.storage == totals
    assert [v.storage for v in context.workloads] == [w.storage for w in plan.workloads]
    assert plan_dict(plan)["totals"]["storage"] == {"project_bytes": totals.project_bytes,
                                                   "scratch_bytes": totals.scratch_bytes,
                                                   "archive_bytes": totals.archive_bytes}
