"""FSDP2's reduce-scatter input beside the unsharded gradients it is copied from, through the workload file.

FSDP2's foreach_reduce allocates one reduce-scatter input of the unit's size in the reduce dtype and copies the
unit's unsharded gradients into it before it frees them (pytorch/pytorch @ 415cc262
torch/distributed/_composable/fsdp/_fsdp_collectives.py: `reduce_scatter_input = torch.empty(...,
dtype=reduce_dtype)`, foreach_reduce_scatter_copy_in, "Only after the copy-in finishes can we free the
gradients"). torchtitan reduces in fp32 (config_manager.py mixed_precision_reduce float32).

Llama 3.1 8B (8,030,261,248 parameters; the largest unit is the 128,256 × 4,096 = 525,336,576-value embedding
or output projection), torchtitan preset, FSDP over 8 GPUs:
  gradient shard                  8,030,261,248 / 8 × 2   = 2,007,565,312 B
  the unit's unsharded gradient   525,336,576 × 2         = 1,050,673,152 B
  its fp32 reduce-scatter input   525,336,576 × 4         = 2,101,346,304 B
  gradients                                               = 5,159,584,768 B (3,058,238,464 before)
"""

from __future__ import annotations

UNIT = 128_256 * 4096
GRADIENTS = 8_030_261_248 // 8 * 2 + UNIT * 2 + UNIT * 4

WORKLOADS = """\
workloads:
  - {name: titan, kind: pretrain, model: llama-3.1-8b, tokens: 1B, seq_len: 8192, micro_batch: 1, gpu: h100-80gb,
     gpus: 8, framework: torchtitan}
  - {name: ddp, kind: pretrain, model: llama-3.1-8b, tokens: 1B, seq_len: 8192, micro_batch: 1, gpu: h100-80gb,
     gpus: 8, zero_stage: 3}
"""


def test_the_hand_count():
    assert GRADIENTS == 5_159_584_768


def test_torchtitan_counts_the_fp32_reduce_scatter_input(plan_workloads):
    got = plan_workloads(WORKLOADS)
    assert got["titan"]["memory"]["estimate"]["components"]["gradients"] == GRADIENTS
    # A workload naming no framework keeps the unit's unsharded gradient alone (its ZeRO-3 need not copy it).
    assert got["ddp"]["memory"]["estimate"]["components"]["gradients"] == GRADIENTS - UNIT * 4
