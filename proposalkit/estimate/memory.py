"""GPU memory per GPU, as named components in bytes.

Pure: no I/O, no YAML, nothing happens at import. Every component is an
integer number of bytes; inside the arithmetic, bytes per element are exact
fractions (int4 is 1/2 byte, NF4 with its constants 4.127/8) and each
component is rounded up once, at the end.

Symbols follow Korthikanti et al. 2022 (Table 1): s sequence length,
b micro-batch, h hidden size, a attention heads, L layers, t tensor-parallel
size, p pipeline-parallel size, v vocabulary. Beside them: d head size,
kv key/value heads (< a under grouped-query attention), f the MLP's inner
width, P parameters, N data-parallel GPUs over which ZeRO shards.

Sources, cited where used:
- Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training
  Trillion Parameter Models", §3.1 (model states) and §5 / Figure 1 (stages).
- Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
  Transformer Models", §4 (activations per layer, eq. 1-2, Table 2; pipeline
  §4.2.3; embeddings and output layer §4.3).
- Dao et al. 2022, "FlashAttention" (no s x s matrices stored; softmax
  statistics kept).
- Hu et al. 2021, "LoRA" (adapters r·(d_in + d_out) per adapted matrix).
- Dettmers et al. 2023, "QLoRA", §3 (NF4, blocksize 64, double quantization).
- Dettmers et al. 2022, "8-bit Optimizers via Block-wise Quantization" §2.1
  (block size 2048).
- Frantar et al. 2023 (GPTQ) and Lin et al. 2024 (AWQ): int4 weights with
  group-wise scales, default group size 128.
- Kwon et al. 2023, "Efficient Memory Management for LLM Serving with
  PagedAttention" (vLLM): KV cache 2·L·kv·d bytes-per-element per token.
- Implementation facts, cited where used: PEFT (adapter dtype), artidoro/qlora
  (QLoRA settings), torchtune docs (pure bf16 training), PyTorch FSDP notes
  (prefetching), vLLM engine arguments (gpu_memory_utilization,
  max_num_batched_tokens), pytorch/pytorch#107667 and Hugging Face's "Model
  training anatomy" (CUDA context), Guo et al. 2024, GMLake (fragmentation).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

from .shapes import ModelSpec, attention_params, mlp_params_per_expert, norm_params
from ..units import GiB, PRECISION_BITS

# --------------------------------------------------------------------------
# Constants, each with its source.
# --------------------------------------------------------------------------

# A dropout mask is stored as 1 byte per element (Korthikanti et al. 2022 §4.1).
MASK_BYTES = 1
# Logits for the cross-entropy loss are kept in fp32: 4·s·b·v bytes
# (Korthikanti et al. 2022 §4.3).
LOGIT_BYTES = 4
# FlashAttention keeps the softmax log-sum-exp statistics, one fp32 value per
# query row per head, instead of the s x s probabilities (Dao et al. 2022, Alg. 1-2).
SOFTMAX_STATISTICS_BYTES = 4
# Mixture-of-experts router probabilities are computed in fp32 (Mixtral's HF
# implementation applies softmax with dtype=torch.float).
ROUTER_PROBABILITY_BYTES = 4

# Model-state bytes per parameter (Rajbhandari et al. 2020 §3.1: "2Ψ + 2Ψ +
# KΨ" with K = 12 for mixed-precision Adam: fp32 master weights, momentum and
# variance, 4 bytes each).
FP32_BYTES = 4
ADAM_MOMENTS = 2            # m and v
SGD_MOMENTS = 1             # momentum buffer
# bitsandbytes 8-bit optimizers: one byte per moment plus one fp32 absmax per
# block of 2048 values (Dettmers et al. 2022, "8-bit Optimizers via Block-wise
# Quantization", §2.1).
ADAM8BIT_BLOCK = 2048
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

# Inference prefill is processed in chunks of at most this many tokens per
# forward pass: vLLM's default max_num_batched_tokens for the offline LLM class
# on GPUs under 70 GiB and on A100s (vllm/engine/arg_utils.py,
# EngineArgs.get_batch_defaults: 8192; 16384 on H100-class GPUs; 2048 for the
# OpenAI server). The activation workspace scales with it.
DEFAULT_PREFILL_TOKENS = 8192

# vLLM preallocates gpu_memory_utilization = 0.9 of the device by default
# (vLLM engine arguments), i.e. it leaves 10% of the GPU outside its pool.
VLLM_GPU_MEMORY_UTILIZATION = Fraction(9, 10)

# CUDA context and library workspaces, per GPU. The context alone is ~300 MB
# with CUDA >= 11.7 lazy kernel loading and was > 1000 MB before it
# (pytorch/pytorch#107667, ptrblck 2023-08-28); Hugging Face's "Model training
# anatomy" measured 1343 MiB on the device after creating a 1-element tensor
# (nvidia-smi, all kernels loaded). cuBLAS workspaces and NCCL communicator
# buffers come on top of the lazy-loaded context; 1 GiB covers both ends of
# the published range for a current stack.
CUDA_CONTEXT_BYTES = 1 * GiB
# The caching allocator reserves more than it allocates (fragmentation, cached
# blocks). GMLake (Guo et al., ASPLOS 2024) measured PyTorch's allocator
# wasting on average 15% (up to 33%) across eight LLM fine-tuning setups that
# use recomputation, LoRA and ZeRO; serving engines hold back 10% of the GPU
# (vLLM gpu_memory_utilization = 0.9). 10% of the allocated bytes is the
# default; raise it for long, irregular workloads.
ALLOCATOR_RESERVE = 0.10

HF_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
ALL_LINEAR = "all-linear"

TRAINING_METHODS = ("full", "lora", "qlora")
TRAINING_PRECISIONS = ("fp32", "bf16", "fp16")
OPTIMIZERS = ("adamw", "adamw-8bit", "sgd")
ADAPTER_PRECISIONS = ("fp32", "bf16", "fp16")
INFERENCE_PRECISIONS = ("fp32", "bf16", "fp16", "fp8", "int8", "int4")
KV_PRECISIONS = ("fp32", "bf16", "fp16", "fp8", "int8", "int4")


# --------------------------------------------------------------------------
# Inputs and outputs.
# --------------------------------------------------------------------------


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
    adapter_precision: str = "fp32"


@dataclass(frozen=True)
class TrainingSetup:
    method: str                  # "full" | "lora" | "qlora"  (pretraining is "full")
    seq_len: int
    micro_batch: int = 1
    precision: str = "bf16"      # fp32 | bf16 | fp16 (mixed precision when 16-bit)
    optimizer: str = "adamw"     # adamw | adamw-8bit | sgd
    data_parallel: int = 1       # GPUs over which ZeRO shards
    zero_stage: int = 0          # 0..3 (FSDP full-shard = 3)
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    activation_checkpointing: bool = False
    flash_attention: bool = True
    lora: LoraSpec | None = None
    sequence_parallel: bool = True   # with tensor_parallel > 1 (Korthikanti §4.2.2)
    # 16-bit training keeps fp32 master weights and fp32 optimizer moments (mixed
    # precision, ZeRO §3.1). False: pure 16-bit training, moments in the weights'
    # dtype and no master copy: torchtune's recipes ("bfloat16 ... uses 2 bytes per
    # model and optimizer parameter"; "we don't support mixed-precision training",
    # torchtune docs/source/tutorials/memory_optimizations.rst).
    master_weights: bool = True


@dataclass(frozen=True)
class InferenceSetup:
    context: int                 # tokens per sequence (prompt + generated)
    batch: int = 1               # concurrent sequences
    precision: str = "bf16"      # fp32 | bf16 | fp16 | fp8 | int8 | int4
    kv_precision: str = "bf16"
    tensor_parallel: int = 1
    prefill_tokens: int | None = None   # tokens per forward pass; None: DEFAULT_PREFILL_TOKENS


@dataclass(frozen=True)
class Overhead:
    cuda_context_bytes: int      # CUDA context + cuBLAS/cuDNN/NCCL workspaces, per GPU
    allocator_reserve: float     # fraction of the allocated bytes the caching allocator holds on top


DEFAULT_OVERHEAD = Overhead(cuda_context_bytes=CUDA_CONTEXT_BYTES, allocator_reserve=ALLOCATOR_RESERVE)


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per GPU by component; `total` is their sum."""

    weights: int
    gradients: int
    optimizer: int
    activations: int
    kv_cache: int
    overhead: int
    notes: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return self.weights + self.gradients + self.optimizer + self.activations + self.kv_cache + self.overhead

    def components(self) -> dict[str, int]:
        return {
            "weights": self.weights,
            "gradients": self.gradients,
            "optimizer": self.optimizer,
            "activations": self.activations,
            "kv_cache": self.kv_cache,
            "overhead": self.overhead,
        }


@dataclass(frozen=True)
class CrossCheck:
    """A rule of thumb from the seed documents, computed beside the estimate."""

    name: str
    bytes: int
    formula: str
    source: str


# --------------------------------------------------------------------------
# Small helpers.
# --------------------------------------------------------------------------


# Pure functions of a (frozen, hashable) model and setup are memoized: a
# proposal repeats models and setups (sweeps, variants), `check` and `diff`
# plan the same workloads again, and the planner tries several GPU counts.
# Their results are frozen dataclasses or tuples, safe to share.
_memo = functools.lru_cache(maxsize=1024)


def _ceil(value: Fraction | int) -> int:
    return math.ceil(value)


def _choice(value: str, allowed: tuple[str, ...], what: str) -> None:
    if value not in allowed:
        raise ValueError(f"{what}: expected one of {', '.join(allowed)}, got {value!r}")


def _positive(value: int, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what}: expected a positive integer, got {value!r}")


def _require_architecture(model: ModelSpec, what: str) -> None:
    if not model.has_architecture:
        raise ValueError(
            f"model {model.id!r}: {what} needs the architecture "
            "(layers, hidden, heads, ffn_hidden, vocab), not only a parameter count"
        )


def _exact(numerator: int, denominator: int = 1) -> Fraction | int:
    """numerator/denominator exactly: an int when whole (int arithmetic is far
    faster than Fraction and just as exact), else a Fraction."""
    return numerator // denominator if numerator % denominator == 0 else Fraction(numerator, denominator)


def _bytes(precision: str) -> Fraction | int:
    return _exact(PRECISION_BITS[precision], 8)


@functools.lru_cache(maxsize=64)
def _fraction(x: float) -> Fraction:
    # Through the decimal text, so 0.1 is exactly 1/10 and not its binary neighbour.
    return Fraction(str(x))


def _fmt_bytes_per_param(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{float(x):.4g}"


# --------------------------------------------------------------------------
# Weights.
# --------------------------------------------------------------------------


def quantized_weight_bits(precision: str) -> Fraction:
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
    _choice(precision, INFERENCE_PRECISIONS, "precision")
    return PRECISION_BITS[precision]


def linear_weight_params(model: ModelSpec) -> int:
    """Parameters in the weight matrices of the transformer blocks.

    These are what weight-only quantization (GPTQ, AWQ, bitsandbytes NF4/int8,
    vLLM fp8) converts: q, k, v, o and the MLP matrices of every expert, without
    biases. Embeddings, the LM head, norms, biases and the MoE router stay 16-bit.
    """
    _require_architecture(model, "the split of quantized and 16-bit weights")
    h, d, f = model.hidden, model.head_size, model.ffn_hidden
    q_out, kv_out = model.heads * d, model.kv_head_count * d
    attention = h * q_out + 2 * h * kv_out + q_out * h
    mlp = (3 if model.mlp == "swiglu" else 2) * h * f
    return model.layers * (attention + model.experts * mlp)


def weight_bytes(model: ModelSpec, precision: str, *, unquantized: str = "bf16") -> Fraction:
    """Bytes of all weights at `precision` (exact; divide by tensor parallelism after).

    fp32/bf16/fp16: P × bytes. fp8/int8/int4/nf4: the block matrices at
    quantized_weight_bits()/8, the rest (embeddings, head, norms, biases,
    router) at `unquantized` (16 bits). A params-only model is quantized
    whole (it cannot be split).
    """
    if precision in ("fp32", "bf16", "fp16"):
        return model.params * _bytes(precision)
    bits = quantized_weight_bits(precision)
    if not model.has_architecture:
        return model.params * bits / 8
    linear = linear_weight_params(model)
    return linear * bits / 8 + max(model.params - linear, 0) * _bytes(unquantized)


# --------------------------------------------------------------------------
# LoRA adapters.
# --------------------------------------------------------------------------


@_memo
def lora_matrices(model: ModelSpec, lora: LoraSpec) -> tuple[tuple[str, int, int, int], ...]:
    """(module, d_in, d_out, matrices per layer) for each adapted module.

    q_proj h→a·d, k_proj and v_proj h→kv·d (grouped-query widths), o_proj
    a·d→h, gate_proj and up_proj h→f, down_proj f→h. A GELU MLP has no
    gate_proj: up_proj and down_proj name its two matrices (GPT-2's c_fc and
    c_proj). MoE MLP modules are adapted once per expert. "all-linear" is
    every linear of the blocks (PEFT's meaning: the LM head is excluded).
    """
    _require_architecture(model, "LoRA adapter count")
    h, d, f = model.hidden, model.head_size, model.ffn_hidden
    q_out, kv_out = model.heads * d, model.kv_head_count * d
    shapes = {
        "q_proj": (h, q_out, 1),
        "k_proj": (h, kv_out, 1),
        "v_proj": (h, kv_out, 1),
        "o_proj": (q_out, h, 1),
        "up_proj": (h, f, model.experts),
        "down_proj": (f, h, model.experts),
    }
    if model.mlp == "swiglu":
        shapes["gate_proj"] = (h, f, model.experts)
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


@_memo
def lora_trainable_params(model: ModelSpec, lora: LoraSpec) -> int:
    """Trainable LoRA parameters: L · Σ r·(d_in + d_out) over the adapted matrices (Hu et al. 2021 §4.1).

    Llama-2-7B, r = 8 on q_proj and v_proj: 32 · 2 · 8 · (4096 + 4096) = 4,194,304.
    """
    _positive(lora.rank, "lora.rank")
    per_layer = sum(lora.rank * (d_in + d_out) * count for _, d_in, d_out, count in lora_matrices(model, lora))
    return model.layers * per_layer


# --------------------------------------------------------------------------
# KV cache.
# --------------------------------------------------------------------------


def kv_cache_bytes_per_token(model: ModelSpec, kv_precision: str = "bf16") -> int:
    """KV cache of one token of one sequence, all layers: 2 · L · kv · d · bytes.

    2 for K and V; kv heads, not query heads (grouped-query attention) (Kwon
    et al. 2023 §2-3). Llama-2-7B fp16: 2·32·32·128·2 = 524,288 bytes;
    Llama-3.1-8B (8 kv heads): 131,072 bytes.
    """
    _require_architecture(model, "the KV cache")
    _choice(kv_precision, KV_PRECISIONS, "kv_precision")
    return _ceil(2 * model.layers * model.kv_head_count * model.head_size * _bytes(kv_precision))


def kv_heads_per_gpu(model: ModelSpec, tensor_parallel: int) -> Fraction:
    """KV heads each tensor-parallel rank holds: kv / t, at least 1.

    When t exceeds the KV heads, vLLM replicates them so each rank keeps one
    (vLLM attention layers: num_kv_heads = max(1, total_kv_heads // tp_size)).
    """
    return max(_exact(model.kv_head_count, tensor_parallel), 1)


# --------------------------------------------------------------------------
# Activations (training).
# --------------------------------------------------------------------------


def activation_terms_per_layer(
    model: ModelSpec,
    seq_len: int,
    micro_batch: int,
    *,
    flash_attention: bool,
    tensor_parallel: int = 1,
    sequence_parallel: bool = True,
    bytes_per_value: int = 2,
) -> dict[str, Fraction]:
    """Bytes one transformer layer stores for the backward pass, term by term.

    Korthikanti et al. 2022 §4.1 count, for a GPT block in 16-bit (e = 2
    bytes per value, masks 1 byte), with sb = s·b:
      LayerNorm inputs              2 · e·sb·h        =  4 sbh
      QKV input (shared)            e·sb·h            =  2 sbh
      Q and K (for QKᵀ), V          e·sb·(h + h + h)  =  6 sbh
      softmax output, dropout mask, dropout output
                                    (e + 1 + e)·a·s²·b = 5 a s² b
      o_proj input                  e·sb·h            =  2 sbh
      MLP input                     e·sb·h            =  2 sbh
      GELU input (up output) and down_proj input
                                    2 · e·sb·4h       = 16 sbh
      two dropout masks (attention out, MLP out)
                                    2 · sb·h          =  2 sbh
      total                         sbh · (34 + 5as/h)          (eq. 1)
    Generalised here: Q is a·d wide and K, V kv·d wide (grouped-query
    attention); the o_proj input is a·d wide; a SwiGLU MLP stores gate output
    (SiLU input), up output and their product (down_proj input), 3 · e·sb·f,
    as fused SwiGLU kernels do (eager PyTorch also keeps the SiLU output, one
    more e·sb·f); a GELU MLP 2 · e·sb·f; without dropout there are no masks
    and the softmax output alone serves the backward (2 a s² b, not 5).
    FlashAttention (Dao et al. 2022) stores no s² tensor, only the fp32
    log-sum-exp per row and head (4·a·s·b); its dropout mask is regenerated.
    A mixture-of-experts MLP stores the shared input (router), one input and
    the inner activations per routed expert (experts_per_token), and the fp32
    router probabilities.
    Tensor parallelism splits Q, K, V, the scores, the o_proj input and the
    MLP inner activations by t; the norms, the QKV/MLP inputs and the masks
    are split only with sequence parallelism (eq. 2 vs Table 2), so with
    sequence parallelism the whole layer is divided by t.
    """
    _require_architecture(model, "activation memory")
    _positive(seq_len, "seq_len")
    _positive(micro_batch, "micro_batch")
    _positive(tensor_parallel, "tensor_parallel")
    s, b, h, a = seq_len, micro_batch, model.hidden, model.heads
    e = bytes_per_value
    d, f = model.head_size, model.ffn_hidden
    q_width, kv_width = a * d, model.kv_head_count * d
    sb = s * b
    split = _exact(1, tensor_parallel)
    replicated = split if sequence_parallel else 1
    moe = model.experts > 1
    routed = model.experts_per_token if moe else 1
    inner_tensors = 3 if model.mlp == "swiglu" else 2

    terms: dict[str, Fraction] = {}
    terms["norm inputs"] = 2 * e * sb * h * replicated
    terms["qkv input"] = e * sb * h * replicated
    terms["q, k, v"] = e * sb * (q_width + 2 * kv_width) * split
    if flash_attention:
        terms["softmax statistics"] = SOFTMAX_STATISTICS_BYTES * a * s * b * split
    else:
        per_score = e + ((MASK_BYTES + e) if model.dropout else 0)
        terms["attention scores"] = per_score * a * s * s * b * split
    terms["o_proj input"] = e * sb * q_width * split
    terms["mlp input"] = e * sb * h * replicated
    if moe:
        terms["expert inputs"] = e * sb * h * routed * split
        terms["router probabilities"] = ROUTER_PROBABILITY_BYTES * sb * model.experts * replicated
    terms["mlp inner"] = inner_tensors * e * sb * f * routed * split
    if model.dropout:
        terms["dropout masks"] = 2 * MASK_BYTES * sb * h * replicated
    return terms


def activation_bytes_per_layer(
    model: ModelSpec,
    seq_len: int,
    micro_batch: int,
    *,
    flash_attention: bool,
    tensor_parallel: int = 1,
    sequence_parallel: bool = True,
    bytes_per_value: int = 2,
) -> int:
    """Bytes one layer stores for backward; the sum of activation_terms_per_layer().

    GPT-style block (GELU, f = 4h, MHA, dropout, no FlashAttention):
    s·b·h·(34 + 5·a·s/h) (Korthikanti et al. 2022 eq. 1); with t-way tensor
    and sequence parallelism that divided by t (Table 2).
    """
    terms = activation_terms_per_layer(
        model, seq_len, micro_batch,
        flash_attention=flash_attention, tensor_parallel=tensor_parallel,
        sequence_parallel=sequence_parallel, bytes_per_value=bytes_per_value,
    )
    return _ceil(sum(terms.values()))


def _lora_activation_bytes_per_layer(model: ModelSpec, lora: LoraSpec, sb: int, e: int, t: int) -> Fraction:
    """LoRA's own stored tensor per adapted matrix: the rank-r product x·A (e·sb·r),
    which B's gradient needs; the input x is already counted with the layer."""
    total = 0
    routed = model.experts_per_token if model.experts > 1 else 1
    for _name, _d_in, _d_out, count in lora_matrices(model, lora):
        tokens = sb * (routed if count > 1 else 1)
        total += e * tokens * lora.rank
    return total / t


def training_activation_bytes(model: ModelSpec, setup: TrainingSetup) -> tuple[int, tuple[str, ...]]:
    """Activation bytes on the busiest GPU of a training step, with the notes to print.

    Per layer: activation_bytes_per_layer(). Full activation checkpointing
    keeps each layer's input (e·s·b·h, ÷ t with sequence parallelism) and one
    layer's full activations while it is recomputed (Korthikanti Table 2,
    full activation recomputation: 2sbh per layer).
    Pipeline parallelism with 1F1B: the first stage holds p microbatches of its
    L/p layers, "p × L/p = L layers worth of activations" whatever p is
    (Korthikanti §4.2.3). The embedding dropout mask adds s·b·h·p/t; the last
    norm (e·sbh/t), the output projection input (e·sbh/t) and the fp32 logits
    (4·s·b·v/t) sit on the last stage (Korthikanti §4.3). The embedding output
    is not counted apart: it is the first layer's input, already counted.
    LoRA adds each adapter's rank-r product x·A (e·s·b·r); QLoRA adds the one
    block matrix that bitsandbytes dequantizes to 16 bits for each matmul.
    """
    if not model.has_architecture:
        return 0, (
            f"activations not estimated: model {model.id!r} gives only a parameter count; "
            "give layers, hidden, heads, ffn_hidden and vocab to include them",
        )
    e = 4 if setup.precision == "fp32" else 2
    s, b, h, v = setup.seq_len, setup.micro_batch, model.hidden, model.vocab
    t, p = setup.tensor_parallel, setup.pipeline_parallel
    sp = setup.sequence_parallel or t == 1
    split = _exact(1, t)
    replicated = split if sp else 1

    layer = sum(activation_terms_per_layer(
        model, s, b, flash_attention=setup.flash_attention, tensor_parallel=t,
        sequence_parallel=sp, bytes_per_value=e,
    ).values())
    notes = []
    if setup.method in ("lora", "qlora"):
        layer += _lora_activation_bytes_per_layer(model, setup.lora or LoraSpec(), s * b, e, t)
        notes.append(
            "LoRA activations: counted as for full training plus each adapter's rank-r product "
            "(an upper bound: autograd need not keep the inputs of frozen, unadapted matrices)"
        )
    dequantized = 0
    if setup.method == "qlora":
        # bitsandbytes dequantizes one NF4 matrix at a time to the compute dtype for
        # each matmul (MatMul4Bit); the largest block matrix bounds that buffer.
        h_, d_, f_ = model.hidden, model.head_size, model.ffn_hidden
        dequantized = e * Fraction(max(h_ * model.heads * d_, h_ * model.kv_head_count * d_, h_ * f_), t)
        notes.append("QLoRA: one block matrix dequantized to 16 bits at a time for its matmul (transient buffer counted)")
    layer_input = e * s * b * h * replicated

    layers_per_stage = math.ceil(model.layers / p)
    in_flight = p                     # 1F1B: the first stage holds p microbatches

    def stage(microbatches: int) -> Fraction:
        if setup.activation_checkpointing:
            return microbatches * layers_per_stage * layer_input + layer
        return microbatches * layers_per_stage * layer

    embedding_masks = MASK_BYTES * s * b * h * in_flight * replicated if model.dropout else 0
    output_layer = 2 * e * s * b * h * replicated + LOGIT_BYTES * s * b * v * split
    if p == 1:
        total = stage(1) + embedding_masks + output_layer
    else:
        first = stage(in_flight) + embedding_masks
        last = stage(1) + output_layer
        total = max(first, last)
    total += dequantized

    attention = "FlashAttention (no s×s scores stored)" if setup.flash_attention else "attention scores stored (no FlashAttention)"
    notes.append(
        f"activations: {attention}, {e}-byte values, "
        f"{'full activation checkpointing (layer inputs + one layer recomputed)' if setup.activation_checkpointing else 'no activation checkpointing'}, "
        f"fp32 logits 4·s·b·v (Korthikanti et al. 2022 eq. 1, §4.3)"
    )
    if p > 1:
        notes.append(f"pipeline parallel {p} with 1F1B: the first stage holds {p} microbatches × {layers_per_stage} layers (Korthikanti §4.2.3)")
    if t > 1:
        notes.append(f"tensor parallel {t}{' with sequence parallelism' if sp else ' without sequence parallelism'} divides activations (Korthikanti Table 2)")
    return _ceil(total), tuple(notes)


# --------------------------------------------------------------------------
# Training.
# --------------------------------------------------------------------------


def _optimizer_bytes_per_trainable(optimizer: str, master_copy: bool, moment_bytes: Fraction | int = FP32_BYTES) -> Fraction | int:
    """Optimizer-state bytes per trainable parameter (ZeRO counts the fp32 master copy here).

    AdamW keeps two moments, SGD with momentum one, each `moment_bytes` wide
    (fp32 under mixed precision); 8-bit Adam keeps two 1-byte moments plus one
    fp32 absmax per block of 2048.
    """
    master = FP32_BYTES if master_copy else 0
    if optimizer == "adamw":
        return master + ADAM_MOMENTS * moment_bytes
    if optimizer == "adamw-8bit":
        return master + ADAM_MOMENTS * ADAM8BIT_MOMENT_BYTES
    return master + SGD_MOMENTS * moment_bytes


def _validate_training(model: ModelSpec, setup: TrainingSetup) -> None:
    _choice(setup.method, TRAINING_METHODS, "method")
    _choice(setup.precision, TRAINING_PRECISIONS, "precision")
    _choice(setup.optimizer, OPTIMIZERS, "optimizer")
    for name in ("seq_len", "micro_batch", "data_parallel", "tensor_parallel", "pipeline_parallel"):
        _positive(getattr(setup, name), name)
    if setup.zero_stage not in (0, 1, 2, 3):
        raise ValueError(f"zero_stage: expected 0, 1, 2 or 3, got {setup.zero_stage!r}")
    if setup.lora is not None:
        _positive(setup.lora.rank, "lora.rank")
        _choice(setup.lora.adapter_precision, ADAPTER_PRECISIONS, "lora.adapter_precision")


@_memo
def training_memory(model: ModelSpec, setup: TrainingSetup, overhead: Overhead = DEFAULT_OVERHEAD) -> MemoryBreakdown:
    """Memory per GPU of a training step.

    Full training (Rajbhandari et al. 2020 §3.1), bytes per parameter:
      mixed precision (bf16/fp16) AdamW: weights 2 + gradients 2 + optimizer 12
      (fp32 master 4, m 4, v 4) = 16; adamw-8bit: optimizer 4 + 2·(1 + 4/2048);
      SGD with momentum: optimizer 4 + 4. fp32 training: weights 4 + gradients 4
      + optimizer 8 (AdamW), 2·(1 + 4/2048) (8-bit) or 4 (SGD); no master copy.
      Pure 16-bit (master_weights=False, torchtune): 2 + 2 + 4 (AdamW moments
      in bf16) = 8.
      Tensor × pipeline parallelism divide the parameters first (P/(t·p)); ZeRO
      then divides over N data-parallel GPUs: stage 1 the optimizer states,
      stage 2 also the gradients, stage 3 (FSDP full shard) also the weights
      (ZeRO §5: 16Ψ, 4Ψ + 12Ψ/N, 2Ψ + 14Ψ/N, 16Ψ/N).
    LoRA (Hu et al. 2021): frozen base weights at `precision`, no gradients
    or optimizer state for them; the adapters (lora_trainable_params) carry
    weights and gradients at lora.adapter_precision and fp32 optimizer states
    (8 bytes for AdamW: fp32 adapters need no master copy; 16-bit adapters are
    what the QLoRA code trains, with 32-bit paged AdamW states).
    QLoRA (Dettmers et al. 2023 §3): as LoRA, the block matrices in NF4 with
    double quantization (4.127 bits), the rest at `precision`.
    Activations: training_activation_bytes(). Overhead: CUDA context plus
    allocator_reserve × the other components.
    """
    _validate_training(model, setup)
    t, p, n, stage = setup.tensor_parallel, setup.pipeline_parallel, setup.data_parallel, setup.zero_stage
    model_split = _exact(1, t * p)
    weight_shard = _exact(1, n) if stage >= 3 else 1
    grad_shard = _exact(1, n) if stage >= 2 else 1
    opt_shard = _exact(1, n) if stage >= 1 else 1
    mixed = setup.precision != "fp32" and setup.master_weights
    pure_16bit = setup.precision != "fp32" and not setup.master_weights
    notes: list[str] = []

    if setup.method == "full":
        per_param_weight = _bytes(setup.precision)
        per_param_grad = _bytes(setup.precision)
        per_param_opt = _optimizer_bytes_per_trainable(
            setup.optimizer, master_copy=mixed,
            moment_bytes=_bytes(setup.precision) if pure_16bit else FP32_BYTES,
        )
        params = model.params * model_split
        weights = params * per_param_weight * weight_shard
        gradients = params * per_param_grad * grad_shard
        optimizer = params * per_param_opt * opt_shard
        total_per_param = per_param_weight + per_param_grad + per_param_opt
        notes.append(
            f"model states: {_fmt_bytes_per_param(per_param_weight)} (weights) + "
            f"{_fmt_bytes_per_param(per_param_grad)} (gradients) + "
            f"{_fmt_bytes_per_param(per_param_opt)} ({setup.optimizer} states"
            f"{', fp32 master copy included' if mixed else ''}"
            f"{', pure 16-bit: moments in ' + setup.precision + ', no master copy' if pure_16bit else ''}) = "
            f"{_fmt_bytes_per_param(total_per_param)} bytes/parameter (Rajbhandari et al. 2020 §3.1)"
        )
    else:
        lora = setup.lora or LoraSpec()
        if setup.lora is None:
            notes.append(f"LoRA defaults: rank {lora.rank} on {', '.join(lora.targets)}")
        if setup.method == "qlora":
            base = weight_bytes(model, "nf4", unquantized=setup.precision)
            if model.has_architecture:
                notes.append(
                    "base weights: block matrices NF4 with double quantization, 4 + 8/64 + 32/(64·256) = 4.127 bits/param; "
                    f"embeddings, LM head and norms at {setup.precision} (Dettmers et al. 2023 §3)"
                )
            else:
                notes.append("base weights: all parameters counted at NF4 4.127 bits (the model gives only a parameter count)")
        else:
            base = model.params * _bytes(setup.precision)
            notes.append(f"base weights frozen at {setup.precision}: no gradients or optimizer states for them (Hu et al. 2021)")
        if model.has_architecture:
            adapters = lora_trainable_params(model, lora)
        else:
            adapters = 0
            notes.append("LoRA adapters not counted: the model gives only a parameter count (adapters are usually < 1% of it)")
        adapter_bytes = _bytes(lora.adapter_precision)
        adapter_moment = _bytes(lora.adapter_precision) if pure_16bit else FP32_BYTES
        adapter_opt = _optimizer_bytes_per_trainable(setup.optimizer, master_copy=False, moment_bytes=adapter_moment)
        adapter_params = adapters * model_split
        weights = (base * model_split + adapter_params * adapter_bytes) * weight_shard
        gradients = adapter_params * adapter_bytes * grad_shard
        optimizer = adapter_params * adapter_opt * opt_shard
        if adapters:
            notes.append(
                f"LoRA adapters: {adapters:,} trainable parameters, {lora.adapter_precision} weights and gradients "
                f"+ {_fmt_bytes_per_param(adapter_opt)} bytes of "
                f"{lora.adapter_precision if pure_16bit else 'fp32'} {setup.optimizer} states = "
                f"{_fmt_bytes_per_param(2 * adapter_bytes + adapter_opt)} bytes/parameter"
                + (" (PEFT upcasts adapters to fp32 by default)" if lora.adapter_precision == "fp32" else "")
            )

    gathered_weights, gathered_grads = zero3_gathered_bytes(model, setup)
    if gathered_weights:
        weights += gathered_weights
        gradients += gathered_grads
        notes.append(
            "ZeRO-3/FSDP working set: the largest unit (a layer, or the embeddings) all-gathered, "
            "twice for the prefetched next unit, plus its unsharded gradients before the reduce-scatter "
            "(PyTorch FSDP notes, prefetching)"
        )
    elif stage == 3 and n > 1 and not model.has_architecture:
        notes.append("ZeRO-3/FSDP all-gathered working set not counted: the model gives only a parameter count")
    if stage and n > 1:
        sharded = {1: "optimizer states", 2: "optimizer states and gradients", 3: "weights, gradients and optimizer states"}[stage]
        notes.append(f"ZeRO stage {stage} over {n} data-parallel GPUs shards the {sharded} (Rajbhandari et al. 2020 §5)")
    if t * p > 1:
        notes.append(
            f"tensor parallel {t} × pipeline parallel {p} divide the model states first "
            "(evenly: embeddings and LM head on the first/last stage are not placed apart)"
        )

    activations, activation_notes = training_activation_bytes(model, setup)
    notes.extend(activation_notes)

    parts = [_ceil(weights), _ceil(gradients), _ceil(optimizer), activations, 0]
    overhead_bytes = _overhead(sum(parts), overhead)
    notes.append(_overhead_note(overhead))
    return MemoryBreakdown(*parts, overhead_bytes, notes=tuple(notes))


def zero3_gathered_bytes(model: ModelSpec, setup: TrainingSetup) -> tuple[Fraction, Fraction]:
    """Transient (weights, gradients) bytes of ZeRO-3 / FSDP full sharding, per GPU.

    Sharded parameters are all-gathered one unit at a time (a transformer
    layer when each block is wrapped; the embeddings and the LM head are units
    of their own), and the next unit's all-gather is issued while the current
    one is in use, so two units are live (PyTorch FSDP notes, "FSDP Prefetch
    Nuances"; DeepSpeed ZeRO-3 prefetches likewise). In the backward the
    unit's full gradient exists before its reduce-scatter. Zero unless stage
    3 over more than one GPU and the architecture is known. Tensor
    parallelism divides a unit by t.
    """
    if setup.zero_stage < 3 or setup.data_parallel < 2 or not model.has_architecture:
        return 0, 0
    wb = _bytes(setup.precision)
    layer = attention_params(model) + model.experts * mlp_params_per_expert(model) + 2 * norm_params(model)
    if model.experts > 1:
        layer += model.hidden * model.experts            # router
    if setup.method == "qlora":
        linear = linear_weight_params(model) // model.layers
        layer_bytes = linear * NF4_BITS / 8 + (layer - linear) * wb
    else:
        layer_bytes = layer * wb
    embedding = (model.vocab + model.learned_positions) * model.hidden
    head = 0 if model.tied_embeddings else model.vocab * model.hidden
    unit_bytes = max(layer_bytes, embedding * wb, head * wb) / setup.tensor_parallel
    unit_params = max(layer, embedding, head) / Fraction(setup.tensor_parallel)
    gathered_weights = 2 * unit_bytes
    gathered_grads = unit_params * wb if setup.method == "full" else 0
    return gathered_weights, gathered_grads


# --------------------------------------------------------------------------
# Inference.
# --------------------------------------------------------------------------


def inference_activation_bytes(model: ModelSpec, setup: InferenceSetup) -> int:
    """Transient activation workspace of one forward pass, per GPU.

    Nothing is kept for a backward pass; the peak is one layer's live tensors
    for the tokens of a forward pass, n = min(batch·context, prefill_tokens)
    (chunked prefill, vLLM max_num_batched_tokens): the residual stream and its
    normalised copy (2·e·n·h) plus the wider of the attention projections
    (q, k, v and the attention output: e·n·(2·a·d + 2·kv·d)) and the MLP inner
    tensors (3 or 2 · e·n·f per routed expert), those split by t; plus the fp32
    logits of the sampled positions (4·batch·v). e = 2 bytes (4 for fp32).
    """
    if not model.has_architecture:
        return 0
    e = 4 if setup.precision == "fp32" else 2
    chunk = setup.prefill_tokens if setup.prefill_tokens is not None else DEFAULT_PREFILL_TOKENS
    n = min(setup.batch * setup.context, chunk)
    h, d, f = model.hidden, model.head_size, model.ffn_hidden
    routed = model.experts_per_token if model.experts > 1 else 1
    attention = 2 * model.heads * d + 2 * model.kv_head_count * d
    mlp = (3 if model.mlp == "swiglu" else 2) * f * routed
    layer = e * n * (2 * h + Fraction(max(attention, mlp), setup.tensor_parallel))
    logits = LOGIT_BYTES * setup.batch * model.vocab
    return _ceil(layer + logits)


@_memo
def inference_memory(model: ModelSpec, setup: InferenceSetup, overhead: Overhead = DEFAULT_OVERHEAD) -> MemoryBreakdown:
    """Memory per GPU of serving `batch` sequences of `context` tokens.

    weights = weight_bytes(precision) / t (fp32 4, bf16/fp16 2, fp8/int8 1,
    int4 4.25/8 bytes per block-matrix parameter; embeddings and head 16-bit
    when quantized). KV cache = 2 · L · kv · d · bytes · context · batch
    (Kwon et al. 2023), kv heads divided by t (at least one per GPU).
    Activations: inference_activation_bytes(). Overhead: CUDA context plus
    allocator_reserve × the rest.
    """
    _choice(setup.precision, INFERENCE_PRECISIONS, "precision")
    _choice(setup.kv_precision, KV_PRECISIONS, "kv_precision")
    for name in ("context", "batch", "tensor_parallel"):
        _positive(getattr(setup, name), name)
    if setup.prefill_tokens is not None:
        _positive(setup.prefill_tokens, "prefill_tokens")
    t = setup.tensor_parallel
    notes: list[str] = []

    weights = weight_bytes(model, setup.precision) / t
    if setup.precision == "int4":
        notes.append("int4 weights: 4 bits + fp16 scale and zero per group of 128 = 4.25 bits/param (GPTQ/AWQ default group size)")
    elif setup.precision in ("int8", "fp8"):
        notes.append(f"{setup.precision} weights: 1 byte/param; per-channel/per-tensor scales not counted (< 0.01 bit/param)")
    if setup.precision in ("int4", "int8", "fp8"):
        notes.append(
            "embeddings, LM head and norms kept at 16 bits" if model.has_architecture
            else "all parameters counted at the quantized width (the model gives only a parameter count)"
        )

    if model.has_architecture:
        per_token_per_head = 2 * model.layers * model.head_size * _bytes(setup.kv_precision)
        kv_cache = per_token_per_head * kv_heads_per_gpu(model, t) * setup.context * setup.batch
        notes.append(
            f"KV cache: 2 × {model.layers} layers × {model.kv_head_count} kv heads × {model.head_size} × "
            f"{_fmt_bytes_per_param(_bytes(setup.kv_precision))} bytes × {setup.context:,} tokens × {setup.batch} sequences"
            + (f" ÷ {t} GPUs" if t > 1 else "") + " (Kwon et al. 2023)"
        )
        if t > model.kv_head_count:
            notes.append(f"tensor parallel {t} exceeds {model.kv_head_count} kv heads: each GPU keeps one replicated kv head")
    else:
        kv_cache = 0
        notes.append(f"KV cache not estimated: model {model.id!r} gives only a parameter count (needs layers, kv_heads, head_dim)")

    activations = inference_activation_bytes(model, setup)
    if model.has_architecture:
        chunk = setup.prefill_tokens if setup.prefill_tokens is not None else DEFAULT_PREFILL_TOKENS
        notes.append(
            f"activations: one layer's transient tensors for {min(setup.batch * setup.context, chunk):,} tokens "
            "per forward pass (chunked prefill, vLLM max_num_batched_tokens) + fp32 logits of the sampled positions"
        )
    else:
        notes.append(f"activations not estimated: model {model.id!r} gives only a parameter count")
    notes.append(
        f"serving engines reserve part of the GPU: vLLM's default gpu_memory_utilization = "
        f"{float(VLLM_GPU_MEMORY_UTILIZATION):g} leaves 10% outside its pool"
    )
    parts = [_ceil(weights), 0, 0, activations, _ceil(kv_cache)]
    overhead_bytes = _overhead(sum(parts), overhead)
    notes.append(_overhead_note(overhead))
    return MemoryBreakdown(*parts, overhead_bytes, notes=tuple(notes))


def _overhead(allocated: int, overhead: Overhead) -> int:
    """CUDA context + allocator reserve × allocated bytes (rounded up once)."""
    if overhead.cuda_context_bytes < 0 or overhead.allocator_reserve < 0:
        raise ValueError("overhead: expected non-negative cuda_context_bytes and allocator_reserve")
    reserve = _fraction(overhead.allocator_reserve)
    # ⌈allocated × n/d⌉ in integers: -(-a // b) is the ceiling of a / b.
    return overhead.cuda_context_bytes - (-allocated * reserve.numerator // reserve.denominator)


def _overhead_note(overhead: Overhead) -> str:
    return (
        f"overhead: CUDA context and library workspaces {overhead.cuda_context_bytes / GiB:.2f} GiB "
        f"+ {overhead.allocator_reserve:.0%} caching-allocator reserve on the allocated bytes"
    )


# --------------------------------------------------------------------------
# Cross-checks: the seed documents' rules of thumb.
# --------------------------------------------------------------------------

_SEED_000 = "NAIRR community guide, GPU Estimate (seed 000)"
_SEED_NAIRR_NEW = "NAIRR community guide, Generalized Resource Estimation (newer inference rule)"
_SEED_001 = "GPU Memory formulas (seed 001)"
_SEED_002 = "LLM Training on GPUs notes (seed 002)"

# Seed 001: GB per billion parameters (= bytes per parameter).
_SEED_001_INFERENCE = {"fp32": 4, "bf16": 2, "fp16": 2, "int8": 1, "fp8": 1, "int4": Fraction(1, 2)}


def cross_checks(model: ModelSpec, *, kind: str, method: str, precision: str, context: int | None) -> list[CrossCheck]:
    """The seeds' rules of thumb for this workload (see _cross_checks)."""
    return list(_cross_checks(model, kind, method, precision, context))


@_memo
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
            "NAIRR guide inference rule with overhead", _ceil(Fraction(rule) * Fraction(115, 100) + 10**9),
            "(2·P(B) + 1·ctx(k)) × 1.15 + 1 GB", _SEED_NAIRR_NEW,
        ))
        if precision in _SEED_001_INFERENCE:
            x = _SEED_001_INFERENCE[precision]
            checks.append(CrossCheck(
                f"seed 001 inference at {precision}", _ceil(P * x),
                f"{_fmt_bytes_per_param(Fraction(x))}·P(B) GB", _SEED_001,
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
                f"seed 001 LoRA ({'f32' if precision == 'fp32' else 'f16'})", _ceil(P * x),
                f"{float(x):g}·P(B) GB", _SEED_001,
            ))
        elif method == "qlora":
            checks.append(CrossCheck("seed 001 QLoRA (int4)", _ceil(P * Fraction(6, 10)), "0.6·P(B) GB", _SEED_001))
    else:
        raise ValueError(f"kind: expected inference, training, pretrain or finetune, got {kind!r}")
    return tuple(checks)
