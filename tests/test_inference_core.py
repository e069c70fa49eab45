"""The inference speed model (proposalkit/estimate/inference.py) on hand-computed cases.

Sources of the inputs: Llama-3.1-8B config.json (meta-llama/Llama-3.1-8B: 32 layers, 32 heads,
8 kv heads, head_dim 128, hidden 4096; 8,030,261,248 parameters, the catalog's published
count); H100 SXM datasheet (3.35 TB/s, 989 TFLOP/s dense bf16, 1,979 fp8); the catalog's usable
memory (79.11 GiB); engine defaults in proposalkit/catalog/engines.py with their sources.
"""

from __future__ import annotations

import math

import pytest

from proposalkit.catalog import gpus, models
from proposalkit.catalog import engines
from proposalkit.estimate.breakdown import CUDA_CONTEXT_BYTES
from proposalkit.estimate.inference import (
    InferenceError,
    decode_step,
    prefill,
    replica,
)
from proposalkit.estimate.batch import batch_job
from proposalkit.estimate.serving import service

H100 = gpus()["h100-80gb"]
LLAMA8B = models()["llama-3.1-8b"]
P_8B = 8_030_261_248
KV_8B = 2 * 32 * 8 * 128 * 2          # K and V × layers × kv heads × head_dim × 2 bytes = 131,072


def rep8b(**kw):
    kw.setdefault("precision", "bf16")
    kw.setdefault("engine", "vllm")
    return replica(LLAMA8B, H100, **kw)


def test_weights_and_kv_per_token_of_llama_8b_bf16_on_one_h100():
    r = rep8b()
    assert r.weights_bytes == 2 * P_8B == 16_060_522_496
    assert r.kv_bytes_per_token == KV_8B == 131_072


def test_tensor_parallel_splits_weights_and_kv_heads():
    r = rep8b(tensor_parallel=2)
    assert r.weights_bytes == P_8B            # 2 bytes × P / 2 GPUs
    assert r.kv_bytes_per_token == KV_8B // 2  # 4 of the 8 kv heads per GPU


def test_fp8_weights_keep_embeddings_16bit():
    r = rep8b(precision="fp8")
    embeddings = 2 * 128_256 * 4096            # input table + untied LM head (config.json vocab 128,256)
    assert r.weights_bytes == math.ceil((P_8B - embeddings - 32 * 2 * 4096 - 4096) * 1
                                        + (embeddings + 32 * 2 * 4096 + 4096) * 2)
    assert r.compute_precision == "fp8" and r.peak_flops == 1979e12


@pytest.mark.parametrize("engine, kv", [("trt-llm", "fp8"), ("vllm", "bf16"), ("sglang", "bf16"), ("hf", "bf16")])
def test_kv_cache_beside_fp8_weights_is_what_the_engines_checkpoints_state(engine, kv):
    # kv_cache_dtype "auto" is the checkpoint's KV quantization, else the model's dtype: NVIDIA Model
    # Optimizer's FP8 checkpoints (TensorRT-LLM's) state kv_cache_quant_algo FP8; vLLM's and SGLang's
    # FP8 paths (llm-compressor checkpoints, --quantization fp8) state none (catalog/engines.py kv_source).
    r = rep8b(precision="fp8", engine=engine)
    assert r.kv_precision == kv
    assert r.kv_bytes_per_token == (KV_8B // 2 if kv == "fp8" else KV_8B)


def test_one_rule_for_the_kv_cache_with_and_without_a_pilot(tmp_path):
    # The pilot path (planning/search.memory_of: a batch job by tokens with a measured throughput) asks the
    # estimate's function too: fp8 weights keep a 16-bit cache under vLLM and an fp8 one under TensorRT-LLM,
    # as replica() does above, and the plan says why.
    from proposalkit.estimate.inference import default_kv_precision, kv_note
    from proposalkit.input.loading import load_files
    from proposalkit.planning.planner import plan_files
    from proposalkit.notes import of_kind

    assert default_kv_precision("fp8", None) == "bf16" and default_kv_precision("fp8", "trt-llm") == "fp8"
    assert default_kv_precision("int4", "trt-llm") == "bf16" and default_kv_precision("fp16", "vllm") == "fp16"
    for engine, kv in ((None, KV_8B), ("trt-llm", KV_8B // 2)):
        path = tmp_path / "w.yaml"
        path.write_text("workloads:\n- {name: job, kind: inference, model: llama-3.1-8b, precision: fp8, context: "
                        "4096, batch: 8, tokens: 1B, throughput: {tokens_per_second: 900, gpu: h100-80gb}"
                        + (f", framework: {engine}" if engine else "") + "}\n")
        w = plan_files(load_files([str(path)])).workloads[0]
        assert w.memory.kv_cache == 8 * 4096 * kv
        (dtype,) = of_kind(w.assumptions, "kv-cache-dtype")
        assert dtype == kv_note("fp8", engine)
        assert (dtype["kv_precision"], dtype["precision"]) == (("bf16", "fp8") if engine is None else ("fp8", "fp8"))


def test_vllm_pool_is_the_utilization_share_less_weights_and_workspace():
    r = rep8b()
    assert r.workspace_bytes > CUDA_CONTEXT_BYTES
    # The CUDA context sits beside vLLM's budget (its snapshot is taken once the context exists:
    # vllm/v1/worker/gpu_worker.py init_device @ 35d5cda1), so only the activations come out of it.
    activations = r.workspace_bytes - CUDA_CONTEXT_BYTES
    assert r.kv_pool_bytes == int(0.9 * H100.usable_memory_bytes - r.weights_bytes - activations)
    assert r.kv_tokens == r.kv_pool_bytes // KV_8B
    # 1000 + 500 tokens per sequence; vLLM's cap on an 80 GB H100 is 1024 sequences.
    assert r.max_concurrency(1000, 500) == min(r.kv_tokens // 1500, 1024)


def test_trt_llm_pool_is_its_fraction_of_the_free_memory():
    r = rep8b(engine="trt-llm")
    free = H100.usable_memory_bytes - r.weights_bytes - r.workspace_bytes
    assert r.kv_pool_bytes == int(0.9 * free)
    assert r.max_batch == 2048


def test_sglang_reserves_by_gpu_class():
    # server_args.py: an 80 GB-class GPU keeps 9.5 + 0.5 × TP GiB outside mem_fraction_static.
    mib = H100.usable_memory_bytes / 2**20
    fraction = engines.engine_memory_fraction(engines.SGLANG, 1, H100.usable_memory_bytes)
    assert fraction == round((mib - 10 * 1024) / mib, 3) == 0.874
    r = rep8b(engine="sglang")
    # model_runner.py profile_max_num_token: the pool is mem_fraction_static × the memory free once the CUDA
    # context exists, less the weights; the activation workspace lives in the reserve beside it.
    assert r.kv_pool_bytes == int(0.874 * (H100.usable_memory_bytes - CUDA_CONTEXT_BYTES) - r.weights_bytes)


def test_hf_has_no_pool_but_the_allocator_reserve():
    r = rep8b(engine="hf")
    assert r.kv_pool_bytes == int(H100.usable_memory_bytes / 1.1 - r.weights_bytes - r.workspace_bytes)
    assert r.max_batch is None


def test_hf_speed_is_refused_with_what_to_do_instead():
    r = rep8b(engine="hf")
    assert r.max_concurrency(1000, 500) > 0          # its memory is modelled
    with pytest.raises(InferenceError, match="pilot"):
        batch_job(r, requests=100, input_tokens=1000, output_tokens=500)
    with pytest.raises(InferenceError, match="vllm, sglang or trt-llm"):
        decode_step(r, batch=1, context=100)


def test_decode_step_at_batch_one_reads_the_weights_once():
    r = rep8b()
    step = decode_step(r, batch=1, context=1000)
    assert step.bytes_read == 2 * P_8B + 1000 * KV_8B
    # Never faster than the datasheet bandwidth allows: 16.06 GB / 3.35 TB/s = 4.79 ms.
    assert step.seconds >= 2 * P_8B / 3.35e12
    # At the engine's achieved fraction, exactly the two memory-bound operators.
    bw = engines.VLLM.bandwidth_fraction * 3.35e12
    assert step.seconds == pytest.approx(2 * P_8B / bw + 1000 * KV_8B / bw)
    assert step.bound == "memory"


def test_decode_turns_compute_bound_at_large_batch():
    r = rep8b(engine="trt-llm")
    step = decode_step(r, batch=2048, context=256)
    assert step.bound == "compute"
    assert step.tokens_per_second == pytest.approx(2048 / step.seconds)


def test_prefill_is_2P_matmul_per_token_plus_causal_attention():
    r = rep8b()
    s = 2048
    matmul = P_8B - 128_256 * 4096             # the input embedding is a lookup, not a GEMM
    flops = 2 * matmul * s + 2 * 32 * s * s * 32 * 128
    p = prefill(r, s)
    assert p.flops == pytest.approx(flops)
    # compute-bound at 2,048 tokens, plus the pass's launches: 32 layers × the engine's per-layer cost
    assert p.seconds == pytest.approx(flops / (engines.VLLM.compute_fraction_16bit * 989e12)
                                      + 32 * engines.VLLM.prefill_layer_seconds)


def test_moe_computes_with_active_parameters_and_stores_all():
    mixtral = models()["mixtral-8x7b"]
    r = replica(mixtral, H100, tensor_parallel=2, precision="bf16", engine="vllm")
    assert r.weights_bytes == mixtral.params          # 2 bytes × P / 2
    assert prefill(r, 1).flops < 2 * mixtral.params / 2 / 2   # two of eight experts: far below 2·P/t


def test_batch_job_runtime_is_prefill_plus_decode_steps():
    r = rep8b()
    job = batch_job(r, requests=10_000, input_tokens=1000, output_tokens=500)
    batch = r.max_concurrency(1000, 500)
    assert job.batch == batch
    step = decode_step(r, batch, 1250)
    one = prefill(r, 1000)
    passes = -(-10_000 * 1000 // 8192)           # prompts packed into passes of vLLM's 8,192-token chunk
    expected = 10_000 * one.compute_seconds + passes * one.launch_seconds + 10_000 * 500 / batch * step.seconds
    assert job.runtime_seconds == pytest.approx(expected)
    assert job.output_tokens_per_second == pytest.approx(10_000 * 500 / expected)


def test_batch_job_over_replicas_splits_the_requests():
    r = rep8b()
    one = batch_job(r, requests=10_000, input_tokens=1000, output_tokens=500)
    two = batch_job(r, requests=10_000, input_tokens=1000, output_tokens=500, replicas=2)
    # half the requests, half the time (within the launches of the half pass that rounding adds)
    assert two.runtime_seconds == pytest.approx(one.runtime_seconds / 2, rel=1e-5)
    assert two.output_tokens_per_second == pytest.approx(2 * one.output_tokens_per_second, rel=1e-5)


def test_weights_that_do_not_fit_say_how_many_gpus():
    with pytest.raises(InferenceError, match="more tensor-parallel GPUs"):
        replica(models()["llama-3.1-405b"], H100, precision="bf16", engine="vllm")


def test_context_beyond_the_model_is_refused_with_the_maximum():
    with pytest.raises(InferenceError) as e:
        batch_job(rep8b(), requests=1, input_tokens=200_000, output_tokens=100)
    assert e.value.achievable == LLAMA8B.max_context == 131_072


def test_tpot_below_one_gpu_bandwidth_is_refused_with_what_is_achievable():
    r = rep8b()
    with pytest.raises(InferenceError) as e:
        service(r, request_rate=1, input_tokens=500, output_tokens=200, tpot_ms=2)
    assert e.value.achievable == pytest.approx(decode_step(r, 1, 600).seconds * 1e3)
    assert e.value.achievable > 2 * P_8B / 3.35e12 * 1e3


def test_service_replicas_grow_with_the_rate_and_meet_the_targets():
    r = rep8b()
    low = service(r, request_rate=1, input_tokens=1000, output_tokens=500, ttft_ms=1000, tpot_ms=50)
    assert low.replicas == 1 and low.tpot_ms <= 50 and low.ttft_ms <= 1000
    high = service(r, request_rate=100 * low.max_rate_per_replica, input_tokens=1000, output_tokens=500,
                   ttft_ms=1000, tpot_ms=50)
    assert high.replicas == 100
    assert high.concurrency <= high.max_concurrency


def test_unknown_engine_is_refused():
    with pytest.raises(ValueError, match="vllm, sglang, trt-llm, hf"):
        rep8b(engine="ollama")


def test_moe_decode_at_batch_one_reads_only_the_experts_it_visits():
    # Mixtral-8x7B: top-2 of 8 experts; one token reads the dense part and two experts per layer,
    # i.e. the active parameters (12.9B of 46.7B), 2 bytes each, split over 2 GPUs.
    mixtral = models()["mixtral-8x7b"]
    r = replica(mixtral, H100, tensor_parallel=2, precision="bf16", engine="vllm")
    one = decode_step(r, batch=1, context=1000)
    assert one.weights_bytes_read == pytest.approx(2 * mixtral.active_params / 2, rel=1e-9)
    assert one.bytes_read == one.weights_bytes_read + one.kv_bytes_read
    # A large batch visits every expert: all the weights.
    assert decode_step(r, batch=256, context=1000).weights_bytes_read == pytest.approx(r.weights_bytes, rel=1e-9)
    # Two tokens: E·(1 − (1 − k/E)²) = 8 × (1 − 0.5625) = 3.5 experts per layer on average.
    expert_bytes = r.weights_bytes * (mixtral.params - mixtral.active_params) / mixtral.params * 8 / 6
    assert decode_step(r, batch=2, context=1000).weights_bytes_read == pytest.approx(
        r.weights_bytes - expert_bytes * (1 - 3.5 / 8), rel=1e-9)
