"""Weights and KV cache in bytes: the memory that follows from the model and the precisions alone.

Pure: no I/O. Called by memory.py (inference_memory), model_states.py (the frozen base of LoRA and
QLoRA) and inference.py (the replica's weights and KV pool). Sources: Kwon et al. 2023 (the KV cache,
PagedAttention), DeepSeek-V2 §2.1.2 (the MLA latent), Frantar et al. 2023 and Lin et al. 2024 (int4
groups), as cited where used.
"""

from __future__ import annotations

from fractions import Fraction

from .arith import ceil, exact
from ..options import KV_PRECISIONS
from ..precision import check_choice, quantized_weight_bits
from ..catalog.shapes import (
    ModelSpec, kv_values_per_token_per_layer, linear_weight_params, parameter_count, require_architecture,
)
from ..units import bytes_per_element


def weight_bytes(model: ModelSpec, precision: str, *, unquantized: str = "bf16") -> Fraction:
    """Bytes of all weights at `precision` (exact; divide by tensor parallelism after).

    fp32/bf16/fp16: P × bytes. fp8/int8/int4/nf4: the block matrices at
    quantized_weight_bits()/8, the rest (embeddings, head, norms, biases,
    router) at `unquantized` (16 bits). A params-only model is quantized
    whole (it cannot be split). A given params with a shape sets the count
    at every precision: the shape only splits it, in the shape's proportion
    of block matrices to the rest.
    """
    if precision in ("fp32", "bf16", "fp16"):
        return model.params * bytes_per_element(precision)
    fmt = model.weight_format
    # A quantized checkpoint's own layout (config.json's quantization_config) at its precision.
    bits = fmt.bits if fmt is not None and fmt.precision == precision else quantized_weight_bits(precision)
    if not model.has_architecture:
        return model.params * bits / 8
    linear = Fraction(linear_weight_params(model))
    if model.params_override is not None:
        linear = linear * model.params / parameter_count(model)
    return linear * bits / 8 + (model.params - linear) * bytes_per_element(unquantized)

def kv_cache_bytes_per_token(model: ModelSpec, kv_precision: str = "bf16") -> int:
    """KV cache of one token of one sequence, all layers: 2 · L · kv · d · bytes.

    2 for K and V; kv heads, not query heads (grouped-query attention) (Kwon
    et al. 2023 §2-3). Llama-2-7B fp16: 2·32·32·128·2 = 524,288 bytes;
    Llama-3.1-8B (8 kv heads): 131,072 bytes. MLA caches the latent,
    L · (kv_lora_rank + qk_rope_head_dim) · bytes (DeepSeek-V2 §2.1.2):
    DeepSeek-V2-Lite bf16 27·(512 + 64)·2 = 31,104 bytes.
    """
    require_architecture(model, "the KV cache")
    check_choice(kv_precision, KV_PRECISIONS, "kv_precision")
    return ceil(model.layers * kv_values_per_token_per_layer(model) * bytes_per_element(kv_precision))


def kv_layer_tokens(m: ModelSpec, context: int) -> int:
    """Layer × token entries one sequence of `context` tokens keeps in its KV cache: L·c, except that the
    sliding_window_layers keep only the last sliding_window tokens (Beltagy et al. 2020; Mistral 7B §2):
    (L − n)·c + n·min(c, w). Multiply by kv_values_per_token_per_layer for the values."""
    n = m.sliding_window_layers if m.sliding_window is not None else 0
    return (m.layers - n) * context + n * min(context, m.sliding_window or context)


def kv_heads_per_gpu(model: ModelSpec, tensor_parallel: int) -> Fraction:
    """KV heads each tensor-parallel rank holds: kv / t, at least 1.

    When t exceeds the KV heads, vLLM replicates them so each rank keeps one
    (vLLM attention layers: num_kv_heads = max(1, total_kv_heads // tp_size)).
    """
    return max(exact(model.kv_head_count, tensor_parallel), 1)
