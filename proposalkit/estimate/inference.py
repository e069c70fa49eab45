"""Inference speed: prefill and decode on one model replica, a roofline with calibrated fractions.

How to call it (all arguments plain values; nothing here reads a workload):

    from proposalkit.catalog import gpus, models
    from proposalkit.estimate.inference import replica, prefill, decode_step
    from proposalkit.estimate.batch import batch_job         # batch.py: a set of requests
    from proposalkit.estimate.serving import service         # serving.py: a request rate

    rep = replica(models()["llama-3.1-8b"], gpus()["h100-80gb"], tensor_parallel=1,
                  precision="bf16", engine="vllm", kv_precision=None)   # kv_precision None: the engine's
                                                                        # default beside these weights
    rep.kv_tokens                         # tokens the KV pool holds (per replica)
    rep.max_concurrency(1000, 500)        # sequences of 1000 + 500 tokens at once (KV and engine cap)
    prefill(rep, 1000)                    # Prefill: seconds (the TTFT of a lone request), flops
    decode_step(rep, batch=64, context=1250)   # Step: seconds (= TPOT), bytes_read (weights_bytes_read +
                                               # kv_bytes_read), flops, linear/attention seconds, bound
    rep.kv_bytes_per_sequence(1500)       # one sequence's KV cache per GPU (sliding windows applied)
    job = batch_job(rep, requests=200_000, input_tokens=1000, output_tokens=500, replicas=1)
    job.runtime_seconds, job.output_tokens_per_second, job.batch, job.step
    svc = service(rep, request_rate=5, input_tokens=1000, output_tokens=500, ttft_ms=1000, tpot_ms=50)
    svc.replicas, svc.concurrency, svc.ttft_ms, svc.tpot_ms, svc.max_rate_per_replica   # (serving.py)

Errors: InferenceError (a ValueError) whose message says what is achievable: weights that do not
fit, a sequence longer than the KV pool or the model's context, a latency target below what one
replica can reach (InferenceError.achievable holds the best value, in the target's unit).

The model (DESIGN.md "Compute and runtime"; Kwon et al. 2023 for the KV cache; Williams et al.
2009 for the roofline):
  memory per GPU   weights (estimate/weights.weight_bytes ÷ t) + one forward pass's activation
                   workspace (estimate/activations) + the CUDA context; the engine's pool rule
                   (catalog/engines.py) leaves the KV pool; KV bytes per token per GPU =
                   L × 2·kv·d (or MLA's latent) × bytes, kv heads ÷ t (at least one).
  prefill          compute bound: 2·P_matmul FLOPs per prompt token (matmul_params: active
                   parameters, the embedding lookup left out) + causal attention 2·L·s·a·d per
                   token at prompt position s averaged (QKᵀ and AV, 4·a·d per cached key, half
                   of the s² square computed: FlashAttention skips masked blocks), at the
                   engine's achieved fraction of the GPU's peak for the precision (fp8 where the
                   catalog row gives fp8 FLOP/s and the weights are fp8, else 16-bit; the attention at
                   the 16-bit rate under a release whose context FMHA is fp16, Engine). A pass
                   still reads every weight once, so a lone short prompt takes at least the weights'
                   read time (the decode step's bound); a batch job packs prompts into long passes
                   and is charged the compute only.
  decode step      per-operator roofline: the linear layers take max(weights read / achieved
                   bandwidth, 2·P_matmul·batch / achieved FLOP/s), then attention max(KV bytes /
                   bandwidth, 4·L·c·a·d·batch / FLOP/s): separate kernels, one after the other.
                   A mixture of experts reads only the experts its tokens visit (experts_touched).
                   Sliding-window layers keep and read only the window (weights.kv_layer_tokens).
                   Tensor parallel t: each GPU reads 1/t and computes 1/t, plus two all-reduces
                   per layer (Shoeybi et al. 2019 §3) of the tokens' 16-bit activations over the
                   GPU-to-GPU link (Replica.allreduce_seconds).
  batch job        batch.py: continuous batching at the largest batch the KV pool and the engine
                   allow (concurrency_limit, mean_context here).
  calibration      the achieved fractions and the all-reduce constants are TensorRT-LLM's, fitted on
                   its published H100 throughput (catalog/engines.py, benchmarks/calibrate_inference.py);
                   benchmarks/validation_inference.py holds out the rest (docs/validation.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ..notes import Note, note
from ..units import bytes_per_element
from .workspace import inference_activation_bytes
from .breakdown import ALLOCATOR_RESERVE, CUDA_CONTEXT_BYTES
from ..catalog import GPUSpec
from ..catalog.engines import Engine, engine as engine_named, engine_max_batch, engine_memory_fraction
from .links import NODE_GPUS, ring_allreduce_seconds, tensor_parallel_link
from .setups import InferenceSetup
from .weights import kv_heads_per_gpu, kv_layer_tokens, weight_bytes
from ..options import INFERENCE_PRECISIONS, KV_PRECISIONS
from ..precision import check_choice
from ..catalog.shapes import (
    ModelSpec, attention_head_size, expert_params, is_moe, kv_values_per_token_per_layer, matmul_params,
    require_architecture,
)


class InferenceError(ValueError):
    """A configuration or target one replica cannot meet; `achievable` is the best value, if any."""

    def __init__(self, message: str, achievable: float | None = None):
        super().__init__(message)
        self.achievable = achievable


# Activations exchanged in tensor-parallel all-reduces are 16-bit.
ACTIVATION_BYTES = bytes_per_element("bf16")

# Precisions whose matrix multiplies run on 8-bit tensor cores when the GPU has them (W8A8 fp8).
# int8 and int4 checkpoints here are weight-only (GPTQ/AWQ/bitsandbytes): dequantized to 16 bits.
EIGHT_BIT_COMPUTE = ("fp8",)


@dataclass(frozen=True)
class Replica:
    """One model copy on `tensor_parallel` GPUs of one type, under one engine. Bytes are per GPU."""

    model: ModelSpec
    gpu: GPUSpec
    tensor_parallel: int
    precision: str
    kv_precision: str
    engine: Engine
    weights_bytes: int              # per GPU
    workspace_bytes: int            # activations of one forward pass + CUDA context, per GPU
    kv_pool_bytes: int              # per GPU
    kv_bytes_per_token: int         # per GPU, all layers (the rank's share of the kv heads)
    peak_flops: float               # per GPU, at the compute precision
    compute_fraction: float
    compute_precision: str          # "fp8" or "16-bit"
    notes: tuple[Note, ...] = ()
    node_gpus: int = NODE_GPUS      # GPUs per node: tensor parallelism beyond them crosses the network

    @property
    def nodes(self) -> int:
        """Nodes one replica spans: ⌈tensor_parallel ÷ node_gpus⌉."""
        return math.ceil(self.tensor_parallel / self.node_gpus)

    @property
    def kv_tokens(self) -> int:
        """Tokens the KV pool holds, all sequences together."""
        return self.kv_pool_bytes // self.kv_bytes_per_token if self.kv_bytes_per_token else 0

    @property
    def max_batch(self) -> int | None:
        return engine_max_batch(self.engine, self.gpu.id, self.gpu.usable_memory_bytes)

    def kv_bytes_per_sequence(self, context: int) -> int:
        """KV cache of one sequence of `context` tokens per GPU: kv_bytes_per_token × context, except that
        sliding-window layers keep only the window (weights.kv_layer_tokens)."""
        if self.model.sliding_window is None:
            return self.kv_bytes_per_token * context
        return math.ceil(Fraction(self.kv_bytes_per_token, self.model.layers) * kv_layer_tokens(self.model, context))

    def max_concurrency(self, input_tokens: int, output_tokens: int) -> int:
        """Sequences of input + output tokens held at once: the KV pool ÷ one sequence's KV cache, capped
        by the engine's max batch. 0 when not even one fits."""
        fits = self.kv_pool_bytes // self.kv_bytes_per_sequence(input_tokens + output_tokens)
        cap = self.max_batch
        return min(fits, cap) if cap is not None else fits

    @property
    def achieved_bandwidth(self) -> float:
        """Bytes per second each GPU reads in a decode step: the engine's fraction of the datasheet."""
        return self.engine.bandwidth_fraction * self.gpu.memory_bandwidth

    @property
    def achieved_flops(self) -> float:
        return self.compute_fraction * self.peak_flops

    @property
    def link_bandwidth(self) -> float:
        """Bytes per second one GPU sends to its peers (one direction): links.tensor_parallel_link."""
        return tensor_parallel_link(self.gpu.id, self.tensor_parallel, self.node_gpus)

    def allreduce_seconds(self, tokens: int) -> float:
        """The tensor-parallel all-reduces of one forward pass over `tokens` tokens: two per layer
        (after attention and after the MLP; Shoeybi et al. 2019 §3), each of tokens × h 16-bit values,
        a ring (links.ring_allreduce_seconds) at the engine's achieved fraction of the link, plus its fixed
        latency per all-reduce. 0 at t = 1."""
        size = tokens * self.model.hidden * ACTIVATION_BYTES
        one = ring_allreduce_seconds(size, self.tensor_parallel, self.engine.link_fraction * self.link_bandwidth,
                                     self.engine.allreduce_latency)
        return 2 * self.model.layers * one


@dataclass(frozen=True)
class Prefill:
    tokens: int                     # prompt tokens of one request
    batch: int                      # prompts processed together
    flops: float                    # per GPU
    seconds: float                  # wall time: max(compute, passes × weight read) + all-reduces + passes × launches
    compute_seconds: float = 0.0    # its FLOPs at the achieved rate + all-reduces: its share of a packed pass
    read_seconds: float = 0.0       # one read of the weights it touches at the achieved bandwidth (per pass)
    launch_seconds: float = 0.0     # one pass's fixed cost: layers × the engine's prefill_layer_seconds
    passes: int = 1                 # passes of at most the engine's prefill chunk the prompts run in
    allreduce_seconds: float = 0.0  # the tensor-parallel all-reduces within compute_seconds

    @property
    def tokens_per_second(self) -> float:
        return self.tokens * self.batch / self.seconds

    @property
    def flops_seconds(self) -> float:       # its FLOPs at the achieved rate (compute_seconds − all-reduces)
        return self.compute_seconds - self.allreduce_seconds


@dataclass(frozen=True)
class Step:
    """One decode iteration: `batch` sequences generate one token each at `context` cached tokens.
    Per-operator roofline: the linear layers take max(weights / bandwidth, their FLOPs / FLOP/s),
    attention max(KV bytes / bandwidth, its FLOPs / FLOP/s); the two run one after the other."""

    batch: int
    context: int                    # tokens each sequence holds (mean)
    bytes_read: int                 # per GPU: weights (experts touched) + KV of every sequence
    flops: float                    # per GPU
    linear_seconds: float
    attention_seconds: float
    seconds: float                  # linear + attention + the tensor-parallel all-reduces + the engine's fixed
                                    # cost per step (Engine.decode_step_seconds)
    bound: str                      # "memory" or "compute": what limits the linear layers
    weights_bytes_read: int = 0     # per GPU: the weights (an MoE's untouched experts left out)
    kv_bytes_read: int = 0          # per GPU: every sequence's KV cache

    @property
    def tokens_per_second(self) -> float:
        """Output tokens per second of the iteration."""
        return self.batch / self.seconds


# --------------------------------------------------------------------------
# The replica: memory.
# --------------------------------------------------------------------------


def default_kv_precision(precision: str, engine: str | Engine | None) -> str:
    """The KV cache's width when none is given, the one rule (every memory estimate of inference asks it):
    what the engine's default, kv_cache_dtype "auto", stores beside weights of `precision`: fp8 beside fp8
    weights where the engine's FP8 checkpoints state an fp8 KV cache (Engine.fp8_weights_kv, with its
    source), else the 16-bit activation width (fp32 for fp32 weights; int8 and int4 weights compute in 16-bit)."""
    if precision == "fp8" and engine_named(engine).fp8_weights_kv == "fp8":
        return "fp8"
    return "fp32" if precision == "fp32" else ("fp16" if precision == "fp16" else "bf16")


def kv_note(precision: str, engine: str | Engine | None) -> Note | None:
    """The assumption beside fp8 weights, where engines differ: the KV cache's width and why (None for other
    weights, whose KV cache is 16-bit under every engine). `why` is the engine's own source (catalog/engines.py)."""
    if precision != "fp8":
        return None
    e = engine_named(engine)
    return note("kv-cache-dtype", e.paper,
                kv_precision=default_kv_precision(precision, e), precision=precision, engine=e.name, why=e.kv_source)


def kv_bytes_per_token_per_gpu(model: ModelSpec, kv_precision: str, tensor_parallel: int) -> int:
    """KV cache of one token, all layers, on one tensor-parallel rank: L × 2·(kv ÷ t)·d × bytes
    (kv heads at least one per rank; MLA's latent kept whole on every rank) (catalog/shapes.py)."""
    per_layer = kv_values_per_token_per_layer(model, kv_heads_per_gpu(model, tensor_parallel))
    return math.ceil(model.layers * per_layer * bytes_per_element(kv_precision))


def replica(model: ModelSpec, gpu: GPUSpec, *, tensor_parallel: int = 1, precision: str = "bf16",
            engine: str | Engine | None = None, kv_precision: str | None = None,
            node_gpus: int = NODE_GPUS) -> Replica:
    """The memory side of one replica: weights, workspace and KV pool per GPU, under the engine's rule
    (engine None: the default engine, catalog/engines.engine).
    `node_gpus`: GPUs per node of the resource it runs on (tensor parallelism beyond crosses the network)."""
    require_architecture(model, "the inference speed model")
    check_choice(precision, INFERENCE_PRECISIONS, "precision")
    kv_precision = kv_precision or default_kv_precision(precision, engine)
    check_choice(kv_precision, KV_PRECISIONS, "kv_precision")
    if tensor_parallel < 1:
        raise ValueError(f"tensor_parallel must be positive, got {tensor_parallel}")
    e = engine_named(engine)
    t = tensor_parallel
    notes: list[Note] = []
    weights = math.ceil(weight_bytes(model, precision) / t)
    activations = inference_activation_bytes(
        model, InferenceSetup(context=e.prefill_chunk, batch=1, precision=precision,
                              kv_precision=kv_precision, tensor_parallel=t, prefill_tokens=e.prefill_chunk,
                              engine=e.id))
    workspace = activations + CUDA_CONTEXT_BYTES
    device = gpu.usable_memory_bytes
    fraction = engine_memory_fraction(e, t, gpu.usable_memory_bytes)
    if e.fraction_of == "device":
        # The CUDA context sits beside the budget; SGLang's budget is of the memory free once it exists and
        # holds weights and pool only; vLLM's is of the device and holds the workspace too (catalog/engines.py).
        budget = fraction * (device - CUDA_CONTEXT_BYTES if e.budget_after_context else device)
        pool = budget - weights - (activations if e.workspace_in_budget else 0)
        notes.append(note("engine-budget-device", e.paper, engine=e.name, fraction=fraction, device_bytes=device,
                          why=e.memory_source))
    elif e.fraction_of == "free":
        pool = fraction * (device - weights - workspace)
        notes.append(note("engine-budget-free", e.paper, engine=e.name, fraction=fraction, why=e.memory_source))
    else:
        pool = device / (1 + ALLOCATOR_RESERVE) - weights - workspace
        notes.append(note("engine-allocates", e.paper, engine=e.name, reserve=ALLOCATOR_RESERVE))
    if pool <= 0:
        need = weights + workspace
        # The least degree whose share leaves room, raised to a divisor of the heads (the degrees the
        # planner tries: planning/search._counts, as vLLM requires).
        least = math.ceil(t * need / (fraction * device))
        least = next((n for n in range(least, model.heads + 1) if model.heads % n == 0), least)
        raise InferenceError(
            f"{model.id} at {precision} on {t} × {gpu.id}: weights {weights / 1e9:.2f} GB + workspace "
            f"{workspace / 1e9:.2f} GB per GPU leave no room for a KV cache under {e.name}'s memory rule; "
            f"use more tensor-parallel GPUs (at least {least}), a smaller precision or a larger GPU")
    compute_precision = "fp8" if precision in EIGHT_BIT_COMPUTE and gpu.peak_fp8_flops else "16-bit"
    if compute_precision == "fp8":
        peak, cf = gpu.peak_fp8_flops, e.compute_fraction_8bit
    else:
        peak, cf = gpu.peak_16bit_flops, e.compute_fraction_16bit
        if precision in ("fp8", "int8", "int4"):
            notes.append(note("weights-dequantized", precision=precision, gpu=gpu.id))
    return Replica(model=model, gpu=gpu, tensor_parallel=t, precision=precision, kv_precision=kv_precision,
                   engine=e, weights_bytes=weights, workspace_bytes=workspace, kv_pool_bytes=int(pool),
                   kv_bytes_per_token=kv_bytes_per_token_per_gpu(model, kv_precision, t),
                   peak_flops=peak, compute_fraction=cf, compute_precision=compute_precision,
                   notes=tuple(notes), node_gpus=node_gpus)


# --------------------------------------------------------------------------
# Prefill and decode.
# --------------------------------------------------------------------------


def attention_width(model: ModelSpec) -> Fraction | int:
    """a·d of the attention products QKᵀ and AV (MLA: the mean of the query-key and value widths)."""
    return model.heads * attention_head_size(model)


def causal_key_pairs(model: ModelSpec, tokens: int) -> float:
    """Query-key pairs causal attention computes over a prompt, all layers: L·s²/2 (the lower triangle);
    a sliding-window layer of window w < s: w·s − w²/2."""
    s = tokens
    n = model.sliding_window_layers if model.sliding_window is not None else 0
    w = min(model.sliding_window or s, s)
    return (model.layers - n) * s * s / 2 + n * (w * s - w * w / 2)


def prefill_flops_per_sequence(model: ModelSpec, tokens: int) -> float:
    """Forward FLOPs of a prompt of `tokens`: 2·P_matmul·s + causal attention (prefill_attention_flops)."""
    return 2 * matmul_params(model) * tokens + prefill_attention_flops(model, tokens)


def prefill_attention_flops(model: ModelSpec, tokens: int) -> float:
    """Causal attention of a prompt of `tokens`: 4·a·d per query-key pair (QKᵀ and AV), 2·L·s²·a·d over the lower
    triangle of the s × s scores (causal_key_pairs)."""
    return 4 * causal_key_pairs(model, tokens) * attention_width(model)


def decode_flops_per_token(model: ModelSpec, context: int) -> float:
    """Forward FLOPs of one generated token at `context` cached tokens: 2·P_matmul + 4·L·c·a·d
    (windowed layers: the window's tokens, weights.kv_layer_tokens)."""
    return 2 * matmul_params(model) + 4 * kv_layer_tokens(model, context) * attention_width(model)


def _check_speed(rep: Replica) -> None:
    if not rep.engine.speed_modelled:
        raise InferenceError(
            f"{rep.engine.name}: its speed is not modelled ({rep.engine.calibration}); measure a pilot run and "
            "give its log (pilot:, with tokens and context), or plan the job under vllm, sglang or trt-llm")


def prefill(rep: Replica, input_tokens: int, batch: int = 1) -> Prefill:
    """The forward pass over `batch` prompts of `input_tokens`: compute bound, per GPU ÷ t."""
    _check_speed(rep)
    _check_context(rep, input_tokens)
    flops = batch * prefill_flops_per_sequence(rep.model, input_tokens) / rep.tensor_parallel
    compute = flops / rep.achieved_flops
    if rep.compute_precision == "fp8" and rep.engine.context_attention_16bit:
        # The attention products on 16-bit tensor cores (an fp16 context FMHA beside fp8 GEMMs: Engine).
        attention = batch * prefill_attention_flops(rep.model, input_tokens) / rep.tensor_parallel
        compute += attention / (rep.engine.compute_fraction_16bit * rep.gpu.peak_16bit_flops) \
            - attention / rep.achieved_flops
    # The pass reads every weight its tokens touch once, as a decode step does (weights_read).
    read = weights_read(rep, batch * input_tokens) / rep.achieved_bandwidth
    allreduce = rep.allreduce_seconds(batch * input_tokens)
    # Every pass launches each layer's kernels once, whatever it carries (engines.TRT_PREFILL_LAYER_SECONDS).
    launch = rep.model.layers * rep.engine.prefill_layer_seconds
    # Tokens beyond the engine's prefill chunk run in further passes (chunked prefill, as batch_job packs
    # prompts and serving.ride counts a prompt's passes): each reads the weights and pays its launches.
    passes = math.ceil(batch * input_tokens / rep.engine.prefill_chunk)
    return Prefill(tokens=input_tokens, batch=batch, flops=flops,
                   seconds=max(compute, passes * read) + allreduce + passes * launch,
                   compute_seconds=compute + allreduce, read_seconds=read, launch_seconds=launch, passes=passes,
                   allreduce_seconds=allreduce)


def decode_step(rep: Replica, batch: int, context: int) -> Step:
    """One decode iteration: `batch` sequences holding `context` tokens each generate one token.
    Per GPU, each operator on its own roofline (see Step)."""
    return decode_steps(rep, context)(batch)


def decode_steps(rep: Replica, context: int):
    """decode_step at `context` as a function of the batch, what does not depend on the batch worked out
    once (a service's search tries many batches on one replica). The same numbers as decode_step."""
    _check_speed(rep)
    m, t = rep.model, rep.tensor_parallel
    per_sequence = rep.kv_bytes_per_sequence(context)
    twice_matmul = 2 * matmul_params(m)
    keys = 4 * kv_layer_tokens(m, context)         # 4·a·d FLOPs per cached key (QKᵀ and AV), × width below
    width = attention_width(m)
    bandwidth, flops = rep.achieved_bandwidth, rep.achieved_flops

    def at(batch: int) -> Step:
        if batch < 1:
            raise ValueError(f"batch must be positive, got {batch}")
        kv_bytes = batch * per_sequence
        linear_flops = twice_matmul * batch / t
        attention_flops = batch * keys * width / t
        weights = weights_read(rep, batch)
        linear_memory = weights / bandwidth
        linear_compute = linear_flops / flops
        linear = max(linear_memory, linear_compute)
        attention = max(kv_bytes / bandwidth, attention_flops / flops)
        return Step(batch=batch, context=context, bytes_read=weights + kv_bytes,
                    flops=linear_flops + attention_flops, linear_seconds=linear, attention_seconds=attention,
                    seconds=linear + attention + rep.allreduce_seconds(batch) + rep.engine.decode_step_seconds,
                    bound="memory" if linear_memory >= linear_compute else "compute",
                    weights_bytes_read=weights, kv_bytes_read=kv_bytes)
    return at


def experts_touched(model: ModelSpec, tokens: int) -> float:
    """Routed experts of one MoE layer that `tokens` tokens visit, expected under uniform routing:
    E·(1 − (1 − k/E)^n) (each token picks k of E; an expert is missed by all n with probability
    (1 − k/E)^n). Uniform routing touches the most experts, so skewed routing reads fewer bytes."""
    e, k = model.experts, model.experts_per_token
    return e * (1 - (1 - k / e) ** tokens)


def weights_read(rep: Replica, tokens: int) -> int:
    """Weight bytes per GPU a forward pass over `tokens` tokens reads: all of them, except the routed
    experts no token visits (mixture of experts at small batch: experts_touched ÷ experts of the
    expert weights, their share taken as their share of the parameters)."""
    m = rep.model
    if not is_moe(m):
        return rep.weights_bytes
    untouched = 1 - experts_touched(m, tokens) / m.experts
    return math.ceil(rep.weights_bytes * (1 - untouched * expert_params(m) / m.params))


def _check_context(rep: Replica, tokens: int) -> None:
    if tokens < 1:
        raise ValueError(f"token counts must be positive, got {tokens}")
    most = rep.model.max_context
    if most is not None and tokens > most:
        raise InferenceError(f"{tokens:,} tokens per sequence exceed {rep.model.id}'s maximum context "
                             f"of {most:,}", achievable=most)


def concurrency_limit(rep: Replica, input_tokens: int, output_tokens: int) -> int:
    """The most sequences of input + output tokens one replica runs at once (its KV pool and the
    engine's cap); an InferenceError, with the pool's tokens achievable, where not even one fits."""
    _check_context(rep, input_tokens + output_tokens)
    most = rep.max_concurrency(input_tokens, output_tokens)
    if most < 1:
        raise InferenceError(
            f"one sequence of {input_tokens + output_tokens:,} tokens needs "
            f"{rep.kv_bytes_per_sequence(input_tokens + output_tokens) / 1e9:.2f} GB of KV cache per GPU; "
            f"{rep.engine.name} leaves {rep.kv_pool_bytes / 1e9:.2f} GB on {rep.tensor_parallel} × {rep.gpu.id} "
            f"({rep.kv_tokens:,} tokens): use more tensor-parallel GPUs or a larger GPU",
            achievable=rep.kv_tokens)
    return most


def mean_context(input_tokens: int, output_tokens: int) -> int:
    """Tokens the average sequence holds while decoding: input + output/2 (rounded up)."""
    return input_tokens + (output_tokens + 1) // 2
