"""FLOPs per token, throughput and runtime. Pure: no I/O, nothing at import.

Symbols as in PaLM Appendix B (Chowdhery et al. 2022): N parameters, L layers,
H heads, Q head size, T sequence length.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from ..catalog.shapes import ModelSpec, attention_head_size, is_mla, is_moe, matmul_params, projection_widths
from ..units import SECONDS_PER_HOUR, rate_shown, rate_text, ratio_shown, ratio_text

# Without a pilot or a workload MFU the training rate is timed by the step's parts (estimate/step_time.py, which
# replaced the default MFU 0.51, the median published HFU); a workload's own MFU is applied to model FLOPs here.

# QLoRA dequantizes NF4 weights on the fly: torchtune measured 2,413 tokens/s
# for Llama 3.1 8B QLoRA vs 3,083 for LoRA on the same RTX 4090
# (pytorch/torchtune README @30b8519e, memory/throughput table) → 0.783.
QLORA_SPEED_FACTOR = 2413 / 3083
QLORA_SPEED_SOURCE = "torchtune README @30b8519e: Llama 3.1 8B on 1× RTX 4090, QLoRA 2,413 vs LoRA 3,083 tokens/s"


# Where each term comes from, as the report cites it.
FULL_DENSE_SOURCE = "Kaplan et al. 2020"        # 6·N: forward 2N + backward 4N
LORA_DENSE_SOURCE = "Hu et al. 2021"            # 4·N: frozen weights need no weight gradients
ATTENTION_SOURCE = "Chowdhery et al. 2022, App. B"   # 12·L·H·Q·T (PaLM)


# What each activation-checkpointing mode recomputes in the backward pass, per token
# (hardware FLOPs that are not model FLOPs, so not in MFU; PaLM App. B, Korthikanti §5):
#   full: one more forward pass, 2·N + 4·L·H·Q·T (Korthikanti et al. 2022 §5; the HFU and
#     MFU columns of llm-foundry's benchmark table differ by exactly this factor, e.g.
#     49.52% HFU vs 37.14% MFU for MPT-7B at 8k, mosaicml/llm-foundry @8c8dd48f
#     scripts/train/benchmarking/README.md).
#   selective, policy "attention" (Megatron-LM's --recompute-granularity selective,
#     Korthikanti et al. 2022 §4.2): the attention core's forward, QKᵀ and AV, 4·L·H·Q·T.
#   selective, policy "op": torchtitan's op-level policy keeps the outputs of every op it
#     lists (the attention kernel's included) "except every second mm" (pytorch/torchtitan
#     @82010c79 torchtitan/models/llama/parallelize_llama.py), so the 2nd, 4th, 6th matmul
#     of each block in forward order are rerun: for a Llama block (wq, wk, wv, wo, w1, w3,
#     w2) wk, wo and w3; for a plain MLP (q, k, v, o, up, down) k, o and down. A mixture
#     of experts runs its routed experts as grouped matmuls, which the policy does not
#     keep, and MLA has more projections: for those a whole forward of the matmuls, 2·N
#     (an upper bound: more time, never less).
RECOMPUTE_SOURCES = {
    "full": "Korthikanti et al. 2022 §5: full checkpointing reruns the forward pass",
    "attention": "Korthikanti et al. 2022 §4.2: selective checkpointing reruns the attention core",
    "op": "torchtitan @82010c79 parallelize_llama.py: op-level selective checkpointing reruns every second "
          "matmul of a block",
}
CHECKPOINTING_NAMES = {"full": "full", "attention": "selective (attention core)", "op": "selective (op-level)"}

# The works each citation above names (catalog/references.py ids): what the report's references list.
DENSE_REFERENCES = {FULL_DENSE_SOURCE: ("kaplan-2020",), LORA_DENSE_SOURCE: ("hu-2021",)}
ATTENTION_REFERENCES = ("chowdhery-2022",)
RECOMPUTE_REFERENCES = {"full": ("korthikanti-2022",), "attention": ("korthikanti-2022",), "op": ("torchtitan-sac",)}
QLORA_SPEED_REFERENCES = ("torchtune-readme", "dettmers-2023", "hu-2021")


def checkpointing_mode(activation_checkpointing, selective_policy: str = "attention") -> str | None:
    """'full', 'attention' or 'op' (the selective policies), or None, from the workload's value."""
    if activation_checkpointing == "selective":
        return selective_policy
    return "full" if activation_checkpointing else None


def _op_policy_recompute(model: ModelSpec, n: int) -> tuple[float, str]:
    """FLOPs per token rerun by torchtitan's op-level policy: every second matmul of each block."""
    if is_moe(model) or is_mla(model) or not model.has_architecture:
        return float(2 * n), "2·N"
    q, k, v, o_input = projection_widths(model)
    h, f = model.hidden, model.ffn_hidden
    mlp = [(h, f), (h, f), (f, h)] if model.mlp == "gated" else [(h, f), (f, h)]
    rerun = ([(h, q), (h, k), (h, v), (o_input, h)] + mlp)[1::2]
    flops = 2 * model.layers * sum(a * b for a, b in rerun)
    return float(flops), f"2 × {model.layers} × ({' + '.join(f'{a:,} × {b:,}' for a, b in rerun)})"


@dataclass(frozen=True)
class FlopsPerToken:
    """Model FLOPs per trained token, split into named terms, with every figure
    of the derivation: dense = dense_factor × matmul_params; attention =
    12 × L × H × Q × T from attention_shape. Render prints these; it derives nothing."""

    dense: float          # GEMMs with the weights
    attention: float      # QKᵀ and AV, which have no weights
    recompute: float      # rerun by activation checkpointing (hardware, not model, FLOPs)
    formula: str          # model_formula, plus the recomputed terms when there are any
    matmul_params: int    # N: parameters in matrix multiplies (shapes.matmul_params)
    dense_factor: int     # 6 for full training, 4 for LoRA/QLoRA
    dense_source: str     # FULL_DENSE_SOURCE or LORA_DENSE_SOURCE
    dense_reason: str     # why that factor, in words
    attention_shape: tuple[int, int, int, int] | None    # (L, H, Q, T); None without an architecture
    model_formula: str    # "6·N + 12·L·H·Q·T": the model FLOPs alone
    attention_source: str = ATTENTION_SOURCE
    checkpointing: str | None = None     # None, "full", or the selective policy: "attention" or "op"
    recompute_formula: str = ""          # "2·N + 4·L·H·Q·T" for full, "4·L·H·Q·T" for the attention core

    @property
    def model(self) -> float:
        return self.dense + self.attention

    @property
    def hardware(self) -> float:
        return self.model + self.recompute

    @property
    def sources(self) -> tuple[str, ...]:
        """The reference ids of the terms' citations: the dense factor's, the attention term's and, where
        something is recomputed, the recompute's."""
        return (DENSE_REFERENCES[self.dense_source] + ATTENTION_REFERENCES
                + (RECOMPUTE_REFERENCES.get(self.checkpointing or "", ()) if self.recompute else ()))

    @property
    def recompute_source(self) -> str:
        return RECOMPUTE_SOURCES.get(self.checkpointing or "", "")

    @property
    def checkpointing_name(self) -> str:
        return CHECKPOINTING_NAMES.get(self.checkpointing or "", "no")


def training_flops_per_token(model: ModelSpec, method: str, seq_len: int,
                             activation_checkpointing=False, selective_policy: str = "attention") -> FlopsPerToken:
    """Training FLOPs per token.

    Full training: 6·N (forward 2N, backward 4N; Kaplan et al. 2020) plus
    attention 12·L·H·Q·T (PaLM Appendix B). N is matmul_params: for a
    mixture of experts the active parameters (the top-k routed experts,
    the shared experts and everything dense), not the total; for MLA, Q is
    the mean of the query-key and value head widths. LoRA/QLoRA: frozen weights need
    no weight-gradient GEMMs, so the dense part is 4·N (forward 2N + input
    gradients 2N; Hu et al. 2021 report the saving as ~25% of training
    throughput); attention still needs all its gradients (12·L·H·Q·T).
    Activation checkpointing (True or 'selective' under a policy) reruns part
    of the forward pass: full + 2N + 4·L·H·Q·T; selective, the attention core
    (+ 4·L·H·Q·T) or every second matmul (op policy); these are hardware
    FLOPs, not counted in MFU (RECOMPUTE_SOURCES).
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
    mode = checkpointing_mode(activation_checkpointing, selective_policy)
    if mode == "full":
        recompute = 2 * n + attention / 3
        recompute_formula = "2·N" + (" + 4·L·H·Q·T" if attention else "")
    elif mode == "attention":
        recompute, recompute_formula = attention / 3, "4·L·H·Q·T"
    elif mode == "op":
        recompute, recompute_formula = _op_policy_recompute(model, n)
    else:
        recompute, recompute_formula = 0.0, ""
    model_formula = f"{dense_factor}·N" + (" + 12·L·H·Q·T" if attention else "")
    formula = model_formula + (f" (+ {recompute_formula} recomputed)" if recompute else "")
    reason = ("forward 2·N + backward 4·N" if full else
              "forward 2·N + input gradients 2·N; the frozen weights need no weight gradients")
    return FlopsPerToken(dense, attention, recompute, formula, n, dense_factor,
                         FULL_DENSE_SOURCE if full else LORA_DENSE_SOURCE, reason, shape, model_formula,
                         checkpointing=mode, recompute_formula=recompute_formula)


def recompute_mfu(mfu: float, flops_per_token: FlopsPerToken) -> float:
    """MFU of a run that recomputes, from the MFU of the same run recomputing nothing:
    the GPUs keep their hardware rate (HFU) and spend part of it on the rerun forward,
    so MFU = MFU without recompute × model FLOPs ÷ (model + recomputed FLOPs)."""
    return mfu * flops_per_token.model / flops_per_token.hardware


def flops_throughput(flops_per_token: FlopsPerToken, gpus: int, peak_flops: float, mfu: float) -> float:
    """Tokens per second from FLOPs: GPUs × peak × MFU ÷ model FLOPs per token.

    MFU is a model-FLOPs figure (PaLM App. B): any recompute is already in it
    (recompute_mfu turns a no-recompute MFU into one that includes it).
    """
    return gpus * peak_flops * mfu / flops_per_token.model


def runtime_hours(tokens: float, tokens_per_second: float) -> float:
    """Wall-clock hours of one run: tokens ÷ tokens per second ÷ 3600, from the rate as the runtime line prints
    it (units.rate_shown) and worked in decimal, so 245,760,000 tokens ÷ 1,138 tokens/s ÷ 3,600 s/h is the
    59.99 h a reader gets, not the 60.00 h of the unrounded 1,137.92 tokens/s."""
    exact = Decimal(repr(float(tokens))) / Decimal(repr(rate_shown(tokens_per_second))) / SECONDS_PER_HOUR
    return float(exact)


@dataclass(frozen=True)
class ScaledThroughput:
    tokens_per_second: float
    rule: str


def scale_pilot(tokens_per_second: float, *, from_gpu: str, from_count: int, from_rate: float,
                to_gpu: str, to_count: int, to_rate: float, rate_name: str) -> ScaledThroughput:
    """Move a measured pilot to another GPU type or count.

    Rule: throughput scales linearly with the GPU count and with the ratio of
    the GPUs' peak rates (memory bandwidth for inference decode, which is
    bandwidth bound; dense 16-bit FLOP/s for a training pilot only where the
    step-time model cannot time its setup: planning/speed.py
    carried_throughput). Linear scaling in count is optimistic for
    communication-heavy jobs; the plan flags every such estimate as an
    extrapolation.
    """
    # Worked from the printed figures: the measured rate as printed × the counts' fraction × the rates' ratio as
    # printed (units.RATIO_DECIMALS), so that a reader redoes the product.
    ratio = ratio_shown(to_rate, from_rate)
    scaled = float(Decimal(repr(rate_shown(tokens_per_second))) * to_count / from_count * Decimal(repr(ratio)))
    rule = (f"{rate_text(tokens_per_second)} tokens/s measured on {from_count}× {from_gpu} "
            f"× ({to_count}/{from_count} GPUs) × ({rate_name} {to_gpu} ÷ {from_gpu} = "
            f"{ratio_text(ratio)}) = {rate_text(scaled)} tokens/s on {to_count}× {to_gpu}")
    return ScaledThroughput(scaled, rule)
