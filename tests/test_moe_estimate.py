"""Mixture of experts and multi-head latent attention in estimate/: counts, memory, FLOPs.

The shapes below are the published config.json values (named beside each);
every expected figure is worked out here by hand, never read back from the code.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proposalkit.catalog import shapes
from proposalkit.estimate.flops import training_flops_per_token
from proposalkit.catalog.modules import LoraSpec
from proposalkit.estimate.memory import (
    InferenceSetup, TrainingSetup, inference_memory, kv_cache_bytes_per_token, training_memory,
)
from proposalkit.notes import of_kind
from proposalkit.precision import NF4_BITS
from proposalkit.catalog.shapes import ModelSpec

# deepseek-ai/DeepSeek-V2-Lite config.json: num_hidden_layers 27, hidden_size 2048, heads 16,
# q_lora_rank null, kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128,
# intermediate_size 10944, moe_intermediate_size 1408, n_routed_experts 64, n_shared_experts 2,
# num_experts_per_tok 6, first_k_dense_replace 1, vocab_size 102400, untied.
V2_LITE = ModelSpec(id="v2-lite", name="DeepSeek-V2-Lite", layers=27, hidden=2048, heads=16, ffn_hidden=10944,
                    vocab=102400, experts=64, experts_per_token=6, moe_ffn_hidden=1408, shared_experts=2,
                    dense_layers=1, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
# Qwen/Qwen1.5-MoE-A2.7B config.json: 24 layers, hidden 2048, 16 heads (kv 16), num_experts 60,
# top-4, moe_intermediate_size 1408, shared_expert_intermediate_size 5632 (+ shared_expert_gate),
# vocab 151936, q/k/v biases (Qwen2 attention), untied.
QWEN_MOE = ModelSpec(id="qwen1.5-moe", name="Qwen1.5-MoE-A2.7B", layers=24, hidden=2048, heads=16, kv_heads=16,
                     ffn_hidden=5632, vocab=151936, attention_bias=True, experts=60, experts_per_token=4,
                     moe_ffn_hidden=1408, shared_experts=1, shared_ffn_hidden=5632, shared_expert_gate=True)
# mistralai/Mixtral-8x7B-v0.1 config.json: 32 layers, hidden 4096, 32 heads, 8 kv heads,
# intermediate_size 14336 (each expert), 8 local experts, top-2, vocab 32000, untied.
MIXTRAL = ModelSpec(id="mixtral", name="Mixtral-8x7B", layers=32, hidden=4096, heads=32, kv_heads=8,
                    ffn_hidden=14336, vocab=32000, experts=8, experts_per_token=2)


def test_mla_attention_of_deepseek_v2_lite():
    # q_proj 2048·16·(128+64) + kv_a_proj_with_mqa 2048·(512+64) + kv_a_layernorm 512
    # + kv_b_proj 512·16·(128+128) + o_proj 16·128·2048
    by_hand = 2048 * 16 * 192 + 2048 * 576 + 512 + 512 * 16 * 256 + 16 * 128 * 2048
    assert by_hand == 6_291_456 + 1_179_648 + 512 + 2_097_152 + 4_194_304 == 13_763_072
    assert shapes.attention_params(V2_LITE) == by_hand
    # the latent cache: 512 + 64 values per token and layer, not 2 × 16 heads × 128
    assert shapes.kv_values_per_token_per_layer(V2_LITE) == 576
    assert shapes.kv_values_per_token_per_layer(V2_LITE, kv_heads=2) == 576   # not split by TP


def test_deepseek_v2_lite_kv_cache_by_hand():
    # (512 + 64) values × 27 layers × 2 bytes (bf16) = 31,104 bytes per token
    assert kv_cache_bytes_per_token(V2_LITE, "bf16") == 576 * 27 * 2 == 31_104
    mem = inference_memory(V2_LITE, InferenceSetup(context=4096, batch=8, tensor_parallel=2))
    # every tensor-parallel rank keeps the whole latent: 31,104 B × 4,096 tokens × 8 sequences
    assert mem.kv_cache == 31_104 * 4096 * 8
    (kv,) = of_kind(mem.notes, "kv-cache-mla")
    assert (kv["kv_lora_rank"], kv["rope_dim"], kv["layers"], kv["tensor_parallel"]) == (512, 64, 27, 2)


def test_deepseek_v2_lite_total_active_and_layer_kinds():
    # one dense layer: attention 13,763,072 + MLP 3·2048·10944 + 2 norms 2·2048
    dense_layer = 13_763_072 + 67_239_936 + 4096
    # 26 MoE layers: 64 experts · 3·2048·1408 + 2 shared · 3·2048·1408 + router 2048·64
    expert = 3 * 2048 * 1408
    moe_layer = 13_763_072 + 64 * expert + 2 * expert + 2048 * 64 + 4096
    total = 2 * 102400 * 2048 + dense_layer + 26 * moe_layer + 2048
    assert shapes.moe_layer_count(V2_LITE) == 26
    assert V2_LITE.params == total == 15_706_484_224          # HF safetensors total (PUBLISHED.md, [LLMFIT])
    assert V2_LITE.active_params == total - 26 * (64 - 6) * expert
    assert shapes.expert_params(V2_LITE) == 26 * 64 * expert


def test_qwen_moe_shared_expert_and_its_gate():
    # shared expert 3·2048·5632 + shared_expert_gate 2048·1
    assert shapes.shared_expert_params(QWEN_MOE) == 3 * 2048 * 5632 + 2048
    assert QWEN_MOE.params == 14_315_784_192                  # HF safetensors total (PUBLISHED.md, [LLMFIT])


def test_flops_use_the_active_parameters():
    # 6·N with N = active minus the input embedding lookup; attention 12·L·H·Q·T
    fpt = training_flops_per_token(MIXTRAL, "full", 4096)
    assert fpt.matmul_params == MIXTRAL.active_params - 32000 * 4096
    assert fpt.dense == 6 * (MIXTRAL.active_params - 32000 * 4096)
    assert fpt.attention == 12 * 32 * 32 * 128 * 4096
    # MLA: Q is the mean of the query-key width 192 and the value width 128
    assert training_flops_per_token(V2_LITE, "full", 2048).attention_shape == (27, 16, 160, 2048)


def test_weights_use_the_total_and_inference_activations_the_routed_tokens():
    mem = inference_memory(MIXTRAL, InferenceSetup(context=1024, batch=1))
    assert mem.weights == MIXTRAL.params * 2
    # activations: 1,024 tokens × 2 bytes × (2·4096 + max(attention 2·4096 + 2·1024, MLP 3·14336·2 routed))
    # + fp32 logits 4·32000
    assert mem.activations == 1024 * 2 * (2 * 4096 + 3 * 14336 * 2) + 4 * 32000


def _training(model: ModelSpec, ep: int, **kw) -> TrainingSetup:
    return TrainingSetup(method="full", seq_len=512, data_parallel=8, expert_parallel=ep, **kw)


@pytest.mark.parametrize("ep", [2, 4, 8])
def test_expert_parallel_divides_the_experts_model_states(ep):
    one = training_memory(MIXTRAL, _training(MIXTRAL, 1))
    split = training_memory(MIXTRAL, _training(MIXTRAL, ep))
    experts = 32 * 8 * 3 * 4096 * 14336       # routed experts of Mixtral-8x7B
    saved = Fraction(experts) * (1 - Fraction(1, ep))
    assert one.weights - split.weights == saved * 2             # bf16 weights
    assert one.gradients - split.gradients == saved * 2         # bf16 gradients
    assert one.optimizer - split.optimizer == saved * 12        # fp32 master + AdamW moments
    (states,) = of_kind(split.notes, "expert-parallel-states")
    assert (states["expert_parallel"], states["expert_params"]) == (ep, experts)


def test_expert_parallel_must_divide_the_data_parallel_gpus_and_the_experts():
    with pytest.raises(ValueError, match="expert_parallel: expected a divisor"):
        training_memory(MIXTRAL, TrainingSetup(method="full", seq_len=512, data_parallel=6, expert_parallel=4))
    with pytest.raises(ValueError, match=r"of the experts \(8\)"):
        training_memory(MIXTRAL, TrainingSetup(method="full", seq_len=512, data_parallel=16, expert_parallel=16))


@st.composite
def moe_models(draw) -> ModelSpec:
    heads = draw(st.sampled_from([1, 2, 4, 8]))
    hidden = heads * draw(st.sampled_from([8, 16, 64]))
    experts = draw(st.sampled_from([2, 4, 8, 16]))
    layers = draw(st.integers(1, 8))
    mla = draw(st.booleans())
    return ModelSpec(
        id="random-moe", name="random-moe", layers=layers, hidden=hidden, heads=heads,
        ffn_hidden=draw(st.integers(1, 4 * hidden)), vocab=draw(st.integers(2, 5000)),
        mlp=draw(st.sampled_from(["gated", "plain"])),
        experts=experts, experts_per_token=draw(st.integers(1, experts)),
        moe_ffn_hidden=draw(st.one_of(st.none(), st.integers(1, 2 * hidden))),
        shared_experts=draw(st.integers(0, 2)), shared_expert_gate=draw(st.booleans()),
        dense_layers=draw(st.integers(0, layers - 1)),
        kv_lora_rank=draw(st.integers(1, hidden)) if mla else None,
        q_lora_rank=draw(st.one_of(st.none(), st.integers(1, hidden))) if mla else None,
        qk_nope_head_dim=draw(st.integers(1, 64)) if mla else None,
        qk_rope_head_dim=draw(st.integers(1, 64)) if mla else None,
        v_head_dim=draw(st.integers(1, 64)) if mla else None,
    )


@given(moe_models())
@settings(max_examples=80, deadline=None)
def test_active_never_exceeds_total_and_the_parts_add_up(m):
    assert 0 < m.active_params <= m.params
    assert (m.active_params == m.params) == (m.experts_per_token == m.experts)
    total = (shapes.embedding_params(m) + shapes.blocks_params(m) + shapes.norm_params(m)
             + shapes.lm_head_params(m))
    assert total == m.params
    assert shapes.linear_weight_params(m) < m.params


@given(moe_models(), st.sampled_from([2, 4]), st.sampled_from(["full", "lora", "qlora"]))
@settings(max_examples=60, deadline=None)
def test_expert_parallel_k_divides_expert_weights_by_k(m, ep, method):
    if m.experts % ep:
        m = dataclasses.replace(m, experts=2 * ep, experts_per_token=1)
    base = dict(method=method, seq_len=64, data_parallel=4, zero_stage=0, lora=LoraSpec(targets=("all-linear",)))
    one = training_memory(m, TrainingSetup(**base))
    split = training_memory(m, TrainingSetup(**base, expert_parallel=ep))
    per_param = Fraction(NF4_BITS) / 8 if method == "qlora" else 2    # NF4 with its constants, else bf16
    saved = shapes.expert_params(m) * per_param * (1 - Fraction(1, ep))
    assert abs(one.weights - split.weights - saved) <= 1            # each component is rounded up once


def test_training_activations_of_an_all_moe_model_by_hand():
    from proposalkit.estimate.activations import training_activation_bytes
    s, e = 512, 2
    # Korthikanti's terms for one Mixtral layer, FlashAttention, no dropout, b = 1:
    layer = (2 * e * s * 4096                       # two norm inputs
             + e * s * 4096                         # qkv input
             + e * s * (4096 + 1024 + 1024)         # q, k (8 kv heads × 128), v
             + 4 * 32 * s                           # fp32 softmax statistics
             + e * s * 4096                         # o_proj input
             + e * s * 4096                         # MLP (router) input
             + e * s * 4096 * 2                     # the 2 routed experts' inputs
             + e * s * 4096 * 2                     # their outputs, kept for the routing weights' gradient
             + 4 * s * 8                            # fp32 router probabilities over 8 experts
             + 3 * e * s * 14336 * 2)               # gate, up, product per routed expert
    # last norm, head input, and the loss's peak: cross_entropy on fp32-upcast logits keeps 12 B per
    # logit at its backward peak (saved log-softmax, its gradient, the input gradient; estimate/loss.py)
    output = 2 * e * s * 4096 + 12 * s * 32000
    total, notes = training_activation_bytes(MIXTRAL, dataclasses.replace(_training(MIXTRAL, 1), kernels="fused"))
    assert total == 32 * layer + output         # Korthikanti's count: fused kernels, no eager extras
    (moe,) = of_kind(notes, "moe-activations")
    assert moe.as_dict() == {"experts_per_token": 2, "experts": 8, "shared_experts": 0, "mixed_kinds": False}
    _, notes = training_activation_bytes(V2_LITE, _training(V2_LITE, 1))
    (moe,) = of_kind(notes, "moe-activations")
    assert moe.as_dict() == {"experts_per_token": 6, "experts": 64, "shared_experts": 2, "mixed_kinds": True}


def test_zero3_gathers_only_the_local_experts_under_expert_parallelism():
    from proposalkit.estimate.memory import zero3_gathered_bytes
    base = dict(method="full", seq_len=512, data_parallel=8, zero_stage=3)
    w1, g1 = zero3_gathered_bytes(MIXTRAL, TrainingSetup(**base))
    w8, g8 = zero3_gathered_bytes(MIXTRAL, TrainingSetup(**base, expert_parallel=8))
    # a Mixtral layer's 8 experts (3·4096·14336 each): with EP 8 a rank gathers 1 of them;
    # two units live (the prefetched next one), bf16 weights and gradients
    assert w1 - w8 == 2 * 2 * 7 * 3 * 4096 * 14336
    assert g1 - g8 == 2 * 7 * 3 * 4096 * 14336
