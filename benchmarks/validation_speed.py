"""Published training speed beside proposalkit's plan of the same run: the speed section of docs/validation.md.

    python benchmarks/validation_speed.py     # print the section (Markdown)

benchmarks/validation/speed/index.yaml lists every published speed figure of the
project's reference measurements (whole runs in GPU-hours, published MFU, measured
steady-state throughput), each with its source. A row that is validated is an ordinary
workload file beside the index, planned through the command line a user runs
(`proposalkit plan FILE --format json`); the published figure is set against the plan's
tokens/s, GPU-hours or MFU as the index says, and the ratio is planned ÷ measured speed
(above 1: the plan expects a faster run than was measured, so it requests fewer GPU-hours
than the run took). Rows marked `calibrate` set the default MFU and are never compared;
rows marked `excluded` name the mechanism the planner would need. Nothing is tuned here.
"""

from __future__ import annotations

import contextlib
import io
import json
import posixpath
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
SPEED = ROOT / "benchmarks" / "validation" / "speed"
INDEX = SPEED / "index.yaml"
COMPARES = ("tokens_per_second_per_gpu", "tokens_per_second", "gpu_hours", "mfu")
ROLES = ("validate", "calibrate", "excluded")


def load(path: Path = INDEX) -> list[dict]:
    """The index's rows, then section M: the runs this project measured (validation_measured.py), whose
    figures are read from the device's output, not copied here."""
    with open(path, encoding="utf-8") as fh:
        rows = yaml.safe_load(fh)["rows"]
    if path == INDEX:
        rows += measured_rows()
    for row in rows:
        if row["role"] not in ROLES:
            raise ValueError(f"{row['id']}: role must be one of {', '.join(ROLES)}, got {row['role']!r}")
        if row["role"] == "validate" and row.get("compare") not in COMPARES:
            raise ValueError(f"{row['id']}: compare must be one of {', '.join(COMPARES)}, got {row.get('compare')!r}")
        if row["role"] == "excluded" and not row.get("needs"):
            raise ValueError(f"{row['id']}: an excluded row names the mechanism it needs")
    return rows


def held_out_measured() -> dict[str, float]:
    """Section M's planned ÷ measured speed with the step-time constants its runs set fitted on the other runs
    (benchmarks/calibrate_step_time.py held_out)."""
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    from calibrate_step_time import held_out

    return held_out()


def measured_rows() -> list[dict]:
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    from validation_measured import speed_rows

    return speed_rows()


def plan_file(path: Path) -> dict:
    """The workload file's plan, as `proposalkit plan FILE --format json` prints it."""
    from proposalkit.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["plan", str(path), "--format", "json"])
    if code != 0:
        raise RuntimeError(f"proposalkit plan {path} exited {code}: {err.getvalue().strip()}")
    return json.loads(out.getvalue())



def _of_peak(gpu_id: str) -> str:
    """The step-time model's matmul share of the dense peak on a catalog GPU (step_time.matmul_fraction)."""
    from proposalkit.catalog import gpus
    from proposalkit.estimate import step_time
    return f"{step_time.matmul_fraction(gpus()[gpu_id]):.2f}"

@dataclass(frozen=True)
class Result:
    row: dict
    workload: dict          # the plan JSON's one workload

    @property
    def id(self) -> str:
        return self.row["id"]

    @property
    def measured(self) -> float:
        return float(self.row["value"])

    @property
    def planned(self) -> float:
        w, compare = self.workload, self.row["compare"]
        if compare == "tokens_per_second_per_gpu":
            return w["tokens_per_second"] / w["gpu"]["count"]
        if compare == "tokens_per_second":
            return w["tokens_per_second"]
        if compare == "gpu_hours":
            return w["gpu_hours"]
        return w["mfu"]

    @property
    def ratio(self) -> float:
        """Planned ÷ measured speed (for GPU-hours, the inverse of the hours' ratio)."""
        if self.row["compare"] == "gpu_hours":
            return self.measured / self.planned
        return self.planned / self.measured


def results(rows: list[dict] | None = None) -> list[Result]:
    rows = rows if rows is not None else load()
    out = []
    for row in rows:
        if row["role"] != "validate":
            continue
        plan = plan_file(SPEED / row["file"])
        if len(plan["workloads"]) != 1:
            raise ValueError(f"{row['id']}: {row['file']} must hold one workload")
        out.append(Result(row, plan["workloads"][0]))
    return out


@dataclass(frozen=True)
class Spread:
    count: int
    median: float
    low: float
    high: float
    q1: float
    q3: float


def spread(ratios: list[float]) -> Spread:
    """Median, minimum, maximum and quartiles (statistics.quantiles, inclusive method)."""
    q1, _, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
    return Spread(len(ratios), statistics.median(ratios), min(ratios), max(ratios), q1, q3)


def throughput_spread(res: list[Result]) -> Spread:
    """The headline: planned ÷ measured speed over the measured steady-state throughput rows (D)."""
    return spread([r.ratio for r in res if r.row["section"] == "D"])


def measured_spread(res: list[Result]) -> Spread:
    """Planned ÷ measured speed over the runs this project measured (section M)."""
    return spread([r.ratio for r in res if r.row["section"] == "M"])


# The figures before the step-time model, planned by main at f12132a (MFU 0.51 with nothing recomputed, 0.51 × model
# ÷ hardware FLOPs with checkpointing), from the docs/validation.md it generated.
BEFORE = ("Before this model (main at f12132a: every rate at MFU 0.51 on model FLOPs, less with checkpointing): "
          "section D median ratio 0.908 over 16 rows (0.613 to 1.389), section M 1.712 over 12 (1.279 to 2.718), "
          "section C 1.211 over 17 (0.804 to 3.052); planned faster than measured by more than 25%: D-TITAN-1 "
          "(1.389, on the catalog's gh200 for want of the 500 W H100), D-FOUNDRY-3 (1.282), all twelve M rows, and "
          "seven of section C.")
# A row planned faster than measured by more than this factor is a tail (issue 22): it names why it is out of scope
# (`out_of_scope` in the index; a whole run's GPU-hours by the reason its section gives).
TAIL = 1.25


def tails(res: list[Result]) -> list[str]:
    """The rows planned faster than measured by more than TAIL, each with why (the index's out_of_scope, or for a
    whole run, what its hours count beyond steady-state training)."""
    out = [r for r in res if r.ratio > TAIL]
    lines = [f"**Tails: {len(out)} of {len(res)} rows are planned faster than measured by more than "
             f"{TAIL - 1:.0%}**" + (", each out of scope:" if out else ".")]
    if out:
        lines.append("")
    for r in sorted(out, key=lambda r: -r.ratio):
        why = r.row.get("out_of_scope") or (f"a whole run's GPU-hours ({r.row['counts']}), beyond steady-state "
                                            "training" if r.row["compare"] == "gpu_hours" else None)
        lines.append(f"- {r.id} ({r.ratio:.3f}): {why or 'NO REASON GIVEN'}")
    return lines


def _num(x: float) -> str:
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}" if x < 1 else f"{x:,.1f}"


def _link(r: Result) -> str:
    """The row id linked to its workload file, relative to docs/validation.md."""
    return f"[{r.id}]({posixpath.normpath('../benchmarks/validation/speed/' + r.row['file'])})"


def _setting(r: Result) -> str:
    w = r.workload
    ckpt = w["settings"]["activation_checkpointing"]
    ckpt = {True: "full", False: "none", None: "none"}.get(ckpt, ckpt)
    return f"{w['gpu']['count']}× {w['gpu']['type']}, checkpointing {ckpt}, MFU {w['mfu']:.3f}"


def section(res: list[Result] | None = None, rows: list[dict] | None = None) -> str:
    """The speed section of docs/validation.md, in Markdown."""
    rows = rows if rows is not None else load()
    res = res if res is not None else results(rows)
    from proposalkit.estimate import step_time

    d = throughput_spread(res)
    lines = [
        "## Speed: planned against published training speed",
        "",
        "Generated by `benchmarks/validation_speed.py` from `benchmarks/validation/speed/` (one ordinary",
        "workload file per published row, planned with `proposalkit plan FILE --format json`; the index",
        "gives each figure's source, unit and what it counts). The runtime model",
        "(`proposalkit/estimate/step_time.py`): without a pilot or a workload MFU, each optimizer step is",
        "timed per GPU by its parts: the matrix multiplies' hardware FLOPs (6·N + 12·L·H·Q·T, 4·N for LoRA,",
        f"plus what checkpointing reruns) at {step_time.MAMF_FRACTION:.2f} of the GPU's maximum achievable matmul "
        "rate (its MAMF as Bekman's mamf-finder table measures it, catalog `gpus.yaml` `mamf_flops`; "
        f"{_of_peak('a100-80gb')} of the dense 16-bit peak on an A100 SXM, {_of_peak('h100-80gb')} on an H100 SXM, "
        f"{_of_peak('h100-96gb-500w')} on the 500 W H100, which the table does not measure: NVIDIA's lowest efficiency "
        "in it); the bytes the memory-bound kernels",
        "move (norms, casts, activation functions, residual adds, the loss, the optimizer step; eager or",
        f"fused, `estimate/traffic.py`) at {step_time.MEMORY_FRACTION:.2f} of the HBM bandwidth; the tensor-parallel "
        "collectives, two per layer",
        "and pass, as rings over the GPUs' links (not overlapped); and the host's kernel launches",
        f"({step_time.HOST_SECONDS_PER_KERNEL * 1e6:g} µs each) as a floor. A workload's own MFU keeps tokens/s = "
        "GPUs × peak × MFU ÷ model FLOPs.",
        "Ratio = planned ÷ measured speed: above 1 the plan expects a faster run than was measured.",
        "",
        BEFORE,
        "",
    ]
    lines += tails(res)
    lines += [
        "",
        f"**Measured steady-state throughput (section D): median ratio {d.median:.3f} over {d.count} rows;**",
        f"**spread {d.low:.3f} to {d.high:.3f}, interquartile {d.q1:.3f} to {d.q3:.3f}.**",
        "",
        "| row | run | planned as | measured | planned | planned ÷ measured |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    for r in res:
        if r.row["section"] != "D":
            continue
        note = f" ({r.row['note']})" if r.row.get("note") else ""
        lines.append(f"| {_link(r)} | {r.row['source']}{note} | {_setting(r)} | {_num(r.measured)} {r.row['unit']} "
                     f"| {_num(r.planned)} | {r.ratio:.3f} |")
    m = [r for r in res if r.row["section"] == "M"]
    if m:
        ms = measured_spread(res)
        held = spread(list(held_out_measured().values()))
        lines += [
            "",
            f"**Measured by this project (section M): median ratio {ms.median:.3f} over {ms.count} rows, "
            f"{ms.low:.3f} to {ms.high:.3f}.** Hugging Face Trainer (with PEFT for LoRA) on one H100, each "
            "configuration an ordinary workload file in `benchmarks/validation/measured/` run as written by "
            "`benchmarks/device/measure_training.py` (its `index.yaml` gives the settings every run shares); the "
            "figure is the median tokens/s over the timed steps, read from the device's output. The step-time "
            "model's memory fraction and host time per kernel are fitted on these runs' kernel profiles; planned "
            "with the two constants fitted on the other runs (leave-one-out, `benchmarks/calibrate_step_time.py`), "
            f"the twelve come out {held.median:.3f} at the median, {held.low:.3f} to {held.high:.3f} (the errors "
            "table takes these).",
            "",
            "| row | what it covers | planned as | measured (p10–p90) | planned | planned ÷ measured |",
            "| --- | --- | --- | ---: | ---: | ---: |",
        ]
        for r in m:
            lines.append(f"| {_link(r)} | {r.row['note']} | {_setting(r)} | {_num(r.measured)} "
                         f"({_num(r.row['measured_p10'])}–{_num(r.row['measured_p90'])}) tokens/s | "
                         f"{_num(r.planned)} | {r.ratio:.3f} |")
        lines += ["", f"Source of every M row: {m[0].row['source']}"
                  + ("" if len({r.row['source'] for r in m}) == 1 else " (and its -compile session)") + "."]
    c = [r for r in res if r.row["section"] == "C"]
    cs = spread([r.ratio for r in c])
    lines += [
        "",
        f"Whole runs and published MFU (section C): median ratio {cs.median:.3f} over {cs.count} rows, "
        f"{cs.low:.3f} to {cs.high:.3f}. A whole run's GPU-hours include what steady-state speed leaves "
        "out (restarts, evaluation, long-context stages, idle time), so these plans come out faster than "
        "the published hours; the request's buffer is there for it.",
        "",
        "| row | what it counts | planned as | published | planned | planned ÷ measured speed |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    for r in c:
        lines.append(f"| {_link(r)} | {r.row['counts']} ({r.row['source']}) | {_setting(r)} | "
                     f"{_num(r.measured)} {r.row['unit']} | {_num(r.planned)} | {r.ratio:.3f} |")
    calib = [row for row in rows if row["role"] == "calibrate"]
    lines += [
        "",
        f"Calibration (never compared): the matmul fraction {step_time.MAMF_FRACTION:.2f} is the median, over "
        "these published A100 runs (each planned from its workload file), of the share of the A100 SXM's maximum "
        "achievable matmul rate (Bekman's MAMF table: 271.2 of 312 TFLOP/s) their matrix multiplies ran at: the "
        "step their hardware-FLOPs utilization gives, less the model's memory-bound and collective time "
        "(`benchmarks/calibrate_step_time.py`). The memory fraction and the host's time per kernel "
        "are fitted on the kernel times of this project's eager H100 profiles (section M's runs, by "
        "torch.profiler), not on their tokens/s.",
        "",
        "| row | published | what it counts | source |",
        "| --- | ---: | --- | --- |",
    ]
    for row in calib:
        lines.append(f"| {row['id']} | {row['value']:.3f} {row['unit']} | {row['counts']} | {row['source']} |")
    excluded = [row for row in rows if row["role"] == "excluded"]
    lines += [
        "",
        "Not expressed (each names the mechanism the planner would need):",
        "",
        "| row | published | needs | source |",
        "| --- | ---: | --- | --- |",
    ]
    for row in excluded:
        needs = row["needs"] + (f" ({row['note']})" if row.get("note") else "")
        lines.append(f"| {row['id']} | {_num(float(row['value']))} {row['unit']} | {needs} | {row['source']} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(section())
