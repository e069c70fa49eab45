"""What a number read from a pilot log must be before it is reported as a measurement.

Each number is checked where it is read (`checked`, so the message names the line): finite,
more than zero (a rate, a GPU count) or at least zero (a memory sample), whole where it
counts, and within the plausibility bounds of a workload file (proposalkit/bounds.py, the one
table; a log's rate is bounded as a `throughput:` typed by hand is). `check_result` checks
what is computed from them (a median × a sequence length, tokens ÷ a runtime) once more,
so no result holds an infinity, a zero rate or a count of 0 GPUs.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from ..bounds import BOUNDS, Bound
from ..units import SECONDS_PER_HOUR
from .common import PilotResult, fail

# Thousands separators as torchtitan prints them (`tps: 5,762`): groups of three digits only, so a
# decimal comma (`3,5`) is not a number rather than 35.
_GROUPED = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?")


def number(text: str) -> float:
    """A logged number: thousands separators allowed; inf, nan and text are no measurement
    (ValueError, reported as not a number); digits too many for a float give inf, which the
    checks below call implausibly large."""
    text = text.strip()
    if "," in text:
        if not _GROUPED.fullmatch(text):
            raise ValueError(text)
        text = text.replace(",", "")
    value = float(text)
    if math.isnan(value) or (math.isinf(value) and "n" in text.lower()):     # nan, inf, infinity
        raise ValueError(text)
    return value


class BadValue(Exception):
    """A logged number that is no measurement (negative, zero, fractional, implausibly large); the
    reader adds the file and line. Not a ValueError: that one means "not a number"."""


@dataclass(frozen=True)
class Expect:
    """What a logged number must be: more than 0 (at least 0 where `zero`: a memory sample, a token
    count at the start), whole where `whole`, at most `bound.high` (proposalkit/bounds.py, the one table);
    `noun` says it in a message."""

    bound: Bound
    noun: str
    zero: bool = False
    whole: bool = False


_PER_GPU = BOUNDS["tokens_per_second_per_gpu"]
_MOST_GPUS = BOUNDS["gpus"].high
# A whole job's rate: the per-GPU bound on the most GPUs there can be. A sample is at least one
# token, so samples per second share both bounds (as BOUNDS' samples share the token bound).
_WHOLE_JOB = Bound(0, _PER_GPU.high * _MOST_GPUS, "at most 10^13 per second for a whole job: 10^7 per GPU on "
                                                  "10^6 GPUs, the most a workload's throughput and GPU count may be")
PER_GPU_RATE = Expect(_PER_GPU, "a positive rate per GPU")
JOB_RATE = Expect(_WHOLE_JOB, "a positive rate")
GPU_COUNT = Expect(BOUNDS["gpus"], "a positive whole number of GPUs", whole=True)
TENSOR_PARALLEL = Expect(BOUNDS["tensor_parallel"], "a positive whole number", whole=True)
PIPELINE_PARALLEL = Expect(BOUNDS["pipeline_parallel"], "a positive whole number", whole=True)
SEQUENCE = Expect(BOUNDS["sequence"], "a positive whole number of tokens", whole=True)
# Megatron's global batch size: sequences per step, as a service's concurrent sequences are bounded.
BATCH = Expect(BOUNDS["batch"], "a positive whole number of sequences", whole=True)
TOKENS = Expect(BOUNDS["tokens"], "a token count, 0 or more", zero=True)
MEMORY = Expect(BOUNDS["gpu_memory"], "a memory size, 0 or more", zero=True)
# Durations: up to the hours bound (a pilot longer than a service kept up for 11 years is a slip).
_HOURS = BOUNDS["hours"]
DURATION = Expect(Bound(0, _HOURS.high * SECONDS_PER_HOUR, f"at most {_HOURS.high:,} hours, the most a workload's hours may be"),
                  "a positive time")
ELAPSED = Expect(DURATION.bound, "a time, 0 or more", zero=True)


def shown(raw) -> str:
    """A logged value as a message quotes it: as written, its start only when long; a JSON value in
    JSON's spelling (true, null), a number of 300 digits by its size."""
    if isinstance(raw, str):
        raw = raw.strip()
        return raw if len(raw) <= 40 else f"{raw[:24]}… ({len(raw):,} characters)"
    if isinstance(raw, (list, dict)):
        return "an array" if isinstance(raw, list) else "an object"
    if isinstance(raw, int) and not isinstance(raw, bool):
        return f"{raw:g}" if abs(raw) < 10**300 else f"a number of {len(str(abs(raw))):,} digits"
    if isinstance(raw, float):
        return f"{raw:g}"
    return json.dumps(raw)


def checked(raw, what: str, expect: Expect, scale: float = 1) -> float:
    """`raw` (a logged string, or a JSON number) × scale, checked against `expect`: ValueError when
    not a number, BadValue when no measurement. The bound applies to the scaled value (bytes, seconds)."""
    if isinstance(raw, str):
        value = number(raw)
    elif isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise ValueError(raw)
    elif isinstance(raw, int):
        value = float(raw) if abs(raw) < 10**300 else math.copysign(math.inf, raw)
    elif math.isnan(raw):
        raise ValueError(raw)
    else:
        value = raw
    bound = expect.bound
    if value < 0 or (value == 0 and not expect.zero):
        raise BadValue(f"{what} {shown(raw)} is {'negative' if value < 0 else 'zero'}, not a measurement; "
                       f"expected {expect.noun}")
    if expect.whole and math.isfinite(value) and not value.is_integer():
        raise BadValue(f"{what} {shown(raw)} is not a whole number; expected {expect.noun}")
    scaled = value * scale
    if not math.isfinite(scaled) or scaled > bound.high:
        raise BadValue(f"{what} {shown(raw)} is implausibly large; expected {bound.expected}")
    if scaled < bound.low and not (expect.zero and value == 0):
        raise BadValue(f"{what} {shown(raw)} is too small; expected {expect.noun}, {bound.expected}")
    return int(scaled) if expect.whole else scaled


_LOWEST_RATE = BOUNDS["tokens_per_second"]


def check_result(r: PilotResult) -> None:
    """What a reader computed from checked numbers, checked again (InputError naming the file)."""
    if r.gpus is not None and not (isinstance(r.gpus, int) and 1 <= r.gpus <= GPU_COUNT.bound.high):
        raise fail(r.path, f"{r.gpus} GPUs ({r.gpus_source}); expected {GPU_COUNT.noun}, {GPU_COUNT.bound.expected}")
    for label, value, expect in (("throughput", r.tokens_per_second, JOB_RATE),
                                 ("output throughput", r.output_tokens_per_second, JOB_RATE),
                                 ("total throughput", r.total_tokens_per_second, JOB_RATE),
                                 ("throughput per GPU", r.tokens_per_second_per_gpu, PER_GPU_RATE)):
        if value is None:
            continue
        if not math.isfinite(value) or value > expect.bound.high:
            raise fail(r.path, f"{label} {value:.3g} tokens/s ({r.method}) is implausibly large; expected "
                               f"{expect.bound.expected}")
        if value < _LOWEST_RATE.low:     # on one GPU as for a whole job: one token every 10 s is a slip
            raise fail(r.path, f"{label} {value:.3g} tokens/s ({r.method}) is implausibly small; expected "
                               f"{_LOWEST_RATE.reason.split(':')[0]}; check the unit is tokens per second")
    for statistic, value in r.peak_memory.items():
        if value > MEMORY.bound.high:
            raise fail(r.path, f"peak {statistic} memory {value:.3g} bytes is implausibly large; expected "
                               f"{MEMORY.bound.expected}")
    zero = [s for s, value in r.peak_memory.items() if value <= 0]
    for statistic in zero:
        del r.peak_memory[statistic]
        r.notes.append(f"peak {statistic} memory logged as 0: not reported")
