"""The linear modules of a model as its family's code names them, and the LoRA adapters that target them.

A LoRA target is a module name (PEFT matches module names), so the names are part of what the
workload format accepts (input/) and of what the estimate counts (estimate/lora.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple
from fractions import Fraction

from .shapes import ModelSpec, attention_modules, is_moe, linears, moe_layer_count

# The block linears in Hugging Face's names, in PEFT's order for "all-linear".
HF_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
ALL_LINEAR = "all-linear"
LORA_TARGETS = (*HF_MODULES, ALL_LINEAR)
# Linear module names per architecture family (ModelSpec.family, config.json's model_type), from
# transformers' models/<family>/modeling_<family>.py: each name → the matrices of shapes.linears()
# it covers. A tuple of several names is one fused matrix over their outputs (GPT-2's c_attn is
# q, k and v in one h → (a + 2·kv)·d matrix, so one LoRA pair); two tuples are two modules with
# the same name (GPT-2's c_proj is both the attention output and the MLP's down projection).
# Families not listed name them as Llama does (HF_MODULES; MLA and MoE names from linears()).
_QKV = ("q_proj", "k_proj", "v_proj")
_GPT2 = {"c_attn": (_QKV,), "c_proj": (("o_proj",), ("down_proj",)), "c_fc": (("up_proj",),)}
_NEOX = {"query_key_value": (_QKV,), "dense": (("o_proj",),), "dense_h_to_4h": (("up_proj",),),
         "dense_4h_to_h": (("down_proj",),)}
_SEPARATE_QKV = {name: ((name,),) for name in _QKV}
FAMILY_MODULES: dict[str, dict[str, tuple[tuple[str, ...], ...]]] = {
    "gpt2": _GPT2,                       # modeling_gpt2.py: attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj (Conv1D)
    "gpt_bigcode": _GPT2,                # modeling_gpt_bigcode.py: the same names (nn.Linear; MQA c_attn)
    "gpt_neox": _NEOX,                   # modeling_gpt_neox.py: attention.query_key_value, attention.dense, mlp.*
    "falcon": _NEOX,                     # modeling_falcon.py: self_attention.query_key_value, .dense, mlp.*
    "phi": {**_SEPARATE_QKV, "dense": (("o_proj",),), "fc1": (("up_proj",),), "fc2": (("down_proj",),)},
    # microsoft/phi-2's remote-code modeling_phi.py (model_type phi-msft): mixer.Wqkv, mixer.out_proj, mlp.fc1/fc2.
    "phi-msft": {"Wqkv": (_QKV,), "out_proj": (("o_proj",),), "fc1": (("up_proj",),), "fc2": (("down_proj",),)},
    "phi3": {"qkv_proj": (_QKV,), "o_proj": (("o_proj",),), "gate_up_proj": (("gate_proj", "up_proj"),),
             "down_proj": (("down_proj",),)},
    "opt": {**_SEPARATE_QKV, "out_proj": (("o_proj",),), "fc1": (("up_proj",),), "fc2": (("down_proj",),)},
    "gptj": {**_SEPARATE_QKV, "out_proj": (("o_proj",),), "fc_in": (("up_proj",),), "fc_out": (("down_proj",),)},
    # modeling_codegen.py: attn.qkv_proj (q, k and v in one matrix), attn.out_proj, mlp.fc_in/fc_out.
    "codegen": {"qkv_proj": (_QKV,), "out_proj": (("o_proj",),), "fc_in": (("up_proj",),), "fc_out": (("down_proj",),)},
    "starcoder2": {**_SEPARATE_QKV, "o_proj": (("o_proj",),), "c_fc": (("up_proj",),), "c_proj": (("down_proj",),)},
    "mixtral": {**_SEPARATE_QKV, "o_proj": (("o_proj",),), "w1": (("gate_proj",),), "w3": (("up_proj",),),
                "w2": (("down_proj",),)},   # block_sparse_moe.experts.N.w1/w3/w2
    "internlm2": {"wqkv": (_QKV,), "wo": (("o_proj",),), "w1": (("gate_proj",),), "w3": (("up_proj",),),
                  "w2": (("down_proj",),)},   # remote code: attention.wqkv, .wo, feed_forward.w1/w3/w2
}
# PEFT keeps trainable adapter weights in float32 by default
# (autocast_adapter_dtype=True upcasts bf16/fp16 adapters).
DEFAULT_ADAPTER_PRECISION = "fp32"


@dataclass(frozen=True)
class LoraSpec:
    """LoRA adapters (Hu et al. 2021).

    rank: r. targets: Hugging Face module names or ("all-linear",).
    adapter_precision: dtype of the adapter weights and gradients. PEFT's
    default (autocast_adapter_dtype=True) upcasts bf16/fp16 adapters to fp32;
    the QLoRA reference code (artidoro/qlora, qlora.py) casts them to bf16.
    """

    # The planner's defaults for method lora and qlora (proposalkit/knobs.py, lora). Rank 16, as torchtune's
    # llama3_1/405B_qlora recipe (lora_rank: 16; PEFT's LoraConfig default, r = 8, is smaller); the attention
    # projections, where Hu et al. 2021 put the adapters.
    rank: int = 16
    targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    adapter_precision: str = DEFAULT_ADAPTER_PRECISION


def module_names(model: ModelSpec) -> tuple[str, ...]:
    """The model's linear module names, as its family's modeling code names them (LoRA targets).

    With a shape: the names that cover its matrices (a plain MLP has no gate_proj). Without
    one (a parameter count only): the family's names, else Llama's (HF_MODULES).
    """
    table = FAMILY_MODULES.get(model.family)
    if not model.has_architecture:
        return tuple(table) if table else HF_MODULES
    present = {x.module for x in linears(model)}
    if table is None:
        return tuple(dict.fromkeys(x.module for x in linears(model)))
    return tuple(name for name, parts in table.items() if any(set(p) <= present for p in parts))


def default_targets(model: ModelSpec) -> tuple[str, ...]:
    """The planner's default targets, the attention projections, in the model's names: q, k, v, o (MLA's
    own, shapes.attention_modules); for a family of its own the modules wholly within attention
    (GPT-2's c_attn, not c_proj, which names the MLP's down projection too)."""
    attention = attention_modules(model)
    table = FAMILY_MODULES.get(model.family)
    if table is None:
        return attention
    return tuple(name for name, parts in table.items() if all(set(p) <= set(attention) for p in parts))


def default_lora(model: ModelSpec) -> LoraSpec:
    """The LoRA of a setup that gives none (TrainingSetup.lora None): LoraSpec's default rank on
    default_targets(model), the attention projections in the model's own module names, as the planner
    chooses (LoraSpec's own default targets are Llama's names, which GPT-2, Falcon or MLA lack)."""
    return LoraSpec(targets=default_targets(model))


# Biases by module, where the config's flags put them (shapes.attention_params, mla_attention_params, mlp_params).
_QKV_MODULES = frozenset(_QKV) | {"q_a_proj", "kv_a_proj_with_mqa"}
_MLP_MODULES = frozenset({"gate_proj", "up_proj", "down_proj"})


class WeightTensors(NamedTuple):
    """The model's parameter tensors, counted as its family's modeling code declares them: one tensor per
    module's weight and one per bias (transformers' models/<family>/modeling_<family>.py; Llama's
    LlamaDecoderLayer: self_attn.q_proj, k_proj, v_proj, o_proj, mlp.gate_proj, up_proj, down_proj,
    input_layernorm, post_attention_layernorm: 7 linear weights and 2 norm weights). A fused module (GPT-2's
    c_attn, Phi-3's qkv_proj and gate_up_proj, FAMILY_MODULES) is one tensor for its parts; a mixture of
    experts holds one per expert and module (Mixtral's experts.N.w1, w2, w3), and its router's gate.

    linear: per layer (the whole model's ÷ its layers), what F.linear reads: the block linears' weights and
            biases, the routers and Qwen2-MoE's shared_expert_gate (what autocast casts to 16 bits).
    norms:  per layer, the norms' weights and biases (q/k norms and MLA's latent norms too).
    head:   the output projection's weight (the tied embedding's where tied) and bias: F.linear too.
    ends:   the trainable tensors outside the layers besides an untied head: the input embedding, learned
            positions, the final norm, and an untied head's own weight and bias."""

    linear: Fraction
    norms: Fraction
    head: int
    ends: int


def weight_tensors(model: ModelSpec) -> WeightTensors:
    """WeightTensors of a model with a shape (shapes.linears(), the config's bias and norm flags)."""
    counts: dict[str, int] = {}
    for x in linears(model):
        counts[x.module] = counts.get(x.module, 0) + x.count
    table = FAMILY_MODULES.get(model.family)
    parts = [p for name_parts in table.values() for p in name_parts] if table else [(m,) for m in counts]
    mla = model.kv_lora_rank is not None
    biased = (_QKV_MODULES if model.attention_bias else frozenset()) \
        | ({"o_proj"} if model.attention_out_bias or (mla and model.attention_bias) else frozenset()) \
        | (_MLP_MODULES if model.mlp_bias else frozenset())
    linear = 0
    for part in parts:
        if set(part) <= counts.keys():
            linear += counts[part[0]] * (1 + (part[0] in biased))
    moe_layers = moe_layer_count(model)
    linear += moe_layers * (1 + model.router_bias + model.shared_expert_gate) if is_moe(model) else 0
    norm = 2 if model.norm == "layernorm" and model.norm_bias else 1
    norms = model.norms_per_layer * norm + (2 if model.qk_norm != "none" else 0) \
        + ((model.q_lora_rank is not None) + 1 if mla else 0)
    head = 1 + model.lm_head_bias
    ends = 1 + (model.learned_positions > 0) + norm + (0 if model.tied_embeddings else head)
    return WeightTensors(Fraction(linear, model.layers), Fraction(norms), head, ends)
