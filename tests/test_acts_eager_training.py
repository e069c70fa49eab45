"""Training without FlashAttention: the softmax of eager PyTorch attention runs in fp32.

A toy model (2 layers, hidden 256, 4 heads, 4 kv heads, gated MLP 1,024, vocabulary 32,000),
bf16, seq_len 512, micro_batch 1, no checkpointing, flash_attention: false. Per token and layer
without the scores (estimate/activations.py): norm inputs 2·2·256 + QKV input 2·256 + q, k, v
2·768 + o_proj input 2·256 + MLP input 2·256 + gate, up, product 3·2·1,024 = 10,240 B.
Scores per layer: 4 heads × 512² = 1,048,576. Under autocast the softmax runs in fp32 (PyTorch's
autocast op list; transformers' eager attention calls softmax(dtype=torch.float32)): its fp32
output 4 B is saved, plus the 16-bit copy the V matmul takes, 2 B: 6 B per score, 7 with dropout
(the 1-byte mask; the matmul then takes the 16-bit dropout output instead). Korthikanti et al.'s
fused 16-bit softmax would keep 2 (5 with dropout).
The model runs as eager PyTorch (no framework, compile unset: estimate/kernels.py): each RMSNorm
also keeps its fp32 copy (transformers LlamaRMSNorm @ d0fed636 .to(torch.float32)), 2·4·256, and
the gated MLP its SiLU output, 2·1,024: 4,096 B more per token and layer (no K/V copies: 4 kv
heads of 4); the final norm's fp32 copy 4·512·256.
"""

from __future__ import annotations

SCORES = 4 * 512 * 512
PER_LAYER = (10_240 + 2 * 4 * 256 + 2 * 1024) * 512
HEAD_INPUTS = 2 * 2 * 512 * 256 + 4 * 512 * 256   # the last norm's and head's inputs + the norm's fp32 copy
LOSS = 12 * 512 * 32_000        # cross_entropy on fp32-upcast logits (estimate/loss.py)


def _text(dropout: str) -> str:
    return ("workloads:\n  - {name: a, kind: pretrain, tokens: 1M, seq_len: 512, gpu: h100-80gb, gpus: 1, "
            "activation_checkpointing: false, flash_attention: false, model: {name: toy, layers: 2, hidden: 256, "
            f"heads: 4, kv_heads: 4, ffn_hidden: 1024, vocab: 32000, mlp: gated, dropout: {dropout}}}}}\n")


def test_eager_softmax_in_fp32_keeps_six_bytes_per_score(plan_workloads):
    got = plan_workloads(_text("false"))["a"]["memory"]["estimate"]["components"]["activations"]
    assert got == 2 * (PER_LAYER + 6 * SCORES) + HEAD_INPUTS + LOSS == 224_919_552


def test_with_dropout_seven_bytes_per_score_and_the_masks(plan_workloads):
    # Dropout masks, 1 B per value: two per layer at the attention and MLP outputs (2·512·256) and one
    # at the embedding (512·256) (Korthikanti et al. 2022 §4.1, §4.3).
    got = plan_workloads(_text("0.1"))["a"]["memory"]["estimate"]["components"]["activations"]
    layer = PER_LAYER + 7 * SCORES + 2 * 512 * 256
    assert got == 2 * layer + 512 * 256 + HEAD_INPUTS + LOSS == 227_672_064
