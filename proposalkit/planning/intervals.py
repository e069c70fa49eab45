"""Ranges as records: low / likely / high of a planned quantity, where they come from, and the arithmetic
on samples of residuals that makes them (pure; planning/ranges.py applies it to a workload plan).

An interval is the estimate (p50) times the 10th and 90th percentiles of its regime's residuals
(catalog/errors.py: measured ÷ planned); a quantity that is the inverse of a rate (hours, a latency) takes
the inverse residuals. Both are carried as printed (units.range_factors, range_ends): the percentiles
rounded outward to units.FACTOR_DECIMALS, the ends worked from the estimate as printed and those factors,
rounded outward to the figure's printed step, so that a reader redoes each end from printed figures.
Percentiles are interpolated between the sorted rows (Hyndman & Fan 1996 type 7, numpy's default and
Python's statistics.quantiles(method="inclusive")). The share of validated cases a request covers is
counted, not interpolated: the rows whose need is at most the request, ÷ all rows.

The total of a plan combines its workloads by one explicit rule: their errors are taken as fully
correlated (one planner, one bias: the workloads' needs rise and fall together), so the total's p10 and
p90 are the sums of the workloads' (as printed, added in decimal) and its need at any share u of cases is
the sum of each workload's need at u (comonotonic addition). It is the widest interval any dependence
gives, and it is computed exactly, without sampling: the outputs are byte-deterministic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ..units import decimal_sum, range_ends, range_factors

LOW, HIGH = 0.10, 0.90
# A share is "at most the request" up to this relative tolerance (floating point of the same product).
_TOLERANCE = 1e-9


def quantile(ascending: tuple[float, ...], p: float) -> float:
    """The p-quantile of sorted values, interpolated between neighbours (type 7)."""
    n = len(ascending)
    h = (n - 1) * p
    i = math.floor(h)
    if i + 1 >= n:
        return ascending[-1]
    return ascending[i] + (h - i) * (ascending[i + 1] - ascending[i])


def covered(factors: tuple[float, ...], requested_factor: float) -> float:
    """The share of cases whose need (p50 × factor) is at most the request (p50 × requested_factor)."""
    return sum(f <= requested_factor * (1 + _TOLERANCE) for f in factors) / len(factors)


def buffer_for(factors: tuple[float, ...], coverage: float) -> float:
    """The least buffer, in whole percent, whose request covers at least `coverage` of the cases: the
    ⌈coverage × n⌉-th smallest need factor, less 1, rounded up (never below 0)."""
    ascending = sorted(factors)
    k = max(1, math.ceil(coverage * len(ascending) - _TOLERANCE))
    return max(0.0, math.ceil((ascending[k - 1] - 1) * 100 - _TOLERANCE) / 100)


@dataclass(frozen=True)
class Interval:
    """Low, likely and high: the 10th percentile, the estimate itself, the 90th percentile."""

    p10: float
    p50: float
    p90: float

    def scaled(self, factor: float) -> "Interval":
        return Interval(self.p10 * factor, self.p50 * factor, self.p90 * factor)

    @property
    def width(self) -> float:
        """p90 ÷ p10 (1: no spread)."""
        return self.p90 / self.p10 if self.p10 else math.inf


def factors(residuals: tuple[float, ...], inverse: bool = False) -> tuple[float, float]:
    """The printed p10 and p90 factors of the residuals (units.range_factors: rounded outward); `inverse`: of a
    time, the inverse of the rate the residuals measure (its p10 is 1 ÷ their p90)."""
    ascending = tuple(sorted(residuals))
    low, high = quantile(ascending, LOW), quantile(ascending, HIGH)
    return range_factors(*((1 / high, 1 / low) if inverse else (low, high)))


def interval(p50: float, shown: float, printed: tuple[float, float], step: float, inverse: bool = False) -> Interval:
    """The estimate `p50` with its ends (units.range_ends): `shown`, the estimate as printed, × the printed factors,
    or ÷ them where `inverse` (hours from a rate), rounded outward to `step`."""
    low, high = range_ends(shown, printed, step, inverse)
    return Interval(low, p50, high)


@dataclass(frozen=True)
class RangeBasis:
    """Where one quantity's range comes from."""

    regime: str | None
    """The regime of catalog/errors.py whose rows give it; "pilot-log": the pilot log's own steady steps;
    None: no spread (a figure given, or set by a rule: a service's hours, an engine's memory reservation)."""
    rows: int
    """Rows (or a pilot log's steps) the percentiles are taken over."""
    ids: tuple[str, ...] = ()
    """The validation rows, by id (empty for a pilot log's steps or no spread)."""
    pooled: bool = False
    """The regime had too few rows of its own (catalog/errors.py MIN_ROWS): its set's pool was used."""
    own_rows: int = 0
    """The regime's own rows."""
    why: str = ""
    """For no spread: why (hours-given, engine-reservation)."""
    factors: tuple[float, float] = (1.0, 1.0)
    """The p10 and p90 factors as printed, of the first quantity it gives (tokens/s for the speed; the others it
    gives are that or its inverse)."""


@dataclass(frozen=True)
class Ranges:
    """One workload's ranges, where each comes from, and the chance its request suffices."""

    intervals: tuple[tuple[str, Interval], ...]
    """Quantity → its interval, in the plan JSON's order."""
    bases: tuple[tuple[str, RangeBasis], ...]
    """Quantity → where its interval comes from."""
    need_factors: tuple[float, ...]
    """The GPU-hours needed ÷ the estimate, one per validated case, ascending ((1.0,): no spread)."""
    request_coverage: float
    """The share of validated cases in which gpu_hours_requested covers the GPU-hours needed."""

    def get(self, quantity: str) -> Interval | None:
        return dict(self.intervals).get(quantity)

    def basis(self, quantity: str) -> RangeBasis | None:
        return dict(self.bases).get(quantity)


@dataclass(frozen=True)
class TotalRange:
    """The whole request's GPU-hours range and its chance to suffice (the workloads fully correlated)."""

    gpu_hours: Interval
    requested: float
    request_coverage: float


def total(workloads: list[tuple[float, float, Ranges]]) -> TotalRange | None:
    """(gpu_hours, gpu_hours_requested, ranges) of each workload → the total, by comonotonic addition (the
    module's rule). Workloads with the same need factors move as one, so they are summed first."""
    if not workloads:
        return None
    groups: dict[tuple[float, ...], float] = {}
    requested = 0.0
    for hours, asked, r in workloads:
        groups[r.need_factors] = groups.get(r.need_factors, 0.0) + hours
        requested += asked
    p10, p50, p90 = (decimal_sum(getattr(r.get("gpu_hours"), p) for _, _, r in workloads)
                     for p in ("p10", "p50", "p90"))
    # need(u) = Σ hours × the ⌈u·n⌉-th smallest factor: a step function of u, constant between the points k/n.
    points = sorted({Fraction(k, len(f)) for f in groups for k in range(1, len(f) + 1)})
    coverage = Fraction(0)
    for u in points:
        need = sum(hours * f[math.ceil(u * len(f)) - 1] for f, hours in groups.items())
        if need > requested * (1 + _TOLERANCE):
            break
        coverage = u
    return TotalRange(Interval(p10, p50, p90), requested, float(coverage))
