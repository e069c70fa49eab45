"""A prefill pass reads every weight once: a lone short prompt's TTFT is at least that read; a batch job's
prompts share passes of the engine's prefill chunk, each charged its compute and each pass one read.

Llama-3.1-8B at fp8 under TensorRT-LLM on one h100-80gb, through the CLI. Hand inputs:
- fp8 weights: the block matrices at 1 byte, embeddings, LM head and norms at 2 (meta-llama/Llama-3.1-8B
  config.json: 8,030,261,248 parameters, vocabulary 128,256 untied, hidden 4,096, 32 layers):
  (8,030,261,248 − 2·128,256·4,096 − 32·2·4,096 − 4,096) + 2·(2·128,256·4,096 + 32·2·4,096 + 4,096)
  = 9,081,200,640 B, read at the calibrated bandwidth fraction × 3.35 TB/s (the datasheet);
- prefill FLOPs of s tokens: 2 × 7,504,924,672 (matmul parameters) × s + 4 × 32·s²/2 × 4,096 (causal
  attention), at the calibrated fp8 fraction × 1,979 TFLOP/s (the dense fp8 peak);
- each pass launches its 32 layers' kernels: 32 × the calibrated per-layer cost.
The calibrated constants are imported by name from proposalkit/catalog/engines.py.
"""

from __future__ import annotations

import math

import pytest

from proposalkit.catalog.engines import (TRT_BANDWIDTH_FRACTION, TRT_COMPUTE_FRACTION_8BIT,
                                          TRT_PREFILL_LAYER_SECONDS)

READ_S = 9_081_200_640 / (TRT_BANDWIDTH_FRACTION * 3.35e12)
ACHIEVED = TRT_COMPUTE_FRACTION_8BIT * 1979e12
LAUNCH_S = 32 * TRT_PREFILL_LAYER_SECONDS


def _compute_s(tokens: int) -> float:
    return (2 * 7_504_924_672 * tokens + 4 * 32 * tokens * tokens / 2 * 4096) / ACHIEVED


HEADER = """\
defaults: {kind: inference, framework: trt-llm, model: llama-3.1-8b, precision: fp8, gpu: h100-80gb, gpus: 1,
           tensor_parallel: 1}
workloads:
"""


def test_a_lone_short_prompt_takes_one_read_of_the_weights(plan_workloads):
    got = plan_workloads(HEADER + "  - {name: lone, requests: 1, input_tokens: 128, output_tokens: 1}\n"
                                  "  - {name: long, requests: 1, input_tokens: 8192, output_tokens: 1}\n")
    assert _compute_s(128) < READ_S                     # 1.50 ms of compute, 3.77 ms to read the weights
    assert got["lone"]["inference"]["ttft_ms"] == pytest.approx((READ_S + LAUNCH_S) * 1e3, rel=1e-4)
    assert READ_S * 1e3 == pytest.approx(3.765, abs=1e-3)
    # The job's runtime holds that pass too (one pass, so one read), and a decode step after it.
    assert got["lone"]["runtime_hours"] * 3600 > READ_S + LAUNCH_S
    # A long prompt is compute bound: 109.2 ms, and its pass's launches.
    assert got["long"]["inference"]["ttft_ms"] == pytest.approx((_compute_s(8192) + LAUNCH_S) * 1e3, rel=1e-4)


def test_a_batch_job_packs_short_prompts_into_passes(plan_workloads):
    # 10,000 prompts of 128 tokens fill ⌈1,280,000 / 8,192⌉ = 157 passes: 157 reads (0.59 s) are less than
    # the compute (10,000 × 1.50 ms = 15.0 s), so the prefill is charged its compute, and each pass its
    # launches once (157 × 4.61 ms = 0.72 s).
    got = plan_workloads(HEADER + "  - {name: many, requests: 10000, input_tokens: 128, output_tokens: 1}\n")
    passes = math.ceil(10_000 * 128 / 8192)
    assert passes == 157 and passes * READ_S < 10_000 * _compute_s(128)
    prefill_s = 10_000 * _compute_s(128) + passes * LAUNCH_S
    assert got["many"]["inference"]["prefill_tokens_per_second"] == pytest.approx(10_000 * 128 / prefill_s, rel=1e-4)
    # one prompt alone: the weights' read and the pass's launches
    assert got["many"]["inference"]["ttft_ms"] == pytest.approx((READ_S + LAUNCH_S) * 1e3, rel=1e-4)
