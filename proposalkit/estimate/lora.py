"""LoRA adapters: which matrices are adapted and how many parameters they train.

Hu et al. 2021, "LoRA" (adapters r·(d_in + d_out) per adapted matrix);
module names and shapes from estimate/shapes.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .arith import check_positive, memo
from .shapes import ModelSpec, linear_shapes, require_architecture, routed_experts

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
def lora_matrices(model: ModelSpec, lora: LoraSpec) -> tuple[tuple[str, int, int, int], ...]:
    """(module, d_in, d_out, matrices per layer) for each adapted module.

    Shapes from shapes.linear_shapes(). MoE MLP modules are adapted once per
    expert. "all-linear" is every linear of the blocks (PEFT's meaning: the
    LM head is excluded).
    """
    require_architecture(model, "LoRA adapter count")
    shapes = linear_shapes(model)
    targets = tuple(lora.targets)
    if not targets:
        raise ValueError("lora.targets: expected at least one module")
    if ALL_LINEAR in targets:
        if len(targets) > 1:
            raise ValueError(f"lora.targets: {ALL_LINEAR!r} cannot be combined with module names")
        targets = tuple(name for name in HF_MODULES if name in shapes)
    matrices = []
    for name in dict.fromkeys(targets):
        if name not in shapes:
            valid = ", ".join((*shapes, ALL_LINEAR))
            raise ValueError(f"lora.targets: {name!r} is not a linear module of {model.id!r} (valid: {valid})")
        d_in, d_out, count = shapes[name]
        matrices.append((name, d_in, d_out, count))
    return tuple(matrices)


@memo
def lora_trainable_params(model: ModelSpec, lora: LoraSpec) -> int:
    """Trainable LoRA parameters: L · Σ r·(d_in + d_out) over the adapted matrices (Hu et al. 2021 §4.1).

    Llama-2-7B, r = 8 on q_proj and v_proj: 32 · 2 · 8 · (4096 + 4096) = 4,194,304.
    """
    check_positive(lora.rank, "lora.rank")
    per_layer = sum(lora.rank * (d_in + d_out) * count for _, d_in, d_out, count in lora_matrices(model, lora))
    return model.layers * per_layer


def lora_activation_bytes_per_layer(model: ModelSpec, lora: LoraSpec, sb: int, e: int, t: int) -> Fraction:
    """LoRA's own stored tensor per adapted matrix: the rank-r product x·A (e·sb·r),
    which B's gradient needs; the input x is already counted with the layer."""
    total = 0
    routed = routed_experts(model)
    for _name, _d_in, _d_out, count in lora_matrices(model, lora):
        tokens = sb * (routed if count > 1 else 1)
        total += e * tokens * lora.rank
    return total / t
