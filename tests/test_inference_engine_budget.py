"""What a pre-allocating engine's memory fraction holds, and what the device holds beside it, through the CLI.

Llama-3.1-8B (bf16, 16,060,522,496 B of weights) on one h100-80gb (84,943,715,697 B usable: the catalog's
lowest CUDA-reported capacity), batch 8 × 4,096 tokens, 100 hours. The workspace is one 8,192-token forward
pass (839,373,824 B, tests/test_inference_engine_memory.py); the CUDA context is estimate/breakdown.py's
CUDA_CONTEXT_BYTES, 2^30.
"""

from __future__ import annotations

import json
import math

from proposalkit.cli import main
from conftest import records

USABLE = 84_943_715_697
WEIGHTS = 16_060_522_496
ACTIVATIONS = 839_373_824
CONTEXT = 2**30


def _plan(tmp_path, capsys, engine: str) -> dict:
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n  - {name: svc, kind: inference, framework: " + engine + ", model: llama-3.1-8b, "
                    "context: 4096, batch: 8, hours: 100, gpu: h100-80gb, gpus: 1}\n", encoding="utf-8")
    assert main(["plan", str(path), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["workloads"][0]


def test_vllm_holds_the_cuda_context_beside_its_budget(tmp_path, capsys):
    # vllm/v1/worker/gpu_worker.py @ 35d5cda1: requested_memory = total × 0.9 from a snapshot taken after the
    # context and NCCL exist; the KV cache is what the profiling run leaves of it (weights, activations).
    w = _plan(tmp_path, capsys, "vllm")
    m, c = w["memory"]["estimate"], w["memory"]["estimate"]["components"]
    pool = math.floor(0.9 * USABLE - WEIGHTS - ACTIVATIONS)
    assert c["kv_cache"] == pool == 59_549_447_807
    assert m["device_bytes"] == WEIGHTS + ACTIVATIONS + pool + CONTEXT == 77_523_085_951   # 0.9 × usable + 2^30
    assert m["allocated_bytes"] == m["device_bytes"] - CONTEXT
    (rule,) = records(w, "engine-reservation")
    assert rule["values"]["rule"] == "device" and rule["values"]["workspace_in_budget"]
    assert rule["values"]["pool_bytes"] == w["memory"]["components"]["kv_cache"]    # as printed, below
    assert sum(w["memory"]["components"].values()) == w["memory"]["per_gpu_bytes"] >= m["per_gpu_bytes"]
    assert "vllm/v1/worker/gpu_worker.py" in rule["values"]["why"] and rule["sources"] == ["kwon-2023"]


def test_sglang_holds_the_workspace_and_the_context_beside_its_static_fraction(tmp_path, capsys):
    # sglang model_runner.py: rest_memory = free after the weights − free at start × (1 − 0.874), so weights +
    # pool = 0.874 × (usable − context); mem_fraction_static is for "model weights and KV cache memory pool".
    # 0.874 = (usable MiB − 10 GiB reserve) / usable MiB on an 80 GB-class GPU at TP 1 (server_args.py).
    w = _plan(tmp_path, capsys, "sglang")
    m, c = w["memory"]["estimate"], w["memory"]["estimate"]["components"]
    pool = math.floor(0.874 * (USABLE - CONTEXT) - WEIGHTS)
    assert c["kv_cache"] == pool == 57_241_834_669
    assert c["activations"] == ACTIVATIONS
    assert m["device_bytes"] == WEIGHTS + pool + ACTIVATIONS + CONTEXT == 75_215_472_813
    # Before: 0.874 × usable = 74,240,807,519 B with the workspace and context inside the fraction.
    assert m["device_bytes"] > 0.874 * USABLE
    (rule,) = records(w, "engine-reservation")
    assert rule["values"]["rule"] == "device" and not rule["values"]["workspace_in_budget"]
    assert rule["values"]["fraction"] == 0.874 and rule["values"]["pool_bytes"] == w["memory"]["components"]["kv_cache"]
