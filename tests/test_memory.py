"""Identities and unit cases of proposalkit.estimate.memory (exact equalities)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from proposalkit.estimate.activations import (
    activation_bytes_per_layer,
    activation_terms_per_layer,
    training_activation_bytes,
)
from proposalkit.estimate.cross_checks import CrossCheck, cross_checks
from proposalkit.catalog.modules import LoraSpec
from proposalkit.estimate.lora import lora_trainable_params
from proposalkit.estimate.memory import (
    DEFAULT_OVERHEAD,
    InferenceSetup,
    MemoryBreakdown,
    Overhead,
    TrainingSetup,
    inference_memory,
    kv_cache_bytes_per_token,
    training_memory,
    weight_bytes,
    zero3_gathered_bytes,
)
from proposalkit.notes import of_kind
from proposalkit.precision import NF4_BITS, quantized_weight_bits
from proposalkit.catalog.shapes import ModelSpec, linear_weight_params
from proposalkit.units import GiB

NO_OVERHEAD = Overhead(cuda_context_bytes=0, allocator_reserve=0.0)

# meta-llama/Llama-2-7b-hf config.json (L 32, h 4096, a 32, kv 32, f 11008, v 32000)
LLAMA2_7B = ModelSpec(id="llama-2-7b", name="Llama 2 7B", layers=32, hidden=4096, heads=32, kv_heads=32,
                      ffn_hidden=11008, vocab=32000)
# meta-llama/Llama-3.1-8B config.json (L 32, h 4096, a 32, kv 8, f 14336, v 128256)
LLAMA31_8B = ModelSpec(id="llama-3.1-8b", name="Llama 3.1 8B", layers=32, hidden=4096, heads=32, kv_heads=8,
                       ffn_hidden=14336, vocab=128256)
# mistralai/Mixtral-8x7B-v0.1 config.json (L 32, h 4096, a 32, kv 8, f 14336,
# v 32000, num_local_experts 8, num_experts_per_tok 2)
MIXTRAL = ModelSpec(id="mixtral-8x7b", name="Mixtral 8x7B", layers=32, hidden=4096, heads=32, kv_heads=8,
                    ffn_hidden=14336, vocab=32000, experts=8, experts_per_token=2)
# openai-community/gpt2 config.json (n_layer 12, n_embd 768, n_head 12, n_inner 4·768,
# vocab 50257, n_positions 1024, GELU, LayerNorm, dropout 0.1, tied embeddings)
GPT2 = ModelSpec(id="gpt2", name="GPT-2", layers=12, hidden=768, heads=12, kv_heads=12, ffn_hidden=3072,
                 vocab=50257, mlp="plain", norm="layernorm", attention_bias=True, attention_out_bias=True,
                 mlp_bias=True, learned_positions=1024, tied_embeddings=True, dropout=True)
SEVEN_B = ModelSpec(id="7b", name="a 7B model", params_override=7_000_000_000)


# --- the breakdown itself


def test_components_sum_to_total_and_keep_their_order():
    m = training_memory(LLAMA31_8B, TrainingSetup(method="lora", seq_len=2048, micro_batch=2))
    assert list(m.components()) == ["weights", "gradients", "optimizer", "activations", "kv_cache", "overhead"]
    assert m.total == sum(m.components().values())
    assert all(isinstance(v, int) and v >= 0 for v in m.components().values())
    i = inference_memory(LLAMA31_8B, InferenceSetup(context=4096, batch=8))
    assert i.total == i.weights + i.activations + i.kv_cache + i.overhead
    assert i.gradients == i.optimizer == 0


def test_breakdown_is_frozen():
    m = MemoryBreakdown(1, 2, 3, 4, 5, allocator_reserve=2, cuda_context=4)
    assert m.overhead == 6 and m.total == 21
    with pytest.raises(AttributeError):
        m.weights = 0  # type: ignore[misc]


def test_overhead_is_context_plus_reserve_of_the_rest():
    m = training_memory(LLAMA2_7B, TrainingSetup(method="full", seq_len=1024))
    allocated = m.total - m.overhead
    assert m.overhead == DEFAULT_OVERHEAD.cuda_context_bytes + math.ceil(Fraction(allocated, 10))
    assert DEFAULT_OVERHEAD.cuda_context_bytes == 1 * GiB
    bare = training_memory(LLAMA2_7B, TrainingSetup(method="full", seq_len=1024), NO_OVERHEAD)
    assert bare.overhead == 0 and bare.total == allocated


# --- weights and quantization


def test_int4_weights_of_a_7b_model_are_not_zero():
    # 7e9 × (4 + (16 + 16)/128 = 4.25 bits) / 8 = 3,718,750,000 bytes
    m = inference_memory(SEVEN_B, InferenceSetup(context=1, precision="int4"), NO_OVERHEAD)
    assert m.weights == 7_000_000_000 * 17 // 32 == 3_718_750_000
    assert m.weights > 3_500_000_000


def test_quantized_bits():
    assert quantized_weight_bits("int4") == Fraction(17, 4)
    assert quantized_weight_bits("bf16") == 16
    assert quantized_weight_bits("fp8") == 8
    # QLoRA §3: 8/64 + 32/(64·256) = 0.127 bits of constants per parameter
    assert NF4_BITS - 4 == Fraction(8, 64) + Fraction(32, 64 * 256)
    assert round(float(NF4_BITS - 4), 3) == 0.127


def test_quantized_weights_keep_embeddings_in_16_bit():
    # Llama-2-7B: 32 × (4·4096² + 3·4096·11008) = 6,476,005,376 matrix weights;
    # embeddings + head 2·32000·4096 and norms 65·4096 stay at 2 bytes.
    linear = 32 * (4 * 4096**2 + 3 * 4096 * 11008)
    assert linear_weight_params(LLAMA2_7B) == linear == 6_476_005_376
    rest = LLAMA2_7B.params - linear
    assert rest == 2 * 32000 * 4096 + 65 * 4096
    assert weight_bytes(LLAMA2_7B, "int4") == linear * Fraction(17, 32) + 2 * rest
    assert weight_bytes(LLAMA2_7B, "int8") == linear + 2 * rest


def test_inference_weights_by_precision():
    p = LLAMA2_7B.params
    for precision, per_param in (("fp32", 4), ("bf16", 2), ("fp16", 2)):
        m = inference_memory(LLAMA2_7B, InferenceSetup(context=1, precision=precision), NO_OVERHEAD)
        assert m.weights == per_param * p


def test_tensor_parallel_divides_inference_weights_and_kv():
    one = inference_memory(LLAMA31_8B, InferenceSetup(context=8192, batch=4), NO_OVERHEAD)
    two = inference_memory(LLAMA31_8B, InferenceSetup(context=8192, batch=4, tensor_parallel=2), NO_OVERHEAD)
    assert two.weights == one.weights // 2
    assert two.kv_cache == one.kv_cache // 2


def test_kv_heads_are_replicated_beyond_their_count():
    # 8 kv heads over 16 GPUs: each GPU keeps one head (vLLM replicates), not half a head
    per_head = 2 * 32 * 128 * 2            # 2 · L · d · bytes, one head, one token
    m = inference_memory(LLAMA31_8B, InferenceSetup(context=1000, tensor_parallel=16), NO_OVERHEAD)
    assert m.kv_cache == per_head * 1 * 1000
    (replicated,) = of_kind(m.notes, "kv-heads-replicated")
    assert replicated.as_dict() == {"tensor_parallel": 16, "kv_heads": 8}


def test_kv_cache_in_inference_is_per_token_times_tokens():
    # 131,072 bytes/token × 8192 tokens × 16 sequences = 16 GiB exactly
    m = inference_memory(LLAMA31_8B, InferenceSetup(context=8192, batch=16))
    assert m.kv_cache == 131_072 * 8192 * 16 == 16 * GiB
    assert kv_cache_bytes_per_token(LLAMA31_8B, "fp8") == 131_072 // 2
    assert kv_cache_bytes_per_token(LLAMA31_8B, "int4") == 131_072 // 4


# --- training model states


@pytest.mark.parametrize("precision,optimizer,w,g,o", [
    ("bf16", "adamw", 2, 2, 12),                             # ZeRO §3.1: 2 + 2 + 12
    ("fp16", "adamw", 2, 2, 12),
    ("fp32", "adamw", 4, 4, 8),                              # no master copy
    ("bf16", "sgd", 2, 2, 8),                                # fp32 master + momentum
    ("fp32", "sgd", 4, 4, 4),
    ("bf16", "adamw-8bit", 2, 2, 4 + 2 * (1 + Fraction(4, 256))),   # bnb block-wise, block 256 (since 0.44.0)
    ("fp32", "adamw-8bit", 4, 4, 2 * (1 + Fraction(4, 256))),
])
def test_full_training_bytes_per_parameter(precision, optimizer, w, g, o):
    m = training_memory(SEVEN_B, TrainingSetup(method="full", seq_len=1, precision=precision, optimizer=optimizer))
    p = 7_000_000_000
    assert (m.weights, m.gradients, m.optimizer) == (w * p, g * p, math.ceil(o * p))


def test_pure_bf16_training_has_no_master_copy():
    # torchtune trains in bf16 throughout: "2 bytes per model and optimizer parameter"
    # (docs/source/tutorials/memory_optimizations.rst): 2 + 2 + 2·2 = 8 bytes/param
    p = 7_000_000_000
    m = training_memory(SEVEN_B, TrainingSetup(method="full", seq_len=1, mixed_precision=False))
    assert (m.weights, m.gradients, m.optimizer) == (2 * p, 2 * p, 4 * p)
    (states,) = of_kind(m.notes, "model-states")
    assert states["pure_16bit"] and not states["master_copy"] and states["total_bytes"] == 8
    # LoRA adapters in bf16 with bf16 AdamW moments: 2 + 2 + 4 bytes per adapter parameter
    lora = LoraSpec(rank=8, targets=("q_proj", "v_proj"), adapter_precision="bf16")
    m = training_memory(LLAMA2_7B, TrainingSetup(method="lora", seq_len=1, lora=lora, mixed_precision=False))
    assert (m.gradients, m.optimizer) == (4_194_304 * 2, 4_194_304 * 4)
    # fp32 training ignores the switch
    fp32 = training_memory(SEVEN_B, TrainingSetup(method="full", seq_len=1, precision="fp32", mixed_precision=False))
    assert fp32.optimizer == 8 * p


def test_zero_stages_shard_what_they_should():
    p, n = 7_000_000_000, 8
    states = {}
    for stage in range(4):
        m = training_memory(SEVEN_B, TrainingSetup(method="full", seq_len=1, data_parallel=n, zero_stage=stage))
        states[stage] = (m.weights, m.gradients, m.optimizer)
    assert states[0] == (2 * p, 2 * p, 12 * p)
    assert states[1] == (2 * p, 2 * p, 12 * p // n)
    assert states[2] == (2 * p, 2 * p // n, 12 * p // n)
    assert states[3] == (2 * p // n, 2 * p // n, 12 * p // n)       # ZeRO-3 divides all states


def test_zero3_counts_the_all_gathered_working_set():
    # Llama-3.1-8B: a layer is 2·4096² + 2·4096·1024 + 3·4096·14336 + 2·4096 = 218,112,000
    # parameters, the embeddings 128256·4096 = 525,336,576: the largest unit. Two of them
    # are live in bf16 (current + prefetched), and one unit's gradients before reduce-scatter.
    layer = 2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    assert layer == 218_112_000
    unit = 128256 * 4096
    setup = TrainingSetup(method="full", seq_len=1, data_parallel=8, zero_stage=3)
    assert zero3_gathered_bytes(LLAMA31_8B, setup) == (2 * unit * 2, unit * 2)
    m = training_memory(LLAMA31_8B, setup)
    p = LLAMA31_8B.params
    assert m.weights == math.ceil(Fraction(2 * p, 8)) + 4 * unit
    assert m.gradients == math.ceil(Fraction(2 * p, 8)) + 2 * unit
    assert m.optimizer == math.ceil(Fraction(12 * p, 8))
    # nothing to gather on one GPU or below stage 3
    assert zero3_gathered_bytes(LLAMA31_8B, TrainingSetup(method="full", seq_len=1, zero_stage=3)) == (0, 0)
    assert zero3_gathered_bytes(LLAMA31_8B, TrainingSetup(method="full", seq_len=1, data_parallel=8, zero_stage=2)) == (0, 0)


def test_tensor_and_pipeline_parallel_divide_before_zero():
    p = 7_000_000_000
    m = training_memory(SEVEN_B, TrainingSetup(method="full", seq_len=1, tensor_parallel=2, pipeline_parallel=2,
                                               data_parallel=5, zero_stage=1))
    assert m.weights == 2 * p // 4
    assert m.optimizer == math.ceil(Fraction(12 * p, 4 * 5))


def test_lora_has_no_base_gradients_or_optimizer_states():
    lora = LoraSpec(rank=8, targets=("q_proj", "v_proj"))
    m = training_memory(LLAMA2_7B, TrainingSetup(method="lora", seq_len=2048, lora=lora))
    adapters = 4_194_304
    assert m.gradients == adapters * 4                     # only the fp32 adapters have gradients
    assert m.optimizer == adapters * 8                     # AdamW m and v in fp32
    assert m.weights == LLAMA2_7B.params * 2 + adapters * 4
    full = training_memory(LLAMA2_7B, TrainingSetup(method="full", seq_len=2048))
    assert m.gradients < full.gradients / 100


def test_lora_on_mixtral_adapts_every_expert():
    # all-linear r 16: attention q 16·(4096+4096), k and v 16·(4096+1024), o 16·(4096+4096);
    # each of 8 experts gate, up 16·(4096+14336) and down 16·(14336+4096); × 32 layers
    attention = 2 * 16 * 8192 + 2 * 16 * 5120
    experts = 8 * 3 * 16 * (4096 + 14336)
    assert lora_trainable_params(MIXTRAL, LoraSpec(rank=16, targets=("all-linear",))) == 32 * (attention + experts)


def test_lora_on_a_gelu_mlp_uses_its_two_matrices():
    # GPT-2: up_proj and down_proj are c_fc (768→3072) and c_proj (3072→768)
    got = lora_trainable_params(GPT2, LoraSpec(rank=4, targets=("all-linear",)))
    assert got == 12 * (4 * 4 * (768 + 768) + 2 * 4 * (768 + 3072))
    with pytest.raises(ValueError, match="gate_proj"):
        lora_trainable_params(GPT2, LoraSpec(rank=4, targets=("gate_proj",)))


def test_lora_rejects_unknown_modules():
    with pytest.raises(ValueError, match="'qproj' is not a linear module"):
        lora_trainable_params(LLAMA2_7B, LoraSpec(targets=("qproj",)))


def test_qlora_weights_are_nf4_blocks_plus_16_bit_rest():
    lora = LoraSpec(rank=16, adapter_precision="bf16")
    m = training_memory(LLAMA2_7B, TrainingSetup(method="qlora", seq_len=512, lora=lora), NO_OVERHEAD)
    linear = linear_weight_params(LLAMA2_7B)
    adapters = lora_trainable_params(LLAMA2_7B, lora)
    expected = linear * NF4_BITS / 8 + (LLAMA2_7B.params - linear) * 2 + adapters * 2
    assert m.weights == math.ceil(expected)
    assert m.gradients == adapters * 2


# --- activations


@pytest.mark.parametrize("s,b", [(1, 1), (128, 3), (1024, 2), (2048, 1)])
def test_gpt_style_block_is_korthikanti_eq1_exactly(s, b):
    # GELU, f = 4h, MHA, dropout, no FlashAttention: s·b·h·(34 + 5·a·s/h)
    h, a = GPT2.hidden, GPT2.heads
    expected = s * b * h * 34 + 5 * a * s * s * b
    assert activation_bytes_per_layer(GPT2, s, b, flash_attention=False) == expected
    terms = activation_terms_per_layer(GPT2, s, b, flash_attention=False)
    assert sum(v for k, v in terms.items() if k != "attention scores") == 34 * s * b * h


def test_llama_block_generalisation_term_by_term():
    # Llama-3.1-8B, s 2048, b 1, FlashAttention, no dropout, e = 2:
    # norms 2·2·h + qkv input 2·h + q,k,v 2·(4096 + 2·1024) + o_proj 2·4096 + mlp input 2·h
    # + SwiGLU 3·2·14336, per token; + softmax statistics 4·a·s.
    s, h = 2048, 4096
    per_token = 4 * h + 2 * h + 2 * (4096 + 2 * 1024) + 2 * 4096 + 2 * h + 3 * 2 * 14336
    assert per_token == 139_264
    expected = s * per_token + 4 * 32 * s
    assert activation_bytes_per_layer(LLAMA31_8B, s, 1, flash_attention=True) == expected
    # without FlashAttention and without dropout only the softmax output (2 bytes) is s²
    assert activation_bytes_per_layer(LLAMA31_8B, s, 1, flash_attention=False) == s * per_token + 2 * 32 * s * s


def test_checkpointing_and_flash_attention_reduce_activations():
    base = TrainingSetup(method="full", seq_len=4096, micro_batch=2, flash_attention=False, kernels="fused")
    plain, _ = training_activation_bytes(LLAMA2_7B, base)
    flash, _ = training_activation_bytes(LLAMA2_7B, TrainingSetup(**{**base.__dict__, "flash_attention": True}))
    ckpt, _ = training_activation_bytes(LLAMA2_7B, TrainingSetup(**{**base.__dict__, "flash_attention": True,
                                                                   "activation_checkpointing": True}))
    assert plain > flash > ckpt > 0
    # checkpointed: L layer inputs (2·s·b·h each) + the last norm's and the head's inputs (2·2·sbh), then
    # the larger of the loss's peak (12 B per fp32-upcast logit, estimate/loss.py), at the end of the
    # forward, and the layer recomputed later in the backward: phases, not a sum.
    s, b, h, v = 4096, 2, 4096, 32000
    one_layer = activation_bytes_per_layer(LLAMA2_7B, s, b, flash_attention=True)
    assert 12 * s * b * v > one_layer
    assert ckpt == 32 * 2 * s * b * h + 4 * s * b * h + 12 * s * b * v


def test_params_only_model_has_no_activation_estimate_and_says_so():
    m = training_memory(SEVEN_B, TrainingSetup(method="full", seq_len=2048))
    assert m.activations == 0
    (said,) = of_kind(m.notes, "training-activations-not-estimated")
    assert said["model"] == "7b"
    with pytest.raises(ValueError, match="architecture"):
        kv_cache_bytes_per_token(SEVEN_B)


def test_invalid_setups_raise_clear_errors():
    with pytest.raises(ValueError, match="method: expected one of full, lora, qlora, got 'ful'"):
        training_memory(LLAMA2_7B, TrainingSetup(method="ful", seq_len=1))
    with pytest.raises(ValueError, match="zero_stage"):
        training_memory(LLAMA2_7B, TrainingSetup(method="full", seq_len=1, zero_stage=4))
    with pytest.raises(ValueError, match="seq_len"):
        training_memory(LLAMA2_7B, TrainingSetup(method="full", seq_len=0))
    with pytest.raises(ValueError, match="precision"):
        inference_memory(LLAMA2_7B, InferenceSetup(context=1, precision="int3"))


# --- cross-checks (rules of thumb; GB = 10^9)


def _by_name(checks: list[CrossCheck]) -> dict[str, int]:
    return {c.name: c.bytes for c in checks}


def test_cross_checks_inference():
    p = LLAMA2_7B.params                                    # 6,738,415,616
    got = _by_name(cross_checks(LLAMA2_7B, kind="inference", method="full", precision="bf16", context=4096))
    nairr = 2 * p + 4096 * 10**6                            # 2·P(B) + 1·ctx(k) GB
    assert got["NAIRR guide inference rule"] == nairr == 17_572_831_232
    assert got["NAIRR guide inference rule with overhead"] == math.ceil(Fraction(nairr) * Fraction(115, 100) + 10**9)
    assert got["weights alone at bf16"] == 2 * p
    int4 = _by_name(cross_checks(LLAMA2_7B, kind="inference", method="full", precision="int4", context=None))
    assert int4["weights alone at int4"] == p // 2
    assert int4["NAIRR guide inference rule"] == 2 * p


def test_cross_checks_training():
    p = LLAMA2_7B.params
    full = _by_name(cross_checks(LLAMA2_7B, kind="finetune", method="full", precision="bf16", context=None))
    assert full["NAIRR guide training rule"] == 40 * p
    assert full["model states of mixed-precision Adam"] == 16 * p       # ZeRO §3.1: 2 + 2 + 12 bytes
    lora = _by_name(cross_checks(LLAMA2_7B, kind="finetune", method="lora", precision="bf16", context=None))
    assert lora == {"LoRA's frozen base weights": 2 * p}                  # no training rule for an adapter
    qlora = _by_name(cross_checks(LLAMA2_7B, kind="finetune", method="qlora", precision="bf16", context=None))
    assert qlora == {"QLoRA's NF4 base weights": math.ceil(p * Fraction(4127, 8000))}   # 4.127 bits each
    for check in cross_checks(LLAMA2_7B, kind="finetune", method="lora", precision="bf16", context=None):
        assert check.formula and check.source


def test_cross_checks_reject_unknown_kind():
    with pytest.raises(ValueError, match="kind"):
        cross_checks(LLAMA2_7B, kind="serving", method="full", precision="bf16", context=1)
