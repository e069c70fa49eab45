"""Memory per GPU under a pre-allocating inference engine is the engine's whole reservation.

vLLM keeps everything it allocates under gpu_memory_utilization (0.9, vllm/engine/arg_utils.py
@ 99d7eb5d) × the device's total memory, the CUDA context and NCCL buffers included: the KV cache gets
total × gpu_memory_utilization − (torch's profiled peak + non-torch allocations)
(vllm-project/vllm @ 0012cf691b7e69423244d2b1405f4b6832156e19, vllm/v1/worker/gpu_worker.py
Worker.determine_available_memory). TensorRT-LLM gives its KV pool free_gpu_memory_fraction 0.9 of the
memory free after weights and workspace (tensorrt_llm/llmapi/llm_args.py @ fcd3f316). Both hold their
pool whatever the batch, so nvidia-smi shows the reservation. Transformers (`hf`) allocates as it goes.
"""

from __future__ import annotations

import json
import math

from proposalkit.cli import main
from conftest import records

GiB = 2**30
CONTEXT = 1 * GiB                         # estimate/breakdown.py CUDA_CONTEXT_BYTES
H100_USABLE = round(79.11 * GiB)          # catalog gpus.yaml h100-80gb: PyTorch "total capacity of 79.11 GiB"
# Llama 3.1 8B (meta-llama/Llama-3.1-8B config.json): 8,030,261,248 parameters (safetensors total), bf16.
WEIGHTS_8B = 8_030_261_248 * 2
KV_PER_TOKEN_8B = 2 * 32 * 8 * 128 * 2    # K and V × 32 layers × 8 kv heads × 128 × 2 B = 131,072 B
# vLLM's profiled workspace: one forward pass of max_num_batched_tokens 8,192 tokens (estimate/activations):
# residual and its normalised copy 2·2·n·4,096, then the larger phase, the gated MLP 2·n·3·14,336 (attention's
# q, k, v, o are 2·n·(4,096 + 1,024 + 1,024 + 4,096), smaller), + fp32 logits of one sampled position 4 × 128,256.
N = 8192
WORKSPACE_8B = 2 * 2 * N * 4096 + 2 * N * 3 * 14336 + 4 * 128_256


def _plan(tmp_path, capsys, row: str) -> dict:
    path = tmp_path / "w.yaml"
    path.write_text(f"workloads:\n  - {{{row}}}\n", encoding="utf-8")
    assert main(["plan", str(path), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["workloads"][0]


def test_vllm_holds_0_9_of_the_device_whatever_the_batch(tmp_path, capsys):
    w = _plan(tmp_path, capsys, "name: svc, kind: inference, framework: vllm, model: llama-3.1-8b, context: 4096, "
                                "batch: 8, hours: 100, gpu: h100-80gb, gpus: 1")
    m, c = w["memory"]["estimate"], w["memory"]["estimate"]["components"]
    # vLLM's budget, 0.9 × the device, holds weights, workspace and pool; the CUDA context sits beside it
    # (the budget is measured from a snapshot taken once the context exists: vllm/v1/worker/gpu_worker.py
    # init_device @ 35d5cda1).
    budget = math.floor(0.9 * H100_USABLE)
    reservation = budget + CONTEXT
    assert WORKSPACE_8B == 839_373_824
    assert m["device_bytes"] == m["per_gpu_bytes"] == reservation == 76_449_344_127 + 1_073_741_824
    assert c["weights"] == WEIGHTS_8B and c["activations"] == WORKSPACE_8B and c["overhead"] == CONTEXT
    # The KV cache component is the whole pool: the budget less weights and workspace.
    assert c["kv_cache"] == budget - WEIGHTS_8B - WORKSPACE_8B == 59_549_447_807
    # No caching-allocator reserve on the pool: allocated = reserved = device − the CUDA context = the budget.
    assert m["allocated_bytes"] == m["reserved_bytes"] == budget
    # The batch's use of the pool is stated: 8 × 4,096 × 131,072 B = 4.29 GB of 59.55 GB.
    tokens = c["kv_cache"] // KV_PER_TOKEN_8B
    (use,) = records(w, "kv-pool-use")
    assert use["values"] == {"pool_bytes": w["memory"]["components"]["kv_cache"], "kv_tokens": tokens, "batch": 8, "context": 4096,
                             "used_bytes": 8 * 4096 * KV_PER_TOKEN_8B}
    # Twice the batch: the same device figure (the pool is reserved at start-up).
    w2 = _plan(tmp_path, capsys, "name: svc, kind: inference, framework: vllm, model: llama-3.1-8b, context: 4096, "
                                 "batch: 16, hours: 100, gpu: h100-80gb, gpus: 1")
    assert w2["memory"]["estimate"]["device_bytes"] == reservation


def test_trt_llm_reservation_fits_the_usable_memory(tmp_path, capsys):
    # Llama 3.1 70B on 4× h100-80gb (the reviewer's case: 82.2 GiB per GPU was shown, above the 79.11 GiB usable).
    w = _plan(tmp_path, capsys, "name: svc, kind: inference, framework: trt-llm, model: llama-3.1-70b, "
                                "context: 4096, batch: 8, hours: 100, gpu: h100-80gb, gpus: 4")
    m, c = w["memory"]["estimate"], w["memory"]["estimate"]["components"]
    weights = 70_553_706_496 * 2 // 4          # meta-llama/Llama-3.1-70B, bf16, tensor parallel 4
    assert c["weights"] == weights
    workspace = c["activations"] + CONTEXT
    free = H100_USABLE - weights - workspace
    assert c["kv_cache"] == int(0.9 * free)
    assert m["device_bytes"] == weights + workspace + int(0.9 * free) <= H100_USABLE
    # What is left of the device is the 10% of the free memory TensorRT-LLM leaves alone.
    assert abs((H100_USABLE - m["device_bytes"]) - 0.1 * free) <= 1
    assert m["allocated_bytes"] == m["reserved_bytes"] == m["device_bytes"] - CONTEXT


def test_transformers_allocates_what_the_batch_holds(tmp_path, capsys):
    w = _plan(tmp_path, capsys, "name: svc, kind: inference, framework: hf, model: llama-3.1-8b, context: 4096, "
                                "batch: 8, hours: 100, gpu: h100-80gb, gpus: 1")
    m, c = w["memory"]["estimate"], w["memory"]["estimate"]["components"]
    assert c["weights"] == WEIGHTS_8B
    assert c["kv_cache"] == 8 * 4096 * KV_PER_TOKEN_8B
    allocated = sum(c[k] for k in ("weights", "gradients", "optimizer", "activations", "kv_cache"))
    assert m["reserved_bytes"] == allocated + math.ceil(allocated / 10)     # ALLOCATOR_RESERVE 10%
    assert m["device_bytes"] == m["reserved_bytes"] + CONTEXT
