"""What every pilot-log reader shares: the result record, the warm-up rule, errors.

Logs are streamed line by line (never read whole); a per-step reader keeps one
8-byte float per logged step (array 'd') and a running maximum per memory
statistic, so memory grows with the number of logged steps, not with the size
of the file.
"""

from __future__ import annotations

import math
import re
from itertools import islice
from array import array
from dataclasses import dataclass, field

from ..errors import InputError, Problem
from ..units import GiB, MiB

# Warm-up rule: the first max(1, ceil(10%)) logged steps are excluded. The first
# steps carry one-off costs (CUDA context and allocator growth, torch.compile,
# data-loader start); torchtitan's and torchtune's own guides warn that the first
# steps' tps/mfu are not representative, without a fixed count. A fixed fraction
# is stated, reproducible by hand, and needs no threshold tuned to one framework.
WARMUP_FRACTION = 0.10
WARMUP_RULE = "the first max(1, ceil(10% of logged steps)) steps"
# At least this many steady steps after warm-up, else there is no steady state to
# report: a median of fewer would be one or two noisy samples.
MIN_STEADY_STEPS = 3

# The statistic that must fit first: whole device, then reserved, allocated, active
# (CONTRACT.md, `pilot --format json`).
STATISTIC_ORDER = ("device", "reserved", "allocated", "active")

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

UNIT_BYTES = {"GiB": GiB, "MiB": MiB, "MB=MiB": MiB, "GB=GiB": GiB, "bytes": 1}


def warmup_count(steps: int) -> int:
    return max(1, math.ceil(steps * WARMUP_FRACTION))


@dataclass
class PilotResult:
    path: str
    format: str
    token_definition: str = ""
    tokens_per_second: float | None = None
    tokens_per_second_per_gpu: float | None = None
    gpus: int | None = None
    gpus_source: str = ""
    output_tokens_per_second: float | None = None
    total_tokens_per_second: float | None = None
    steps_logged: int | None = None
    warmup_steps: int | None = None
    steps_used: int | None = None
    method: str = ""            # how the steady figure was computed, in words
    step_ratios: tuple[float, ...] = ()     # percentiles 0-100 of the steady steps' rates ÷ their median
    peak_memory: dict[str, int] = field(default_factory=dict)   # statistic -> bytes
    notes: list[str] = field(default_factory=list)

    def peak(self) -> tuple[str, int] | None:
        for stat in STATISTIC_ORDER:
            if stat in self.peak_memory:
                return stat, self.peak_memory[stat]
        return None


def fail(path: str, message: str, line: int | None = None) -> InputError:
    return InputError([Problem(path, line, "", message)])


class StepSeries:
    """Per-step throughput values, kept compactly; the steady figure is their median.

    A resumed run appended to its log (the step number falls back: the run restarted from a
    checkpoint) is read as segments, each a process of its own with its own warm-up: the warm-up
    rule is applied to each segment, and the median is over the steps every segment keeps."""

    def __init__(self) -> None:
        self.values = array("d")
        self.memory: dict[str, float] = {}
        self.restarts: list[tuple[int, int]] = []   # (index of the segment's first value, its line)
        self._last_step: int | None = None

    def add(self, value: float, step: int | None = None, lineno: int = 0) -> None:
        if step is not None:
            if self._last_step is not None and step <= self._last_step and len(self.values):
                self.restarts.append((len(self.values), lineno))
            self._last_step = step
        self.values.append(value)

    def memory_max(self, statistic: str, value_bytes: float) -> None:
        if value_bytes > self.memory.get(statistic, -1):
            self.memory[statistic] = value_bytes

    def steady(self, path: str, result: PilotResult, what: str) -> float:
        """Median of the steps after warm-up (in each segment); fills the step counts in `result`."""
        n = len(self.values)
        if n == 0:
            raise fail(path, f"no {what} found: expected {result.format} step lines")
        segments = steady_segments(path, n, self.restarts, result)
        result.method = f"median of the {result.steps_used} steps after warm-up"
        result.peak_memory = {s: int(round(b)) for s, b in self.memory.items()}
        if not self.restarts:
            kept, start = self.values, result.warmup_steps
        else:
            kept, start = array("d"), 0
            for _, first, end in segments:
                kept.extend(islice(self.values, first, end))
            result.method += f" of each of its {len(segments)} segments"
            result.notes.append(resumed_note(len(segments), "the step number falls back", self.restarts))
        middle = median(kept, start)
        if not result.step_ratios:      # a reader with two series (Lightning's device rate) keeps the first's
            result.step_ratios = step_ratios(kept, start, middle)
        return middle


# The step spread is read off at most this many steady steps, taken at an even stride through a longer run
# (a sorted list of them: 65,536 × 32 bytes).
_SPREAD_STEPS = 65536


def step_ratios(values: array, start: int, middle: float) -> tuple[float, ...]:
    """Percentiles 0, 1, …, 100 of values[start:] ÷ `middle` (their median): the step-to-step spread a range
    is taken from (planning/ranges.py), interpolated between the sorted steps (type 7)."""
    n = len(values) - start
    if n <= 0 or middle <= 0:
        return ()
    stride = -(-n // _SPREAD_STEPS)
    steps = sorted(islice(values, start, None, stride))
    last = len(steps) - 1
    out = []
    for k in range(101):
        h = last * k / 100
        i = int(h)
        value = steps[i] if i >= last else steps[i] + (h - i) * (steps[i + 1] - steps[i])
        out.append(round(value / middle, 6))
    return tuple(out)


def steady_segments(path: str, n: int, restarts: list[tuple[int, int]], result: PilotResult) -> list[tuple[int, int, int]]:
    """(first, first after warm-up, end) of each segment of n logged steps split at `restarts` (index,
    line); the step counts filled in `result`. No steady state is an input error."""
    bounds = [0] + [i for i, _ in restarts] + [n]
    segments = [(begin, begin + warmup_count(end - begin), end) for begin, end in zip(bounds, bounds[1:])]
    k = sum(first - begin for begin, first, _ in segments)
    if n - k < MIN_STEADY_STEPS:
        raise fail(path, f"no steady state: {n} logged step(s), {k} of them warm-up; expected at least "
                         f"{k + MIN_STEADY_STEPS} logged steps ({MIN_STEADY_STEPS} after warm-up)")
    result.steps_logged, result.warmup_steps, result.steps_used = n, k, n - k
    return segments


def resumed_note(segments: int, sign: str, restarts: list[tuple[int, int]]) -> str:
    lines = [line for _, line in restarts]
    where = ", ".join(str(line) for line in lines[:5]) + (f" and {len(lines) - 5} more" if len(lines) > 5 else "")
    return (f"a resumed run: {segments} segments ({sign} at line{'s' if len(lines) > 1 else ''} {where}); "
            f"each segment's warm-up excluded ({WARMUP_RULE} of each)")


# A median of steps is found by narrowing histograms, never sorting them all: a list of
# n Python floats costs 32 bytes each (sorted() of 5.6 million steps: 180 MB), the array 8.
_BUCKETS = 4096
_SORT_AT_MOST = 65536


def median(values: array, start: int) -> float:
    """Median of values[start:], in memory bounded by the array itself."""
    n = len(values) - start
    if n % 2:
        return _select(values, start, n // 2)
    return (_select(values, start, n // 2 - 1) + _select(values, start, n // 2)) / 2


def _select(values: array, start: int, rank: int) -> float:
    """The rank-th smallest (from 0) of values[start:]. lo and hi are always values of the
    array, so each round's bucket (its own smallest and largest value) is strictly narrower."""
    lo, hi = min(islice(values, start, None)), max(islice(values, start, None))
    while lo != hi:
        width = (hi - lo) / _BUCKETS
        if width == 0:      # lo and hi a few denormals apart: sort what lies between
            return sorted(v for v in islice(values, start, None) if lo <= v <= hi)[rank - sum(
                1 for v in islice(values, start, None) if v < lo)]

        def bucket(v: float) -> int:
            return min(int((v - lo) / width), _BUCKETS - 1)

        counts, below = [0] * _BUCKETS, 0
        for v in islice(values, start, None):
            if v < lo:
                below += 1
            elif v <= hi:
                counts[bucket(v)] += 1
        rank_in = rank - below
        for b, count in enumerate(counts):
            if rank_in < count:
                break
            rank_in -= count
        members = [] if count <= _SORT_AT_MOST else None
        new_lo, new_hi = hi, lo
        for v in islice(values, start, None):
            if lo <= v <= hi and bucket(v) == b:
                if members is not None:
                    members.append(v)
                new_lo, new_hi = min(new_lo, v), max(new_hi, v)
        if members is not None:
            members.sort()
            return members[rank_in]
        lo, hi = new_lo, new_hi
    return lo
