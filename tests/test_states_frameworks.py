"""Framework optimizer buffers and pipeline stages, by hand.

- Megatron-LM docs/distrib_optimizer.md (NVIDIA/Megatron-LM): bytes per parameter, d the data-parallel
  size: "fp16 param, fp16 grads | 20 | 4 + 16/d", "bf16 param, fp32 grads | 18 | 6 + 12/d",
  "fp32 param, fp32 grads | 16 | 8 + 8/d" (non-distributed | distributed optimizer = ZeRO stage 1).
- DeepSpeed BF16_Optimizer (microsoft/DeepSpeed @ 06e39a56, deepspeed/runtime/bf16_optimizer.py): bf16
  params 2 + their bf16 .grad 2 + an unpartitioned fp32 gradient buffer 4, fp32 master and Adam moments
  partitioned over the data-parallel ranks: 8 + 12/d.
- Pipeline stages hold ⌈L/p⌉ layers, the first also the embeddings, the last the LM head; torchtitan's FSDP
  under pipeline parallelism keeps the stage's bf16 parameters gathered and its gradients unsharded in fp32.
Llama 3.1 8B (config.json): 32 layers of 218,112,000 parameters (q, o 4096²; k, v 4096 × 1024; MLP
3 × 4096 × 14336; two norms of 4096), embeddings and LM head 128,256 × 4,096 each, final norm 4,096.
"""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from proposalkit.cli import main
from proposalkit.estimate.breakdown import Overhead
from proposalkit.estimate.memory import TrainingSetup, training_memory
from proposalkit.catalog.shapes import ModelSpec

NONE = Overhead(cuda_context_bytes=0, allocator_reserve=0.0)
P = 2**33                                   # a parameter count every d below divides
PARAMS_ONLY = ModelSpec(id="p", name="p", params_override=P)
LAYER_8B = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
EMBED_8B = 128_256 * 4_096


def _states(precision: str, impl: str, stage: int, d: int) -> Fraction:
    setup = TrainingSetup(method="full", seq_len=1, precision=precision, data_parallel=d, zero_stage=stage,
                          optimizer_impl=impl)
    m = training_memory(PARAMS_ONLY, setup, NONE)
    return Fraction(m.weights + m.gradients + m.optimizer, P)


@pytest.mark.parametrize("precision, non_distributed, distributed", [
    ("fp16", 20, lambda d: 4 + Fraction(16, d)),
    ("bf16", 18, lambda d: 6 + Fraction(12, d)),
    ("fp32", 16, lambda d: 8 + Fraction(8, d)),
])
def test_published_megatron_bytes_per_parameter(precision, non_distributed, distributed):
    assert _states(precision, "fp32-main-gradients", 0, 8) == non_distributed
    for d in (2, 8, 64):
        assert _states(precision, "fp32-main-gradients", 1, d) == distributed(d)


def test_deepspeed_bf16_optimizer_keeps_an_fp32_gradient_buffer_of_the_whole_replica():
    for d in (1, 8, 64):
        assert _states("bf16", "fp32-gradient-buffer", 0, d) == 8 + Fraction(12, d)
    with pytest.raises(ValueError, match="BF16_Optimizer runs at ZeRO stage 0 or 1"):
        _states("bf16", "fp32-gradient-buffer", 2, 8)


def _plan(tmp_path, capsys, extra: str) -> dict:
    path = tmp_path / "w.yaml"
    path.write_text("""workloads:
  - name: pp
    kind: pretrain
    model: llama-3.1-8b
    tokens: 10M
    seq_len: 2048
    activation_checkpointing: true
    gpu: h100-80gb
""" + extra, encoding="utf-8")
    assert main(["plan", str(path), "--format", "json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)["workloads"][0]["memory"]["estimate"]["components"]


def test_the_fullest_pipeline_stage_is_counted(tmp_path, capsys):
    assert LAYER_8B == 218_112_000
    c = _plan(tmp_path, capsys, "    gpus: 4\n    pipeline_parallel: 4\n")
    stage = 8 * LAYER_8B + EMBED_8B + 4_096      # the last stage: 8 layers + LM head + final norm
    assert (c["weights"], c["gradients"], c["optimizer"]) == (2 * stage, 2 * stage, 12 * stage)


def test_fsdp_under_pipeline_parallelism_keeps_the_stage_gathered(tmp_path, capsys):
    # 8 GPUs: pipeline 2 × FSDP 4; mixed precision (torchtitan: bf16 params, fp32 reduce)
    c = _plan(tmp_path, capsys, "    gpus: 8\n    pipeline_parallel: 2\n    zero_stage: 3\n")
    stage = 16 * LAYER_8B + EMBED_8B + 4_096
    assert c["weights"] == 2 * stage                       # bf16 parameters, gathered
    assert c["gradients"] == 4 * stage + 4 * stage // 4    # unsharded fp32 + the fp32 shard after reduce-scatter
    assert c["optimizer"] == 12 * stage // 4               # fp32 master, m, v sharded over 4


def test_framework_optimizers_keep_fp32_main_parameters_whatever_mixed_precision_says():
    for impl, expected in (("fp32-main-gradients", 18), ("fp32-gradient-buffer", 20)):
        setup = TrainingSetup(method="full", seq_len=1, precision="bf16", optimizer_impl=impl, mixed_precision=False)
        m = training_memory(PARAMS_ONLY, setup, NONE)
        assert Fraction(m.weights + m.gradients + m.optimizer, P) == expected
