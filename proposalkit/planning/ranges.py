"""Each workload's ranges: its estimates times their regime's validated errors (catalog/errors.py).

- Speed (tokens per second; runtime and GPU-hours are its inverse): the regime of where the rate came
  from (catalog/errors.speed_regime): FLOPs at an MFU on one node, more nodes or tensor parallel; a pilot
  carried to another GPU type or count; a measured pilot on the planned GPUs, whose own steady steps give
  the spread (a `throughput:` given without its log: the step spread of this project's measured runs);
  batch inference's output tokens per second, its time to first token and per output token.
- Memory (device_bytes): the whole-device regime (the statistic that must fit). A pre-allocating engine
  (vLLM, SGLang, TensorRT-LLM) holds its reservation whatever the tensors need: no spread.
- A service's GPU-hours are its hours × GPUs whatever the speed (a slower engine shows in its latencies).

The request stays gpu_hours × (1 + buffer); request_coverage is the share of validated cases it covers
(intervals.covered). `buffer: auto` takes the least buffer that covers `coverage` of them
(intervals.buffer_for).
"""

from __future__ import annotations

import functools
import math
from decimal import Decimal

from ..catalog import engines
from ..catalog.errors import MIN_ROWS, REGIMES, Basis, basis, speed_regime
from ..estimate.links import NODE_GPUS
from ..notes import Note, note
from ..units import GIB_DECIMALS, bytes_of_gib, gib_up, hours_step, ms_figure, ms_step, range_ends, rate_shown, rate_step
from .intervals import Interval, RangeBasis, Ranges, buffer_for, covered, factors, interval

DEVICE_REGIME = "memory-device"
PILOT_LOG = "pilot-log"
HOURS_GIVEN, ENGINE_RESERVATION = "hours-given", "engine-reservation"
# The quantities of a plan's `ranges`, in order (CONTRACT.md, "Added for the next steps").
QUANTITIES = ("tokens_per_second", "runtime_hours", "gpu_hours", "device_bytes", "output_tokens_per_second",
              "ttft_ms", "tpot_ms")


@functools.lru_cache(maxsize=None)
def _basis(regime: str) -> Basis:
    return basis(regime)


def _record(b: Basis, inverse: bool = False) -> RangeBasis:
    """Where a range comes from, with its factors as printed (`inverse`: of a time the regime's rate measures)."""
    return RangeBasis(b.regime, len(b.rows), b.ids, b.pooled, b.own_rows, factors=factors(b.residuals, inverse))


def memory_margins() -> tuple[float, float]:
    """The whole-device memory error's 10th and 90th percentiles (measured ÷ planned) as printed (rounded outward,
    units.range_factors): a training configuration is chosen where its memory × the 90th fits; one pinned is refused
    only where × the 10th does not."""
    return factors(_basis(DEVICE_REGIME).residuals)


_GIB_STEP = 10.0 ** -GIB_DECIMALS


def memory_range(device_bytes: float) -> tuple[float, float]:
    """The memory per GPU at the p10 and p90, in GiB as printed: the estimate's GiB as printed (units.gib_up, never
    below it) × memory_margins, rounded outward to 0.01 GiB (units.range_ends)."""
    return range_ends(float(gib_up(math.ceil(device_bytes))), memory_margins(), _GIB_STEP)


def memory_at(device_bytes: float, margin: float) -> int:
    """Whole bytes of the memory per GPU × `margin` as printed (memory_range's rule, rounded up to 0.01 GiB: at
    the p90 its high end): what a fit at a margin compares with the usable memory (search.fit), never the
    product below the printed figure."""
    return _bytes(range_ends(float(gib_up(math.ceil(device_bytes))), (margin, margin), _GIB_STEP)[1])


def _bytes(gib: float) -> int:
    """Whole bytes of a range's end printed in GiB (the plan JSON gives bytes)."""
    return bytes_of_gib(Decimal(repr(gib)))


def memory_fit_share(total: float, usable: float) -> float:
    """The share of validated cases whose whole-device memory (the estimate × their residual) fits `usable`."""
    return covered(_basis(DEVICE_REGIME).residuals, usable / total)


def rate_regime(kind: str, source: str, gpus: int, tensor_parallel: int) -> str | None:
    """The regime of a workload's rate (None: a service, costed by its hours)."""
    if kind == "inference" and source == "estimate":
        return "inference-throughput"
    return speed_regime(source, gpus, tensor_parallel, NODE_GPUS)


def need_factors(kind: str, source: str, gpus: int, tensor_parallel: int,
                 steps: tuple[float, ...] | None = None) -> tuple[float, ...]:
    """GPU-hours needed ÷ the estimate, one per validated case, ascending: the inverse of each rate residual
    (`steps`: a pilot log's steady step rates ÷ their median, which replace the regime's rows)."""
    if steps:
        return tuple(sorted(1 / r for r in steps))
    regime = rate_regime(kind, source, gpus, tensor_parallel)
    if regime is None:
        return (1.0,)
    return tuple(sorted(1 / r for r in _basis(regime).residuals))


def pilot_run(runs, gpu: str, count: int):
    """The pilot log (input/pilots.PilotRun) measured on `count`× `gpu` with its steps' spread, or None."""
    return next((run for run in runs if run.gpu == gpu and run.gpus == count and run.step_ratios), None)


def run_steps(runs, gpu: str, count: int) -> tuple[float, ...] | None:
    """The steady step rates ÷ median (percentiles 0-100) of the pilot log measured on `count`× `gpu`."""
    run = pilot_run(runs, gpu, count)
    return run.step_ratios if run is not None else None


def buffer_at(s, kind: str, tp, gpu: str, count: int, runs=()) -> float:
    """The buffer of a configuration: the workload's own, or with buffer: auto (s.coverage set) the least that
    covers s.coverage of the validated cases of its rate (a service, costed by its hours: 0)."""
    if s.coverage is None:
        return s.buffer
    if tp is None or tp.tokens_per_second is None:
        return 0.0
    steps = run_steps(runs, gpu, count) if tp.source == "pilot" else None
    return buffer_for(need_factors(kind, tp.source, count, s.tensor_parallel, steps), s.coverage)




def workload_ranges(w) -> Ranges:
    """The ranges of a planned workload (records.WorkloadPlan)."""
    tp = w.throughput
    intervals: list[tuple[str, Interval]] = []
    bases: list[tuple[str, RangeBasis]] = []
    run = pilot_run([c.run for c in w.pilots], w.gpu.id, w.gpu_count) if tp.source == "pilot" else None
    steps = run.step_ratios if run is not None else None
    regime = rate_regime(w.kind, tp.source, w.gpu_count, w.settings.tensor_parallel)
    if tp.tokens_per_second is not None and regime is not None:
        if steps:
            speed = RangeBasis(PILOT_LOG, run.steps_used or len(steps), factors=factors(steps))
        else:
            speed = _record(_basis(regime))
        rate, f = tp.tokens_per_second, speed.factors
        intervals += [("tokens_per_second", interval(rate, rate_shown(rate), f, rate_step(rate))),
                      ("runtime_hours", interval(w.runtime_hours, w.runtime_hours, f, hours_step(), inverse=True)),
                      ("gpu_hours", interval(w.gpu_hours, w.gpu_hours, f, hours_step(), inverse=True))]
        bases += [("tokens_per_second", speed), ("runtime_hours", speed), ("gpu_hours", speed)]
    else:
        fixed = RangeBasis(None, 0, why=HOURS_GIVEN)
        intervals += [("runtime_hours", Interval(w.runtime_hours, w.runtime_hours, w.runtime_hours)),
                      ("gpu_hours", Interval(w.gpu_hours, w.gpu_hours, w.gpu_hours))]
        bases += [("runtime_hours", fixed), ("gpu_hours", fixed)]
    device = w.memory.total
    served = w.inference
    if served is not None and engines.engine(served.engine).fraction_of != "none":
        intervals.append(("device_bytes", Interval(device, device, device)))
        bases.append(("device_bytes", RangeBasis(None, 0, why=ENGINE_RESERVATION)))
    else:
        low, high = memory_range(device)
        intervals.append(("device_bytes", Interval(_bytes(low), device, _bytes(high))))
        bases.append(("device_bytes", _record(_basis(DEVICE_REGIME))))
    if served is not None:
        intervals, bases = _inference(served, intervals, bases, speed_basis=dict(bases).get("tokens_per_second"))
    needs = need_factors(w.kind, tp.source, w.gpu_count, w.settings.tensor_parallel, steps) \
        if tp.tokens_per_second is not None else (1.0,)
    order = {q: i for i, q in enumerate(QUANTITIES)}
    intervals.sort(key=lambda item: order[item[0]])
    bases.sort(key=lambda item: order[item[0]])
    return Ranges(tuple(intervals), tuple(bases), needs, covered(needs, 1 + w.settings.buffer))


def _inference(served, intervals, bases, speed_basis: RangeBasis | None):
    """A batch job's output rate (its tokens_per_second's range); a latency's from its regime, inverted."""
    if served.mode == "batch" and served.output_tokens_per_second is not None and speed_basis is not None:
        intervals.append(("output_tokens_per_second", dict(intervals)["tokens_per_second"]))
        bases.append(("output_tokens_per_second", speed_basis))
    for quantity, regime in (("ttft_ms", "inference-prefill"), ("tpot_ms", "inference-decode")):
        value = getattr(served, quantity)
        if value is not None:
            b = _record(_basis(regime), inverse=True)
            intervals.append((quantity, interval(value, ms_figure(value), b.factors, ms_step(value))))
            bases.append((quantity, b))
    return intervals, bases


def inference_buffer(form: str, coverage: float) -> float:
    """buffer: auto of an inference workload planned from the estimate: a batch job's from the inference
    throughput regime; a service's 0 (its GPU-hours are its hours, whatever the speed)."""
    if form != "batch":
        return 0.0
    return buffer_for(need_factors("inference", "estimate", 1, 1), coverage)


def range_notes(r: Ranges, s, illustrative: bool = False) -> list[Note]:
    """The plan's words on its ranges: per basis, the quantities it gives and how wide; then the request's
    coverage (and, with buffer: auto, the coverage asked for). `illustrative`: the workload's pilot log is an
    example's, not a measurement (pilot.illustrative): the notes whose spread is that log's steps say so."""
    out: list[Note] = []
    grouped: dict[RangeBasis, list[str]] = {}
    for quantity, b in r.bases:
        grouped.setdefault(b, []).append(quantity)
    for b, quantities in grouped.items():
        regime = REGIMES.get(b.regime)
        out.append(note("range-basis", quantities=tuple(quantities), regime=b.regime,
                        what=regime.what if regime else None, short=regime.short if regime else None, rows=b.rows,
                        own_rows=b.own_rows, pooled=b.pooled, min_rows=MIN_ROWS, why=b.why or None,
                        low=b.factors[0], high=b.factors[1],
                        **({"illustrative": True} if illustrative and b.regime == "pilot-log" else {})))
    hours = r.basis("gpu_hours")
    out.append(note("request-coverage", ("nairr-guide",), buffer=s.buffer, coverage=r.request_coverage,
                    cases=hours.rows, basis=hours.regime, auto=s.coverage,
                    **({"illustrative": True} if illustrative and hours.regime == "pilot-log" else {})))
    return out
