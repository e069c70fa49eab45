"""Bytes per stored value and per optimizer state.

The one home of these facts: memory (what a GPU holds), storage (what a
checkpoint saves) and the config.json readers (a quantized checkpoint's
layout) import them from here; the names a workload may write are
options.py's. Bits per plain dtype are units.PRECISION_BITS
(bytes_per_element); quantization constants and optimizer states are below.
All values exact (ints or Fractions), so 8-bit Adam's 2 + 8/256 bytes is
never rounded away.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .options import INFERENCE_PRECISIONS, OPTIMIZERS
from .units import PRECISION_BITS

# Model-state bytes per parameter (Rajbhandari et al. 2020 §3.1: "2Ψ + 2Ψ +
# KΨ" with K = 12 for mixed-precision Adam: fp32 master weights, momentum and
# variance, 4 bytes each; Micikevicius et al. 2018 §3.1 for the fp32 master copy).
FP32_BYTES = 4
ADAM_MOMENTS = 2            # m and v (PyTorch AdamW state: exp_avg, exp_avg_sq)
SGD_MOMENTS = 1             # momentum buffer (torch.optim.SGD, momentum > 0)

# bitsandbytes 8-bit optimizers: each moment is a uint8 code plus one fp32
# absmax per block of 256 values (bitsandbytes-foundation/bitsandbytes @
# 51294d90 bitsandbytes/optim/optimizer.py, Optimizer2State.init_state:
# state1/state2 uint8, absmax1/absmax2 float32 of ⌈n / 256⌉; 256 since
# bitsandbytes 0.44.0, aa57bd89 "Change 8bit optimizer blocksize 2048->256";
# Dettmers et al. 2022 §2.1 used 2048). Both live in the optimizer's
# state_dict, so a checkpoint saves them too: 1 + 4/256 bytes per value in
# memory and on disk. The absmax buffers are ordinary GPU tensors (torch.zeros),
# never paged (model_states.py).
ADAM8BIT_BLOCK = 256
ADAM8BIT_MOMENT_BYTES = 1 + Fraction(FP32_BYTES, ADAM8BIT_BLOCK)

# NF4 (Dettmers et al. 2023 §3): 4-bit codes, one absmax constant per block of
# 64 weights. Stored as fp32 that costs 32/64 = 0.5 bit/param; double
# quantization stores it as 8 bits plus one fp32 second-level constant per 256
# first-level constants: 8/64 + 32/(64·256) = 0.125 + 0.001953 = 0.127 bit/param.
NF4_BLOCK = 64
NF4_SECOND_BLOCK = 256
NF4_BITS = 4 + Fraction(8, NF4_BLOCK) + Fraction(32, NF4_BLOCK * NF4_SECOND_BLOCK)

# int4 weight-only quantization (GPTQ, AWQ): one fp16 scale and one zero point
# per group of 128 weights (the default group size of both). Counting the zero
# as fp16 gives 4 + 32/128 = 4.25 bits/param; GPTQ/AWQ pack zeros as 4-bit
# integers (4 + 20/128 = 4.156 bits), so 4.25 is the conservative choice.
INT4_GROUP = 128
INT4_BITS = 4 + Fraction(16 + 16, INT4_GROUP)




@dataclass(frozen=True)
class WeightFormat:
    """How a quantized checkpoint stores its block matrices (config.json's quantization_config).

    `precision` is the workload precision it stands for (int4, int8, fp8);
    `bits` the stored bits per weight with the format's own constants
    (scales, zero points), exact; `method` names the method and its layout,
    `layout` the bits per parameter it makes ('' where the method says it),
    `sources` the reference ids of its paper (catalog/references.py).
    """

    precision: str
    bits: Fraction | int
    method: str
    layout: str = ""
    sources: tuple[str, ...] = ()


def bnb_4bit_bits(double_quant: bool) -> Fraction:
    """bitsandbytes 4-bit (NF4 or FP4): 4-bit codes, one absmax per block of 64 (Dettmers et al.
    2023 §3; bitsandbytes Params4bit blocksize 64): 4 + 32/64 = 4.5 bits with an fp32 absmax;
    with double quantization NF4_BITS, 4 + 8/64 + 32/(64·256) ≈ 4.127."""
    return NF4_BITS if double_quant else 4 + Fraction(FP32_BYTES * 8, NF4_BLOCK)


def group_quant_bits(bits: int, group_size: int | None, *, scale_bits: int = 16, zero_bits: int = 0) -> Fraction | int:
    """Integer weights of `bits` with one scale (fp16: 16 bits) and one zero point of `zero_bits`
    per group of `group_size` input weights: bits + (scale_bits + zero_bits)/group_size.

    GPTQ (AutoGPTQ/GPTQModel QuantLinear: qweight packs `bits`-bit values in int32, scales fp16
    [in/g, out], qzeros packed at `bits` [in/g, out]) and AWQ (AutoAWQ WQLinear_GEMM, the same
    three tensors): zero_bits = bits, so 4-bit group 128 is 4 + 20/128 = 4.156 bits. No group
    (group_size None or -1: one scale per output channel, thousands of weights): `bits`.
    """
    if not group_size or group_size < 0:
        return bits
    return bits + Fraction(scale_bits + zero_bits, group_size)


def check_choice(value: str, allowed: tuple[str, ...], what: str) -> None:
    if value not in allowed:
        raise ValueError(f"{what}: expected one of {', '.join(allowed)}, got {value!r}")


def quantized_weight_bits(precision: str) -> Fraction | int:
    """Bits per stored weight of a linear layer, quantization constants included.

    fp32 32, bf16/fp16 16, fp8 8 (one per-tensor scale: negligible), int8 8
    (per-channel fp16 scales are 16 bits per row of thousands of weights,
    < 0.01 bit/param, not modelled), int4 4 + 32/128 = 4.25 (GPTQ/AWQ group
    128, fp16 scale and zero), nf4 4 + 8/64 + 32/(64·256) = 4.127
    (QLoRA §3, double quantization).
    """
    if precision == "nf4":
        return NF4_BITS
    if precision == "int4":
        return INT4_BITS
    check_choice(precision, INFERENCE_PRECISIONS, "precision")
    return PRECISION_BITS[precision]


def optimizer_state_bytes(optimizer: str, moment_bytes: Fraction | int = FP32_BYTES) -> Fraction | int:
    """Optimizer-state bytes per trainable parameter, without a master copy.

    AdamW keeps two moments, SGD with momentum one, each `moment_bytes` wide
    (fp32 under mixed precision); 8-bit AdamW two 1-byte moments plus one fp32
    absmax per block of 256 (ADAM8BIT_MOMENT_BYTES), whatever `moment_bytes`.
    bitsandbytes' paged AdamW keeps two fp32 moments whatever the parameters'
    dtype (optim/optimizer.py Optimizer2State.init_state: optim_bits 32 →
    torch.float32), its 8-bit variant the 8-bit layout.
    """
    check_choice(optimizer, OPTIMIZERS, "optimizer")
    if optimizer == "adamw":
        return ADAM_MOMENTS * moment_bytes
    if optimizer == "paged-adamw":
        return ADAM_MOMENTS * FP32_BYTES
    if optimizer in ("adamw-8bit", "paged-adamw-8bit"):
        return ADAM_MOMENTS * ADAM8BIT_MOMENT_BYTES
    return SGD_MOMENTS * moment_bytes
