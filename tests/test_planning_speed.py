"""Planning a service sized by load: fast, and the same numbers as the plain computation (issue 20, part 5).

Each shortcut is checked against what it stands in for: the Poisson tail's sum (its zero terms left out,
bounds settling the comparison), the bisections that stop once their bracket can no longer move, the
replica count read off a bracket (serving.replicas_needed against service()), the counts a charge lower
bound leaves unsized (planning/inference._dearer). The guard against a slow regression counts the
service points one plan evaluates, not seconds: 5,490 for one service with no resource named before.
"""

from __future__ import annotations

import json
import math
import random
import textwrap
from types import SimpleNamespace

import pytest

from proposalkit.catalog import gpus, models
from proposalkit.cli import main
from proposalkit.estimate import serving
from proposalkit.estimate.inference import InferenceError, replica
from proposalkit.estimate.queueing import lundberg_theta
from proposalkit.planning import inference as planning_inference, search


def plain_pool_full(in_flight: float, most: int) -> float:
    """pool_full_probability as first written: every term, each with its own logarithms."""
    if most <= 0:
        return 1.0
    if in_flight <= 0:
        return 0.0
    below = sum(math.exp(-in_flight + i * math.log(in_flight) - math.lgamma(i + 1)) for i in range(most))
    return max(0.0, 1.0 - below)


def test_poisson_tail_is_the_plain_sum_to_the_last_bit():
    draw = random.Random(5)
    for _ in range(3000):
        mean = draw.choice([draw.uniform(0, 3), draw.uniform(0, 60), draw.uniform(0, 3000), 10 ** draw.uniform(-3, 4)])
        most = draw.randint(0, 4000)
        assert serving.pool_full_probability(mean, most) == plain_pool_full(mean, most), (mean, most)


def test_pool_bounds_settle_only_what_the_sum_says():
    settled = 0
    for mean in (0.3, 1.0, 2.7, 9.5, 40.0, 180.0, 999.0):
        for most in sorted({1, 2, 5, 13, 30, 64, 256, 1000, 2048, math.ceil(mean), math.ceil(mean) + 1}):
            for tail in (0.5, 0.1, 0.01, 1e-3, 1e-5):
                verdict = serving._pool_full_above(mean, most, tail)
                if verdict is not None:
                    settled += 1
                    assert verdict == (serving.pool_full_probability(mean, most) > tail), (mean, most, tail)
    assert settled > 200            # the bounds do settle most comparisons (else the shortcut is dead)


def plain_theta(rate: float, prefill_s: float) -> float:
    """lundberg_theta as first written: 200 halvings, whether or not the bracket still moves."""
    rho, low, high = rate * prefill_s, 0.0, 1.0
    while rho * math.expm1(high) <= high:
        high *= 2
    for _ in range(200):
        mid = (low + high) / 2
        if rho * math.expm1(mid) < mid:
            low = mid
        else:
            high = mid
    return low / prefill_s


def test_lundberg_theta_is_the_plain_bisection_to_the_last_bit():
    draw = random.Random(7)
    for _ in range(2000):
        prefill_s = 10 ** draw.uniform(-4, 1)
        load = draw.choice([draw.uniform(1e-3, 0.999999), 1 - 10 ** draw.uniform(-9, -1)])
        assert lundberg_theta(load / prefill_s, prefill_s) == plain_theta(load / prefill_s, prefill_s)


# (model, GPU, tensor parallel, engine, request rate, input, output, ttft_ms, tpot_ms, batch, percentile)
CASES = [
    ("llama-3.1-8b", "h100-80gb", 1, "vllm", 1, 1000, 512, 1000, 50, None, 99),
    ("llama-3.1-8b", "a100-40gb", 1, "vllm", 7.5, 2000, 200, None, None, None, 99),
    ("llama-3.1-8b", "l40s", 2, "sglang", 30, 512, 128, 800, 40, None, 99.9),
    ("llama-3.1-70b", "h100-80gb", 4, "vllm", 5, 2000, 256, 1000, 50, None, 99),
    ("llama-3.1-70b", "a100-80gb", 8, "trt-llm", 12, 4000, 400, 3000, None, 64, 95),
    ("mistral-7b", "a40", 1, "vllm", 3, 6000, 500, None, 80, None, 99),
    ("gemma-2-9b", "h200", 1, "vllm", 20, 3000, 500, 2000, None, None, 90),
    ("mixtral-8x7b", "h100-80gb", 2, "sglang", 3, 1000, 300, 1500, None, None, 99),
    ("qwen3-30b-a3b", "h200", 1, "trt-llm", 2, 800, 800, 800, None, 16, 99),
    ("llama-3.2-1b", "a100-40gb", 1, "vllm", 50, 300, 100, 200, 10, None, 50),
    ("qwen2.5-7b", "v100-32gb", 1, "vllm", 0.01, 6000, 1000, None, None, None, 99),
    ("llama-3.1-8b", "h100-80gb", 1, "vllm", 200, 256, 128, 500, None, 32, 99),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-tp{c[2]}-{c[4]}rps" for c in CASES])
def test_replicas_needed_is_what_service_finds(case):
    model, gpu, t, engine, rate, I, O, ttft, tpot, batch, q = case
    rep = replica(models()[model], gpus()[gpu], tensor_parallel=t, engine=engine)
    args = dict(ttft_ms=ttft, tpot_ms=tpot, batch=batch, ttft_percentile=q)
    try:
        svc = serving.service(rep, rate, I, O, **args)
    except InferenceError as error:
        with pytest.raises(InferenceError, match=str(error).replace("(", r"\(").replace(")", r"\)")):
            serving.replicas_needed(rep, rate, I, O, **args)
        return
    assert serving.replicas_needed(rep, rate, I, O, **args) == (svc.replicas, svc.concurrency)
    # The bisection that stops where its bracket can no longer move ends where 60 halvings end.
    test = serving._RateTest(rep, rate, I, O, ttft, tpot, batch, q)
    low, high = 0.0, 1 / test.lone.seconds
    for _ in range(60):
        mid = (low + high) / 2
        if test.ok(mid) is None:
            high = mid
        else:
            low = mid
    assert svc.max_rate_per_replica == low


def plan_json(tmp_path, capsys, text: str) -> str:
    path = tmp_path / "w.yaml"
    path.write_text(textwrap.dedent(text))
    assert main(["plan", "--format", "json", str(path)]) == 0
    return capsys.readouterr().out


SERVICE = """\
    proposal: {{title: t, pi: p, institution: i{resource}}}
    workloads:
      - {{name: svc, kind: inference, model: {model}, request_rate: {rate}, input_tokens: 1k, output_tokens: 512,
          ttft_ms: 1000, tpot_ms: 50, hours: 500}}
    """


# No resource (GPU-hours), NCSA Delta (gpu-hour factors, A100 nodes of 4 and 8), ALCF Polaris and TACC
# Lonestar6 (node-hours charged whole: 4 and 3 GPUs per node, where idle GPUs are listed whatever they cost;
# on Lonestar6 only 1 request/s: more needs replicas beyond its 24-GPU job limit, charged as one job).
@pytest.mark.parametrize("resource, model, rate", [
    (resource, model, rate) for resource in ("", ", resource: ncsa-delta", ", resource: alcf-polaris")
    for model, rate in (("llama-3.1-8b", 1), ("llama-3.1-8b", 9), ("llama-3.1-70b", 5))
] + [(", resource: tacc-lonestar6-a100", "llama-3.1-8b", 1)])
def test_counts_left_unsized_change_no_plan(tmp_path, capsys, monkeypatch, resource, model, rate):
    text = SERVICE.format(resource=resource, model=model, rate=rate)
    skipped = []
    dearer = planning_inference._dearer

    def counted(*args):
        skipped.append(dearer(*args))
        return skipped[-1]

    monkeypatch.setattr(planning_inference, "_dearer", counted)
    fast = plan_json(tmp_path, capsys, text)
    monkeypatch.setattr(planning_inference, "_dearer", lambda *args: False)
    assert plan_json(tmp_path, capsys, text) == fast
    if not resource:
        assert any(skipped)         # with no resource named some counts are left unsized


def test_a_count_below_the_runner_up_is_sized():
    # One GPU needs 5 replicas (5 GPUs, 500 GPU-hours), two GPUs one replica (200): 4 GPUs cost at least 400,
    # below the runner-up's 500, so where 2 GPUs are chosen they may be this type's alternative: sized.
    # 8 GPUs cost at least 800, above both: left unsized.
    w, s = SimpleNamespace(hours=100), SimpleNamespace(variants=1, buffer=0.0)
    costs = {5: 500.0, 2: 200.0}
    assert not planning_inference._dearer(w, s, "h100-80gb", 4, None, costs)
    assert planning_inference._dearer(w, s, "h100-80gb", 8, None, costs)
    assert not planning_inference._dearer(w, s, "h100-80gb", 8, None, {2: 200.0})   # one count found: sized
    # ALCF Polaris charges whole nodes of 4: 2 GPUs may leave 2 idle, which alternatives lists whatever it
    # costs, so it is sized; 16 GPUs (4 nodes × 100 h = 400 node-hours, above 2) are not.
    polaris = search.target("alcf-polaris")
    assert not planning_inference._dearer(w, s, "a100-40gb", 2, polaris, {4: 1.0, 8: 2.0})
    assert planning_inference._dearer(w, s, "a100-40gb", 16, polaris, {4: 1.0, 8: 2.0})


def test_one_service_evaluates_few_points(tmp_path, capsys, monkeypatch):
    # The example's eval-service with no resource named: every GPU type × tensor-parallel degree is a
    # candidate. Before issue 20 it took 90 replicas × 61 service points = 5,490 (2 s); now 31 replicas
    # are sized and 145 points evaluated. The bound leaves room for change, not for the old search.
    points, sized = [], []
    point, needed = serving._service_point, serving.replicas_needed
    monkeypatch.setattr(serving, "_service_point", lambda *a, **k: points.append(1) or point(*a, **k))
    monkeypatch.setattr(planning_inference, "replicas_needed", lambda *a, **k: sized.append(1) or needed(*a, **k))
    plan = json.loads(plan_json(tmp_path, capsys, SERVICE.format(resource="", model="llama-3.1-8b", rate=1)))
    assert plan["workloads"][0]["gpu"]["count"] == 1
    assert len(sized) <= 45
    assert len(points) <= 400
