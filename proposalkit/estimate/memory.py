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

Beside this module: breakdown.py (the components, the three measured
statistics, and the CUDA context and allocator reserve with their sources),
shapes.py (parameter counts), precision.py (bytes per value and optimizer
state), lora.py (adapters), activations.py (Korthikanti's terms),
cross_checks.py (rules of thumb).

Sources, cited where used:
- Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training
  Trillion Parameter Models", §3.1 (model states) and §5 / Figure 1 (stages).
- Hu et al. 2021, "LoRA"; Dettmers et al. 2023, "QLoRA", §3 (NF4, blocksize
  64, double quantization); Dettmers et al. 2022, "8-bit Optimizers via
  Block-wise Quantization" §2.1 (block size 2048).
- Frantar et al. 2023 (GPTQ) and Lin et al. 2024 (AWQ): int4 weights with
  group-wise scales, default group size 128.
- Kwon et al. 2023, "Efficient Memory Management for LLM Serving with
  PagedAttention" (vLLM): KV cache 2·L·kv·d bytes-per-element per token.
- Implementation facts, cited where used: PEFT (adapter dtype), artidoro/qlora
  (QLoRA settings), torchtune docs (pure bf16 training), PyTorch FSDP notes
  (prefetching), vLLM engine arguments (gpu_memory_utilization).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .activations import DEFAULT_PREFILL_TOKENS, inference_activation_bytes, training_activation_bytes
from .arith import ceil, check_positive, exact, fmt_bytes_per_param, memo
from .breakdown import (  # noqa: F401  (re-exported: the memory API)
    ALLOCATOR_RESERVE, CUDA_CONTEXT_BYTES, DEFAULT_OVERHEAD, MemoryBreakdown, Overhead, overhead_bytes, overhead_note,
)
from .lora import LoraSpec, default_lora, lora_trainable_params
from .loss import DEFAULT_LOSS, LOSSES
from .precision import (
    ADAPTER_PRECISIONS, FP32_BYTES, INFERENCE_PRECISIONS, KV_PRECISIONS, NF4_BITS, OPTIMIZERS,
    TRAINING_METHODS, TRAINING_PRECISIONS, check_choice, optimizer_state_bytes, quantized_weight_bits,
)
from .shapes import (
    ModelSpec, embedding_params, expert_params, is_mla, kv_values_per_token_per_layer, layer_params,
    linear_weight_params, lm_head_params, mlp_params_per_expert, moe_layer_count, moe_layer_params,
    parameter_count, require_architecture,
)
from ..units import bytes_per_element

# vLLM preallocates gpu_memory_utilization = 0.9 of the device by default
# (vLLM engine arguments), i.e. it leaves 10% of the GPU outside its pool.
VLLM_GPU_MEMORY_UTILIZATION = Fraction(9, 10)


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
    expert_parallel: int = 1     # GPUs of the data-parallel group over which the routed experts are split
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
    loss: str = DEFAULT_LOSS     # standard | chunked | fused (estimate/loss.py)


@dataclass(frozen=True)
class InferenceSetup:
    context: int                 # tokens per sequence (prompt + generated)
    batch: int = 1               # concurrent sequences
    precision: str = "bf16"      # fp32 | bf16 | fp16 | fp8 | int8 | int4
    kv_precision: str = "bf16"
    tensor_parallel: int = 1
    prefill_tokens: int | None = None   # tokens per forward pass; None: DEFAULT_PREFILL_TOKENS


# --------------------------------------------------------------------------
# Weights and KV cache.
# --------------------------------------------------------------------------


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


def kv_heads_per_gpu(model: ModelSpec, tensor_parallel: int) -> Fraction:
    """KV heads each tensor-parallel rank holds: kv / t, at least 1.

    When t exceeds the KV heads, vLLM replicates them so each rank keeps one
    (vLLM attention layers: num_kv_heads = max(1, total_kv_heads // tp_size)).
    """
    return max(exact(model.kv_head_count, tensor_parallel), 1)


# --------------------------------------------------------------------------
# Training.
# --------------------------------------------------------------------------


def _validate_training(model: ModelSpec, setup: TrainingSetup) -> None:
    # The common case (valid choices, positive int counts) in one test; else each check in turn, so
    # the first problem is the one raised.
    if not (setup.method in TRAINING_METHODS and setup.precision in TRAINING_PRECISIONS
            and setup.optimizer in OPTIMIZERS
            and all(type(v) is int and v > 0 for v in (setup.seq_len, setup.micro_batch, setup.data_parallel,
                                                        setup.tensor_parallel, setup.pipeline_parallel,
                                                        setup.expert_parallel))):
        check_choice(setup.method, TRAINING_METHODS, "method")
        check_choice(setup.precision, TRAINING_PRECISIONS, "precision")
        check_choice(setup.optimizer, OPTIMIZERS, "optimizer")
        for name in ("seq_len", "micro_batch", "data_parallel", "tensor_parallel", "pipeline_parallel",
                     "expert_parallel"):
            check_positive(getattr(setup, name), name)
    if setup.expert_parallel > 1 and (setup.data_parallel % setup.expert_parallel or model.experts % setup.expert_parallel):
        raise ValueError(f"expert_parallel: expected a divisor of the data-parallel GPUs ({setup.data_parallel}) "
                         f"and of the experts ({model.experts}), got {setup.expert_parallel}")
    check_choice(setup.loss, LOSSES, "loss")
    if setup.zero_stage not in (0, 1, 2, 3):
        raise ValueError(f"zero_stage: expected 0, 1, 2 or 3, got {setup.zero_stage!r}")
    if setup.lora is not None:
        check_positive(setup.lora.rank, "lora.rank")
        check_choice(setup.lora.adapter_precision, ADAPTER_PRECISIONS, "lora.adapter_precision")


@memo
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
    Activations: training_activation_bytes(). Overhead: allocator_reserve ×
    the other components, plus the CUDA context (breakdown.py).
    """
    _validate_training(model, setup)
    t, p, n, stage = setup.tensor_parallel, setup.pipeline_parallel, setup.data_parallel, setup.zero_stage
    model_split = exact(1, t * p)
    weight_shard = exact(1, n) if stage >= 3 else 1
    grad_shard = exact(1, n) if stage >= 2 else 1
    opt_shard = exact(1, n) if stage >= 1 else 1
    mixed = setup.precision != "fp32" and setup.master_weights
    pure_16bit = setup.precision != "fp32" and not setup.master_weights
    notes: list[str] = []

    if setup.method == "full":
        per_param_weight, per_param_grad, per_param_opt, note = _full_model_states(
            setup.precision, setup.optimizer, mixed, pure_16bit)
        weights = _params_per_gpu(model, setup, stage >= 3) * per_param_weight
        gradients = _params_per_gpu(model, setup, stage >= 2) * per_param_grad
        optimizer = _params_per_gpu(model, setup, stage >= 1) * per_param_opt
        notes.append(note)
    else:
        lora = setup.lora or default_lora(model)
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
            base = model.params * bytes_per_element(setup.precision)
            notes.append(f"base weights frozen at {setup.precision}: no gradients or optimizer states for them (Hu et al. 2021)")
        if model.has_architecture:
            adapters = lora_trainable_params(model, lora)
        else:
            adapters = 0
            notes.append("LoRA adapters not counted: the model gives only a parameter count (adapters are usually < 1% of it)")
        adapter_bytes = bytes_per_element(lora.adapter_precision)
        adapter_moment = bytes_per_element(lora.adapter_precision) if pure_16bit else FP32_BYTES
        adapter_opt = optimizer_state_bytes(setup.optimizer, moment_bytes=adapter_moment)
        if setup.expert_parallel > 1:
            # the routed experts' frozen weights are split over the expert-parallel GPUs
            expert_bytes = expert_params(model) * (NF4_BITS / 8 if setup.method == "qlora"
                                                   else bytes_per_element(setup.precision))
            base -= expert_bytes * (1 - exact(1, setup.expert_parallel))
        adapter_params = adapters * model_split
        weights = (base * model_split + adapter_params * adapter_bytes) * weight_shard
        gradients = adapter_params * adapter_bytes * grad_shard
        optimizer = adapter_params * adapter_opt * opt_shard
        if adapters:
            notes.append(
                f"LoRA adapters: {adapters:,} trainable parameters, {lora.adapter_precision} weights and gradients "
                f"+ {fmt_bytes_per_param(adapter_opt)} bytes of "
                f"{lora.adapter_precision if pure_16bit else 'fp32'} {setup.optimizer} states = "
                f"{fmt_bytes_per_param(2 * adapter_bytes + adapter_opt)} bytes/parameter"
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
    if setup.expert_parallel > 1:
        notes.append(
            f"expert parallel {setup.expert_parallel}: the routed experts ({expert_params(model):,} of "
            f"{model.params:,} parameters) are split over {setup.expert_parallel} GPUs of the data-parallel group, "
            f"their weights, gradients and optimizer states ÷ {setup.expert_parallel}"
            + (f"; ZeRO shards them over the {n // setup.expert_parallel} GPUs that hold the same experts"
               if stage and n > setup.expert_parallel else "")
            + " (Megatron-Core MoE expert parallelism)"
        )
    if t * p > 1:
        notes.append(
            f"tensor parallel {t} × pipeline parallel {p} divide the model states first "
            "(evenly: embeddings and LM head on the first/last stage are not placed apart)"
        )

    activations, activation_notes = training_activation_bytes(model, setup)
    notes.extend(activation_notes)

    parts = [ceil(weights), ceil(gradients), ceil(optimizer), activations, 0]
    notes.append(overhead_note(overhead))
    return MemoryBreakdown(*parts, *overhead_bytes(sum(parts), overhead), notes=tuple(notes))


@memo
def _full_model_states(precision: str, optimizer: str, mixed: bool, pure_16bit: bool) -> tuple:
    """Bytes per parameter of full training's weights, gradients and optimizer states, and their note."""
    per_param_weight = bytes_per_element(precision)
    per_param_grad = bytes_per_element(precision)
    per_param_opt = (FP32_BYTES if mixed else 0) + optimizer_state_bytes(
        optimizer, moment_bytes=bytes_per_element(precision) if pure_16bit else FP32_BYTES,
    )
    total_per_param = per_param_weight + per_param_grad + per_param_opt
    note = (
        f"model states: {fmt_bytes_per_param(per_param_weight)} (weights) + "
        f"{fmt_bytes_per_param(per_param_grad)} (gradients) + "
        f"{fmt_bytes_per_param(per_param_opt)} ({optimizer} states"
        f"{', fp32 master copy included' if mixed else ''}"
        f"{', pure 16-bit: moments in ' + precision + ', no master copy' if pure_16bit else ''}) = "
        f"{fmt_bytes_per_param(total_per_param)} bytes/parameter (Rajbhandari et al. 2020 §3.1)"
    )
    return per_param_weight, per_param_grad, per_param_opt, note


def _params_per_gpu(model: ModelSpec, setup: TrainingSetup, zero_sharded: bool) -> Fraction:
    """Parameters whose state one GPU holds: P/(t·p), ÷ N when ZeRO shards that state.

    With expert parallelism k the routed experts (P_e) are split over k GPUs
    of the data-parallel group, and ZeRO shards them over the N/k GPUs that
    hold the same experts (Megatron-Core's expert-data-parallel group):
    (P - P_e)/(t·p)·(1/N) + P_e/(t·p·k)·(k/N) when sharded, so under ZeRO-3
    expert parallelism moves the experts rather than shrinking them.
    """
    t_p, n, k = setup.tensor_parallel * setup.pipeline_parallel, setup.data_parallel, setup.expert_parallel
    if zero_sharded:   # (P - P_e)/(t·p·N) + P_e/(t·p·N): one division, in integers when whole
        return exact(model.params, t_p * n)
    experts = expert_params(model) if k > 1 else 0
    return exact((model.params - experts) * k + experts, t_p * k)


def zero3_gathered_bytes(model: ModelSpec, setup: TrainingSetup) -> tuple[Fraction, Fraction]:
    """Transient (weights, gradients) bytes of ZeRO-3 / FSDP full sharding, per GPU.

    Sharded parameters are all-gathered one unit at a time (a transformer
    layer when each block is wrapped; the embeddings and the LM head are units
    of their own), and the next unit's all-gather is issued while the current
    one is in use, so two units are live (PyTorch FSDP notes, "FSDP Prefetch
    Nuances"; DeepSpeed ZeRO-3 prefetches likewise). In the backward the
    unit's full gradient exists before its reduce-scatter. Zero unless stage
    3 over more than one GPU and the architecture is known. Tensor
    parallelism divides a unit by t; expert parallelism k leaves a rank
    only experts/k of an MoE layer to gather.
    """
    if setup.zero_stage < 3 or setup.data_parallel < 2 or not model.has_architecture:
        return 0, 0
    wb = bytes_per_element(setup.precision)
    layer = layer_params(model)
    # Expert parallelism: a rank gathers only its own experts of an MoE layer, experts/ep of them.
    elsewhere = 0
    if setup.expert_parallel > 1 and moe_layer_count(model) and layer == moe_layer_params(model):
        elsewhere = model.experts * mlp_params_per_expert(model) * (1 - exact(1, setup.expert_parallel))
    layer -= elsewhere
    if setup.method == "qlora":
        linear = linear_weight_params(model) // model.layers - elsewhere
        layer_bytes = linear * NF4_BITS / 8 + (layer - linear) * wb
    else:
        layer_bytes = layer * wb
    embedding = embedding_params(model)
    head = lm_head_params(model)
    unit_bytes = max(layer_bytes, embedding * wb, head * wb) / setup.tensor_parallel
    unit_params = max(layer, embedding, head) / Fraction(setup.tensor_parallel)
    gathered_weights = 2 * unit_bytes
    gathered_grads = unit_params * wb if setup.method == "full" else 0
    return gathered_weights, gathered_grads


# --------------------------------------------------------------------------
# Inference.
# --------------------------------------------------------------------------


@memo
def inference_memory(model: ModelSpec, setup: InferenceSetup, overhead: Overhead = DEFAULT_OVERHEAD) -> MemoryBreakdown:
    """Memory per GPU of serving `batch` sequences of `context` tokens.

    weights = weight_bytes(precision) / t (fp32 4, bf16/fp16 2, fp8/int8 1,
    int4 4.25/8 bytes per block-matrix parameter; embeddings and head 16-bit
    when quantized). KV cache = 2 · L · kv · d · bytes · context · batch
    (Kwon et al. 2023), kv heads divided by t (at least one per GPU).
    Activations: inference_activation_bytes(). Overhead: allocator_reserve ×
    the rest, plus the CUDA context (breakdown.py).
    """
    check_choice(setup.precision, INFERENCE_PRECISIONS, "precision")
    check_choice(setup.kv_precision, KV_PRECISIONS, "kv_precision")
    for name in ("context", "batch", "tensor_parallel"):
        check_positive(getattr(setup, name), name)
    if setup.prefill_tokens is not None:
        check_positive(setup.prefill_tokens, "prefill_tokens")
    t = setup.tensor_parallel
    notes: list[str] = []

    weights = weight_bytes(model, setup.precision) / t
    # A quantized checkpoint's own layout is stated with the model's assumptions (input/configs/quantization.py).
    own = model.weight_format is not None and model.weight_format.precision == setup.precision
    if setup.precision == "int4" and not own:
        notes.append("int4 weights: 4 bits + fp16 scale and zero per group of 128 = 4.25 bits/param (GPTQ/AWQ default group size)")
    elif setup.precision in ("int8", "fp8") and not own:
        notes.append(f"{setup.precision} weights: 1 byte/param; per-channel/per-tensor scales not counted (< 0.01 bit/param)")
    if setup.precision in ("int4", "int8", "fp8"):
        notes.append(
            "embeddings, LM head and norms kept at 16 bits" if model.has_architecture
            else "all parameters counted at the quantized width (the model gives only a parameter count)"
        )

    if model.has_architecture:
        per_token = model.layers * kv_values_per_token_per_layer(model, kv_heads_per_gpu(model, t))
        kv_cache = per_token * bytes_per_element(setup.kv_precision) * setup.context * setup.batch
        if is_mla(model):
            notes.append(
                f"KV cache: multi-head latent attention caches the latent, ({model.kv_lora_rank} + "
                f"{model.qk_rope_head_dim} rotary) values × {model.layers} layers × "
                f"{fmt_bytes_per_param(bytes_per_element(setup.kv_precision))} bytes × {setup.context:,} tokens × "
                f"{setup.batch} sequences, shared by all heads"
                + (f", whole on each of the {t} GPUs" if t > 1 else "") + " (DeepSeek-V2 §2.1.2)"
            )
        else:
            notes.append(
                f"KV cache: 2 × {model.layers} layers × {model.kv_head_count} kv heads × {model.head_size} × "
                f"{fmt_bytes_per_param(bytes_per_element(setup.kv_precision))} bytes × {setup.context:,} tokens × {setup.batch} sequences"
                + (f" ÷ {t} GPUs" if t > 1 else "") + " (Kwon et al. 2023)"
            )
        if t > model.kv_head_count and not is_mla(model):
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
    parts = [ceil(weights), 0, 0, activations, ceil(kv_cache)]
    notes.append(overhead_note(overhead))
    return MemoryBreakdown(*parts, *overhead_bytes(sum(parts), overhead), notes=tuple(notes))
