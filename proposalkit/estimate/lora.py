"""LoRA adapters: which matrices are adapted and how many parameters they train.

Hu et al. 2021, "LoRA" (adapters r·(d_in + d_out) per adapted matrix);
module names and shapes from estimate/shapes.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .arith import check_positive, memo
from .shapes import Linear, ModelSpec, linears, require_architecture

# The block linears in Hugging Face's names, in PEFT's order for "all-linear".
HF_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
ALL_LINEAR = "all-linear"
LORA_TARGETS = (*HF_MODULES, ALL_LINEAR)
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


@memo
def lora_matrices(model: ModelSpec, lora: LoraSpec) -> tuple[Linear, ...]:
    """The adapted matrix groups (module, d_in, d_out, count in the whole model, per token).

    Shapes from shapes.linears(). A target names every matrix under that module
    name: dense MLPs, each routed expert and each shared expert alike (PEFT
    matches module names). "all-linear" is every linear of the blocks (PEFT's
    meaning: the LM head is excluded).
    """
    require_architecture(model, "LoRA adapter count")
    groups = linears(model)
    modules = tuple(dict.fromkeys(x.module for x in groups))
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
    chosen = dict.fromkeys(targets)
    return tuple(x for name in chosen for x in groups if x.module == name)


@memo
def lora_trainable_params(model: ModelSpec, lora: LoraSpec) -> int:
    """Trainable LoRA parameters: Σ r·(d_in + d_out) over the adapted matrices (Hu et al. 2021 §4.1).

    Llama-2-7B, r = 8 on q_proj and v_proj: 32 · 2 · 8 · (4096 + 4096) = 4,194,304.
    """
    check_positive(lora.rank, "lora.rank")
    return sum(lora.rank * (x.d_in + x.d_out) * x.count for x in lora_matrices(model, lora))


def lora_activation_bytes_per_layer(model: ModelSpec, lora: LoraSpec, sb: int, e: int, t: int) -> Fraction:
    """LoRA's own stored tensor per adapted matrix a token passes through: the rank-r
    product x·A (e·sb·r), which B's gradient needs; the input x is already counted
    with the layer. Averaged over the layers (routed experts count top-k times)."""
    visits = sum(x.per_token for x in lora_matrices(model, lora))
    return Fraction(e * sb * lora.rank * visits, model.layers * t)
