"""The wait of a service's prompts for the prefills ahead of them: the M/D/1 queue's waiting time.

Prompts arrive as a Poisson stream at `rate` per replica and are prefilled one after another in S
seconds each (one prompt's prefill), first come first served: an M/D/1 queue of load u = rate × S.
Its waiting time W is known exactly (Erlang 1909; Crommelin 1932; Franx 2001, Oper. Res. Letters 29,
eq. for c = 1):

    P(W ≤ t) = (1 − u) Σ_{k=0}^{⌊t/S⌋} [λ(kS − t)]^k / k! · e^{−λ(kS − t)}

The sum alternates in sign and its terms grow like e^{2u·t/S} while it stays below 1, so it is summed
here in decimal arithmetic carrying as many digits as the largest term needs plus GUARD_DIGITS. Past
EXACT_TERMS terms the cost grows as the square of the terms; there Lundberg's inequality
P(W > t) ≤ e^{−θt} (an upper bound of the quantile, so safe) stands in, and the plan says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, localcontext

# Terms of the sum (⌊t/S⌋ + 1) evaluated at most: 300 prefills of wait. At 300 terms one evaluation
# takes about 2 ms (and ~180 digits); the quantile's bisection about 40 of them. Beyond it the
# Lundberg bound is used, which there is within 0.2% of the exact quantile (the bound's excess,
# ln(1/C)/θ with C < 1 the Cramér–Lundberg constant, stays put while the quantile grows: at u = 0.99,
# p99, exact 229.16 S against the bound's 229.49 S; tests/test_serving_exact.py).
EXACT_TERMS = 300
# Digits carried beyond the largest term's: the sum of up to EXACT_TERMS + 1 terms, each rounded
# at 10^-(digits) of the largest, is then exact to far below the 1e-12 the quantile is bisected to.
GUARD_DIGITS = 25
# The quantile is bisected until its bracket is this fraction of the wait, or of S for waits below S
# (the upper end kept).
RELATIVE_TOLERANCE = 1e-12


@dataclass(frozen=True)
class Wait:
    """The `percentile`'s wait for the prefills ahead, and how it was found."""

    seconds: float
    method: str          # "idle": u ≤ 1 − q, no wait; "exact": the M/D/1 distribution; "bound": Lundberg's
    theta: float = 0.0   # per second, for "bound": θ of rate·(e^{θS} − 1) = θ


def waiting_probability(load: float, prefills: float) -> float:
    """P(W ≤ t) of the M/D/1 queue at load u = λS, t = `prefills` × S: the Erlang–Crommelin sum above,
    in units of S (λ(kS − t) = u(k − t/S)). For ⌊t/S⌋ ≥ EXACT_TERMS a ValueError: the caller bounds."""
    if prefills < 0:
        return 0.0
    if load <= 0:
        return 1.0
    n = math.floor(prefills)
    if n >= EXACT_TERMS:
        raise ValueError(f"{n + 1} terms: past EXACT_TERMS = {EXACT_TERMS}; use the Lundberg bound")
    # Written as (1 − u) e^{u·τ} Σ_k (−1)^k [u(τ − k)]^k e^{−u·k} / k!, τ = t/S: two exponentials in all.
    # The largest |term| of the sum, e^{u·τ} included, in decimal digits, sets the digits carried.
    largest = max(load * (prefills - k) + k * math.log(load * (prefills - k)) - math.lgamma(k + 1)
                  for k in range(1, n + 1) if prefills > k) if n >= 1 else 0.0
    digits = max(load * prefills, largest) / math.log(10) + math.log10(n + 1)
    with localcontext() as context:
        context.prec = max(0, math.ceil(digits)) + GUARD_DIGITS
        u, tau = Decimal(load), Decimal(prefills)
        shrink, factor, factorial = (-u).exp(), Decimal(1), Decimal(1)
        total = Decimal(1)                                  # k = 0
        for k in range(1, n + 1):
            factor *= shrink
            factorial *= k
            term = (u * (tau - k)) ** k * factor / factorial
            total += -term if k % 2 else term
        return float((1 - u) * total * (u * tau).exp())


def lundberg_theta(rate: float, prefill_s: float) -> float:
    """θ > 0 with rate·(e^{θS} − 1) = θ, S the prefill time, for u = rate·S < 1: the adjustment
    coefficient of the M/D/1 prefill queue. Returned from below (bisection keeps the lower end), so
    the tail bound exp(−θt) it gives is never smaller than the exact root's."""
    rho = rate * prefill_s
    # In x = θ·S: f(x) = ρ(eˣ − 1) − x is 0 at 0, falls (f'(0) = ρ − 1 < 0), is convex: one root x* > 0.
    low, high = 0.0, 1.0
    while rho * math.expm1(high) <= high:
        high *= 2
    for _ in range(200):
        mid = (low + high) / 2
        if (mid == low and low > 0) or mid == high:
            break       # one double wide: each further step tests an end again and keeps it (same low)
        if rho * math.expm1(mid) < mid:
            low = mid
        else:
            high = mid
    return low / prefill_s


def _bound(rate: float, prefill_s: float, tail: float) -> tuple[float, float]:
    """(−ln(tail)/θ, θ): Lundberg's inequality, the M/G/1 waiting time being the ruin probability of
    the compound Poisson risk process with claims S (Asmussen & Albrecher 2010, Ruin Probabilities,
    ch. I and IV): P(W > t) ≤ e^{−θt}."""
    theta = lundberg_theta(rate, prefill_s)
    return -math.log(tail) / theta, theta


def prefill_wait(rate: float, prefill_s: float, percentile: float) -> Wait:
    """The `percentile` of the time a prompt waits for the prefills ahead of it (an M/D/1 queue).

    W is 0 with probability 1 − u (a Poisson arrival finds the server idle with the probability it is
    idle; Kleinrock 1975, Queueing Systems I, ch. 5), so the quantile q is 0 where u ≤ 1 − q. Else it
    is found by bisection on t of waiting_probability() = q within [0, the Lundberg bound], keeping the
    upper end (never below the true quantile); where the bound is past EXACT_TERMS prefills, the bound."""
    q = percentile / 100
    if rate * prefill_s <= 1 - q:
        return Wait(0.0, "idle")
    bound, theta = _bound(rate, prefill_s, 1 - q)
    if bound / prefill_s >= EXACT_TERMS:
        return Wait(bound, "bound", theta)
    load, low, high = rate * prefill_s, 0.0, bound / prefill_s
    if waiting_probability(load, high) < q:      # not reached (the bound holds): keep the bound
        return Wait(bound, "bound", theta)
    while high - low > RELATIVE_TOLERANCE * max(high, 1.0):     # in prefills: ≤ 1e-12 S near 0
        mid = (low + high) / 2
        if waiting_probability(load, mid) >= q:
            high = mid
        else:
            low = mid
    return Wait(high * prefill_s, "exact")


def wait_at_most(rate: float, prefill_s: float, percentile: float, seconds: float) -> bool:
    """prefill_wait(rate, prefill_s, percentile).seconds ≤ `seconds`, with one evaluation of the sum
    instead of a bisection (P(W ≤ t) ≥ q exactly when the quantile is ≤ t): the test of a rate while
    the replica's most sustainable rate is searched."""
    if seconds < 0:
        return False
    q = percentile / 100
    if rate * prefill_s <= 1 - q:
        return True
    bound, _ = _bound(rate, prefill_s, 1 - q)
    if bound <= seconds:
        return True
    if bound / prefill_s >= EXACT_TERMS:
        return False
    return waiting_probability(rate * prefill_s, seconds / prefill_s) >= q
