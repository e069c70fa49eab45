"""Writes proposalkit/catalog/errors.yaml: every validation row's residual, by regime.

    python benchmarks/errors.py           # rewrite proposalkit/catalog/errors.yaml (`make errors`)
    python benchmarks/errors.py --check   # exit 1 if it is out of date

Each row is planned as the validation sections plan it (its workload file through `proposalkit plan
FILE --format json`, benchmarks/validation_*.py) and its residual is the factor from the plan's figure
to the measured one (proposalkit/catalog/errors.py says which way round for each quantity):

- speed (benchmarks/validation_speed.py): section D (measured steady-state throughput), section C's
  published MFUs and section M (this project's runs, each planned with the step-time constants it set fitted on
  the other runs: validation_speed.held_out_measured) are steady-state rates; section C's whole-run GPU-hours are the whole-run regime,
  reported and never used for a plan's range. Each row's regime is the one a plan of it takes
  (errors.speed_regime: FLOPs rate, tensor parallel, or more than one node);
- this project's own runs (benchmarks/validation_measured.py, which makes their speed and memory rows):
  beside those, each run's whole-device peak against the plan's device_bytes, and every timed step's
  rate ÷ the run's median (the pilot-steps regime);
- two steady-state rows of one workload on different GPU types or counts (same model, method,
  sequence, micro-batch, checkpointing, parallelism): the second's measured rate ÷ the first's carried
  there as the planner extrapolates a pilot (the step-time model's rates on both setups; both directions);
- memory (benchmarks/validation_memory.py): the expressible rows compared with a whole-memory figure,
  by the statistic compared (allocated, reserved, device); component checks and left-out rows are not
  residuals of a whole estimate;
- inference (benchmarks/validation_inference.py): the held-out rows (role validate; the calibration
  rows fitted the engine's fractions, so their residuals are in-sample): output tokens/s, time to first
  token, time per output token.
The output is deterministic: the same tree gives the same bytes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import validation_inference as vi  # noqa: E402
import validation_measured as vmeas  # noqa: E402
import validation_memory as vm  # noqa: E402
import validation_speed as vs  # noqa: E402
from proposalkit.catalog.errors import MEMORY_REGIME, REGIMES, speed_regime  # noqa: E402
from proposalkit.estimate.links import NODE_GPUS  # noqa: E402

OUT = ROOT / "proposalkit" / "catalog" / "errors.yaml"
DIGITS = 5      # residuals are written to 5 decimals (a thousandth of a percent)


def _regime_of(workload: dict) -> str:
    return speed_regime(workload["throughput_source"], workload["gpu"]["count"],
                        workload["settings"]["tensor_parallel"], NODE_GPUS)


def speed_rows() -> tuple[list[tuple[str, str, float]], list[dict]]:
    """(regime, id, residual) of every validated speed row (this project's own runs among them: section M), and the
    steady-state rows with their plans (for the extrapolation pairs)."""
    out, steady = [], []
    held = vs.held_out_measured()
    for r in vs.results():
        # ratio: planned ÷ measured speed; a run of this project's with the step-time constants it set fitted on
        # the others (leave-one-out)
        residual = 1 / held.get(r.id, r.ratio)
        if r.row["compare"] == "gpu_hours":
            out.append(("whole-run", r.id, residual))
            continue
        out.append((_regime_of(r.workload), r.id, residual))
        steady.append({"id": r.id, "workload": r.workload, "residual": residual, "file": vs.SPEED / r.row["file"]})
    return out, steady


def measured_rows() -> list[tuple[str, str, float]]:
    """This project's own runs beyond what the speed and memory sets take of them (validation_measured.py: their
    speed, allocated and reserved rows): the whole device's peak (NVML, what nvidia-smi shows) beside the plan's
    device_bytes, as row <id>-DEV; and every timed step's rate ÷ the run's median (the pilot-steps regime)."""
    out = []
    for run in vmeas.runs():
        (workload,) = vs.plan_file(run.file)["workloads"]
        out.append((MEMORY_REGIME["device"], f"{run.id}-DEV", run.device_bytes / workload["memory"]["device_bytes"]))
    for relative in vmeas.RESULTS:
        for run in json.loads((vmeas.MEASURED / relative).read_text(encoding="utf-8"))["runs"]:
            if run.get("status") != "ok" or not run.get("speed"):
                continue
            warmup = run["speed"]["warmup_steps"]
            seconds = [step["seconds"] for step in run["per_step"][warmup:]]
            middle = statistics.median(seconds)
            out += [("pilot-steps", f"{run['id']}#{warmup + i}", middle / s) for i, s in enumerate(seconds)]
    return out


def _pair_key(workload: dict) -> tuple:
    s = workload["settings"]
    return (workload["model"]["params"], workload["kind"], workload["method"], s["seq_len"], s["micro_batch"],
            s["activation_checkpointing"], s["tensor_parallel"], s["pipeline_parallel"], s["kernels"],
            s["zero_stage"] is not None and s["zero_stage"] > 0, s.get("framework"))


def carried_rate(file: Path, tokens_per_second: float, gpu: str, count: int) -> float:
    """The rate `proposalkit plan` gives the workload file's one workload with `throughput: {tokens_per_second, gpu,
    gpus}` measured on `count` GPUs of `gpu`: the pilot carried to the file's own GPUs as the planner carries it
    (planning/speed.py carried_throughput)."""
    data = yaml.safe_load(file.read_text(encoding="utf-8"))
    (workload,) = data["workloads"]
    workload["throughput"] = {"tokens_per_second": tokens_per_second, "gpu": gpu, "gpus": count}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / file.name
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        (planned,) = vs.plan_file(path)["workloads"]
    if planned["throughput_source"] != "pilot-extrapolated":
        raise RuntimeError(f"{file.name}: a pilot on {count}× {gpu} was not extrapolated "
                           f"({planned['throughput_source']})")
    return planned["tokens_per_second"]


def extrapolation_rows(steady: list[dict]) -> list[tuple[str, str, float]]:
    """Pairs of steady-state rows of one workload on different GPU types or counts: the first's measured rate (its
    residual × its planned rate) given to the second's workload file as a pilot, and carried by the planner to the
    second's GPUs (the step-time model's rate there ÷ its rate on the first's, planning/speed.py
    carried_throughput); the residual is the second's measured rate ÷ that."""
    groups: dict[tuple, list[dict]] = {}
    for row in steady:
        groups.setdefault(_pair_key(row["workload"]), []).append(row)
    out = []
    for rows in groups.values():
        for a in rows:
            for b in rows:
                ga, gb = a["workload"]["gpu"], b["workload"]["gpu"]
                if a is not b and (ga["type"], ga["count"]) != (gb["type"], gb["count"]):
                    measured_a = a["residual"] * a["workload"]["tokens_per_second"]
                    measured_b = b["residual"] * b["workload"]["tokens_per_second"]
                    carried = carried_rate(b["file"], measured_a, ga["type"], ga["count"])
                    out.append(("pilot-extrapolated", f"{a['id']}>{b['id']}", measured_b / carried))
    return out


def memory_rows() -> list[tuple[str, str, float]]:
    out = []
    for r in vm.results():
        if r.row["group"] != "expressible" or not r.whole:
            continue
        statistic = r.row["compare"].removeprefix("memory.").removesuffix("_bytes")
        out.append((MEMORY_REGIME[statistic], r.id, r.published / r.estimate))
    return out


INFERENCE_REGIME = {"output_tokens_per_second": "inference-throughput",
                    "output_tokens_per_second_per_gpu": "inference-throughput",
                    "ttft_ms": "inference-prefill", "decode_tokens_per_second": "inference-decode"}


def inference_rows() -> list[tuple[str, str, float]]:
    out = []
    for r in vi.results():
        if r.role != "validate" or r.estimate is None:
            continue
        metric = r.row["metric"]
        measured_over_planned = r.row["value"] / r.estimate
        # A latency's residual is a rate's: planned ÷ measured milliseconds.
        residual = 1 / measured_over_planned if metric == "ttft_ms" else measured_over_planned
        out.append((INFERENCE_REGIME[metric], r.id, residual))
    return out


def rows() -> dict[str, list[tuple[str, float]]]:
    """Regime → [(row id, residual)], every regime of catalog/errors.py REGIMES, rows in id order."""
    speed, steady = speed_rows()
    found = speed + measured_rows() + extrapolation_rows(steady) + memory_rows() + inference_rows()
    out: dict[str, list[tuple[str, float]]] = {rid: [] for rid in REGIMES}
    for regime, rid, residual in found:
        out[regime].append((rid, residual))
    for regime in out:
        out[regime].sort()
    return out


def render(table: dict[str, list[tuple[str, float]]] | None = None) -> str:
    table = rows() if table is None else table
    lines = [
        "# Generated by benchmarks/errors.py (`make errors`); do not edit by hand.",
        "# Each validation row's residual by regime: measured ÷ planned for a rate or bytes, planned ÷ measured",
        "# for a latency (proposalkit/catalog/errors.py). The rows and how each is planned: docs/validation.md.",
        "schema: 1",
        "regimes:",
    ]
    for regime, found in table.items():
        lines.append(f"  {regime}:" + ("" if found else " []"))
        lines += [f"    - {{id: {json.dumps(rid)}, residual: {residual:.{DIGITS}f}}}" for rid, residual in found]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if errors.yaml is out of date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != text:
            print("proposalkit/catalog/errors.yaml is out of date: run make errors", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
