"""config.json's quantization_config → the checkpoint's WeightFormat (precision.py holds the bits).

Read: bitsandbytes (load_in_4bit / load_in_8bit, bnb_4bit_use_double_quant),
GPTQ and AWQ (bits, group_size, AWQ zero_point), FP8 (quant_method fp8,
weight_block_size), compressed-tensors (the first config group's weights:
num_bits, type, strategy, group_size, symmetric). Another quant_method is
named in a warning and the weights are planned at the workload's precision.
"""

from __future__ import annotations

from fractions import Fraction

from ...precision import WeightFormat, bnb_4bit_bits, group_quant_bits
from .keys import Keys, shown

_SCALE_BITS = 16   # GPTQ/AWQ scales are fp16; compressed-tensors stores them in the model's 16-bit dtype
_FP32_BITS = 32    # FP8 block scales (weight_scale_inv) are fp32 (DeepSeek-V3 checkpoints)
# The papers of the group-wise methods (catalog/references.py ids): GPTQ (Frantar et al. 2023), AWQ (Lin et al. 2024).
_METHOD_PAPERS = {"gptq": ("frantar-2023",), "awq": ("lin-2024",)}


def _precision(bits: int, floating: bool = False) -> str:
    """The workload precision a stored width stands for: 8-bit float fp8, 8-bit int int8, ≤ 4 bits int4."""
    if floating:
        return "fp8"
    return "int8" if bits > 4 else "int4"


def _group(q: Keys) -> int | None:
    """group_size: a positive integer, or -1 / null / absent for none (one scale per output channel)."""
    value = q.config.get("group_size")
    if value is None or (value == -1 and not isinstance(value, bool)):
        return None
    return q.count("group_size")


def read_quantization(keys: Keys) -> tuple[WeightFormat | None, str | None]:
    """(the checkpoint's WeightFormat or None, a warning when quant_method is not one read)."""
    q = keys.nested("quantization_config")
    if q is None:
        return None, None
    method = q.text("quant_method").lower() or ("bitsandbytes" if q.has("load_in_4bit") or q.has("load_in_8bit")
                                               else "")
    if method == "bitsandbytes":
        if q.flag("load_in_4bit", False):
            double = q.flag("bnb_4bit_use_double_quant", False)
            kind = q.text("bnb_4bit_quant_type", "fp4").upper()
            bits = bnb_4bit_bits(double)
            absmax, sum_ = ("double-quantized", "4 + 8/64 + 32/(64·256) = 4.127") if double else \
                ("in fp32", "4 + 32/64 = 4.5")
            return WeightFormat("int4", bits, f"bitsandbytes 4-bit {kind}, one absmax per 64 weights {absmax}",
                                f"{sum_} bits/param (Dettmers et al. 2023 §3)", ("dettmers-2023",)), None
        if q.flag("load_in_8bit", False):
            return WeightFormat("int8", 8, "bitsandbytes LLM.int8()", "int8 weights, one fp32 scale per row "
                                "(< 0.01 bit/param, not counted) (Dettmers et al. 2022)", ("dettmers-2022",)), None
        return None, None
    if method in ("gptq", "awq"):
        bits = q.count("bits", default=4, field="bits")
        group = _group(q)
        zero = method == "gptq" or q.flag("zero_point", True)
        total = group_quant_bits(bits, group, scale_bits=_SCALE_BITS, zero_bits=bits if zero else 0)
        layout = (f"{bits} + ({_SCALE_BITS}-bit scale{f' + {bits}-bit zero' if zero else ''})/{group} = "
                  f"{float(total):.4g} bits/param" if group else f"{bits} bits/param, one scale per output channel")
        name = f"{method.upper()} {bits}-bit" + (f", group {group}" if group else "")
        return WeightFormat(_precision(bits), total, name, layout, _METHOD_PAPERS[method]), None
    if method == "fp8":
        block = q.config.get("weight_block_size")
        if isinstance(block, list) and len(block) == 2 and all(isinstance(b, int) and not isinstance(b, bool)
                                                                and b > 0 for b in block):
            bits = 8 + Fraction(_FP32_BITS, block[0] * block[1])
            return WeightFormat("fp8", bits, f"FP8 (e4m3) weights, one fp32 scale per {block[0]}×{block[1]} block",
                                f"8 + 32/{block[0] * block[1]} = {float(bits):.4g} bits/param"), None
        if block is not None:
            q.problems.append((q.key("weight_block_size"), f"not a block shape (got {shown(block)}, expected two "
                                                           "positive integers, e.g. [128, 128])"))
        return WeightFormat("fp8", 8, "FP8 (e4m3) weights, per-tensor scales (not counted)"), None
    if method == "compressed-tensors":
        return _compressed_tensors(q), None
    return None, (f"quantization_config quant_method {q.text('quant_method') or 'absent'!r} is not read "
                  "(bitsandbytes, gptq, awq, fp8 and compressed-tensors are); weights planned at the workload's "
                  "precision (set precision to match the checkpoint)")


def _compressed_tensors(q: Keys) -> WeightFormat | None:
    """The first config group's weight scheme (llm-compressor's W4A16, W8A8, FP8 presets)."""
    groups = q.config.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        return None
    name = next(iter(groups))
    group = q.nested("config_groups").nested(name)
    weights = group.nested("weights") if group is not None else None
    if weights is None:
        return None
    bits = weights.count("num_bits", default=8)
    floating = weights.text("type", "int") == "float"
    strategy = weights.text("strategy", "tensor")
    size = _group(weights) if strategy == "group" else None
    zero = 0 if weights.flag("symmetric", True) else bits
    total = group_quant_bits(bits, size, scale_bits=_SCALE_BITS, zero_bits=zero)
    kind = f"{'float' if floating else 'int'}{bits}"
    layout = (f"{bits} + ({_SCALE_BITS}-bit scale{f' + {zero}-bit zero' if zero else ''})/{size} = "
              f"{float(total):.4g} bits/param" if size else f"{bits} bits/param, {strategy} scales (not counted)")
    return WeightFormat(_precision(bits, floating), total, f"compressed-tensors {kind} weights, {strategy}", layout)
