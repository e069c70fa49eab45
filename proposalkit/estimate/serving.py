"""Inference services: replicas needed to serve a request rate within latency targets.

Built on the replica model of inference.py (prefill, decode steps, the KV pool), which knows
nothing of services.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .inference import (InferenceError, Prefill, Replica, Step, concurrency_limit, decode_step, decode_steps,
                        mean_context, prefill)
from .queueing import Wait, prefill_wait, wait_at_most
from ..notes import Note
from ..catalog.shapes import matmul_params
from ..knobs import default


@dataclass(frozen=True)
class Service:
    request_rate: float
    replicas: int
    rate_per_replica: float         # request_rate / replicas
    max_rate_per_replica: float     # the most one replica sustains within the targets
    concurrency: int                # sequences in flight per replica at rate_per_replica
    max_concurrency: int            # what the KV pool and the engine allow per replica
    ttft_ms: float                  # at ttft_percentile: prefill + the wait for prefills ahead + one decode step
    tpot_ms: float
    step: Step
    prefill: Prefill
    output_tokens_per_second: float  # per replica
    notes: tuple[Note, ...] = field(default=())
    ttft_percentile: float = 99.0
    ttft_wait_ms: float = 0.0       # the percentile's wait for the prefills ahead (queueing.prefill_wait)
    ttft_mean_ms: float = 0.0       # prefill ÷ (1 − u), the mean-like figure Little's law uses
    lundberg_theta: float = 0.0     # θ of λ(e^{θS} − 1) = θ, per second, where the wait is Lundberg's bound
    ttft_wait_method: str = "idle"  # Wait.method: "idle" (u ≤ 1 − q), "exact" (M/D/1), "bound" (Lundberg)
    in_flight_mean: float = 0.0     # Little's law's mean requests in flight, before rounding up (concurrency)
    pool_full: float = 0.0          # P(an arriving request finds max_concurrency in flight): pool_full_probability
    ride: "Ride | None" = None      # the running batch's decode work in the prompt's own prefill passes
    prefill_chunk: int = 0          # prompt tokens one pass carries (the engine's chunk)


# The TTFT a latency target is held to, unless the workload names another: the 99th percentile
# (proposalkit/knobs.py ttft_percentile, with its source).
DEFAULT_TTFT_PERCENTILE = default("ttft_percentile")


def pool_full_probability(in_flight: float, most: int) -> float:
    """P(N ≥ most) for N Poisson with mean `in_flight`: the chance that a request arrives to find all
    `most` sequences the KV pool (or the engine's cap) holds already in flight, so that it waits for one
    to finish before its prefill starts (vLLM, vllm/v1/core/sched/scheduler.py Scheduler.schedule: a
    waiting request is not admitted while max_num_seqs run or allocate_slots finds no free block): a
    wait no TTFT figure here includes. The number of requests in service of an M/G/∞ system is
    Poisson with mean λ·E[W] whatever W's distribution (Takács 1962,
    Introduction to the Theory of Queues; Gross et al., Fundamentals of Queueing Theory, the
    M/G/∞ queue), and a Poisson arrival sees that distribution (PASTA, Wolff 1982)."""
    if most <= 0:
        return 1.0
    if in_flight <= 0:
        return 0.0
    below = sum(map(math.exp, _poisson_log_terms(in_flight, most)))
    return max(0.0, 1.0 - below)


# ln i! for i = 0, 1, …: the Poisson terms' factorials, each math.lgamma(i + 1) once per process.
_LOG_FACTORIALS: list[float] = []
# exp(x) of a double is 0.0 below about −745.13: a term whose logarithm is below this adds nothing.
_NO_TERM = -800.0


def _poisson_log_terms(mean: float, most: int):
    """ln P(N = i) = −m + i·ln m − ln i!, i = 0 … most − 1, each the same double as written out term by
    term; past the mode, once one is below _NO_TERM the rest are (they fall from there on, each by
    ln((i + 1) ÷ m) > 0, far beyond the rounding) and would add exactly 0.0 to the sum: left out."""
    log_mean, factorials = math.log(mean), _LOG_FACTORIALS
    for i in range(most):
        if i == len(factorials):
            factorials.append(math.lgamma(i + 1))
        x = -mean + i * log_mean - factorials[i]
        if x < _NO_TERM and i > mean:
            return
        yield x


def _service_point(rep: Replica, rate: float, input_tokens: int, output_tokens: int, most: int,
                   percentile: float | None = DEFAULT_TTFT_PERCENTILE, *, one: Prefill | None = None,
                   step_at=None, verdict_only: bool = False):
    """Steady state of one replica at `rate` requests/s: prefill takes a share u of the GPU's time
    (rate × one prompt's prefill); decode steps run in the rest, so TPOT = step(B)/(1 − u); the
    concurrency B follows Little's law, B = rate × (TTFT + output × TPOT), with the mean-like
    TTFT = prefill ÷ (1 − u) (above the M/D/1 mean, S + ρS/(2(1 − ρ))), solved by iteration.
    The pool holds `most` sequences: in flight is B on average but Poisson about it, and a request
    that finds the pool full waits for another to finish, which the TTFT at `percentile` leaves out; so
    the chance of a full pool must be at most 1 − percentile (pool_full_probability), not only B ≤ most.
    percentile None (no TTFT target): only B ≤ most; the chance of a full pool is still returned.
    Returns (B, TTFT s, TPOT s, step, mean in flight, P(pool full)) or None when the replica cannot
    sustain the rate. `one` (the prompt's prefill) and `step_at` (batch → its decode step) spare a
    caller that tries many rates on one replica recomputing them: the same values either way.
    verdict_only: a caller that needs only whether the rate is sustained (a bisection) gets P(pool full)
    as None where it was not needed for that: no percentile, or one that bounds settle (_pool_full_above)."""
    one = one or prefill(rep, input_tokens)
    busy = rate * one.seconds
    if busy >= 1:
        return None
    if step_at is None:
        def step_at(b: int) -> Step:
            return decode_step(rep, b, mean_context(input_tokens, output_tokens))
    batch = 1
    for _ in range(100):
        step = step_at(batch)
        tpot = step.seconds / (1 - busy)
        ttft = one.seconds / (1 - busy)
        mean = rate * (ttft + output_tokens * tpot)
        need = max(1, math.ceil(mean))
        if need > most:
            return None
        if need == batch:
            break
        batch = need
    settled = None
    if verdict_only:
        settled = False if percentile is None else _pool_full_above(mean, most, 1 - percentile / 100)
    if settled is None:
        full = pool_full_probability(mean, most)
        if percentile is not None and full > 1 - percentile / 100:
            return None
    elif settled:
        return None
    else:
        full = None
    return batch, ttft, tpot, step, mean, full


# Where bounds of P(N ≥ most) settle its comparison with 1 − percentile, they must clear it by more than
# pool_full_probability's rounding. Up to _POOL_BOUNDED sequences each term's logarithm is a sum of numbers
# below 10⁵ (i·ln m, ln i!: 10,001 × ln 10,001 ≈ 9.2 × 10⁴), each within a few units of its last place
# (1.5e-11 at 10⁵), and the sum adds at most 10⁴ doubles below 1 (1.1e-16 each): the sum is within about
# 1e-10 of the exact series. 1e-8 leaves a factor 100; beyond _POOL_BOUNDED the sum is always evaluated.
_POOL_MARGIN = 1e-8
_POOL_BOUNDED = 10_000


def _pool_full_above(mean: float, most: int, tail: float) -> bool | None:
    """Whether pool_full_probability(mean, most) > tail, where bounds settle it without the sum; None
    where they do not. For N Poisson with mean m ≤ most = k: P(N = k) ≤ P(N ≥ k) ≤ P(N = k)·(k + 1) ÷
    (k + 1 − m), each term past k at most m ÷ (k + 1) times the one before (a geometric series)."""
    if most <= 0 or mean <= 0 or mean > most or most > _POOL_BOUNDED:
        return None
    at = math.exp(-mean + most * math.log(mean) - math.lgamma(most + 1))
    margin = _POOL_MARGIN + 1e-6 * tail
    if at > tail + margin:
        return True
    if at * (most + 1) / (most + 1 - mean) < tail - margin:
        return False
    return None


@dataclass(frozen=True)
class Ride:
    """The decode work of the running batch inside a prompt's own prefill passes. Engines with chunked
    prefill put every running sequence's next token into each pass beside up to a chunk of prompt tokens
    (vLLM V1's scheduler takes the running requests first, then prompt tokens within
    max_num_batched_tokens: vllm/v1/core/sched/scheduler.py Scheduler.schedule), so a prompt's first
    token waits for that work in each of its ⌈input ÷ chunk⌉ passes: the batch's attention over its KV
    cache and its tokens' matrix multiplies (the weights are read once per pass, in the prefill)."""

    passes: int
    attention_seconds: float        # per pass: the step's attention (KV read or its FLOPs)
    linear_seconds: float           # per pass: 2·P_matmul·batch FLOPs ÷ t at the achieved rate

    @property
    def seconds(self) -> float:
        return self.passes * (self.attention_seconds + self.linear_seconds)


def ride(rep: Replica, step: Step, input_tokens: int) -> Ride:
    """The Ride of a prompt of `input_tokens` beside the decode `step` of the running batch."""
    return Ride(passes=math.ceil(input_tokens / rep.engine.prefill_chunk),
                attention_seconds=step.attention_seconds,
                linear_seconds=2 * matmul_params(rep.model) * step.batch / rep.tensor_parallel / rep.achieved_flops)


def tail_ttft(rate: float, prefill_s: float, step_s: float, percentile: float,
              ride_s: float = 0.0) -> tuple[float, Wait]:
    """(TTFT in seconds, the wait) at `percentile`: the prompt's own prefill, the wait for the prefills
    ahead of it (queueing.prefill_wait), the decode step under way when it arrives (engines
    with continuous batching schedule a new prompt at the next step: at most one step's wait), and the
    running batch's decode work in its own prefill passes (ride_s: Ride.seconds)."""
    wait = prefill_wait(rate, prefill_s, percentile)
    return prefill_s + wait.seconds + step_s + ride_s, wait


def ttft_floor(rep: Replica, input_tokens: int, output_tokens: int) -> float:
    """The least TTFT a replica reaches, in seconds: a lone prompt's prefill, one decode step at batch 1
    under way, and that batch of 1 riding in the prompt's passes (the least batch the service model runs)."""
    first = decode_step(rep, 1, mean_context(input_tokens, output_tokens))
    return prefill(rep, input_tokens).seconds + first.seconds + ride(rep, first, input_tokens).seconds


def service(rep: Replica, request_rate: float, input_tokens: int, output_tokens: int,
            ttft_ms: float | None = None, tpot_ms: float | None = None, batch: int | None = None,
            ttft_percentile: float = DEFAULT_TTFT_PERCENTILE) -> Service:
    """Replicas needed to serve `request_rate` requests/s within the latency targets.

    ttft_ms is held at `ttft_percentile` (tail_ttft); tpot_ms at the mean step, which is what a
    request's TPOT averages over its output tokens.
    batch: at most this many sequences in flight per replica (None: what the KV pool and the engine allow)."""
    test = _RateTest(rep, request_rate, input_tokens, output_tokens, ttft_ms, tpot_ms, batch, ttft_percentile)
    search = _Bisection(test.verdict, 1 / test.lone.seconds)   # prefill alone saturates the replica at 1/prefill
    while search.halve():
        pass
    best = search.low
    if best <= 0:
        raise InferenceError("no request rate meets the targets on one replica", achievable=0.0)
    replicas = _replicas(request_rate, best)
    rate = request_rate / replicas
    batch, mean_ttft, tpot, step, in_flight, full = test.ok(rate) or test.ok(best)
    riding = test.ride(step)
    lone, most = test.lone, test.most
    ttft, wait = tail_ttft(rate, lone.seconds, step.seconds, ttft_percentile, riding.seconds)
    return Service(request_rate=request_rate, replicas=replicas, rate_per_replica=rate,
                   max_rate_per_replica=best, concurrency=batch, max_concurrency=most,
                   ttft_ms=ttft * 1e3, tpot_ms=tpot * 1e3, step=step, prefill=lone,
                   output_tokens_per_second=rate * output_tokens, notes=rep.notes,
                   ttft_percentile=ttft_percentile, ttft_wait_ms=wait.seconds * 1e3, ttft_mean_ms=mean_ttft * 1e3,
                   lundberg_theta=wait.theta, ttft_wait_method=wait.method, in_flight_mean=in_flight,
                   pool_full=full, ride=riding,
                   prefill_chunk=rep.engine.prefill_chunk)


def replicas_needed(rep: Replica, request_rate: float, input_tokens: int, output_tokens: int,
                    ttft_ms: float | None = None, tpot_ms: float | None = None, batch: int | None = None,
                    ttft_percentile: float = DEFAULT_TTFT_PERCENTILE) -> tuple[int, int]:
    """(replicas, concurrency) of service() with the same arguments, the same numbers and errors, without
    the rest of its Service: what a search over GPUs needs to cost a replica. Its bisection stops as soon
    as the bracket [low, high) that holds the most sustainable rate settles ⌈request_rate ÷ rate⌉ (both
    ends give the same count: service(), halving on to the end, lands inside it and finds that count);
    the concurrency is then the point at request_rate ÷ replicas, as service() takes it."""
    test = _RateTest(rep, request_rate, input_tokens, output_tokens, ttft_ms, tpot_ms, batch, ttft_percentile)
    search = _Bisection(test.verdict, 1 / test.lone.seconds)
    while search.halve():
        if search.low > 0 and _replicas(request_rate, search.low) == _replicas(request_rate, search.high):
            break
    if search.low <= 0:
        raise InferenceError("no request rate meets the targets on one replica", achievable=0.0)
    replicas = _replicas(request_rate, search.low)
    point = test.verdict(request_rate / replicas)
    if point is None:               # service() falls back on the most sustainable rate itself: find it
        while search.halve():
            pass
        point = test.verdict(search.low)
    return replicas, point[0]


def _replicas(request_rate: float, rate: float) -> int:
    """Replicas of `rate` requests/s each that serve request_rate (the 1e-9 forgives a rate found by
    bisection a hair below an exact divisor)."""
    return math.ceil(request_rate / rate - 1e-9)


class _Bisection:
    """The most requests/s one replica sustains: 60 halvings of [0, high), keeping low where `ok` holds.
    halve() answers False when done: after the 60th, or as soon as the midpoint is an end already tested
    (the bracket is one double wide): every further halving would test that end again and leave the
    bracket as it is, so stopping there gives the same low as the 60."""

    def __init__(self, ok, high: float):
        self.ok, self.low, self.high, self.left = ok, 0.0, high, 60
        self.tested = False         # whether ok(high) was tried (the first high is not)

    def halve(self) -> bool:
        mid = (self.low + self.high) / 2
        if not self.left or (mid == self.low and mid > 0) or (mid == self.high and self.tested):
            return False
        self.left -= 1
        if self.ok(mid) is None:
            self.high, self.tested = mid, True
        else:
            self.low = mid
        return True


class _RateTest:
    """Whether one replica serves a rate within the targets (ok: the service point, or None), with the
    checks that no rate passes raised first (InferenceError: the latency floor above a target). The
    prompt's prefill, the decode step at each batch and its ride are computed once per replica, not once
    per rate tried."""

    def __init__(self, rep: Replica, request_rate: float, input_tokens: int, output_tokens: int,
                 ttft_ms: float | None, tpot_ms: float | None, batch: int | None, ttft_percentile: float):
        if request_rate <= 0:
            raise ValueError(f"request_rate must be positive, got {request_rate}")
        most = concurrency_limit(rep, input_tokens, output_tokens)
        if batch is not None:
            most = min(most, batch)
        lone = prefill(rep, input_tokens)
        first = decode_step(rep, 1, mean_context(input_tokens, output_tokens))
        floor = ttft_floor(rep, input_tokens, output_tokens)
        if ttft_ms is not None and floor * 1e3 > ttft_ms:
            raise InferenceError(
                f"ttft_ms {ttft_ms:g}: a lone prompt of {input_tokens:,} tokens takes {lone.seconds * 1e3:.0f} ms "
                f"to prefill and {(floor - lone.seconds) * 1e3:.0f} ms to decode its first token on {rep.tensor_parallel} × "
                f"{rep.gpu.id}; more tensor-parallel GPUs or a faster GPU lower it", achievable=floor * 1e3)
        if tpot_ms is not None and first.seconds * 1e3 > tpot_ms:
            raise InferenceError(
                f"tpot_ms {tpot_ms:g}: one decode step reads {first.bytes_read / 1e9:.1f} GB per GPU, "
                f"{first.seconds * 1e3:.1f} ms at {rep.achieved_bandwidth / 1e12:.2f} TB/s on "
                f"{rep.tensor_parallel} × {rep.gpu.id} even at batch 1; more tensor-parallel GPUs or a "
                "faster GPU lower it", achievable=first.seconds * 1e3)
        self.rep, self.input_tokens, self.output_tokens, self.most, self.lone = rep, input_tokens, output_tokens, most, lone
        self.ttft_ms, self.tpot_ms, self.ttft_percentile = ttft_ms, tpot_ms, ttft_percentile
        self.context = mean_context(input_tokens, output_tokens)
        self.step_at = decode_steps(rep, self.context)
        self.steps: dict[int, Step] = {1: first}
        self.rides: dict[int, Ride] = {}

    def step(self, batch: int) -> Step:
        step = self.steps.get(batch)
        if step is None:
            step = self.steps[batch] = self.step_at(batch)
        return step

    def verdict(self, rate: float):
        return self.ok(rate, verdict_only=True)

    def ride(self, step: Step) -> Ride:
        riding = self.rides.get(step.batch)
        if riding is None:
            riding = self.rides[step.batch] = ride(self.rep, step, self.input_tokens)
        return riding

    def ok(self, rate: float, verdict_only: bool = False):
        """The service point at `rate` (_service_point), or None where a target is missed. verdict_only:
        for a bisection, which reads only whether it is None (the point's P(pool full) may be None)."""
        # The pool is held at the percentile where a TTFT target is: a request that finds it full misses
        # the target. Without one, a wait for a place in the pool is allowed (and said in the derivation).
        ttft_ms, lone = self.ttft_ms, self.lone
        point = _service_point(self.rep, rate, self.input_tokens, self.output_tokens, self.most,
                               self.ttft_percentile if ttft_ms is not None else None, one=lone, step_at=self.step,
                               verdict_only=verdict_only)
        if point is None:
            return None
        _, _, tpot, step, _, _ = point
        # TTFT at the percentile ≤ the target: the wait's quantile ≤ what the target leaves for it.
        if ttft_ms is not None and not wait_at_most(
                rate, lone.seconds, self.ttft_percentile,
                ttft_ms / 1e3 - lone.seconds - step.seconds - self.ride(step).seconds):
            return None
        if self.tpot_ms is not None and tpot * 1e3 > self.tpot_ms:
            return None
        return point
