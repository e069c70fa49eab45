"""Units: decimal and binary byte sizes, suffixed numbers, bytes per dtype.

Everything inside the library is in base units (bytes, FLOPs, seconds).
GB is 10**9 bytes and GiB is 2**30 bytes (IEC 80000-13); the two are never
mixed up. Formatting for people happens in the report layer.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal
from fractions import Fraction

KB, MB, GB, TB = 10**3, 10**6, 10**9, 10**12
KiB, MiB, GiB, TiB = 2**10, 2**20, 2**30, 2**40

SECONDS_PER_HOUR = 3600

# Decimal multipliers for counts (tokens, parameters, samples): SI prefixes,
# written the way model cards write them ("7B", "2T", "16k").
COUNT_SUFFIXES = {
    "k": 10**3, "K": 10**3,
    "M": 10**6,
    "B": 10**9, "G": 10**9,
    "T": 10**12,
}

MEMORY_SUFFIXES = {
    "B": 1,
    "KB": KB, "MB": MB, "GB": GB, "TB": TB,
    "KiB": KiB, "MiB": MiB, "GiB": GiB, "TiB": TiB,
}

# Bits per stored element of each weight precision: the one table of bytes per
# dtype (memory, storage and the rules of thumb read it through
# bytes_per_element). int4 here is the bare 4 bits; group-wise scales are added
# by precision.quantized_weight_bits(), optimizer states there too.
# Sources: IEEE 754 (fp32 32, fp16 16), bfloat16 16, OCP FP8 8, int8/int4 by name.
PRECISION_BITS = {
    "fp32": 32,
    "bf16": 16,
    "fp16": 16,
    "fp8": 8,
    "int8": 8,
    "int4": 4,
}

_NUMBER = r"[+-]?(?:\d+(?:_\d+)*(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_COUNT_RE = re.compile(rf"^\s*({_NUMBER})\s*([kKMBGT]?)\s*$")
_MEMORY_RE = re.compile(rf"^\s*({_NUMBER})\s*([KMGT]i?B|B)\s*$")


def bytes_per_element(precision: str) -> Fraction | int:
    """Bytes per element, exactly: an int when whole (bf16 2), else a Fraction (int4 1/2, never 0).

    Whole values stay ints because int arithmetic is as exact and far faster.
    """
    bits = PRECISION_BITS[precision]
    return bits // 8 if bits % 8 == 0 else Fraction(bits, 8)


def parse_count(value: object) -> float:
    """A count that may carry a decimal suffix: 7B, 300B, 16k, 200M, 2T.

    Raises ValueError with a short reason on anything else (booleans,
    words, NaN, infinity). An internal helper: on user input, the schema's
    validators turn that ValueError into a Problem (exit 2); on the built-in
    catalogs it is a bug of ours.
    """
    if isinstance(value, bool):
        raise ValueError("a boolean is not a number")
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        match = _COUNT_RE.match(value)
        if not match:
            raise ValueError("not a number (suffixes: k, M, B, T)")
        number = float(match.group(1).replace("_", "")) * COUNT_SUFFIXES.get(match.group(2), 1)
    else:
        raise ValueError(f"a {type(value).__name__} is not a number")
    if not math.isfinite(number):
        raise ValueError("not a finite number")
    return number


def parse_memory(value: object) -> int:
    """A memory size in bytes: 80GB = 80·10^9, 80GiB = 80·2^30; a bare number is bytes.

    Read from the built-in catalogs only (ValueError there is a bug of ours); no
    workload field is a memory size today. A reader of user input must turn the
    ValueError into a Problem, as input/values._number does for parse_count.
    """
    if isinstance(value, bool):
        raise ValueError("a boolean is not a size")
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        match = _MEMORY_RE.match(value)
        if not match:
            raise ValueError("not a memory size (use e.g. 80GB or 80GiB)")
        number = float(match.group(1).replace("_", "")) * MEMORY_SUFFIXES[match.group(2)]
    else:
        raise ValueError(f"a {type(value).__name__} is not a size")
    if not math.isfinite(number):
        raise ValueError("not a finite number")
    return round(number)


# Hours and allocation units are shown with this many decimals everywhere (section B, the supplement, `plan`'s
# table, `check`): one figure, one rounding, so a reviewer finds the same number in each (issue 23).
HOURS_DECIMALS = 2
_HOURS_STEP = Decimal(1).scaleb(-HOURS_DECIMALS)


def shown(x: float) -> float:
    """Hours or an amount as the request prints it: rounded up to HOURS_DECIMALS, read from the float's
    shortest decimal form (47.996 → 48.00, 15.093 → 15.10; 48.00 stays 48.00), so a request is never below the
    product of its printed factors (an under-request is the worse error) and a reader who multiplies them and
    rounds up gets the printed figure."""
    return float(Decimal(repr(x)).quantize(_HOURS_STEP, rounding=ROUND_CEILING))


# A size in GiB is printed to this many decimals (render/format.fmt_gib): storage to the nearest 0.01 GiB
# (gib_shown), memory per GPU (section B, the supplement, `plan`'s table, `check`) rounded up to it (gib_up).
GIB_DECIMALS = 2


def gib_shown(n_bytes: int) -> Decimal:
    """A size in GiB as the documents print it (render/format.fmt_gib to 0.01), as a decimal to add and
    multiply: storage's totals are worked from these figures (estimate/storage.py)."""
    return Decimal(f"{n_bytes / GiB:.{GIB_DECIMALS}f}")


def bytes_of_gib(gib: Decimal) -> int:
    """Whole bytes whose GiB, printed to 0.01, is `gib` (a total worked from printed sizes)."""
    return int((gib * GiB).to_integral_value(rounding=ROUND_HALF_UP))


_GIB_STEPS = 10**GIB_DECIMALS


def gib_up(n_bytes: int) -> Decimal:
    """A memory figure in GiB as printed: rounded up to 0.01 GiB, never down (memory under-estimated is the
    worse error: a run planned on it may not fit), exactly in integers (20.151 GiB → 20.16, 20.15 stays 20.15)."""
    return Decimal(-(-n_bytes * _GIB_STEPS // GiB)).scaleb(-GIB_DECIMALS)


def memory_carried(n_bytes: int) -> int:
    """A memory figure as the plan carries it: the whole bytes of its printed GiB (gib_up, bytes_at_gib), never
    below `n_bytes`."""
    return bytes_at_gib(gib_up(n_bytes))


def bytes_at_gib(gib: Decimal) -> int:
    """The whole bytes carried for a memory figure printed as `gib` GiB: the most not above it (0.01 GiB is
    10,737,418.24 bytes), so gib_up gives the figure back and a sum of carried figures prints as the sum of their
    printed figures (each is less than a byte below its own; render/format.fmt_gib rounds to the nearest 0.01)."""
    return int((gib * GiB).to_integral_value(rounding=ROUND_FLOOR))


def memory_share(n_bytes: int, share: float | Fraction) -> int:
    """`share` of a memory figure as printed, rounded up as printed and carried (a reader takes 15% of the
    printed 17.43 GiB, 2.6145, and gets 2.62): the caching allocator's reserve on the allocated bytes."""
    factor = Decimal(repr(share)) if isinstance(share, float) else Decimal(share.numerator) / share.denominator
    return bytes_at_gib((gib_up(n_bytes) * factor).quantize(Decimal(1).scaleb(-GIB_DECIMALS), ROUND_CEILING))


# A millisecond figure is printed to 0.1 ms from this many up, else to three significant digits; a rate to whole
# tokens/s from this many up, else to three significant digits. Each rule is written once: the `_shown` figure
# (what the products are worked from) and the `_text` (what is printed) both read it.
MS_TENTHS_FROM = 10
RATE_WHOLE_FROM = 100


def ms_shown(seconds: float) -> float:
    """A duration as printed in milliseconds (0.1 ms from MS_TENTHS_FROM up, else three significant digits), in
    seconds: a training step's rate is worked from this figure (estimate/step_time.py)."""
    return ms_figure(seconds * 1e3) / 1e3


def ms_figure(ms: float) -> float:
    """A duration in milliseconds as printed, in milliseconds (ms_shown's rule): a latency's range starts from it."""
    return float(f"{ms:.1f}" if ms >= MS_TENTHS_FROM else f"{ms:.3g}")


def ms_text(seconds: float) -> str:
    """A duration in milliseconds as the derivations print it: ms_shown's figure, '443.0 ms', '0.123 ms'."""
    return f"{ms_number(seconds * 1e3)} ms"


def ms_number(ms: float) -> str:
    """A duration given in milliseconds as printed, without the unit (ms_figure's rule): '371.7', '0.123'. A
    latency reads the same in the settings line, its derivation and `plan`'s table."""
    figure = ms_figure(ms)
    return f"{figure:,.1f}" if ms >= MS_TENTHS_FROM else f"{figure:.3g}"


def rate_shown(tokens_per_second: float) -> float:
    """A rate (tokens/s) as printed: whole numbers from RATE_WHOLE_FROM up (half up, from the float's shortest
    decimal form, as a reader rounds 12,269.5), else three significant digits. A run's hours are worked from this
    figure (estimate/flops.runtime_hours)."""
    if tokens_per_second >= RATE_WHOLE_FROM:
        return float(Decimal(repr(tokens_per_second)).to_integral_value(rounding=ROUND_HALF_UP))
    return float(f"{tokens_per_second:.3g}")


def rate_text(tokens_per_second: float) -> str:
    """A rate as printed (render/format.fmt_rate): rate_shown's figure, '18,493', '12.3'."""
    shown_rate = rate_shown(tokens_per_second)
    return f"{shown_rate:,.0f}" if tokens_per_second >= RATE_WHOLE_FROM else f"{shown_rate:.3g}"


# A ratio that carries a rate to other GPUs (planning/speed.py carried_throughput, estimate/flops.scale_pilot) is
# printed to this many decimals, rounded half up, and the carried rate is the measured rate as printed × it.
RATIO_DECIMALS = 3


def ratio_shown(numerator: float, denominator: float = 1.0) -> float:
    """A carrying ratio numerator ÷ denominator as printed: worked in decimal, to RATIO_DECIMALS decimals, half up
    (17,497 ÷ 4,420 = 3.95860… is 3.959)."""
    x = Decimal(repr(numerator)) / Decimal(repr(denominator))
    return float(x.quantize(Decimal(1).scaleb(-RATIO_DECIMALS), rounding=ROUND_HALF_UP))


def ratio_text(x: float) -> str:
    """A carrying ratio as printed ('3.959'): ratio_shown's figure."""
    return f"{ratio_shown(x):.{RATIO_DECIMALS}f}"


def pct_text(fraction: float) -> str:
    """A fraction as a percentage: 0.3 → '30%', 0.125 → '12.5%' (the documents' buffers and shares, and the
    charge lines' buffer)."""
    value = fraction * 100
    return f"{value:.0f}%" if abs(value - round(value)) < 1e-9 else f"{value:.1f}%"


DAYS_DECIMALS = 1        # calendar days are printed to a tenth of a day (render/format.fmt_days)
HOURS_PER_DAY = 24


def days_shown(hours: float) -> float:
    """`hours` of calendar time as the days printed: hours ÷ 24 worked in decimal and rounded half up to
    DAYS_DECIMALS (183.6 h is 7.65 days and reads 7.7, as a reader rounds 10 × 18.36 h ÷ 24, not the binary
    7.6499…). Calendar time is no request, so it is rounded as read, not up."""
    days = Decimal(repr(hours)) / HOURS_PER_DAY
    return float(days.quantize(Decimal(1).scaleb(-DAYS_DECIMALS), rounding=ROUND_HALF_UP))


def decimal_sum(figures) -> float:
    """The sum of printed figures, worked in decimal (7.7 + 0.8 + 6.6 + 20.8 is 35.9, not 35.900000000000006)."""
    return float(sum((Decimal(repr(f)) for f in figures), Decimal(0)))


def days_total(days) -> float:
    """The sum of printed calendar days (decimal_sum)."""
    return decimal_sum(days)


def product(*factors: float) -> float:
    """The exact decimal product of printed factors (2 GPUs × 9.23 h × 1.3 × 2 runs is 47.996), so that `shown`
    of it is what a reader gets multiplying the same figures by hand."""
    out = Decimal(1)
    for f in factors:
        out *= Decimal(repr(f))
    return float(out)


def hours_per_run(hours: float) -> float:
    """A run's hours as the plan carries and the documents print them: rounded up to 0.01 h (36 s), never
    down (an under-estimate is the worse error, and a short run rounded down would look cheaper on more
    GPUs). The request's products start from this figure, so a reviewer who multiplies the printed numbers
    gets the printed result."""
    if hours <= 0:
        return hours
    return shown(hours)


def requested_per_run(hours: float, buffer: float) -> float:
    """Hours requested per run: the printed hours per run × (1 + buffer), worked in decimal and not rounded
    again (9.23 × 1.3 is 11.999, not the binary 11.998999…)."""
    return product(hours_per_run(hours), float(1 + Decimal(repr(buffer))))


def requested_gpu_hours(hours: float, buffer: float, gpus: int, runs: int) -> float:
    """GPU-hours requested: hours per run × (1 + buffer) × GPUs × runs, rounded up as printed (`shown`)."""
    return shown(product(requested_per_run(hours, buffer), gpus, runs))


# A range (planning/ranges.py) prints its factors, the 10th and 90th percentiles of the estimate's validated error
# (measured ÷ planned), to this many decimals, rounded outward: the p10 down, the p90 up. Its ends are the estimate
# as printed × those printed factors (÷ them for the hours a rate gives, which are its inverse), worked in decimal,
# the low end rounded down and the high end up to the figure's printed step. So a reader who multiplies the printed
# figures and rounds outward gets the printed range, and the printed range holds the unrounded one (issue 23).
FACTOR_DECIMALS = 3


def _outward(x: Decimal, step: Decimal, up: bool) -> Decimal:
    return x.quantize(step, rounding=ROUND_CEILING if up else ROUND_FLOOR)


def rounded_outward(x: float, decimals: int, up: bool) -> float:
    """`x` to `decimals`, rounded up (a range's high end) or down (its low end), from its shortest decimal form: a
    range printed shorter than the plan carries it still holds it (review/diff.py's 0.1 GPU-h)."""
    return float(_outward(Decimal(repr(x)), Decimal(1).scaleb(-decimals), up))


def range_factors(low: float, high: float) -> tuple[float, float]:
    """A range's p10 and p90 factors as printed: to FACTOR_DECIMALS, the p10 rounded down, the p90 up."""
    step = Decimal(1).scaleb(-FACTOR_DECIMALS)
    low_shown = max(_outward(Decimal(repr(low)), step, False), step)      # never 0: the hours divide by it
    return float(low_shown), float(_outward(Decimal(repr(high)), step, True))


def factor_text(x: float) -> str:
    """A range's factor as printed: FACTOR_DECIMALS decimals ('1.137')."""
    return f"{x:.{FACTOR_DECIMALS}f}"


def range_ends(value: float, factors: tuple[float, float], step: float, inverse: bool = False) -> tuple[float, float]:
    """The low and high ends of a range (the rule above): `value` (the estimate as printed) × the printed factors, or
    ÷ them where `inverse` (hours from a rate: the high factor gives the low end), rounded outward to `step`."""
    low, high = (Decimal(repr(f)) for f in factors)
    v, q = Decimal(repr(value)), Decimal(repr(step)).normalize()
    a, b = (v / high, v / low) if inverse else (v * low, v * high)
    return float(_outward(a, q, False)), float(_outward(b, q, True))


def hours_step() -> float:
    """The step hours and amounts are printed to (HOURS_DECIMALS)."""
    return float(_HOURS_STEP)


def rate_step(tokens_per_second: float) -> float:
    """The step a rate is printed to (rate_shown): 1 token/s from RATE_WHOLE_FROM up, else its third significant
    digit."""
    if tokens_per_second >= RATE_WHOLE_FROM or tokens_per_second <= 0:
        return 1.0
    return 10.0 ** (math.floor(math.log10(tokens_per_second)) - 2)


def ms_step(ms: float) -> float:
    """The step a duration in milliseconds is printed to (ms_shown): 0.1 ms from MS_TENTHS_FROM up, else its third
    significant digit."""
    if ms >= MS_TENTHS_FROM or ms <= 0:
        return 0.1
    return 10.0 ** (math.floor(math.log10(ms)) - 2)
