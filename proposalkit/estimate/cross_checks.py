"""Rules of thumb for GPU memory, computed beside the estimate as cross-checks.

Pure: model and workload in, CrossCheck records (bytes) out.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .arith import ceil, fmt_bytes_per_param, memo
from .shapes import ModelSpec


@dataclass(frozen=True)
class CrossCheck:
    """A rule of thumb from the seed documents, computed beside the estimate."""

    name: str
    bytes: int
    formula: str
    source: str


_SEED_000 = "NAIRR community guide, GPU Estimate (seed 000)"
_SEED_NAIRR_NEW = "NAIRR community guide, Generalized Resource Estimation (newer inference rule)"
_SEED_001 = "GPU Memory formulas (seed 001)"
_SEED_002 = "LLM Training on GPUs notes (seed 002)"

# Seed 001: GB per billion parameters (= bytes per parameter).
_SEED_001_INFERENCE = {"fp32": 4, "bf16": 2, "fp16": 2, "int8": 1, "fp8": 1, "int4": Fraction(1, 2)}


def cross_checks(model: ModelSpec, *, kind: str, method: str, precision: str, context: int | None) -> list[CrossCheck]:
    """The seeds' rules of thumb for this workload (see _cross_checks)."""
    return list(_cross_checks(model, kind, method, precision, context))


@memo
def _cross_checks(model: ModelSpec, kind: str, method: str, precision: str, context: int | None) -> tuple[CrossCheck, ...]:
    """The seeds' rules of thumb for this workload, in bytes (GB = 10^9 as the seeds mean it).

    P(B) = parameters / 10^9, ctx(k) = context / 1000, so "x·P(B) GB" is x
    bytes per parameter and "1·ctx(k) GB" is 10^6 bytes per context token.
    Only the seeds' formulas are used, never their worked results.
    """
    P = model.params
    checks: list[CrossCheck] = []
    training = kind in ("training", "pretrain", "finetune")
    if kind == "inference":
        tokens = context or 0
        rule = 2 * P + tokens * 10**6
        checks.append(CrossCheck(
            "seed 000 inference rule", rule,
            f"2·P(B) + 1·ctx(k) GB = 2 × {P / 1e9:.3f} + {tokens / 1000:g} GB", _SEED_000,
        ))
        checks.append(CrossCheck(
            "NAIRR guide inference rule with overhead", ceil(Fraction(rule) * Fraction(115, 100) + 10**9),
            "(2·P(B) + 1·ctx(k)) × 1.15 + 1 GB", _SEED_NAIRR_NEW,
        ))
        if precision in _SEED_001_INFERENCE:
            x = _SEED_001_INFERENCE[precision]
            checks.append(CrossCheck(
                f"seed 001 inference at {precision}", ceil(P * x),
                f"{fmt_bytes_per_param(Fraction(x))}·P(B) GB", _SEED_001,
            ))
    elif training:
        checks.append(CrossCheck("seed 000 training rule", 40 * P, "40·P(B) GB (Adam, mixed precision)", _SEED_000))
        checks.append(CrossCheck("seed 002 training rule", 16 * P, "16 GB per billion parameters", _SEED_002))
        if method == "full":
            x = 12 if precision == "fp32" else 6
            checks.append(CrossCheck(
                f"seed 001 full training ({'f32' if precision == 'fp32' else 'f16'})", x * P,
                f"{x}·P(B) GB", _SEED_001,
            ))
        elif method == "lora":
            x = (4 if precision == "fp32" else 2) + Fraction(1, 10)
            checks.append(CrossCheck(
                f"seed 001 LoRA ({'f32' if precision == 'fp32' else 'f16'})", ceil(P * x),
                f"{float(x):g}·P(B) GB", _SEED_001,
            ))
        elif method == "qlora":
            checks.append(CrossCheck("seed 001 QLoRA (int4)", ceil(P * Fraction(6, 10)), "0.6·P(B) GB", _SEED_001))
    else:
        raise ValueError(f"kind: expected inference, training, pretrain or finetune, got {kind!r}")
    return tuple(checks)
