"""Review of today's activation terms: tensors autograd keeps that a term list left out.

Each expected figure is worked out here from the published config.json values
(named beside them) and the rule each term states, never read back from the code.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from proposalkit.estimate.activations import activation_terms_per_layer, training_activation_bytes
from proposalkit.estimate.memory import TrainingSetup
from proposalkit.catalog.shapes import ModelSpec
from proposalkit.input.configs import model_from_config

CONFIGS = Path(__file__).parent / "data" / "configs"


def _read(name: str) -> ModelSpec:
    model, problems = model_from_config(json.loads((CONFIGS / name).read_text()), name)
    assert not problems and model is not None
    return model


def test_qk_norms_store_their_inputs_like_every_norm():
    # Qwen/Qwen3-8B config.json (tests/data/configs/qwen3.json): 36 layers, 32 heads, 8 kv heads,
    # head_dim 128; q_norm and k_norm are RMSNorms over head_dim applied to the q and k projections
    # (transformers modeling_qwen3.py). An RMSNorm's backward needs its input, so each layer keeps
    # the un-normalised q (32·128 wide) and k (8·128 wide) as well as the normalised ones.
    qwen3 = _read("qwen3.json")
    assert qwen3.qk_norm == "head"
    s, e = 512, 2
    setup = TrainingSetup(method="full", seq_len=s, kernels="fused")      # eager's extra copies aside
    with_norms, _ = training_activation_bytes(qwen3, setup)
    without, _ = training_activation_bytes(replace(qwen3, qk_norm="none"), setup)
    assert with_norms - without == 36 * e * s * (32 * 128 + 8 * 128)


def test_routed_expert_outputs_are_kept_for_the_routing_weights_gradient():
    # mistralai/Mixtral-8x7B-v0.1 config.json: hidden 4096, 8 local experts, top-2. The MoE block
    # multiplies each routed expert's output by its routing weight (transformers modeling_mixtral.py:
    # expert_layer(current_state) * routing_weights[...]); the weight's gradient needs that output,
    # so a layer keeps one h-wide output per routed expert a token visits: e·s·b·h·2.
    mixtral = ModelSpec(id="mixtral", name="Mixtral-8x7B", layers=32, hidden=4096, heads=32, kv_heads=8,
                        ffn_hidden=14336, vocab=32000, experts=8, experts_per_token=2)
    s, b, e = 512, 1, 2
    terms = activation_terms_per_layer(mixtral, s, b, flash_attention=True)
    assert terms["expert outputs"] == e * s * b * 4096 * 2


def test_a_gated_shared_expert_keeps_its_output_for_the_gate_gradient():
    # Qwen/Qwen1.5-MoE-A2.7B config.json (tests/data/configs/qwen2_moe.json): hidden 2048, one
    # shared expert scaled by sigmoid(shared_expert_gate(x)) (transformers modeling_qwen2_moe.py),
    # whose gradient needs the shared expert's h-wide output: e·s·b·2048.
    qwen_moe = _read("qwen2_moe.json")
    assert qwen_moe.shared_expert_gate
    s, b, e = 512, 1, 2
    terms = activation_terms_per_layer(qwen_moe, s, b, flash_attention=True)
    assert terms["shared expert output"] == e * s * b * 2048
    ungated = activation_terms_per_layer(replace(qwen_moe, shared_expert_gate=False), s, b, flash_attention=True)
    assert "shared expert output" not in ungated


def test_the_estimates_own_lora_default_uses_the_models_module_names():
    # TrainingSetup(lora=None) means "the planner's default": rank 16 on the attention projections in the
    # model's own names. GPT-2 (openai-community/gpt2 config.json: 12 layers, n_embd 768) has no q_proj;
    # its attention projections are the fused c_attn, 768 → 3·768 (transformers modeling_gpt2.py), so
    # the adapters are 12 · 16 · (768 + 2304) = 589,824 parameters.
    from proposalkit.estimate.memory import training_memory
    gpt2 = _read("gpt2.json")
    memory = training_memory(gpt2, TrainingSetup(method="lora", seq_len=512))
    from proposalkit.notes import of_kind
    assert [n["adapters"] for n in of_kind(memory.notes, "lora-adapters")] == [589_824]
    assert [n.as_dict() for n in of_kind(memory.notes, "lora-defaults")] == [{"rank": 16, "targets": ("c_attn",)}]
