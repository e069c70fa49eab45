"""Pilot logs in the plan: two GPU counts → the scaling efficiency; each pilot against the estimate.

Scaling (two pilots of one GPU type on counts c1 < c2, whole-job rates R1, R2):
per-GPU rates p1 = R1/c1, p2 = R2/c2; scaling efficiency e = p2 ÷ p1 (1 = linear).
Rule, geometric in the GPU count: every factor c2/c1 more GPUs multiplies the per-GPU
rate by e, i.e. p(n) = p1 × e^(ln(n/c1) / ln(c2/c1)); for c2 = 2·c1 that is e per
doubling (the report also gives e per doubling for other pairs). Between the two counts this
interpolates; outside them the rule never gives more per GPU than the nearest
measured pilot: beyond the larger count an efficiency above 1 is taken as 1 (a
superlinear step, e.g. from memory freed by sharding, is not extrapolated), and below
the smaller count the per-GPU rate is held at the smaller pilot's when e < 1.
An under-estimate of the runtime is the error to avoid, hence the cap. Another GPU
type: the rate at n GPUs is then carried there as a single pilot is (speed.carried_throughput for
training, the memory bandwidths for inference).

Comparison: each pilot's measured rate and peak memory beside the estimate for the
pilot's own GPU type and count (the FLOPs rate at the default or given MFU; the memory
statistic the log measured: device, reserved, allocated; `active` is compared with
allocated, which it never exceeds). More than 25% apart (|measured ÷ estimate − 1| > 0.25)
draws a warning from `check` and a note under the report's pilot table; an estimate under the
measured memory is the worse case and is also a caveat of the plan.

This module holds the rules and the records the plan carries (Scaling, Comparison); the rate from
two pilots is speed.two_scale_throughput, and the estimates beside each pilot comparison.compare.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..input.pilots import PilotRun
from ..units import GiB

# Measured and estimated more than this apart (relative to the estimate) draws a warning
# (issue 14: "check warns when a pilot and the estimate disagree by more than 25%").
DISAGREEMENT = 0.25
# The estimate's key for each statistic a log measures (plan JSON `memory`).
ESTIMATE_STATISTIC = {"device": "device_bytes", "reserved": "reserved_bytes", "allocated": "allocated_bytes",
                      "active": "allocated_bytes"}
# What `check` adds to a pilot whose memory the estimate misses: the likely cause, for the author.
SETTINGS_HINT = "check the workload's settings match the pilot's (seq_len, micro_batch, checkpointing, ZeRO stage)"
SCALING_RULE = ("the per-GPU rate changes by the measured efficiency e for every factor c2/c1 more GPUs, "
                "p(n) = p1 × e^(ln(n/c1)/ln(c2/c1)), and is never above the nearest pilot's outside the measured "
                "counts")


def runs_of(w) -> tuple[PilotRun, ...]:
    return getattr(w.throughput, "runs", ()) if w.throughput is not None else ()


def measured_counts(w, gpu_id: str) -> set[int]:
    return {r.gpus for r in runs_of(w) if r.gpu == gpu_id}


@dataclass(frozen=True)
class Scaling:
    small: PilotRun     # on fewer GPUs
    large: PilotRun     # on more GPUs
    efficiency: float   # per-GPU rate at the larger count ÷ at the smaller
    per_doubling: float

    def per_gpu(self, n: int) -> float:
        c1, c2 = self.small.gpus, self.large.gpus
        p1, p2 = self.small.tokens_per_second / c1, self.large.tokens_per_second / c2
        span = math.log(c2 / c1)
        if n >= c2:
            return p2 * min(self.efficiency, 1.0) ** (math.log(n / c2) / span)
        if n <= c1:
            return p1 * min(1.0, 1 / self.efficiency) ** (math.log(c1 / n) / span)
        return p1 * self.efficiency ** (math.log(n / c1) / span)

    def text(self) -> str:
        s, b = self.small, self.large
        return (f"{s.tokens_per_second:,.0f} tokens/s on {s.gpus}× {s.gpu} ({s.log}) and "
                f"{b.tokens_per_second:,.0f} on {b.gpus}× ({b.log}): per GPU {s.tokens_per_second / s.gpus:,.0f} → "
                f"{b.tokens_per_second / b.gpus:,.0f}, scaling efficiency {self.efficiency:.3f} "
                f"({self.per_doubling:.3f} per doubling)")


def scaling(w) -> Scaling | None:
    runs = runs_of(w)
    if len(runs) != 2:
        return None
    small, large = sorted(runs, key=lambda r: r.gpus)
    e = (large.tokens_per_second / large.gpus) / (small.tokens_per_second / small.gpus)
    return Scaling(small, large, e, e ** (math.log(2) / math.log(large.gpus / small.gpus)))


@dataclass(frozen=True)
class Comparison:
    """One pilot beside the estimate for its own GPU type and count."""

    run: PilotRun
    estimate_tokens_per_second: float | None
    estimate_memory_bytes: int | None   # the statistic the log measured (ESTIMATE_STATISTIC)
    estimate_statistic: str | None      # plan JSON memory key compared with

    @property
    def throughput_ratio(self) -> float | None:
        e = self.estimate_tokens_per_second
        return self.run.tokens_per_second / e if e else None

    @property
    def memory_ratio(self) -> float | None:
        peak, e = self.run.peak_memory, self.estimate_memory_bytes
        return peak[1] / e if peak and e else None

    def caveats(self, name: str, usable_bytes: int | None = None) -> list[str]:
        """What puts the request at risk, for the plan's warnings and section B's caveats, as a statement: only
        an estimate under the measured memory by more than DISAGREEMENT (the plan uses the measured rate, so a
        rate that differs from the estimate changes nothing requested; it is listed with the pilot table and by
        check). `usable_bytes`: the planned GPU's usable memory, said beside the peak where the pilot ran on it."""
        m = self.memory_ratio
        if m is None or m <= 1 + DISAGREEMENT:
            return []
        r = self.run
        stat, peak = r.peak_memory
        text = (f"{name}: the pilot's peak memory, {peak / GiB:,.2f} GiB {stat} per GPU on {r.gpus}× {r.gpu}, is "
                f"{m:.2f}× the estimate of {self.estimate_memory_bytes / GiB:,.2f} GiB {stat}")
        if usable_bytes is not None:
            text += (f"; it is within the {r.gpu}'s {usable_bytes / GiB:,.2f} GiB usable" if peak <= usable_bytes
                     else f"; it is above the {r.gpu}'s {usable_bytes / GiB:,.2f} GiB usable")
        return [text]

    def warnings(self, name: str) -> list[str]:
        """Each measurement more than DISAGREEMENT from its estimate, as a statement (the pilot table's notes,
        `check`'s warnings and the plan JSON's; what to do about it is `check`'s to say: SETTINGS_HINT)."""
        r, out = self.run, []
        where = f"{name}: pilot {r.log} ({r.gpus}× {r.gpu}{', illustrative, not a measurement' if r.illustrative else ''})"
        t = self.throughput_ratio
        if t is not None and abs(t - 1) > DISAGREEMENT:
            out.append(f"{where} measured {r.tokens_per_second:,.0f} tokens/s, the FLOPs estimate gives "
                       f"{self.estimate_tokens_per_second:,.0f} (measured ÷ estimate {t:.2f}, more than "
                       f"{DISAGREEMENT:.0%} apart): the plan uses the measurement; the MFU assumed does not "
                       "describe this run")
        m = self.memory_ratio
        if m is not None and abs(m - 1) > DISAGREEMENT:
            stat, peak = r.peak_memory
            measured = f"{where} measured {peak / GiB:,.2f} GiB peak {stat} memory per GPU, the estimate is " \
                       f"{self.estimate_memory_bytes / GiB:,.2f} GiB (measured ÷ estimate {m:.2f})"
            if m > 1:
                out.append(f"{measured}: the estimate is under the measured peak, the worse case: a configuration "
                           "planned from the estimate may not fit")
            else:
                out.append(f"{measured}: the estimate is over the measured peak by more than {DISAGREEMENT:.0%} "
                           "(safe, but it may ask for more GPU memory than the run needs)")
        return out
