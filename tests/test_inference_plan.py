"""Inference planned without a pilot, through the CLI: workload YAML → `proposalkit plan --format json`.

Values computed by hand from published inputs:
- Llama 3.1 8B (meta-llama/Llama-3.1-8B config.json): 32 layers, hidden 4,096, 32 heads, 8 KV heads of
  128, vocabulary 128,256, untied: 8,030,261,248 parameters, of which 128,256 × 4,096 = 525,336,576 are
  the input embedding (a lookup, no FLOPs): 7,504,924,672 in matrix multiplies; bf16 weights
  8,030,261,248 × 2 = 16,060,522,496 bytes; KV cache 32 layers × 2 (K, V) × 8 × 128 × 2 bytes =
  131,072 bytes per token.
- H100 SXM (NVIDIA datasheet): 989 TFLOP/s dense bf16, 3.35 TB/s; PyTorch reports 79.11 GiB usable.
- The engines' achieved fractions are the calibrated constants of proposalkit/catalog/engines.py
  (fitted on TensorRT-LLM's published H100 throughput), imported by name.
- vLLM's pool: gpu_memory_utilization 0.9 of the device for weights, workspace and KV cache
  (vllm/engine/arg_utils.py); max_num_seqs 1,024 on a ≥ 70 GiB GPU other than an A100.
"""

from __future__ import annotations

import json
import math
import textwrap

import pytest

from conftest import per_run, requested
from proposalkit.cli import main
from proposalkit.catalog.engines import TRT_BANDWIDTH_FRACTION as BW_FRACTION
from proposalkit.catalog.engines import TRT_COMPUTE_FRACTION_16BIT as FLOP_FRACTION
from proposalkit.catalog.engines import TRT_PREFILL_LAYER_SECONDS as LAUNCH

MATMUL_PARAMS = 7_504_924_672
WEIGHT_BYTES = 16_060_522_496
KV_PER_TOKEN = 131_072
LAYERS, ATTENTION_WIDTH = 32, 32 * 128
H100_FLOPS, H100_BANDWIDTH, H100_USABLE = 989e12, 3.35e12, 79.11 * 2**30


def plan(tmp_path, capsys, text: str):
    path = tmp_path / "w.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    code = main(["plan", str(path), "--format", "json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err.replace(str(path), "FILE")


def compute_seconds(tokens: int) -> float:
    """2·P·s + causal attention 2·L·s²·a·d FLOPs at the achieved 16-bit rate, one GPU."""
    flops = 2 * MATMUL_PARAMS * tokens + 2 * LAYERS * tokens**2 * ATTENTION_WIDTH
    return flops / (H100_FLOPS * FLOP_FRACTION)


def prefill_seconds(tokens: int) -> float:
    """A lone prompt's pass: its compute plus the pass's launches, 32 layers × the calibrated per-layer cost."""
    return compute_seconds(tokens) + LAYERS * LAUNCH


def passes(requests: int, tokens: int) -> int:
    """Prefill passes of a batch job: prompts packed into passes of the engine's 8,192-token chunk."""
    return math.ceil(requests * tokens / 8192)


def batch_prefill_seconds(requests: int, tokens: int) -> float:
    """Every prompt's compute, and each pass's launches once."""
    return requests * compute_seconds(tokens) + passes(requests, tokens) * LAYERS * LAUNCH


def step_seconds(batch: int, context: int) -> float:
    """The weights' matmuls and attention, each the longer of its bytes ÷ bandwidth and FLOPs ÷ FLOP/s."""
    bandwidth, flops = H100_BANDWIDTH * BW_FRACTION, H100_FLOPS * FLOP_FRACTION
    linear = max(WEIGHT_BYTES / bandwidth, 2 * MATMUL_PARAMS * batch / flops)
    attention = max(batch * context * KV_PER_TOKEN / bandwidth, batch * 4 * LAYERS * context * ATTENTION_WIDTH / flops)
    return linear + attention


def ride_seconds(batch: int, context: int) -> float:
    """The running batch's work inside a prompt's one prefill pass (a prompt of 1,000 tokens is one
    chunk of vLLM's 8,192): its attention over the KV cache and its tokens' matmuls (2·P·batch FLOPs);
    the weights are read once per pass, in the prefill."""
    bandwidth, flops = H100_BANDWIDTH * BW_FRACTION, H100_FLOPS * FLOP_FRACTION
    attention = max(batch * context * KV_PER_TOKEN / bandwidth, batch * 4 * LAYERS * context * ATTENTION_WIDTH / flops)
    return attention + 2 * MATMUL_PARAMS * batch / flops


BATCH_JOB = """\
workloads:
  - name: answers
    kind: inference
    model: llama-3.1-8b
    requests: 10k
    input_tokens: 1000
    output_tokens: 256
    gpu: h100-80gb
    gpus: 1
"""


def test_a_batch_job_by_hand(tmp_path, capsys):
    code, p, err = plan(tmp_path, capsys, BATCH_JOB)
    assert code == 0, err
    (w,) = p["workloads"]
    i = w["inference"]
    assert (i["mode"], i["engine"], i["replicas"], i["tensor_parallel"]) == ("batch", "vllm", 1, 1)
    # The batch: what vLLM's pool holds of 1,000 + 256-token sequences (capped at 1,024 and 10,000
    # requests). The pool is 0.9 × 79.11 GiB − 16.06 GB weights − one forward pass's activations (the
    # CUDA context sits beside vLLM's budget), so with activations between 0 and 2 GiB:
    per_sequence = 1256 * KV_PER_TOKEN
    pool_high = 0.9 * H100_USABLE - WEIGHT_BYTES
    pool_low = pool_high - 2 * 2**30
    batch = i["batch"]
    assert i["max_concurrency"] == batch and i["context"] == 1256
    assert pool_low // per_sequence <= batch <= pool_high // per_sequence
    # TTFT: a lone prompt's prefill; TPOT: a decode step at the batch and the mean context 1,000 + 128.
    ttft, tpot = prefill_seconds(1000), step_seconds(batch, 1128)
    assert i["ttft_ms"] == pytest.approx(ttft * 1e3, rel=1e-4)
    assert i["tpot_ms"] == pytest.approx(tpot * 1e3, rel=1e-4)
    # Prompts packed into passes: each prompt's compute, each pass's launches once.
    assert i["prefill_tokens_per_second"] == pytest.approx(10_000 * 1000 / batch_prefill_seconds(10_000, 1000),
                                                           rel=1e-4)
    # runtime = prefill of every prompt + requests × output ÷ batch × step
    runtime = batch_prefill_seconds(10_000, 1000) + 10_000 * 256 / batch * tpot
    assert w["runtime_hours"] == per_run(runtime / 3600)       # carried rounded up to 0.01 h
    assert w["tokens"] == 10_000 * 256
    assert w["tokens_per_second"] == pytest.approx(10_000 * 256 / runtime, rel=1e-4)
    assert i["output_tokens_per_second"] == pytest.approx(w["tokens_per_second"], rel=1e-4)
    assert w["gpu_hours"] == per_run(runtime / 3600) * 1
    assert w["gpu_hours_requested"] == requested(runtime / 3600, 1, 1, 0.3)
    assert w["throughput_source"] == "estimate"
    labels = [d["label"] for d in i["derivation"]]
    assert labels == ["KV cache", "Prefill", "Decode step", "Batch job"]


def test_a_batch_cap_and_the_engine(tmp_path, capsys):
    # batch: 64 caps the sequences at once; TensorRT-LLM's factors are the same calibrated ones.
    code, p, err = plan(tmp_path, capsys, BATCH_JOB + "    batch: 64\n    framework: trt-llm\n")
    assert code == 0, err
    (w,) = p["workloads"]
    i = w["inference"]
    assert (i["batch"], i["engine"]) == (64, "trt-llm")
    runtime = batch_prefill_seconds(10_000, 1000) + 10_000 * 256 / 64 * step_seconds(64, 1128)
    assert w["runtime_hours"] == per_run(runtime / 3600)


def test_the_planner_chooses_the_fewest_gpu_hours(tmp_path, capsys):
    code, p, err = plan(tmp_path, capsys, BATCH_JOB.replace("    gpu: h100-80gb\n    gpus: 1\n", ""))
    assert code == 0, err
    (w,) = p["workloads"]
    fits = [a for a in w["alternatives"] if a["fits"]]
    assert fits and all(a["gpu_hours_requested"] >= w["gpu_hours_requested"] for a in fits)


SERVICE = """\
workloads:
  - name: chat
    kind: inference
    model: llama-3.1-8b
    request_rate: {rate}
    input_tokens: 1000
    output_tokens: 32
    ttft_ms: 100
    tpot_ms: 100
    hours: 720
    gpu: h100-80gb
    tensor_parallel: 1
"""


def p99_wait(rate: float, p: float, q: float = 0.99) -> float:
    """The q-quantile of the wait for prefills ahead, prompts arriving as a Poisson stream and prefilled
    one after another in p seconds (M/D/1): 0 where ρ = rate·p ≤ 1 − q (an arrival finds the server idle
    with probability 1 − ρ), else the t with P(W ≤ t) = (1 − ρ) Σ_{k=0}^{⌊t/p⌋} [rate(kp − t)]^k / k! ×
    e^{−rate(kp − t)} = q (Erlang 1909; Crommelin 1932), by bisection. Summed in floats, which hold for
    the few terms here (t < 8p: the terms stay below e^{16} ≈ 1e7, rounding below 1e-8)."""
    rho = rate * p
    if rho <= 1 - q:
        return 0.0

    def cdf(t: float) -> float:
        return (1 - rho) * sum((rate * (k * p - t)) ** k / math.factorial(k) * math.exp(-rate * (k * p - t))
                               for k in range(int(t // p) + 1))

    low, high = 0.0, 8 * p
    assert cdf(high) >= q
    for _ in range(60):
        low, high = ((low + high) / 2, high) if cdf((low + high) / 2) < q else (low, (low + high) / 2)
    return high


def service_point(r: float, p: float):
    """One replica at r requests/s: u = r·p of its time prefills; TPOT = step ÷ (1 − u) with the
    requests in flight B = r × (p ÷ (1 − u) + 32 × TPOT) (Little's law; mean context 1,000 + 16);
    p99 TTFT = p + the p99 wait + the decode step under way + the batch riding in the prompt's pass."""
    u = r * p
    batch = 1
    for _ in range(50):
        tpot = step_seconds(batch, 1016) / (1 - u)
        batch = math.ceil(r * (p / (1 - u) + 32 * tpot))
    return batch, tpot, p + p99_wait(r, p) + step_seconds(batch, 1016) + ride_seconds(batch, 1016)


def test_a_service_sized_by_little_s_law(tmp_path, capsys):
    # 50 requests/s of 1,000-token prompts with TTFT ≤ 100 ms at p99 (the default percentile) and
    # TPOT ≤ 100 ms. The TTFT target binds first: a lone prompt takes p ≈ 26.7 ms (22.1 ms of compute and
    # 32 layers' launches, 4.6 ms); on three replicas (16.7 requests/s each) the prefills keep each GPU
    # busy u ≈ 0.45 and the p99 wait behind them passes 100 ms; on four it holds.
    p = prefill_seconds(1000)
    rate = 50.0
    replicas = next(n for n in range(1, 10) if 1 - rate / n * p > 0 and service_point(rate / n, p)[2] <= 0.1
                    and service_point(rate / n, p)[1] <= 0.1)
    assert replicas == 4 and service_point(rate / 3, p)[2] > 0.1
    code, plan_json, err = plan(tmp_path, capsys, SERVICE.format(rate=rate))
    assert code == 0, err
    (w,) = plan_json["workloads"]
    i = w["inference"]
    assert (i["mode"], i["replicas"], i["tensor_parallel"], i["ttft_percentile"]) == ("rate", replicas, 1, 99)
    assert w["gpu"]["count"] == replicas
    assert w["runtime_hours"] == 720 and w["gpu_hours"] == pytest.approx(720 * replicas)
    # Each replica carries 50/4 requests/s: TTFT and TPOT there, and the requests in flight.
    batch, tpot, ttft = service_point(rate / replicas, p)
    assert i["batch"] == batch
    assert i["tpot_ms"] == pytest.approx(tpot * 1e3, rel=1e-4)
    assert i["ttft_ms"] == pytest.approx(ttft * 1e3, rel=1e-4)
    assert i["ttft_ms"] <= 100 and i["tpot_ms"] <= 100
    assert i["output_tokens_per_second"] == pytest.approx(rate * 32)
    assert w["tokens"] == 0 and w["throughput_source"] == "service"


def test_the_median_ttft_needs_fewer_replicas(tmp_path, capsys):
    # ttft_percentile: 50 holds the median: at 25 requests/s per replica u ≈ 0.67 > 0.5, so the median
    # wait is above 0 but far below the p99 wait; two replicas meet 100 ms.
    p = prefill_seconds(1000)
    batch = service_point(25, p)[0]
    assert p + p99_wait(25, p, 0.5) + step_seconds(batch, 1016) + ride_seconds(batch, 1016) < 0.1
    code, plan_json, err = plan(tmp_path, capsys, SERVICE.format(rate=50) + "    ttft_percentile: 50\n")
    assert code == 0, err
    i = plan_json["workloads"][0]["inference"]
    assert (i["replicas"], i["ttft_percentile"]) == (2, 50)
    assert i["ttft_ms"] == pytest.approx(
        (p + p99_wait(25, p, 0.5) + step_seconds(batch, 1016) + ride_seconds(batch, 1016)) * 1e3, rel=1e-4)


def test_one_replica_when_the_load_is_light(tmp_path, capsys):
    code, plan_json, err = plan(tmp_path, capsys, SERVICE.format(rate=1))
    assert code == 0, err
    (w,) = plan_json["workloads"]
    assert (w["inference"]["replicas"], w["gpu"]["count"]) == (1, 1)


def test_targets_no_gpu_reaches_say_what_is_achievable(tmp_path, capsys):
    # On the pinned 1× h100-80gb: a lone prompt of 1,000 tokens takes p (above), and one decode step
    # at batch 1 and context 1,016 reads 16.06 GB of weights and 1,016 × 131,072 B of KV.
    text = SERVICE.format(rate=1).replace("ttft_ms: 100", "ttft_ms: 5").replace("tpot_ms: 100", "tpot_ms: 1")
    code, _, err = plan(tmp_path, capsys, text)
    assert code == 2
    tpot = step_seconds(1, 1016) * 1e3
    # the prefill, the first decode step, and that batch of 1 riding in the prompt's pass
    ttft = prefill_seconds(1000) * 1e3 + tpot + ride_seconds(1, 1016) * 1e3
    # "at least" rounds up to the hundredth, so that the figure quoted is a target that can be planned.
    assert err == (
        f"FILE:8: workloads[0].ttft_ms: below what the GPUs can reach (got 5 ms, expected at least "
        f"{math.ceil(ttft * 100) / 100:,.2f} ms: "
        f"a lone prompt of 1,000 tokens takes {ttft:,.1f} ms to prefill and decode its first token even on "
        "1× h100-80gb, the fastest replica tried within a node)\n"
        f"FILE:9: workloads[0].tpot_ms: below what the GPUs can reach (got 1 ms, expected at least "
        f"{math.ceil(tpot * 100) / 100:,.2f} ms: "
        f"one decode step at batch 1 reads the weights and one sequence's KV cache in {tpot:,.2f} ms even on "
        "1× h100-80gb, the fastest replica tried within a node)\n")


def test_a_service_by_hours_is_checked_against_the_kv_pool(tmp_path, capsys):
    # vLLM's pool on one a100-40gb (39.39 GiB usable): 0.9 × 39.39 GiB − 16.06 GB − activations (the CUDA
    # context sits beside the budget) holds 19-20 sequences of 8,000 tokens (1.05 GB each), so batch 16 is
    # served and 24 is not.
    text = """\
    workloads:
      - name: svc
        kind: inference
        model: llama-3.1-8b
        context: 8000
        batch: {batch}
        hours: 100
        gpu: a100-40gb
        gpus: 1
    """
    code, p, err = plan(tmp_path, capsys, text.format(batch=16))
    assert code == 0, err
    i = p["workloads"][0]["inference"]
    pool_high = 0.9 * 39.39 * 2**30 - WEIGHT_BYTES
    assert pool_high // (8000 * KV_PER_TOKEN) - 2 <= i["max_concurrency"] <= pool_high // (8000 * KV_PER_TOKEN)
    assert (i["mode"], i["batch"], i["ttft_ms"]) == ("hours", 16, None)
    assert p["workloads"][0]["gpu_hours"] == 100
    code, _, err = plan(tmp_path, capsys, text.format(batch=24))
    assert code == 1
    assert "svc" in err and "a100-40gb" in err


def test_the_example_requests_plan(capsys):
    """workloads/inference/evaluation.yaml: the figures docs/inference.md states (a regression pin of the example)."""
    assert main(["plan", "workloads/inference/evaluation.yaml", "--format", "json"]) == 0
    batch, service = json.loads(capsys.readouterr().out)["workloads"]
    assert (batch["gpu"]["type"], batch["gpu"]["count"]) == ("h200", 2)
    # 12.21 h (rounded up to 0.01 h) × 2 GPUs × 1.3 = 31.746 → 31.75
    assert batch["runtime_hours"] == 12.21 and batch["gpu_hours_requested"] == 31.75
    assert (service["inference"]["replicas"], service["inference"]["tensor_parallel"]) == (3, 2)
    assert service["inference"]["ttft_ms"] < 1000 and service["inference"]["tpot_ms"] < 50
