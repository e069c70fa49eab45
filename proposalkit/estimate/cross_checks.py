"""Rules of thumb for GPU memory, computed beside the estimate as cross-checks.

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
    """A published or common rule of thumb, computed beside the estimate."""

    name: str
    bytes: int
    formula: str
    source: str
    sources: tuple[str, ...] = ()     # reference ids (catalog/references.py) of `source` and of the method named


# The NAIRR Pilot community documentation (nairr.readthedocs.io), a public guide.
NAIRR_GPU_ESTIMATE = "NAIRR community guide, GPU Estimate"
NAIRR_GENERALIZED = "NAIRR community guide, Generalized Resource Estimation"
NAIRR_REFERENCES = ("nairr-guide",)
# Rules repeated across tutorials and notes without one citable origin: shown with their formula.
COMMON_RULE = "common rule of thumb"


def cross_checks(model: ModelSpec, *, kind: str, method: str, precision: str, context: int | None) -> list[CrossCheck]:
    """The rules of thumb for this workload (see _cross_checks)."""
    return list(_cross_checks(model, kind, method, precision, context))


@memo
def _cross_checks(model: ModelSpec, kind: str, method: str, precision: str, context: int | None) -> tuple[CrossCheck, ...]:
    """The rules of thumb for this workload, in bytes (GB = 10^9 as the rules mean it).

    P(B) = parameters / 10^9, ctx(k) = context / 1000, so "x·P(B) GB" is x
    bytes per parameter and "1·ctx(k) GB" is 10^6 bytes per context token.
    Only the rules' formulas are used, never worked results printed beside them.
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
                f"inference weights at {precision}", ceil(P * x),
                f"{fmt_bytes_per_param(x)}·P(B) GB", COMMON_RULE,
            ))
    elif training:
        checks.append(CrossCheck("NAIRR guide training rule", 40 * P, "40·P(B) GB (Adam, mixed precision)",
                                 NAIRR_GPU_ESTIMATE, NAIRR_REFERENCES))
        checks.append(CrossCheck("training at 16 bytes per parameter", 16 * P, "16 GB per billion parameters",
                                 COMMON_RULE))
        width = "f32" if precision == "fp32" else "f16"
        if method == "full":
            x = 12 if precision == "fp32" else 6
            checks.append(CrossCheck(f"full training ({width})", x * P, f"{x}·P(B) GB", COMMON_RULE))
        elif method == "lora":
            x = (4 if precision == "fp32" else 2) + Fraction(1, 10)
            checks.append(CrossCheck(f"LoRA ({width})", ceil(P * x), f"{float(x):g}·P(B) GB", COMMON_RULE, ("hu-2021",)))
        elif method == "qlora":
            checks.append(CrossCheck("QLoRA (int4)", ceil(P * Fraction(6, 10)), "0.6·P(B) GB", COMMON_RULE,
                                     ("dettmers-2023", "hu-2021")))
    else:
        raise ValueError(f"kind: expected inference, training, pretrain or finetune, got {kind!r}")
    return tuple(checks)
