"""Rules of thumb for GPU memory, each with its source, computed beside the estimate as cross-checks.

Pure: model and workload in, CrossCheck records (bytes) out.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .arith import ceil, fmt_bytes_per_param, memo
from ..catalog.shapes import ModelSpec
from ..units import PRECISION_BITS, bytes_per_element


@dataclass(frozen=True)
class CrossCheck:
    """A published rule of thumb, or a plain lower bound, computed beside the estimate."""

    name: str
    bytes: int
    formula: str
    source: str
    sources: tuple[str, ...] = ()     # reference ids (catalog/references.py) of `source` and of the method named


# The NAIRR Pilot community documentation (nairr.readthedocs.io), a public guide.
NAIRR_GPU_ESTIMATE = "NAIRR community guide, GPU Estimate"
NAIRR_GENERALIZED = "NAIRR community guide, Generalized Resource Estimation"
NAIRR_REFERENCES = ("nairr-guide",)
# Not a rule of thumb: the weights alone, parameters × bytes per value, a lower bound on any plan.
ARITHMETIC = "arithmetic: parameters × bytes per value"
# Mixed-precision Adam keeps 16 bytes per parameter of model states: fp16 weights and gradients (2 + 2) and
# fp32 master weights, momentum and variance (4 + 4 + 4) (Rajbhandari et al. 2020, §3.1).
ZERO_MODEL_STATES = "Rajbhandari et al. 2020, §3.1"
# LoRA freezes the pre-trained weights: they carry no gradients or optimizer states (Hu et al. 2021, §4.1).
LORA_FROZEN = "Hu et al. 2021, §4.1"
# QLoRA stores the frozen base in 4-bit NormalFloat with double quantization: 4 bits per parameter and
# 8/64 + 32/(64·256) = 0.127 bits of quantization constants (Dettmers et al. 2023, §3).
QLORA_NF4 = "Dettmers et al. 2023, §3"
NF4_BITS_PER_PARAMETER = Fraction(4127, 1000)


def cross_checks(model: ModelSpec, *, kind: str, method: str, precision: str, context: int | None) -> list[CrossCheck]:
    """The rules of thumb for this workload (see _cross_checks)."""
    return list(_cross_checks(model, kind, method, precision, context))


@memo
def _cross_checks(model: ModelSpec, kind: str, method: str, precision: str, context: int | None) -> tuple[CrossCheck, ...]:
    """The rules of thumb that apply to this workload's method, each with its source, in bytes (GB = 10^9
    as the rules mean it).

    P(B) = parameters / 10^9, ctx(k) = context / 1000, so "x·P(B) GB" is x bytes per parameter and
    "1·ctx(k) GB" is 10^6 bytes per context token. Only the rules' formulas are used, never worked
    results printed beside them. The NAIRR guide's training rule and ZeRO's model states are for full
    training with Adam; LoRA and QLoRA are shown their frozen base instead (a lower bound, not a rule).
    """
    P = model.params
    checks: list[CrossCheck] = []
    training = kind in ("training", "pretrain", "finetune")
    if kind == "inference":
        tokens = context or 0
        rule = 2 * P + tokens * 10**6
        checks.append(CrossCheck(
            "NAIRR guide inference rule", rule,
            f"2·P(B) + 1·ctx(k) GB = 2 × {P / 1e9:.3f} + {tokens / 1000:g} GB", NAIRR_GPU_ESTIMATE, NAIRR_REFERENCES,
        ))
        checks.append(CrossCheck(
            "NAIRR guide inference rule with overhead", ceil(Fraction(rule) * Fraction(115, 100) + 10**9),
            "(2·P(B) + 1·ctx(k)) × 1.15 + 1 GB", NAIRR_GENERALIZED, NAIRR_REFERENCES,
        ))
        if precision in PRECISION_BITS:
            # the weights alone: bytes per parameter of the precision (fp32 4, bf16 2, int8 1, int4 0.5)
            x = bytes_per_element(precision)
            checks.append(CrossCheck(
                f"weights alone at {precision}", ceil(P * x), f"{fmt_bytes_per_param(x)}·P(B) GB", ARITHMETIC,
            ))
    elif training:
        width = bytes_per_element("fp32" if precision == "fp32" else "bf16")
        if method == "full":
            checks.append(CrossCheck("NAIRR guide training rule", 40 * P, "40·P(B) GB (Adam, mixed precision)",
                                     NAIRR_GPU_ESTIMATE, NAIRR_REFERENCES))
            checks.append(CrossCheck("model states of mixed-precision Adam", 16 * P, "16·P(B) GB",
                                     ZERO_MODEL_STATES, ("rajbhandari-2020",)))
        elif method == "lora":
            checks.append(CrossCheck("LoRA's frozen base weights", ceil(P * width), f"{fmt_bytes_per_param(width)}·P(B) GB",
                                     LORA_FROZEN, ("hu-2021",)))
        elif method == "qlora":
            x = NF4_BITS_PER_PARAMETER / 8
            checks.append(CrossCheck("QLoRA's NF4 base weights", ceil(P * x), f"{float(x):g}·P(B) GB",
                                     QLORA_NF4, ("dettmers-2023", "hu-2021")))
    else:
        raise ValueError(f"kind: expected inference, training, pretrain or finetune, got {kind!r}")
    return tuple(checks)
