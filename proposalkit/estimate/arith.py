"""Exact arithmetic and argument checks shared by the estimate modules.

Inside the arithmetic, bytes per element are exact fractions (int4 is 1/2
byte, NF4 with its constants 4.127/8) and each component is rounded up once,
at the end.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

# Pure functions of a (frozen, hashable) model and setup are memoized: a
# proposal repeats models and setups (sweeps, variants), `check` and `diff`
# plan the same workloads again, and the planner tries several GPU counts.
# Their results are frozen dataclasses or tuples, safe to share.
memo = functools.lru_cache(maxsize=1024)


def ceil(value: Fraction | int) -> int:
    return math.ceil(value)


def exact(numerator: int, denominator: int = 1) -> Fraction | int:
    """numerator/denominator exactly: an int when whole (int arithmetic is far
    faster than Fraction and just as exact), else a Fraction."""
    return numerator // denominator if numerator % denominator == 0 else Fraction(numerator, denominator)


@functools.lru_cache(maxsize=64)
def fraction(x: float) -> Fraction:
    # Through the decimal text, so 0.1 is exactly 1/10 and not its binary neighbour.
    return Fraction(str(x))


def check_positive(value: int, what: str) -> None:
    if type(value) is int and value > 0:   # the common case, checked first (bool is not int here)
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what}: expected a positive integer, got {value!r}")


def fmt_bytes_per_param(x: Fraction | int) -> str:
    """A bytes-per-parameter figure in a note: whole numbers as they are, else 4 significant digits."""
    return str(x.numerator) if x.denominator == 1 else f"{float(x):.4g}"
