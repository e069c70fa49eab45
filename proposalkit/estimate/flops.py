"""FLOPs per token, throughput and runtime. Pure: no I/O, nothing at import.

Symbols as in PaLM Appendix B (Chowdhery et al. 2022): N parameters, L layers,
H heads, Q head size, T sequence length.
"""

from __future__ import annotations

from dataclasses import dataclass

from .shapes import ModelSpec, attention_head_size, matmul_params
from ..units import SECONDS_PER_HOUR

# Default model-FLOPs utilization for training when no pilot is measured.
# 0.40 sits inside every well-documented large dense run on A100/H100:
# Llama 3 405B, 38–43% BF16 MFU on H100 (Dubey et al. 2024, Table 4);
# GPT 22B, 41.5% on 8 A100 (Korthikanti et al. 2022, Table 3); Llama 2's
# A100 GPU-hours (Touvron et al. 2023, Table 2) imply 0.445 (7B) and 0.46
# (70B) under training_flops_per_token below (tests/test_published_compute.py),
# so 0.40 leans toward requesting slightly more rather than less.
# A rule of thumb's 0.8 utilization is never the default; a user's `mfu` overrides this.
DEFAULT_MFU = 0.40
DEFAULT_MFU_SOURCE = ("0.40: Dubey et al. 2024 Table 4 (38–43% BF16 MFU, Llama 3 405B on H100); "
                      "Korthikanti et al. 2022 Table 3 (41.5%, 22B on 8 A100); "
                      "Touvron et al. 2023 Table 2 (Llama 2 A100 GPU-hours imply 0.445–0.46)")

# QLoRA dequantizes NF4 weights on the fly: torchtune measured 2,413 tokens/s
# for Llama 3.1 8B QLoRA vs 3,083 for LoRA on the same RTX 4090
# (pytorch/torchtune README @30b8519e, memory/throughput table) → 0.783.
QLORA_SPEED_FACTOR = 2413 / 3083
QLORA_SPEED_SOURCE = "torchtune README @30b8519e: Llama 3.1 8B on 1× RTX 4090, QLoRA 2,413 vs LoRA 3,083 tokens/s"


# Where each term comes from, as the report cites it.
FULL_DENSE_SOURCE = "Kaplan et al. 2020"        # 6·N: forward 2N + backward 4N
LORA_DENSE_SOURCE = "Hu et al. 2021"            # 4·N: frozen weights need no weight gradients
ATTENTION_SOURCE = "Chowdhery et al. 2022, App. B"   # 12·L·H·Q·T (PaLM)


@dataclass(frozen=True)
class FlopsPerToken:
    """Model FLOPs per trained token, split into named terms, with every figure
    of the derivation: dense = dense_factor × matmul_params; attention =
    12 × L × H × Q × T from attention_shape. Render prints these; it derives nothing."""

    dense: float          # GEMMs with the weights
    attention: float      # QKᵀ and AV, which have no weights
    recompute: float      # extra forward pass of full activation checkpointing (hardware, not model, FLOPs)
    formula: str          # model_formula, plus the recomputed terms when there are any
    matmul_params: int    # N: parameters in matrix multiplies (shapes.matmul_params)
    dense_factor: int     # 6 for full training, 4 for LoRA/QLoRA
    dense_source: str     # FULL_DENSE_SOURCE or LORA_DENSE_SOURCE
    dense_reason: str     # why that factor, in words
    attention_shape: tuple[int, int, int, int] | None    # (L, H, Q, T); None without an architecture
    model_formula: str    # "6·N + 12·L·H·Q·T": the model FLOPs alone
    attention_source: str = ATTENTION_SOURCE

    @property
    def model(self) -> float:
        return self.dense + self.attention

    @property
    def hardware(self) -> float:
        return self.model + self.recompute


def training_flops_per_token(model: ModelSpec, method: str, seq_len: int,
                             activation_checkpointing: bool = False) -> FlopsPerToken:
    """Training FLOPs per token.

    Full training: 6·N (forward 2N, backward 4N; Kaplan et al. 2020) plus
    attention 12·L·H·Q·T (PaLM Appendix B). N is matmul_params: for a
    mixture of experts the active parameters (the top-k routed experts,
    the shared experts and everything dense), not the total; for MLA, Q is
    the mean of the query-key and value head widths. LoRA/QLoRA: frozen weights need
    no weight-gradient GEMMs, so the dense part is 4·N (forward 2N + input
    gradients 2N; Hu et al. 2021 report the saving as ~25% of training
    throughput); attention still needs all its gradients (12·L·H·Q·T).
    Full activation checkpointing recomputes the forward pass: + 2N + 4·L·H·Q·T
    hardware FLOPs (Korthikanti et al. 2022 §5), not counted in MFU.
    """
    n = matmul_params(model)
    full = method == "full"
    dense_factor = 6 if full else 4
    dense = dense_factor * n
    attention = 0.0
    shape = None
    if model.has_architecture:
        shape = (model.layers, model.heads, attention_head_size(model), seq_len)
        attention = 12 * model.layers * model.heads * attention_head_size(model) * seq_len
    recompute = (2 * n + attention / 3) if activation_checkpointing else 0.0
    model_formula = f"{dense_factor}·N" + (" + 12·L·H·Q·T" if attention else "")
    formula = model_formula + (" (+ 2·N + 4·L·H·Q·T recomputed)" if recompute else "")
    reason = ("forward 2·N + backward 4·N" if full else
              "forward 2·N + input gradients 2·N; the frozen weights need no weight gradients")
    return FlopsPerToken(dense, attention, recompute, formula, n, dense_factor,
                         FULL_DENSE_SOURCE if full else LORA_DENSE_SOURCE, reason, shape, model_formula)


def flops_throughput(flops_per_token: FlopsPerToken, gpus: int, peak_flops: float, mfu: float) -> float:
    """Tokens per second from FLOPs: GPUs × peak × MFU ÷ model FLOPs per token.

    When activation checkpointing recomputes, the GPU does more work per
    token at the same hardware rate, so the rate is divided by hardware
    FLOPs (the user's MFU is taken as the achieved fraction of peak).
    """
    return gpus * peak_flops * mfu / flops_per_token.hardware


def runtime_hours(tokens: float, tokens_per_second: float) -> float:
    """Wall-clock hours of one run: tokens ÷ tokens per second ÷ 3600."""
    return tokens / tokens_per_second / SECONDS_PER_HOUR


@dataclass(frozen=True)
class ScaledThroughput:
    tokens_per_second: float
    rule: str


def scale_pilot(tokens_per_second: float, *, from_gpu: str, from_count: int, from_rate: float,
                to_gpu: str, to_count: int, to_rate: float, rate_name: str) -> ScaledThroughput:
    """Move a measured pilot to another GPU type or count.

    Rule: throughput scales linearly with the GPU count and with the ratio of
    the GPUs' peak rates (dense 16-bit FLOP/s for training, which is compute
    bound; memory bandwidth for inference decode, which is bandwidth bound).
    Linear scaling in count is optimistic for communication-heavy jobs; the
    plan flags every such estimate as an extrapolation.
    """
    scaled = tokens_per_second * (to_count / from_count) * (to_rate / from_rate)
    rule = (f"{tokens_per_second:,.0f} tokens/s measured on {from_count}× {from_gpu} "
            f"× ({to_count}/{from_count} GPUs) × ({rate_name} {to_gpu} ÷ {from_gpu} = "
            f"{to_rate / from_rate:.3f}) = {scaled:,.0f} tokens/s on {to_count}× {to_gpu}")
    return ScaledThroughput(scaled, rule)
