"""LoRA adapters: which matrices are adapted and how many parameters they train.

Hu et al. 2021, "LoRA" (adapters r·(d_in + d_out) per adapted matrix);
module names and shapes from estimate/shapes.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .arith import check_positive, exact, memo
from .shapes import Linear, ModelSpec, attention_modules, linears, require_architecture

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
    "phi3": {"qkv_proj": (_QKV,), "o_proj": (("o_proj",),), "gate_up_proj": (("gate_proj", "up_proj"),),
             "down_proj": (("down_proj",),)},
    "opt": {**_SEPARATE_QKV, "out_proj": (("o_proj",),), "fc1": (("up_proj",),), "fc2": (("down_proj",),)},
    "gptj": {**_SEPARATE_QKV, "out_proj": (("o_proj",),), "fc_in": (("up_proj",),), "fc_out": (("down_proj",),)},
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


def _module_groups(model: ModelSpec, name: str) -> list[Linear]:
    """The matrix groups one module name covers; a fused name's parts become one matrix over their outputs."""
    groups = linears(model)
    table = FAMILY_MODULES.get(model.family)
    parts = table[name] if table is not None else ((name,),)
    out = []
    for part in parts:
        per_module = [[x for x in groups if x.module == m] for m in part]
        if any(not found for found in per_module):
            continue
        for fused in zip(*per_module):
            first = fused[0]
            out.append(Linear(name, first.d_in, sum(x.d_out for x in fused), first.count, first.per_token))
    return out


@memo
def lora_matrices(model: ModelSpec, lora: LoraSpec) -> tuple[Linear, ...]:
    """The adapted matrix groups (module, d_in, d_out, count in the whole model, per token).

    Shapes from shapes.linears(), named as the model's family names them
    (module_names). A target names every matrix under that module name: dense
    MLPs, each routed expert and each shared expert alike (PEFT matches module
    names). "all-linear" is every linear of the blocks (PEFT's meaning: the LM
    head is excluded).
    """
    require_architecture(model, "LoRA adapter count")
    modules = module_names(model)
    targets = tuple(lora.targets)
    if not targets:
        raise ValueError("lora.targets: expected at least one module")
    if ALL_LINEAR in targets:
        if len(targets) > 1:
            raise ValueError(f"lora.targets: {ALL_LINEAR!r} cannot be combined with module names")
        targets = modules
    for name in targets:
        if name not in modules:
            valid = ", ".join((*modules, ALL_LINEAR))
            raise ValueError(f"lora.targets: {name!r} is not a linear module of {model.id!r} (valid: {valid})")
    return tuple(x for name in dict.fromkeys(targets) for x in _module_groups(model, name))


@memo
def lora_trainable_params(model: ModelSpec, lora: LoraSpec) -> int:
    """Trainable LoRA parameters: Σ r·(d_in + d_out) over the adapted matrices (Hu et al. 2021 §4.1).

    Llama-2-7B, r = 8 on q_proj and v_proj: 32 · 2 · 8 · (4096 + 4096) = 4,194,304.
    """
    check_positive(lora.rank, "lora.rank")
    return sum(lora.rank * (x.d_in + x.d_out) * x.count for x in lora_matrices(model, lora))


def lora_activation_bytes_per_layer(model: ModelSpec, lora: LoraSpec, sb: int, e: int, t: int) -> Fraction | int:
    """LoRA's own stored tensor per adapted matrix a token passes through: the rank-r
    product x·A (e·sb·r), which B's gradient needs; the input x is already counted
    with the layer. Averaged over the layers (routed experts count top-k times)."""
    visits = sum(x.per_token for x in lora_matrices(model, lora))
    return exact(e * sb * lora.rank * visits, model.layers * t)
