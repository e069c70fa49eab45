"""The chunked loss's output-projection gradients, through the workload file.

torchtune's CEWithChunkedOutputLoss has the model project each of 8 chunks of the hidden states in turn
(pytorch/torchtune @ 3e5b0408 torchtune/modules/transformer.py chunked_output), so the backward receives 8
weight gradients of the output projection (v × h, the weight's dtype) and adds them in autograd's input
buffer. All 8 chunks' losses go backward first (the ready queue runs the highest sequence number first:
pytorch/pytorch @ a898f49b torch/csrc/autograd/engine.h CompareNodeTaskTime), leaving the 16-bit logit
gradients; the first weight gradient kept is a view whose storage its base shares, so the second is added out
of place (pytorch/pytorch @ 4537ef6c torch/csrc/autograd/input_buffer.cpp accumulate: can_accumulate_inplace
needs storage().use_count() == 1): three v × h gradients at once, with 6/8 of the logit gradients and 2/8 of
the hidden-state gradient (benchmarks/chunked_head_grad.py measures it on CPU).

Llama 3.1 8B (config.json: vocab 128,256, hidden 4,096, 32 layers; 8,030,261,248 parameters), torchtune preset
(bf16 weights 2 + AdamW moments 4 B/param), 512 tokens, full checkpointing, eager, optimizer in the backward
(no other gradient exists at that instant):
  weights + optimizer                 6 × 8,030,261,248            = 48,181,567,488 B
  three output-projection gradients   3 × 128,256 × 4,096 × 2      =  3,152,019,456 B
  checkpointed layer inputs           32 × 512 × 4,096 × 2         =    134,217,728 B
  final norm input, LM head input, the eager norm's fp32 copy
                                      (2 + 2 + 4) × 512 × 4,096    =     16,777,216 B
  logit gradients of 6 chunks         6/8 × 2 × 512 × 128,256      =     98,500,608 B
  hidden-state gradients of 2 chunks  2/8 × 2 × 512 × 4,096        =      1,048,576 B
  allocated                                                        = 51,584,131,072 B
Before, the same plan counted one 1,050,673,152 B gradient beside the loss's 6.5 B per logit: 49,810,071,552 B
allocated, 1.77 GB less.
"""

from __future__ import annotations
from conftest import records

from proposalkit.units import memory_carried

P_8B, V, H_8B, H_3B = 8_030_261_248, 128_256, 4_096, 3_072
TOKENS = 512
HEADS_8B = 3 * V * H_8B * 2
ACTS_8B = 32 * TOKENS * H_8B * 2 + 8 * TOKENS * H_8B + 6 * 2 * TOKENS * V // 8 + 2 * 2 * TOKENS * H_8B // 8
AT_HEAD_8B = 6 * P_8B + HEADS_8B + ACTS_8B

HEADER = """\
defaults:
  kind: finetune
  method: full
  tokens: 10M
  seq_len: 512
  micro_batch: 1
  gpu: a100-80gb
  gpus: 1
  zero_stage: 0
  activation_checkpointing: true
  framework: torchtune
  gradient_accumulation_steps: 1
  compile: false
  optimizer_in_backward: true
workloads:
"""



def test_the_hand_count():
    assert HEADS_8B == 3_152_019_456
    assert ACTS_8B == 134_217_728 + 16_777_216 + 98_500_608 + 1_048_576 == 250_544_128
    assert AT_HEAD_8B == 51_584_131_072


def test_three_projection_gradients_at_the_second_chunk(plan_workloads):
    got = plan_workloads(HEADER + "  - {name: w, model: llama-3.1-8b}\n")["w"]
    mem = got["memory"]["estimate"]
    assert mem["allocated_bytes"] == AT_HEAD_8B
    assert mem["components"]["gradients"] == HEADS_8B
    assert mem["components"]["activations"] == ACTS_8B
    (head,) = records(got, "chunked-head-accumulation")
    # As printed: each figure rounded up to 0.01 GiB, the moment counted the printed allocated figure.
    assert head["values"] == {"gradient_bytes": memory_carried(HEADS_8B),
                              "allocated_bytes": got["memory"]["allocated_bytes"]}


def test_tied_weights_add_nothing_at_that_instant(plan_workloads):
    # Llama 3.2 3B (tie_word_embeddings: the output projection is the embedding): the embedding's own gradient
    # comes at the end of the backward (tied_embedding_temporary), not beside the head's: the same three v × h.
    got = plan_workloads(HEADER + "  - {name: w, model: llama-3.2-3b}\n")["w"]
    acts = 28 * TOKENS * H_3B * 2 + 8 * TOKENS * H_3B + 6 * 2 * TOKENS * V // 8 + 2 * 2 * TOKENS * H_3B // 8
    assert got["memory"]["estimate"]["components"]["gradients"] == 3 * V * H_3B * 2 == 2_364_014_592
    assert got["memory"]["estimate"]["components"]["activations"] == acts == 199_950_336


def test_other_losses_and_frozen_heads_have_one_gradient(plan_workloads):
    got = plan_workloads(HEADER + "  - {name: standard, model: llama-3.1-8b, loss: standard}\n"
                                  "  - {name: fused, model: llama-3.1-8b, loss: fused}\n"
                                  "  - {name: lora, model: llama-3.1-8b, method: lora}\n")
    assert got["standard"]["memory"]["estimate"]["components"]["gradients"] == V * H_8B * 2     # the largest parameter's
    assert got["fused"]["memory"]["estimate"]["components"]["gradients"] == V * H_8B * 2
    for name in ("standard", "fused", "lora"):
        assert not records(got[name], "chunked-head-accumulation"), name


def test_gradients_kept_across_micro_batches_stay_beside_it(plan_workloads):
    # gradient_accumulation_steps 2: every gradient (2 B/param) persists, and the input buffer's three come on top.
    got = plan_workloads(HEADER.replace("optimizer_in_backward: true", "optimizer_in_backward: false")
                         .replace("gradient_accumulation_steps: 1", "gradient_accumulation_steps: 2")
                         + "  - {name: w, model: llama-3.1-8b}\n")["w"]
    mem = got["memory"]["estimate"]
    assert mem["components"]["gradients"] == 2 * P_8B + HEADS_8B
    assert mem["allocated_bytes"] == 8 * P_8B + HEADS_8B + ACTS_8B
