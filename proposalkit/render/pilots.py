"""The report's "Pilot measurements" table: each pilot log cited (file, short hash, GPUs) with its
measured throughput and peak memory beside the estimate for the same GPUs (planning/pilots.py)."""

from __future__ import annotations

from dataclasses import dataclass

from ..planning.pilots import DISAGREEMENT, SCALING_RULE
from ..planning.records import Plan
from ..units import GiB
from .format import fmt_rate

SHORT_HASH = 12     # hex digits of the sha256 shown; the plan JSON has all 64


@dataclass(frozen=True)
class PilotRow:
    workload: str
    log: str
    sha256: str             # short
    format: str
    gpus: str               # "2× a100-80gb"
    steps: str              # "90 (10 warm-up dropped)", or "—" for a benchmark summary
    throughput: str         # "3,100 vs 3,754 (0.83)": measured vs estimate (measured ÷ estimate), tokens/s
    memory: str             # "24.62 vs 27.63 GiB reserved (0.89)"
    illustrative: bool = False   # the log is an example's, not a measurement (pilot.illustrative)


@dataclass(frozen=True)
class PilotsView:
    rows: tuple[PilotRow, ...]
    scaling: tuple[str, ...]     # one sentence per workload with two pilots
    apart: tuple[str, ...]       # each pilot and estimate more than DISAGREEMENT apart, in words
    summary: str = ""            # what the table compares, statistic by statistic
    threshold: str = f"{DISAGREEMENT:.0%}"


def _versus(measured: str, estimate: float | None, ratio: float | None, unit: str) -> str:
    if estimate is None:
        return f"{measured} {unit} (no estimate)"
    return f"{measured} vs {estimate} {unit} ({ratio:.2f})"


def _row(name: str, c) -> PilotRow:
    r = c.run
    stat = r.peak_memory
    steps = "—" if r.steps_used is None else f"{r.steps_used} ({r.steps_dropped} warm-up dropped)"
    rate = _versus(fmt_rate(r.tokens_per_second), None if c.estimate_tokens_per_second is None
                   else fmt_rate(c.estimate_tokens_per_second), c.throughput_ratio, "tokens/s")
    if stat is None:
        memory = "not in the log"
    else:
        memory = _versus(f"{stat[1] / GiB:,.2f}", None if c.estimate_memory_bytes is None
                         else f"{c.estimate_memory_bytes / GiB:,.2f}", c.memory_ratio, f"GiB {stat[0]}")
    return PilotRow(workload=name, log=r.log, sha256=r.sha256[:SHORT_HASH], format=r.format,
                    gpus=f"{r.gpus}× {r.gpu}", steps=steps, throughput=rate, memory=memory,
                    illustrative=r.illustrative)


def pilots_view(plan: Plan) -> PilotsView | None:
    rows = tuple(_row(w.name, c) for w in plan.workloads for c in w.pilots)
    if not rows:
        return None
    scaling = tuple(f"{w.name}: {w.pilot_scaling.text()}; other GPU counts: {SCALING_RULE}, instead of linear "
                    f"scaling." for w in plan.workloads if w.pilot_scaling is not None)
    apart = tuple(text for w in plan.workloads for c in w.pilots for text in c.warnings(w.name))
    # The statistic each log measured, beside the estimate's same statistic (planning/pilots.py
    # ESTIMATE_STATISTIC: a log's `active` is compared with the estimate's allocated, which it never exceeds).
    compared = dict.fromkeys((c.run.peak_memory[0], c.estimate_statistic.removesuffix("_bytes"))
                             for w in plan.workloads for c in w.pilots
                             if c.run.peak_memory is not None and c.estimate_statistic is not None)
    pairs = [f"the log's {log} with the estimate's {est}" if log != est else f"{log} with {est}"
             for log, est in compared]
    summary = ("The runtime of each workload with a pilot uses the pilot's measured throughput; the FLOPs estimate "
               "is used only where no pilot exists. Each estimate is for the pilot's own GPUs and the workload's "
               "settings" + (f"; peak memory is compared statistic for statistic ({', '.join(pairs)})" if pairs
                             else "") + ".")
    return PilotsView(rows, scaling, apart, summary)
