"""Identities for catalog/shapes.py, the one home of transformer shape arithmetic.

Each expected value is worked out here by hand from the model's published
config.json (values in the comment beside it), never read back from the code.
"""

from __future__ import annotations

import pytest

from proposalkit.catalog import models
from proposalkit.catalog import shapes
from proposalkit.catalog.modules import LoraSpec
from proposalkit.estimate.lora import lora_matrices, lora_trainable_params
from proposalkit.estimate.memory import kv_cache_bytes_per_token
from proposalkit.catalog.shapes import ModelSpec

# meta-llama/Llama-3.1-8B config.json: num_hidden_layers 32, hidden_size 4096,
# num_attention_heads 32, num_key_value_heads 8, head_dim 128, intermediate_size
# 14336, vocab_size 128256, tie_word_embeddings false, RMSNorm, no biases, SwiGLU.
LLAMA_3_1_8B = ModelSpec(id="llama-3.1-8b-config", name="Llama 3.1 8B", layers=32, hidden=4096, heads=32,
                         kv_heads=8, head_dim=128, ffn_hidden=14336, vocab=128256)
# openai-community/gpt2 config.json: n_layer 12, n_embd 768, n_head 12, n_inner null (4·768),
# vocab_size 50257, n_positions 1024 (learned), LayerNorm, biases everywhere, GELU, tied head.
GPT2 = ModelSpec(id="gpt2-config", name="GPT-2", layers=12, hidden=768, heads=12, ffn_hidden=3072, vocab=50257,
                 tied_embeddings=True, mlp="plain", norm="layernorm", attention_bias=True,
                 attention_out_bias=True, mlp_bias=True, learned_positions=1024, dropout=True)


def test_llama_3_1_8b_per_layer_counts():
    # attention: q 4096·4096 + k, v 2·4096·(8·128) + o 4096·4096
    assert shapes.attention_params(LLAMA_3_1_8B) == 16_777_216 + 2 * 4_194_304 + 16_777_216 == 41_943_040
    # SwiGLU gate, up, down: 3·4096·14336
    assert shapes.mlp_params_per_expert(LLAMA_3_1_8B) == 3 * 4096 * 14336 == 176_160_768
    assert shapes.norm_params(LLAMA_3_1_8B) == 4096
    assert shapes.router_params(LLAMA_3_1_8B) == 0
    assert shapes.layer_params(LLAMA_3_1_8B) == 41_943_040 + 176_160_768 + 2 * 4096 == 218_112_000


def test_llama_3_1_8b_total_is_the_published_count():
    # embeddings 128256·4096 = 525,336,576, the same again for the untied head,
    # + 32 layers × 218,112,000 + final norm 4096 = 8,030,261,248 (HF safetensors total).
    assert shapes.embedding_params(LLAMA_3_1_8B) == shapes.lm_head_params(LLAMA_3_1_8B) == 525_336_576
    assert shapes.parameter_count(LLAMA_3_1_8B) == 2 * 525_336_576 + 32 * 218_112_000 + 4096 == 8_030_261_248
    assert models()["llama-3.1-8b"].params == 8_030_261_248


def test_llama_3_1_8b_linear_weights_kv_and_matmul_params():
    # block matrices only (what weight-only quantization converts): 32 · (41,943,040 + 176,160,768)
    assert shapes.linear_weight_params(LLAMA_3_1_8B) == 32 * 218_103_808 == 6_979_321_856
    # largest single matrix: an MLP matrix, 4096·14336
    assert shapes.largest_linear_params(LLAMA_3_1_8B) == 58_720_256
    # K and V of 8 heads × 128 per token per layer; bf16 over 32 layers = 131,072 bytes (vLLM's figure)
    assert shapes.kv_values_per_token_per_layer(LLAMA_3_1_8B) == 2 * 8 * 128 == 2048
    assert kv_cache_bytes_per_token(LLAMA_3_1_8B, "bf16") == 32 * 2048 * 2 == 131_072
    # a tensor-parallel rank's share: 4 of the 8 kv heads
    assert shapes.kv_values_per_token_per_layer(LLAMA_3_1_8B, kv_heads=4) == 1024
    # matmul params: everything but the input embedding lookup
    assert shapes.matmul_params(LLAMA_3_1_8B) == 8_030_261_248 - 525_336_576 == 7_504_924_672


def test_gpt2_counts_with_biases_learned_positions_and_tied_head():
    # attention 4·768² + q, k, v biases 3·768 + o bias 768
    assert shapes.attention_params(GPT2) == 4 * 768**2 + 3 * 768 + 768 == 2_362_368
    # GELU MLP 2·768·3072 + biases 3072 + 768
    assert shapes.mlp_params_per_expert(GPT2) == 2 * 768 * 3072 + 3072 + 768 == 4_722_432
    assert shapes.norm_params(GPT2) == 2 * 768                    # LayerNorm weight and bias
    assert shapes.embedding_params(GPT2) == (50257 + 1024) * 768 == 39_383_808
    assert shapes.lm_head_params(GPT2) == 0                      # tied to wte
    # 39,383,808 + 12 · (2,362,368 + 4,722,432 + 2·1536) + 1536 = 124,439,808 (HF safetensors total)
    assert shapes.parameter_count(GPT2) == 39_383_808 + 12 * 7_087_872 + 1536 == 124_439_808
    assert models()["gpt2"].params == 124_439_808
    # tied: the table is the head (a GEMM), so only the position rows are a pure lookup
    assert shapes.matmul_params(GPT2) == 124_439_808 - 1024 * 768


def test_mixtral_router_and_expert_shapes():
    # mistralai/Mixtral-8x7B-v0.1: 8 local experts, hidden 4096, intermediate 14336
    m = models()["mixtral-8x7b"]
    assert shapes.router_params(m) == 4096 * 8
    assert shapes.routed_experts(m) == 2
    linear = {x.module: x for x in shapes.linears(m)}
    # 32 layers × 8 experts of each MLP matrix, of which a token passes through 32 × 2
    assert linear["gate_proj"] == shapes.Linear("gate_proj", 4096, 14336, 32 * 8, 32 * 2)
    assert linear["down_proj"] == shapes.Linear("down_proj", 14336, 4096, 32 * 8, 32 * 2)
    assert linear["k_proj"] == shapes.Linear("k_proj", 4096, 8 * 128, 32, 32)
    assert m.params == 46_702_792_704


def test_gelu_model_has_no_gate_proj():
    assert "gate_proj" not in {x.module for x in shapes.linears(GPT2)}
    assert shapes.mlp_matrices(GPT2) == 2 and shapes.mlp_matrices(LLAMA_3_1_8B) == 3


def test_lora_all_linear_uses_the_same_shapes():
    # r·(d_in + d_out) per matrix, per layer: q 4096+4096, k and v 4096+1024, o 4096+4096,
    # gate and up 4096+14336, down 14336+4096.
    per_layer = 8 + 5 + 5 + 8 + 18 + 18 + 18        # × 1024 × r
    lora = LoraSpec(rank=16, targets=("all-linear",))
    assert [x.module for x in lora_matrices(LLAMA_3_1_8B, lora)] == [
        "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    # PEFT prints "trainable params: 41,943,040" for this setting on Llama 3 8B.
    assert lora_trainable_params(LLAMA_3_1_8B, lora) == 32 * 16 * per_layer * 1024 == 41_943_040


@pytest.mark.parametrize("model_id", [m for m in models() if models()[m].has_architecture])
def test_parts_add_up_to_the_total(model_id):
    m = models()[model_id]
    total = (shapes.embedding_params(m) + shapes.blocks_params(m) + shapes.norm_params(m)
             + shapes.lm_head_params(m) + m.vision_params)   # vision tower: Gemma 3 4B, 27B
    assert total == m.params == m.published_params
    # the block matrices are the layers without norms, biases and router
    assert shapes.linear_weight_params(m) <= shapes.blocks_params(m)


def test_a_params_only_model_has_no_shape():
    m = ModelSpec(id="opaque", name="opaque", params_override=7_000_000_000)
    with pytest.raises(ValueError, match="needs the architecture"):
        shapes.linear_weight_params(m)
    assert shapes.matmul_params(m) == 7_000_000_000
