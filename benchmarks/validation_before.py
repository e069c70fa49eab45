"""The "before" figures of the memory table: the same workload files planned by an older proposalkit.

    git worktree add /tmp/before ae68364
    python benchmarks/validation_before.py /tmp/before

Each file of benchmarks/validation/memory/ is planned by the proposalkit of that checkout
(`python -m proposalkit.cli plan FILE --format json`, its own code on PYTHONPATH) with the fields it
did not have yet removed, as a user of that version would have had to write the run: framework,
loss, mixed_precision, optimizer_in_backward, offload, activation_offload, context_parallel, attention,
gradient_accumulation_steps, compile,
`activation_checkpointing: selective` (left to the planner) and the paged optimizers (their unpaged
kind). Prints the same summary as the table, over the rows the index marks expressible today and
over every row with a file. Not used by the tests (it needs the older checkout); the figures it
printed are copied into benchmarks/validation/memory.yaml under `before`.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import validation_memory as vm  # noqa: E402

NEW_FIELDS = ("framework", "loss", "mixed_precision", "optimizer_in_backward", "offload", "activation_offload",
              "context_parallel", "attention", "gradient_accumulation_steps", "compile")
UNPAGED = {"paged-adamw": "adamw", "paged-adamw-8bit": "adamw-8bit"}


def as_before(workload: dict) -> dict:
    w = {k: v for k, v in workload.items() if k not in NEW_FIELDS}
    if w.get("activation_checkpointing") == "selective":
        del w["activation_checkpointing"]
    if w.get("optimizer") in UNPAGED:
        w["optimizer"] = UNPAGED[w["optimizer"]]
    return w


def plan_before(checkout: Path, path: Path, tmp: Path) -> dict | None:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc["workloads"] = [as_before(w) for w in doc["workloads"]]
    written = tmp / path.name
    written.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "proposalkit.cli", "plan", str(written), "--format", "json"],
                         cwd=checkout, env={**os.environ, "PYTHONPATH": str(checkout)}, capture_output=True, text=True)
    if run.returncode != 0:
        print(f"{path.stem}: not planned ({run.stderr.strip().splitlines()[0] if run.stderr.strip() else run.returncode})")
        return None
    return json.loads(run.stdout)["workloads"][0]


def summary(diffs: dict[str, float]) -> str:
    values = list(diffs.values())
    worst = min(diffs, key=diffs.get)
    return (f"{len(values)} rows: median |error| {statistics.median(abs(d) for d in values):.1f}%, "
            f"{sum(abs(d) <= vm.TARGET_WITHIN for d in values)} within ±{vm.TARGET_WITHIN:g}%, "
            f"{sum(abs(d) <= 10 for d in values)} within ±10%, worst under-estimate {worst} {diffs[worst]:+.1f}%")


def main(argv: list[str]) -> int:
    checkout = Path(argv[0]).resolve()
    index = vm.load_index()
    diffs: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for row in index["rows"]:
            path = vm.workload_file(row["id"])
            if not path.exists() or row["compare"] not in vm.COMPARE:
                continue
            workload = plan_before(checkout, path, Path(tmp))
            if workload is not None:
                estimate = vm.figure(workload, row["compare"]) / vm.UNITS[row["unit"]]
                diffs[row["id"]] = 100 * (estimate - row["value"]) / row["value"]
    expressible = {i: d for i, d in diffs.items()
                   if next(r for r in index["rows"] if r["id"] == i)["group"] == "expressible"}
    print("expressible today:", summary(expressible))
    print("every row with a file:", summary(diffs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
