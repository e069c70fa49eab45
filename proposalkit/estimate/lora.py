"""LoRA adapters: which matrices are adapted and how many parameters they train.

Hu et al. 2021, "LoRA" (adapters r·(d_in + d_out) per adapted matrix); the module
names and the LoraSpec record from catalog/modules.py, shapes from catalog/shapes.py.
"""

from __future__ import annotations

from fractions import Fraction

from .arith import check_positive, exact, memo
from ..catalog.modules import ALL_LINEAR, FAMILY_MODULES, LoraSpec, module_names
from ..catalog.shapes import Linear, ModelSpec, linears, require_architecture

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
