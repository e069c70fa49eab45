"""Fit the step-time model's three constants (proposalkit/estimate/step_time.py), each on its own rows.

    python benchmarks/calibrate_step_time.py           # the fits beside the constants, row by row
    python benchmarks/calibrate_step_time.py --check   # exit 1 where a constant is not its fit

- MEMORY_FRACTION, the achieved share of HBM bandwidth for the bytes estimate/traffic.py counts: on the kernel
  times of this project's ten eager H100 profiles (benchmarks/validation/measured/results/*-profile.json,
  torch.profiler's CUDA kernels per step): per run, the planned memory-bound seconds at the constant ÷ the
  measured time of the kernels that are not matrix multiplies or attention (norm, elementwise, loss,
  optimizer, grad_clip, reduction, index, memcpy, memset), × the constant. The median is kept; leave-one-out,
  each run's fraction from the other nine, is printed beside it. The runs' tokens/s (speed section M) are
  not used: kernel time, not step time.
- HOST_SECONDS_PER_KERNEL: on the profiled runs whose GPU was busy less than HOST_BOUND_BUSY of the
  unprofiled step (the host could not launch fast enough): that step ÷ the kernels the model counts. The
  median; leave-one-out beside it. Again the profile's own step, not the speed section's figure.
- MAMF_FRACTION, the share of the GPU's maximum achievable matmul rate (its MAMF, catalog gpus.yaml
  mamf_flops: Bekman's mamf-finder table) the matrix multiplies sustain: on the calibration rows of the speed
  index (published hardware-FLOPs utilization of Megatron-LM, Korthikanti et al. and BLOOM on A100s), each
  planned from its workload file: the published HFU gives the step's time, F_hw × tokens ÷ (GPUs × peak × HFU);
  the model's memory-bound and collective seconds are taken out of it, and what is left is the matmuls' time on
  the stage that paces the step (a pipeline's last, with the LM head: step_time.py), so the share of the peak =
  that stage's FLOPs per GPU ÷ peak (the plan's compute seconds × its fraction) ÷ (published time − the rest),
  and the share of the MAMF = that ÷ (the GPU's MAMF ÷ peak). The median is kept.

The fits are rounded (0.01; 1 µs) and must equal the constants (tests/test_step_time.py runs --check).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import validation_measured  # noqa: E402
import validation_speed  # noqa: E402
from proposalkit.catalog import gpus  # noqa: E402
from proposalkit.estimate import step_time  # noqa: E402

PROFILES = ("results/h100-80gb-hbm3-2026-11-26-profile.json",)
MEMORY_CATEGORIES = ("norm", "elementwise", "loss", "optimizer", "grad_clip", "reduction", "index", "memcpy",
                     "memset")
# A profiled run is host-bound where its GPU was busy less than this share of the unprofiled step.
HOST_BOUND_BUSY = 0.90


@dataclass(frozen=True)
class Fit:
    id: str
    value: float            # this row's own fit
    held_out: float | None  # the constant fitted on the other rows (leave-one-out)
    detail: str


def _plan(path: Path) -> dict:
    (w,) = validation_speed.plan_file(path)["workloads"]
    return w


def profiles() -> dict[str, dict]:
    out = {}
    for rel in PROFILES:
        for run in json.loads((validation_measured.MEASURED / rel).read_text(encoding="utf-8"))["runs"]:
            if run["status"] == "ok":
                out[run["id"]] = run
    return out


def _leave_one_out(values: dict[str, float]) -> dict[str, float | None]:
    return {k: statistics.median([v for j, v in values.items() if j != k]) if len(values) > 1 else None
            for k in values}


def memory_fits() -> list[Fit]:
    values, details = {}, {}
    for rid, run in profiles().items():
        w = _plan(validation_measured.MEASURED / f"{rid}.yaml")
        measured = sum(run["profile"]["categories"].get(c, {}).get("ms", 0.0) for c in MEMORY_CATEGORIES) / 1e3
        planned = w["step"]["memory_seconds"]
        values[rid] = step_time.MEMORY_FRACTION * planned / measured
        details[rid] = (f"measured {measured * 1e3:,.1f} ms, planned {planned * 1e3:,.1f} ms at "
                        f"{step_time.MEMORY_FRACTION:.2f}")
    held = _leave_one_out(values)
    return [Fit(k, v, held[k], details[k]) for k, v in values.items()]


def host_fits() -> list[Fit]:
    values, details = {}, {}
    for rid, run in profiles().items():
        busy = run["profile"]["busy_pct_of_unprofiled_step"] / 100
        if busy >= HOST_BOUND_BUSY:
            continue
        w = _plan(validation_measured.MEASURED / f"{rid}.yaml")
        step = run["unprofiled_step_ms"] / 1e3
        values[rid] = step / w["step"]["kernels"]
        details[rid] = f"GPU busy {busy:.0%}, step {step * 1e3:,.1f} ms ÷ {w['step']['kernels']:,} kernels"
    held = _leave_one_out(values)
    return [Fit(k, v, held[k], details[k]) for k, v in values.items()]


def compute_fits() -> list[Fit]:
    out = []
    catalog = gpus()
    for row in validation_speed.load():
        if row["role"] != "calibrate":
            continue
        w = _plan(validation_speed.SPEED / row["file"])
        step, peak = w["step"], catalog[w["gpu"]["type"]].peak_16bit_flops
        at_peak = w["flops_per_token"]["hardware"] * step["tokens"] / w["gpu"]["count"] / peak
        published = at_peak / float(row["value"])
        rest = step["memory_seconds"] + step["comm_seconds"]
        of_peak = step["compute_seconds"] * step["compute_fraction"] / (published - rest)
        gpu = catalog[w["gpu"]["type"]]
        out.append(Fit(row["id"], of_peak / gpu.matmul_efficiency, None,
                       f"HFU {float(row['value']):.3f}: step {published:,.2f} s, of which memory-bound "
                       f"{step['memory_seconds']:,.2f} s and collectives {step['comm_seconds']:,.2f} s; matmuls at "
                       f"{of_peak:.4f} of the peak ÷ {gpu.id}'s MAMF {gpu.matmul_efficiency:.4f} of it"))
    return out


def held_out() -> dict[str, float]:
    """Planned ÷ measured tokens/s of each run of section M, planned with the memory fraction (and, for a
    host-bound run, the host cost) fitted on the other runs: the leave-one-out check of the two constants
    these runs set. Runs without an eager profile (the compiled ones) were fitted on by neither: as planned."""
    memory = {f.id: f.held_out for f in memory_fits()}
    host = {f.id: f.held_out for f in host_fits()}
    out = {}
    saved = step_time.MEMORY_FRACTION, step_time.HOST_SECONDS_PER_KERNEL
    try:
        for run in validation_measured.runs():
            step_time.MEMORY_FRACTION = memory.get(run.id) or saved[0]
            step_time.HOST_SECONDS_PER_KERNEL = host.get(run.id) or saved[1]
            out[run.id] = _plan(run.file)["tokens_per_second"] / run.tokens_per_second
    finally:
        step_time.MEMORY_FRACTION, step_time.HOST_SECONDS_PER_KERNEL = saved
    return out


def fitted() -> dict[str, float]:
    """The rounded fits, by constant name."""
    return {"MEMORY_FRACTION": round(statistics.median(f.value for f in memory_fits()), 2),
            "HOST_SECONDS_PER_KERNEL": round(statistics.median(f.value for f in host_fits()) * 1e6) / 1e6,
            "MAMF_FRACTION": round(statistics.median(f.value for f in compute_fits()), 2)}


def report() -> str:
    lines = []
    for name, fits, unit in (("MEMORY_FRACTION", memory_fits(), 1), ("HOST_SECONDS_PER_KERNEL", host_fits(), 1e6),
                             ("MAMF_FRACTION", compute_fits(), 1)):
        median = statistics.median(f.value for f in fits)
        lines.append(f"{name}: median {median * unit:.4g} over {len(fits)} rows (constant "
                     f"{getattr(step_time, name) * unit:.4g})")
        for f in fits:
            held = "" if f.held_out is None else f", held out: {f.held_out * unit:.4g}"
            lines.append(f"  {f.id:24s} {f.value * unit:.4g}{held}  ({f.detail})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 where a constant is not its fit")
    args = parser.parse_args(argv)
    if args.check:
        bad = {k: v for k, v in fitted().items() if abs(getattr(step_time, k) - v) > 1e-12}
        for k, v in bad.items():
            print(f"{k} is {getattr(step_time, k)}, its fit {v}", file=sys.stderr)
        return 1 if bad else 0
    print(report())
    print("Section M, planned ÷ measured with the constants fitted on the other runs (leave-one-out):")
    for rid, ratio in held_out().items():
        print(f"  {rid:24s} {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
