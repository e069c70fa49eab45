"""FlopsPerToken carries every figure of its derivation, so the report prints it without recomputing.

Llama 3.1 8B from its config.json (meta-llama/Llama-3.1-8B: 32 layers, 32 heads of 128,
vocab 128256 × hidden 4096 untied): N without the input embedding table =
8,030,261,248 − 525,336,576 = 7,504,924,672 (Kaplan et al. 2020 §2.1).
"""

from __future__ import annotations

from proposalkit.catalog import models
from proposalkit.estimate.flops import training_flops_per_token
from proposalkit.catalog.shapes import ModelSpec

N = 7_504_924_672


def test_full_training_carries_six_n_and_the_attention_shape():
    fpt = training_flops_per_token(models()["llama-3.1-8b"], "full", 4096)
    assert (fpt.matmul_params, fpt.dense_factor, fpt.dense_source) == (N, 6, "Kaplan et al. 2020")
    assert fpt.attention_shape == (32, 32, 128, 4096)
    assert fpt.dense == 6 * N
    assert fpt.attention == 12 * 32 * 32 * 128 * 4096                # PaLM App. B: 12·L·H·Q·T
    assert fpt.model_formula == fpt.formula == "6·N + 12·L·H·Q·T"
    assert fpt.attention_source == "Chowdhery et al. 2022, App. B"
    assert fpt.recompute == 0


def test_lora_carries_four_n_and_its_reason():
    fpt = training_flops_per_token(models()["llama-3.1-8b"], "lora", 4096, activation_checkpointing=True)
    assert (fpt.matmul_params, fpt.dense_factor, fpt.dense_source) == (N, 4, "Hu et al. 2021")
    assert "no weight gradients" in fpt.dense_reason
    assert fpt.dense == 4 * N
    assert fpt.model_formula == "4·N + 12·L·H·Q·T"
    assert fpt.formula == "4·N + 12·L·H·Q·T (+ 2·N + 4·L·H·Q·T recomputed)"
    assert fpt.recompute == 2 * N + 4 * 32 * 32 * 128 * 4096       # one more forward pass


def test_a_params_only_model_has_no_attention_term():
    fpt = training_flops_per_token(ModelSpec(id="p", name="p", params_override=7 * 10**9), "full", 2048)
    assert (fpt.matmul_params, fpt.attention, fpt.attention_shape) == (7 * 10**9, 0, None)
    assert fpt.model_formula == "6·N"
