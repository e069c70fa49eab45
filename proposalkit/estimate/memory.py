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

Beside this module: setups.py (TrainingSetup, InferenceSetup), weights.py
(weights and KV cache), breakdown.py (the components, the three measured
statistics, and the CUDA context and allocator reserve with their sources),
catalog/shapes.py (parameter counts), ../precision.py (bytes per value and
optimizer state), lora.py (adapters), activations.py (Korthikanti's terms),
cross_checks.py (rules of thumb).

Sources, cited where used:
- Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training
  Trillion Parameter Models", §3.1 (model states) and §5 / Figure 1 (stages).
- Hu et al. 2021, "LoRA"; Dettmers et al. 2023, "QLoRA", §3 (NF4, blocksize
  64, double quantization); Dettmers et al. 2022, "8-bit Optimizers via
  Block-wise Quantization" §2.1 (bitsandbytes' block size 256 since 0.44.0).
- Frantar et al. 2023 (GPTQ) and Lin et al. 2024 (AWQ): int4 weights with
  group-wise scales, default group size 128.
- Kwon et al. 2023, "Efficient Memory Management for LLM Serving with
  PagedAttention" (vLLM): KV cache 2·L·kv·d bytes-per-element per token.
- Implementation facts, cited where used: PEFT (adapter dtype), artidoro/qlora
  (QLoRA settings), torchtune docs (pure bf16 training), PyTorch FSDP notes
  (prefetching), vLLM engine arguments (gpu_memory_utilization).
"""

from __future__ import annotations

import dataclasses

from .activations import training_activations
from .workspace import DEFAULT_PREFILL_TOKENS, inference_activation_bytes
from .prompt_logits import prompt_logits_note
from .arith import ceil, check_positive, fmt_bytes_per_param, memo
from .breakdown import (  # noqa: F401  (re-exported: the memory API)
    ALLOCATOR_RESERVE, CUDA_CONTEXT_BYTES, DEFAULT_OVERHEAD, MemoryBreakdown, Overhead, PeakPhases, cached_bytes,
    overhead_bytes, OVERHEAD, overhead_note,
)
from .checkpointing import SELECTIVE_POLICIES
from .phases import (
    gradients_persist, head_accumulation_bytes, head_accumulation_note, head_gradient_bytes, phase_note, step_note, step_temporary_bytes, tied_embedding_temporary,
    tied_note,
)
from .model_states import (  # noqa: F401  (re-exported: the memory API)
    OPTIMIZER_IMPLS, model_states, worst_stage_fraction, zero3_gathered_bytes,
)
from ..catalog.engines import engine as engine_named
from ..options import (
    ADAPTER_PRECISIONS, INFERENCE_PRECISIONS, KV_PRECISIONS, LOSSES, OPTIMIZERS, TRAINING_METHODS, TRAINING_PRECISIONS,
)
from ..precision import INT4_BITS, INT4_GROUP, check_choice
from .setups import InferenceSetup, TrainingSetup  # noqa: F401  (re-exported: the memory API)
from ..catalog.shapes import ModelSpec, expert_params, is_mla, kv_values_per_token_per_layer
from .weights import (  # noqa: F401  (re-exported: the memory API)
    kv_cache_bytes_per_token, kv_heads_per_gpu, kv_layer_tokens, weight_bytes,
)
from ..notes import Note, note
from ..units import bytes_per_element

# The kinds of the notes inference_memory() writes about a batch-sized allocation (render/notes.py words
# them); under a pre-allocating engine the reservation's own notes replace these (reservation.py).
KV_CACHE = "kv-cache"
KV_CACHE_MLA = "kv-cache-mla"
ACTIVATIONS_EAGER = "inference-activations-eager"
ACTIVATIONS_WHOLE_PROMPT = "inference-activations-whole-prompt"
ACTIVATIONS_CHUNKED = "inference-activations-chunked"
ENGINE_RESERVE = "engine-reserve"
BATCH_SIZED_KINDS = (KV_CACHE, KV_CACHE_MLA, ACTIVATIONS_EAGER, ACTIVATIONS_WHOLE_PROMPT, ACTIVATIONS_CHUNKED,
                     ENGINE_RESERVE, OVERHEAD)



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
    check_choice(setup.selective_policy, SELECTIVE_POLICIES, "selective_policy")
    if setup.activation_checkpointing not in (False, True, "selective"):
        raise ValueError(f"activation_checkpointing: expected false, true or 'selective', got "
                         f"{setup.activation_checkpointing!r}")
    check_positive(setup.context_parallel, "context_parallel")
    if setup.seq_len % setup.context_parallel:
        raise ValueError(f"context_parallel: expected a divisor of seq_len ({setup.seq_len}), "
                         f"got {setup.context_parallel}")
    if setup.zero_stage not in (0, 1, 2, 3):
        raise ValueError(f"zero_stage: expected 0, 1, 2 or 3, got {setup.zero_stage!r}")
    check_choice(setup.optimizer_impl, OPTIMIZER_IMPLS, "optimizer_impl")
    if setup.offload_params and setup.zero_stage != 3:
        raise ValueError(f"offload.params: the parameters are offloaded only with full sharding (zero_stage 3), "
                         f"got zero_stage {setup.zero_stage}")
    if setup.optimizer_impl == "fp32-gradient-buffer" and setup.zero_stage >= 2:
        # stage 1 only with DeepSpeed's data_types.grad_accum_dtype fp32 (runtime/engine.py); frameworks.py applies it at 0
        raise ValueError("optimizer_impl: DeepSpeed's BF16_Optimizer runs at ZeRO stage 0 or 1 "
                         f"(got zero_stage {setup.zero_stage})")
    if setup.lora is not None:
        check_positive(setup.lora.rank, "lora.rank")
        check_choice(setup.lora.adapter_precision, ADAPTER_PRECISIONS, "lora.adapter_precision")


@memo
def training_memory(model: ModelSpec, setup: TrainingSetup, overhead: Overhead = DEFAULT_OVERHEAD) -> MemoryBreakdown:
    """Memory per GPU of a training step.

    Full training (Rajbhandari et al. 2020 §3.1), bytes per parameter:
      mixed precision (bf16/fp16) AdamW: weights 2 + gradients 2 + optimizer 12
      (fp32 master 4, m 4, v 4) = 16; adamw-8bit: optimizer 4 + 2·(1 + 4/256);
      SGD with momentum: optimizer 4 + 4. fp32 training: weights 4 + gradients 4
      + optimizer 8 (AdamW), 2·(1 + 4/256) (8-bit) or 4 (SGD); no master copy.
      Pure 16-bit (mixed_precision=False, torchtune): 2 + 2 + 4 (AdamW moments
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
    Activations: training_activations(). Gradients freed between steps (phases.py):
    the larger of the loss phase and the backward phase. Overhead: allocator_reserve ×
    the other components, plus the CUDA context (breakdown.py); under CPU offload the pool's further
    growth where memory is free is cached_bytes, outside the total.
    """
    _validate_training(model, setup)
    t, p, n, stage = setup.tensor_parallel, setup.pipeline_parallel, setup.data_parallel, setup.zero_stage
    states = model_states(model, setup)
    notes: list[Note] = list(states.notes)
    if stage and n > 1:
        notes.append(note("zero-shards", ("rajbhandari-2020",), zero_stage=stage, gpus=n))
    if setup.expert_parallel > 1:
        ep = setup.expert_parallel
        zero_gpus = n // ep if stage and n > ep else None     # ZeRO shards the experts over these
        notes.append(note("expert-parallel-states", ("rajbhandari-2020",) if zero_gpus else (), expert_parallel=ep,
                          expert_params=expert_params(model), params=model.params, zero_gpus=zero_gpus))
    if t * p > 1:
        fullest = float(worst_stage_fraction(model, p)) if p > 1 and model.has_architecture else None
        notes.append(note("model-parallel-states", tensor_parallel=t, pipeline_parallel=p, layers=model.layers,
                          fullest_stage_fraction=fullest))

    acts = training_activations(model, setup)
    notes.extend(acts.notes)

    weights, gradients, optimizer = ceil(states.weights), ceil(states.gradients), ceil(states.optimizer)
    parts = [weights, gradients, optimizer, acts.total, 0]
    phases = None
    # The optimizer step (phases.py): activations freed, a foreach AdamW's temporary beside the model states.
    temporary = ceil(step_temporary_bytes(setup, states.moments))
    at_step = weights + gradients + optimizer + temporary
    # The chunked loss's output projection adding its chunks' weight gradients (phases.py): three v × h gradients.
    head = ceil(head_accumulation_bytes(model, setup))
    if gradients_persist(model, setup) is None:
        # Gradients freed between steps (phases.py): the largest of the loss, backward and step moments.
        live = min(gradients, ceil(head_gradient_bytes(model, setup)))
        at_loss = weights + optimizer + live + acts.at_loss
        loss_parts = [weights, live, optimizer, acts.at_loss, 0]
        if head and (at_head := weights + optimizer + head + acts.at_head) > at_loss:
            at_loss, loss_parts = at_head, [weights, head, optimizer, acts.at_head, 0]
        at_backward = weights + optimizer + gradients + acts.at_backward
        peak = "loss" if at_loss >= at_backward else "backward"
        parts = loss_parts if peak == "loss" else [weights, gradients, optimizer, acts.at_backward, 0]
        if peak == "loss" and head and loss_parts[1] == head:
            notes.append(head_accumulation_note(head, at_loss))
        phases = PeakPhases(peak, at_loss, at_backward, gradients, at_step if temporary else 0)
        phase_at = len(notes)    # the note goes here, written below once the step and tied moments are weighed
    else:
        if (said := phase_note(model, setup, None)) is not None:
            notes.append(said)
        # Gradients kept from before the backward stay beside it; none yet where the optimizer steps in the backward
        # or the gradients stream to an offloaded optimizer (their GPU buffers counted conservatively otherwise).
        held = 0 if setup.optimizer_in_backward or setup.offload_optimizer or setup.offload_params else gradients
        if head and (at_head := weights + optimizer + held + head + acts.at_head) > sum(parts):
            parts = [weights, held + head, optimizer, acts.at_head, 0]
            notes.append(head_accumulation_note(head, at_head))
    # The end of the backward with tied embeddings (phases.py): the shared weight's second gradient.
    tied, hidden = (ceil(x) for x in tied_embedding_temporary(model, setup))
    at_end = weights + gradients + tied + optimizer + hidden if tied else 0
    summed = sum(parts)
    step_peak = bool(temporary) and at_step > max(summed, at_end)
    end_peak = bool(tied) and at_end > summed and not step_peak
    if end_peak:
        notes.append(tied_note(tied, at_end))
    if temporary:
        notes.append(step_note(setup, temporary, at_step, step_peak))
    if step_peak:
        parts = [weights, gradients, optimizer + temporary, 0, 0]
        phases = (dataclasses.replace(phases, peak="step") if phases is not None
                  else PeakPhases("step", summed, summed, gradients, at_step))
    elif end_peak:
        parts = [weights, gradients + tied, optimizer, hidden, 0]
        if phases is not None:
            phases = dataclasses.replace(phases, peak="backward", backward_bytes=at_end)
    if gradients_persist(model, setup) is None:
        notes.insert(phase_at, phase_note(model, setup, "end" if end_peak else phases.peak, at_loss, at_backward,
                                          gradients))
    notes.append(overhead_note(overhead))
    return MemoryBreakdown(*parts, *overhead_bytes(sum(parts), overhead), notes=tuple(notes),
                           paged_bytes=ceil(states.paged), host_bytes=ceil(states.host),
                           cached_bytes=cached_bytes(sum(parts), overhead), phases=phases)


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
    engine = engine_named(setup.engine)
    notes: list[Note] = []

    weights = weight_bytes(model, setup.precision) / t
    # A quantized checkpoint's own layout is stated with the model's assumptions (input/configs/quantization.py).
    own = model.weight_format is not None and model.weight_format.precision == setup.precision
    if setup.precision == "int4" and not own:
        notes.append(note("weights-int4-groups", ("frantar-2023", "lin-2024"), bits=4, group_size=INT4_GROUP,
                          bits_per_param=float(INT4_BITS)))
    elif setup.precision in ("int8", "fp8") and not own:
        notes.append(note("weights-8bit", precision=setup.precision))
    if setup.precision in ("int4", "int8", "fp8"):
        notes.append(note("quantized-16bit-parts", parameter_count_only=not model.has_architecture))

    if model.has_architecture:
        per_layer_token = kv_values_per_token_per_layer(model, kv_heads_per_gpu(model, t))
        kv_cache = (per_layer_token * kv_layer_tokens(model, setup.context)
                    * bytes_per_element(setup.kv_precision) * setup.batch)
        value_bytes = float(bytes_per_element(setup.kv_precision))
        if is_mla(model):
            notes.append(note(KV_CACHE_MLA, kv_lora_rank=model.kv_lora_rank, rope_dim=model.qk_rope_head_dim,
                              layers=model.layers, value_bytes=value_bytes, context=setup.context,
                              batch=setup.batch, tensor_parallel=t))
        else:
            notes.append(note(KV_CACHE, ("kwon-2023",), layers=model.layers, kv_heads=model.kv_head_count,
                              head_size=model.head_size, value_bytes=value_bytes, context=setup.context,
                              batch=setup.batch, tensor_parallel=t))
        if kv_layer_tokens(model, setup.context) < model.layers * setup.context:
            notes.append(note("kv-sliding-window", window_layers=model.sliding_window_layers, layers=model.layers,
                              window=model.sliding_window))
        if t > model.kv_head_count and not is_mla(model):
            notes.append(note("kv-heads-replicated", tensor_parallel=t, kv_heads=model.kv_head_count))
    else:
        kv_cache = 0
        notes.append(note("kv-cache-not-estimated", model=model.id))

    activations = inference_activation_bytes(model, setup)
    if model.has_architecture:
        chunk = setup.prefill_tokens if setup.prefill_tokens is not None else DEFAULT_PREFILL_TOKENS
        if setup.attention == "eager":
            notes.append(note(ACTIVATIONS_EAGER, batch=setup.batch, heads=model.heads, context=setup.context))
        elif engine.whole_prompt_prefill:
            notes.append(note(ACTIVATIONS_WHOLE_PROMPT, tokens=setup.batch * setup.context,
                              attention=setup.attention))
        else:
            notes.append(note(ACTIVATIONS_CHUNKED, ("kwon-2023",), tokens=min(setup.batch * setup.context, chunk),
                              attention=setup.attention))
        if setup.attention == "eager" or engine.whole_prompt_prefill:
            e = 4 if setup.precision == "fp32" else 2
            notes.append(prompt_logits_note(model, setup.batch, setup.context, e))
    else:
        notes.append(note("activations-not-estimated", model=model.id))
    if engine.fraction_of == "device" and engine.workspace_in_budget:
        # A budget of the device that holds all the engine allocates leaves the rest outside (vLLM's rule; the
        # other engines' reservations are stated by their own rules, estimate/reservation.py).
        notes.append(note(ENGINE_RESERVE, engine.paper, engine=engine.name,
                          setting=engine.memory_setting, fraction=engine.memory_fraction))
    parts = [ceil(weights), 0, 0, activations, ceil(kv_cache)]
    notes.append(overhead_note(overhead))
    return MemoryBreakdown(*parts, *overhead_bytes(sum(parts), overhead), notes=tuple(notes))
