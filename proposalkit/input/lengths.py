"""A batch job's request lengths given as a distribution (input_tokens: {mean: 220, p50: 120, p99: 1400}).

A median below the mean (lengths skewed to the right, as chat prompts and answers are) is read as a lognormal,
fitted to the mean and the median (σ² = 2 ln(mean ÷ p50)); a mean and p99 alone likewise (ln p99 = μ + z₉₉σ with
mean = e^(μ + σ²/2)). A median at the mean (within SYMMETRIC) with a p99 is read as uniform between 2·mean − b and
b, b from the p99 (p99 = a + 0.99 (b − a)): the spread benchmarks' random datasets draw (SGLang bench_serving
random: lengths drawn uniformly up to --random-input / --random-output, from 1 at --random-range-ratio 0). Either is
read as LENGTH_POINTS equally likely lengths (its quantiles at the midpoints (k + ½) ÷ n), scaled so that their mean
is the mean given (the job's token count is the user's). What the spread costs: estimate/lengths.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from ..errors import Problem
from .schema import Lengths
from .source import field_name

# Equally likely lengths a distribution is read as (quantiles at the midpoints): enough that the tail's share of
# E[o²] is kept (the top point is the 99.75th percentile).
LENGTH_POINTS = 200
_Z99 = NormalDist().inv_cdf(0.99)
# A median within this share of the mean is a symmetric spread (read as uniform where a p99 is given).
SYMMETRIC = 0.03


class LengthError(ValueError):
    """Statistics that no lognormal length distribution has (a median at or above the mean, a p99 below it)."""


@dataclass(frozen=True)
class LengthStats:
    """A length distribution as the workload gives it: the mean, and the median and/or 99th percentile."""

    mean: float
    p50: float | None = None
    p99: float | None = None

    @property
    def symmetric(self) -> bool:
        """A median at the mean with a p99 beyond it: read as uniform."""
        return (self.p50 is not None and self.p99 is not None and self.p99 > self.mean
                and abs(self.p50 - self.mean) <= SYMMETRIC * self.mean)

    @property
    def uniform_top(self) -> float:
        """b of the uniform on [2·mean − b, b] whose 99th percentile is the p99: b = (p99 − 0.02·mean) ÷ 0.98."""
        return (self.p99 - 0.02 * self.mean) / 0.98

    @property
    def sigma(self) -> float:
        """The lognormal's σ: from the mean and p50 where the p50 is given, else from the mean and p99; 0 (every
        request the mean) where neither is, or where the spread is symmetric (read as uniform)."""
        if self.p99 is not None and self.p50 is not None and self.p99 < self.p50:
            raise LengthError(f"a p99 ({self.p99:g}) below the median ({self.p50:g}) (expected p99 at least p50)")
        if self.p99 is not None and self.p99 < self.mean:
            raise LengthError(f"a p99 ({self.p99:g}) below the mean ({self.mean:g}) (expected p99 at least "
                              "the mean)")
        if self.symmetric:
            return 0.0
        if self.p50 is not None:
            if self.p50 > self.mean:
                raise LengthError(f"a median ({self.p50:g}) above the mean ({self.mean:g}): request lengths are "
                                  "skewed to the right (expected p50 at most the mean)")
            return math.sqrt(2 * math.log(self.mean / self.p50))
        if self.p99 is not None:
            # ln(p99 ÷ mean) = z·σ − σ²/2: the smaller root, where the p99 rises with σ.
            reach = _Z99 ** 2 - 2 * math.log(self.p99 / self.mean)
            if reach < 0:
                raise LengthError(f"a p99 ({self.p99:g}) too far above the mean ({self.mean:g}) for a lognormal "
                                  "(expected p99 at most about 15 × the mean; give p50 as well)")
            return _Z99 - math.sqrt(reach)
        return 0.0

    def points(self, most: int | None = None) -> tuple[float, ...]:
        """LENGTH_POINTS equally likely lengths, at least 1 and at most `most`, their mean the given mean."""
        sigma, n = self.sigma, LENGTH_POINTS
        if self.symmetric:
            top = self.uniform_top
            low = 2 * self.mean - top
            raw = [low + (top - low) * (k + 0.5) / n for k in range(n)]
        elif sigma == 0:
            return (float(self.mean),)
        else:
            mu = math.log(self.mean) - sigma ** 2 / 2
            raw = [math.exp(mu + sigma * NormalDist().inv_cdf((k + 0.5) / n)) for k in range(n)]
        scale = self.mean / (sum(raw) / n)
        return tuple(min(max(1.0, x * scale), most or math.inf) for x in raw)


def length_stats(workload, index: int, source):
    """A batch job's lengths given as {mean, p50, p99}: the workload with their means as input_tokens and
    output_tokens, the distributions (estimate/lengths.py), and the problems (a distribution outside a batch job,
    statistics no lognormal has), each with its line."""
    stats, problems = [], []
    for name in ("input_tokens", "output_tokens"):
        value = getattr(workload, name)
        if not isinstance(value, Lengths):
            stats.append(None)
            continue
        at = ("workloads", index, name)
        one = LengthStats(value.mean, value.p50, value.p99)
        try:
            one.sigma
        except LengthError as error:
            problems.append(Problem(source.path, source.line(at), field_name(at), str(error)))
        if workload.requests is None:
            problems.append(Problem(source.path, source.line(at), field_name(at),
                                    "a length distribution applies to a batch job (expected requests beside it, "
                                    "or a single number of tokens)"))
        stats.append(one)
    if stats == [None, None]:
        return workload, (None, None), problems
    means = {name: round(s.mean) for name, s in zip(("input_tokens", "output_tokens"), stats) if s is not None}
    return workload.model_copy(update=means), tuple(stats), problems
