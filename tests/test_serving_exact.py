"""The p-th percentile wait of a service's prompts for the prefills ahead (estimate/queueing.py): the
exact M/D/1 waiting-time distribution (Erlang 1909; Crommelin 1932; Franx 2001, c = 1)

    P(W ≤ t) = (1 − u) Σ_{k=0}^{⌊t/S⌋} [λ(kS − t)]^k / k! · e^{−λ(kS − t)},   u = λS,

checked by hand at small t/S, against the queue itself (Lindley's recursion, simulated), against
its own exponential tail where the alternating sum cancels badly, and through the CLI.
"""

from __future__ import annotations

import json
import math
import random
import re
import textwrap

import pytest

from proposalkit.cli import main
from proposalkit.estimate.queueing import (
    EXACT_TERMS, lundberg_theta, prefill_wait, wait_at_most, waiting_probability,
)


def test_the_distribution_by_hand():
    # t < S: only k = 0, P(W ≤ t) = (1 − u) e^{λt}. At u = 0.5, t = 0.5 S: 0.5 × e^0.25 = 0.5 × 1.2840254 = 0.6420127.
    assert waiting_probability(0.5, 0.5) == pytest.approx(0.6420127, abs=1e-7)
    # S ≤ t < 2S adds k = 1: −λ(t − S) e^{λ(t − S)}. At t = 1.5 S:
    # 0.5 × (e^0.75 − 0.5 × 0.5 × e^0.25) = 0.5 × (2.1170000 − 0.3210064) = 0.8979968.
    assert waiting_probability(0.5, 1.5) == pytest.approx(0.8979968, abs=1e-7)
    # 2S ≤ t < 3S adds k = 2: [λ(t − 2S)]² / 2 × e^{λ(t − 2S)}. At t = 2.5 S:
    # 0.5 × (e^1.25 − 0.5 × 1.5 × e^0.75 + 0.25² / 2 × e^0.25) = 0.5 × (3.4903430 − 1.5877500 + 0.0401258)
    # = 0.9713594.
    assert waiting_probability(0.5, 2.5) == pytest.approx(0.9713594, abs=1e-7)
    # At t = 0 the arrivals that find the server idle: 1 − u.
    assert waiting_probability(0.5, 0.0) == 0.5


def test_quantiles_by_hand():
    # u = 0.5 (2.5 prompts/s of 0.2 s): P(W = 0) = 0.5, so the median wait is 0; the 60th percentile solves
    # 0.5 e^{2.5 t} = 0.6 below S: t = ln(1.2) / 2.5 = 0.0729286 s.
    assert prefill_wait(2.5, 0.2, 50).seconds == 0.0
    wait = prefill_wait(2.5, 0.2, 60)
    assert wait.method == "exact" and wait.seconds == pytest.approx(math.log(1.2) / 2.5, rel=1e-9)
    assert wait.seconds >= math.log(1.2) / 2.5      # bisection keeps the upper end: never below
    # The 89.79968th percentile is t = 1.5 S = 0.3 s (above: P(W ≤ 1.5 S) = 0.8979968).
    assert prefill_wait(2.5, 0.2, 89.79968).seconds == pytest.approx(0.3, abs=1e-7)
    # At u = 0.25 the p99 wait is 1.667 S, where Lundberg's bound said 1.971 S (an over-estimate of 18%).
    assert prefill_wait(0.25, 1.0, 99).seconds == pytest.approx(1.66657, abs=1e-5)


def lindley_cycles(load: float, arrivals: int, seed: int) -> list[list[float]]:
    """The waits of `arrivals` prompts of S = 1 at Poisson rate `load`, by Lindley's recursion
    W' = max(0, W + S − A) (Lindley 1952), cut into busy cycles: each starts with a prompt that finds
    the queue empty (W = 0), so the cycles are independent and identically distributed (a regenerative
    process) and the run starts in steady state's regeneration point, with no warm-up to discard."""
    draw = random.Random(seed).expovariate
    cycles, cycle, wait = [], [0.0], 0.0
    for _ in range(arrivals - 1):
        wait += 1.0 - draw(load)
        if wait <= 0:
            cycles.append(cycle)
            cycle, wait = [0.0], 0.0
        else:
            cycle.append(wait)
    return cycles


def fraction_within(cycles: list[list[float]], t: float) -> tuple[float, float]:
    """(the fraction of waits ≤ t, its standard error): the regenerative ratio estimator over the
    cycles, Σ Y / Σ N, with the delta method's error √(Σ (Y − f N)² / (m − 1)) ÷ mean(N) ÷ √m
    (Crane & Iglehart 1975; Asmussen & Glynn 2007, Stochastic Simulation, IV.4)."""
    counts = [sum(1 for w in c if w <= t) for c in cycles]
    sizes = [len(c) for c in cycles]
    m, f = len(cycles), sum(counts) / sum(sizes)
    spread = math.sqrt(sum((y - f * n) ** 2 for y, n in zip(counts, sizes)) / (m - 1))
    return f, spread / (sum(sizes) / m) / math.sqrt(m)


ARRIVALS = 300_000      # per load: ~1.3 s for the four loads
TOLERANCE = 4           # standard errors: over 15 seeds × 14 cases |z| stayed ≤ 3.34
LOADS = (0.1, 0.5, 0.8, 0.95)


@pytest.fixture(scope="module")
def simulated():
    return {u: lindley_cycles(u, ARRIVALS, 20261123) for u in LOADS}


@pytest.mark.parametrize("load", LOADS)
@pytest.mark.parametrize("percentile", [50, 90, 99, 99.9])
def test_the_exact_quantile_is_the_queue_s(simulated, load, percentile):
    # The simulated fraction of prompts that wait at most the computed quantile is q within TOLERANCE
    # standard errors. Left out: u = 0.95 at p99.9, a wait of 68 S reached in a handful of busy cycles
    # per 300,000 arrivals, too few for a standard error (some seeds see none).
    if (load, percentile) == (0.95, 99.9):
        pytest.skip("too rare for 300,000 simulated arrivals")
    q = percentile / 100
    wait = prefill_wait(load, 1.0, percentile)
    f, error = fraction_within(simulated[load], wait.seconds)
    if wait.method == "idle":            # the quantile is 0: the idle share 1 − u is at least q
        assert wait.seconds == 0 and load <= 1 - q and f >= q - TOLERANCE * error
    else:
        assert wait.method == "exact"
        assert abs(f - q) <= TOLERANCE * error, (f, q, error)


@pytest.mark.parametrize("load,percentile", [(0.1, 99), (0.5, 90), (0.5, 99)])
def test_the_simulation_tells_the_bound_apart(simulated, load, percentile):
    # The comparison above can fail: Lundberg's bound −ln(1 − q)/θ, used before, is rejected by it.
    q = percentile / 100
    bound = -math.log(1 - q) / lundberg_theta(load, 1.0)
    f, error = fraction_within(simulated[load], bound)
    assert f - q > TOLERANCE * error


def test_the_sum_holds_where_it_cancels():
    # At u = 0.99 and t = 290 S the terms reach 1e170 while the sum is below 1: floats give noise. The
    # tail is asymptotically C e^{−θt} (Cramér–Lundberg), so the decimal sum must show the ratio
    # P(W > t + 5S) / P(W > t) = e^{−5θS}, θ from rate·(e^{θS} − 1) = θ: 0.90453383089134.
    for tau in (100.0, 200.0, 290.0):
        ratio = (1 - waiting_probability(0.99, tau + 5)) / (1 - waiting_probability(0.99, tau))
        assert ratio == pytest.approx(math.exp(-5 * lundberg_theta(0.99, 1.0)), rel=1e-10)


def test_past_the_limit_of_terms_the_bound():
    # u = 0.99, p99: the exact wait is 229.16 S, Lundberg's bound 229.49 S (within EXACT_TERMS = 300).
    # p99.9: the bound is 344.2 S, past 300 prefills: the bound itself, an upper bound, and said so.
    exact = prefill_wait(0.99, 1.0, 99)
    assert exact.method == "exact" and exact.seconds == pytest.approx(229.155, abs=1e-3)
    far = prefill_wait(0.99, 1.0, 99.9)
    theta = lundberg_theta(0.99, 1.0)
    assert far.method == "bound" and far.seconds == pytest.approx(math.log(1000) / theta, rel=1e-12)
    assert far.seconds / 1.0 > EXACT_TERMS
    with pytest.raises(ValueError, match="EXACT_TERMS"):
        waiting_probability(0.99, 344.0)


@pytest.mark.parametrize("load", [0.005, 0.02, 0.15, 0.3, 0.6, 0.9, 0.97])
@pytest.mark.parametrize("percentile", [50, 90, 99, 99.9])
def test_never_above_the_bound_and_the_same_test_of_a_rate(load, percentile):
    # The exact quantile is at most Lundberg's bound (P(W > t) ≤ e^{−θt}), and wait_at_most (the
    # replica search's one-sum test of a rate) agrees with the quantile on either side of it.
    wait = prefill_wait(load, 1.0, percentile)
    if wait.method == "idle":
        assert load <= 1 - percentile / 100
        return
    assert wait.seconds <= -math.log(1 - percentile / 100) / lundberg_theta(load, 1.0) * (1 + 1e-12)
    assert wait_at_most(load, 1.0, percentile, wait.seconds * (1 + 1e-9))
    assert not wait_at_most(load, 1.0, percentile, wait.seconds * (1 - 1e-9))


SERVICE = """\
workloads:
  - name: chat
    kind: inference
    model: llama-2-70b
    gpu: h100-80gb
    tensor_parallel: 8
    request_rate: 10
    input_tokens: 2048
    output_tokens: 128
    ttft_ms: 200
    hours: 720
"""


def test_near_the_floor_the_exact_wait_needs_fewer_replicas(tmp_path, capsys):
    # Llama-2-70B on 8× H100, 2,048-token prompts, TTFT p99 ≤ 200 ms. A lone prompt's pass S and the
    # decode step under way come from the plan's own derivation (the prefill and step arithmetic are
    # tested elsewhere); what is checked here is the queue.
    path = tmp_path / "w.yaml"
    path.write_text(textwrap.dedent(SERVICE), encoding="utf-8")
    assert main(["plan", str(path), "--format", "json"]) == 0
    i = json.loads(capsys.readouterr().out)["workloads"][0]["inference"]
    text = {d["label"]: d["text"] for d in i["derivation"]}
    S = float(re.search(r"TTFT = ([\d.]+) ms prefill", text["TTFT"]).group(1)) / 1e3
    step = float(re.search(r"ms \+ ([\d.]+) ms decode step", text["TTFT"]).group(1)) / 1e3
    ride = sum(float(x) for x in re.findall(r"([\d.]+) ms (?:attention|matrix)", text["TTFT"])) / 1e3
    assert i["batch"] == 1 and 0.1 < S < 0.13 and 0.01 < step < 0.015     # 114.0 ms and 12.5 ms today
    # The wait may be 200 ms − S − step − ride ≈ 73.5 ms = 0.64 S: below S, where only k = 0 counts,
    # P(W ≤ t) = (1 − λS) e^{λt}. Per replica at rate λ = 10/n the p99 wait is 0 while λS ≤ 0.01, else
    # t = ln(0.99 / (1 − λS)) / λ. The fewest replicas with S + t + step + ride ≤ 200 ms:
    def p99_ttft(n: int) -> float:
        lam = 10 / n
        if lam * S >= 1 or (1 - lam * S) * math.exp(lam * S) < 0.99:
            return math.inf                  # no steady state, or a p99 wait of S or more: > 200 ms
        wait = 0.0 if lam * S <= 0.01 else math.log(0.99 / (1 - lam * S)) / lam
        return S + wait + step + ride
    replicas = next(n for n in range(1, 200) if p99_ttft(n) <= 0.2 + 1e-4)
    assert replicas == i["replicas"] == 42       # 41 replicas: S + 74.4 ms + step > 200 ms
    assert i["ttft_ms"] == pytest.approx(p99_ttft(42) * 1e3, abs=0.2)   # 199.9 ms
    assert "(Erlang 1909; Crommelin 1932; Franx 2001)" in text["TTFT"] and "Lundberg" not in text["TTFT"]
    # Lundberg's bound, used before, jumps from 0 at λS = 0.01 to ln(100)/θ ≈ 0.72 S just above it (θS
    # solves 0.01 (e^{θS} − 1) = θS: 6.4), past the 0.64 S the target leaves: it held every replica at
    # λS ≤ 0.01, ⌈10 × S ÷ 0.01⌉ = 114 replicas, 2.7 × the 42 needed.
    assert math.log(100) / lundberg_theta(0.0101, 1.0) > (0.2 - S - step - ride) / S
    assert math.ceil(10 * S / 0.01 - 1e-9) == 114
