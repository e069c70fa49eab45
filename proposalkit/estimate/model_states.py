"""Model states per GPU in training: weights, gradients and optimizer states, as frameworks hold them.

Pure: no I/O. Called by memory.training_memory(); the mechanisms and their sources:
- Mixed precision (Rajbhandari et al. 2020, ZeRO §3.1; Micikevicius et al. 2018 §3.1): 16-bit
  weights and gradients + fp32 master, m and v = 16 B/param with AdamW. Pure 16-bit training
  (torchtune, docs/source/tutorials/memory_optimizations.rst: "we don't support mixed-precision
  training"): 2 + 2 + 4 (AdamW moments in the weights' dtype, torch.optim.AdamW zeros_like(p)).
- Paged optimizers (bitsandbytes PagedAdamW / PagedAdamW8bit, Dettmers et al. 2023 §3 "Paged
  Optimizers"): the states are allocated in CUDA unified memory (bitsandbytes
  functional.get_paged → cudaMallocManaged), outside PyTorch's caching allocator, and are paged
  to host memory when the GPU runs short; bitsandbytes' 32-bit optimizers keep fp32 states
  whatever the parameters' dtype (optim/optimizer.py Optimizer2State.init_state,
  optim_bits 32 → torch.float32).
- Optimizer step in backward (torchtune optimizer_in_bwd, torchtune/training/memory.py
  register_optim_in_bwd_hooks: a post-accumulate-grad hook steps each parameter and frees its
  gradient): only one parameter's gradient lives at a time, the largest bounding it.
- CPU offload (Ren et al. 2021, "ZeRO-Offload" §3-4: fp16 parameters stay on the GPU; gradients,
  fp32 master weights and Adam states on the CPU; DeepSpeed offload_param for stage 3 and PyTorch
  FSDP CPUOffload(offload_params=True): the parameter and gradient shards live on the CPU and are
  brought in one unit at a time).
- Framework optimizer implementations (OPTIMIZER_IMPLS): DeepSpeed's BF16_Optimizer and
  Megatron-LM's fp32 main gradients.
- Pipeline parallelism: the worst stage, not an even split; FSDP under pipeline parallelism
  (torchtitan) keeps the stage's parameters gathered and its gradients unsharded.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .arith import exact
from ..notes import Note, note
from ..catalog.modules import default_lora
from .lora import lora_matrices, lora_trainable_params
from ..precision import (
    ADAM8BIT_MOMENT_BYTES, FP32_BYTES, NF4_BITS, optimizer_state_bytes,
)
from ..options import PAGED_OPTIMIZERS
from ..catalog.shapes import (
    ModelSpec, embedding_params, expert_params, layer_params, linear_weight_params, linears, lm_head_params,
    mlp_params_per_expert, moe_layer_count, moe_layer_params, parameter_count,
)
from .setups import TrainingSetup
from .weights import weight_bytes
from ..units import bytes_per_element

# Optimizer implementations a framework may run (TrainingSetup.optimizer_impl, named for what they hold; the
# framework preset sets it, input/frameworks.py), beside the default "torch" (torch.optim or bitsandbytes on the
# model's own parameters and gradients):
#   "fp32-gradient-buffer": DeepSpeed BF16_Optimizer (microsoft/DeepSpeed @ 06e39a56,
#       deepspeed/runtime/bf16_optimizer.py): bf16 parameters and their bf16 .grad, plus one flat
#       fp32 gradient buffer of the whole replica (fp32_groups_gradients_flat = zeros_like(the
#       flat bf16 params, float32), accumulated into after each backward and not partitioned),
#       and the fp32 master partition and Adam states split over the data-parallel ranks
#       (fp32_groups_flat_partition: its own ZeRO-1). The bf16 .grad is cleared only at the
#       start of the next backward (clear_lp_grads), so both gradient copies coexist.
#   "fp32-main-gradients": Megatron-LM's fp32 main gradients (NVIDIA/Megatron-LM docs/distrib_optimizer.md:
#       bytes per parameter "bf16 param, fp32 grads: 18 non-distributed, 6 + 12/d distributed";
#       "fp16 param, fp16 grads: 20, 4 + 16/d"): with bf16 weights the gradients accumulate in
#       an fp32 main_grad buffer instead of a bf16 .grad; with fp16 weights fp32 main gradients
#       are kept beside the fp16 ones and sharded with the optimizer. The distributed optimizer
#       is zero_stage 1.
OPTIMIZER_IMPLS = ("torch", "fp32-gradient-buffer", "fp32-main-gradients")


# torch.autocast with fp32 parameters (Hugging Face Trainer's bf16/fp16 AMP) holds the same 16 bytes split
# 4 (fp32 weights) + 4 (fp32 gradients) + 8 (moments). Autocast also caches the 16-bit copy of each weight
# it casts and matmul saves it for backward (PyTorch autocast docs, cache_enabled), 2 B/param at the end
# of a forward; the fp32 gradients then exist only under gradient accumulation (zero_grad sets them to None
# otherwise); activations.py counts the copies where autocast runs over fp32 parameters.


# bitsandbytes pages a state only for a parameter of at least 1e5 values; smaller ones get ordinary
# torch.zeros_like buffers (bitsandbytes-foundation/bitsandbytes @ 51294d90 bitsandbytes/optim/optimizer.py
# Optimizer8bit.get_state_buffer:
# "if not self.is_paged or p.numel() < 1e5: return torch.zeros_like(...)").
PAGED_MIN_ELEMENTS = 100_000

# DeepSpeed's default reduce_bucket_size, in elements (microsoft/DeepSpeed @ 38327e07 deepspeed/runtime/zero/config.py:
# reduce_bucket_size = Field(pp_int(5e8)), "Number of elements reduced/allreduced at a time").
DEEPSPEED_REDUCE_BUCKET = 500_000_000


@dataclass(frozen=True)
class ModelStates:
    """Exact bytes per GPU: on the device (weights, gradients, optimizer), in CUDA unified memory
    (paged optimizer states), and offloaded to host memory; with the notes that explain them."""

    weights: Fraction | int
    gradients: Fraction | int
    optimizer: Fraction | int
    paged: Fraction | int
    host: Fraction | int
    notes: tuple[Note, ...]
    moments: Fraction | int = 0      # the optimizer moments on the GPU (within `optimizer`; phases.py's step)
    stepped: Fraction | int = 0      # parameters whose optimizer step this GPU runs (its ZeRO shard of the trained)
    gradient_width: Fraction | int = 0   # bytes per gradient value the step reads


# ----------------------------------------------------------------- shapes of a stage

def worst_stage_fraction(model: ModelSpec, pipeline_parallel: int) -> Fraction | int:
    """The share of the parameters on the fullest pipeline stage.

    Stages hold ⌈L/p⌉ layers; the first also the input embeddings, the last the final norm and
    the LM head (a copy of the embeddings when they are tied: Megatron-LM keeps the word
    embeddings on the last stage for the output layer; torchtitan's Llama has an untied output).
    Without a shape, or without pipeline parallelism: 1/p.
    """
    p = pipeline_parallel
    if p == 1 or not model.has_architecture:
        return exact(1, p)
    per_stage = -(-model.layers // p) * layer_params(model)
    head = lm_head_params(model) or model.vocab * model.hidden
    # a vision-language model's vision tower runs before the first layer: on the first stage
    worst = per_stage + max(embedding_params(model) + model.vision_params, head + model.hidden)
    return min(Fraction(worst, parameter_count(model)), Fraction(1))


def paged_share(model: ModelSpec, setup: TrainingSetup) -> Fraction | int:
    """The share of the trainable parameters whose optimizer states bitsandbytes pages: tensors of at
    least PAGED_MIN_ELEMENTS values (full training: the block matrices, embeddings and LM head, not the
    norms; LoRA: the A (r × d_in) and B (d_out × r) matrices that reach the threshold). 1 without a shape."""
    if not model.has_architecture:
        return 1
    if setup.method == "full":
        big = sum(x.d_in * x.d_out * x.count for x in linears(model) if x.d_in * x.d_out >= PAGED_MIN_ELEMENTS)
        big += sum(n for n in (embedding_params(model), lm_head_params(model)) if n >= PAGED_MIN_ELEMENTS)
        return min(Fraction(big, parameter_count(model)), Fraction(1))
    lora = setup.lora or default_lora(model)
    total = big = 0
    for x in lora_matrices(model, lora):
        for d in (x.d_in, x.d_out):
            total += lora.rank * d * x.count
            big += lora.rank * d * x.count if lora.rank * d >= PAGED_MIN_ELEMENTS else 0
    return Fraction(big, total) if total else 1


def largest_parameter(model: ModelSpec) -> int:
    """Elements of the model's largest single parameter tensor: the embeddings, the LM head or
    the widest block matrix (an MLP projection h × f)."""
    widest = max((x.d_in * x.d_out for x in linears(model)), default=0)
    return max(embedding_params(model), lm_head_params(model), widest)


# ----------------------------------------------------------------- full training

def _per_param(setup: TrainingSetup, mixed: bool, pure: bool) -> tuple:
    """(weight, gradient, master + fp32 main-gradient bytes, moment bytes) per parameter of full training."""
    wb = bytes_per_element(setup.precision)
    grad = wb
    master = FP32_BYTES if mixed else 0
    if setup.optimizer_impl == "fp32-main-gradients" and setup.precision != "fp32":
        if setup.precision == "bf16":
            grad = FP32_BYTES            # main_grad replaces the bf16 .grad
        else:
            master += FP32_BYTES         # fp16: fp32 main grads beside the fp16 ones, sharded with the optimizer
    elif setup.optimizer_impl == "fp32-gradient-buffer":
        grad = wb + FP32_BYTES           # bf16 .grad + the fp32 accumulation buffer
    moment = bytes_per_element(setup.precision) if pure and setup.optimizer not in PAGED_OPTIMIZERS else FP32_BYTES
    return wb, grad, master, optimizer_state_bytes(setup.optimizer, moment_bytes=moment)


def _params_per_gpu(model: ModelSpec, setup: TrainingSetup, zero_sharded: bool) -> Fraction:
    """Parameters whose state one GPU holds: the worst pipeline stage's share ÷ t, ÷ N when ZeRO shards it.

    With expert parallelism k the routed experts (P_e) are split over k GPUs
    of the data-parallel group, and ZeRO shards them over the N/k GPUs that
    hold the same experts (Megatron-Core's expert-data-parallel group):
    (P - P_e)/(t·p)·(1/N) + P_e/(t·p·k)·(k/N) when sharded, so under ZeRO-3
    expert parallelism moves the experts rather than shrinking them.
    """
    t, n, k = setup.tensor_parallel, setup.data_parallel, setup.expert_parallel
    stage = worst_stage_fraction(model, setup.pipeline_parallel)
    if zero_sharded:   # (P - P_e)/(t·p·N) + P_e/(t·p·N): one division, in integers when whole
        share = exact(model.params, t * n)
    else:
        experts = expert_params(model) if k > 1 else 0
        share = exact((model.params - experts) * k + experts, t * k)
    return share * stage


def zero3_gathered_bytes(model: ModelSpec, setup: TrainingSetup) -> tuple[Fraction, Fraction]:
    """Transient (weights, gradients) bytes of ZeRO-3 / FSDP full sharding, per GPU.

    Sharded parameters are all-gathered one unit at a time (a transformer
    layer when each block is wrapped; the embeddings and the LM head are units
    of their own), and the next unit's all-gather is issued while the current
    one is in use, so two units are live (PyTorch FSDP notes, "FSDP Prefetch
    Nuances"; DeepSpeed ZeRO-3 prefetches likewise). In the backward the
    unit's full gradient exists before its reduce-scatter. Zero unless stage
    3 over more than one GPU (or with the parameters offloaded to the CPU,
    gathered even on one GPU) and the architecture is known. Tensor
    parallelism divides a unit by t; expert parallelism k leaves a rank
    only experts/k of an MoE layer to gather.
    """
    if setup.zero_stage < 3 or not model.has_architecture or (setup.data_parallel < 2 and not setup.offload_params):
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
    if gathered_grads and setup.data_parallel_impl == "fsdp2":
        # FSDP2's foreach_reduce allocates the reduce-scatter input, the unit's numel in the reduce dtype, and
        # copies the unsharded gradients into it before it frees them (pytorch/pytorch @ 415cc262
        # torch/distributed/_composable/fsdp/_fsdp_collectives.py: reduce_scatter_input = torch.empty(...,
        # dtype=reduce_dtype); foreach_reduce_scatter_copy_in; "Only after the copy-in finishes can we free the
        # gradients"). torchtitan reduces in fp32 (config_manager.py mixed_precision_reduce float32); torchtune
        # gives FSDP2 no mixed-precision policy, so the gradients' own dtype.
        reduce = FP32_BYTES if setup.fsdp_fp32_params and setup.mixed_precision else wb
        gathered_grads += unit_params * reduce
    return gathered_weights, gathered_grads


def model_states(model: ModelSpec, setup: TrainingSetup) -> ModelStates:
    """Weights, gradients and optimizer states per GPU (device, paged, host), with their notes."""
    n, stage = setup.data_parallel, setup.zero_stage
    # DeepSpeed's BF16_Optimizer and Megatron's Float16 optimizers always keep fp32 main parameters for
    # 16-bit weights (OPTIMIZER_IMPLS): mixed precision whatever mixed_precision says.
    mixed = setup.precision != "fp32" and (setup.mixed_precision or setup.optimizer_impl != "torch")
    pure = setup.precision != "fp32" and not mixed
    paged_states = setup.optimizer in PAGED_OPTIMIZERS
    fsdp_pp = stage == 3 and setup.pipeline_parallel > 1 and n > 1
    notes: list[Note] = []
    if setup.method == "full":
        weights, gradients, master, moments, said = _full(model, setup, mixed, pure, fsdp_pp)
        notes.append(said)
        stepped = _params_per_gpu(model, setup, stage >= 1 or setup.optimizer_impl == "fp32-gradient-buffer")
        width = _per_param(setup, mixed, pure)[1]
    else:
        weights, gradients, master, moments, stepped = _lora(model, setup, pure, notes)
        width = bytes_per_element((setup.lora or default_lora(model)).adapter_precision)

    if setup.optimizer_in_backward:
        gradients, said = _in_backward(model, setup, gradients)
        notes.append(said)

    gathered_weights, gathered_grads = (0, 0) if fsdp_pp else zero3_gathered_bytes(model, setup)
    host = 0
    if setup.offload_params and not model.has_architecture:
        notes.append(note("param-offload-not-applied"))
    elif setup.offload_params:
        host += weights + gradients
        notes.append(note("params-offloaded", ("rajbhandari-2020",), host_bytes=float(weights + gradients)))
        weights, gradients = 0, 0
    if gathered_weights:
        weights += gathered_weights
        gradients += gathered_grads
        notes.append(note("zero3-working-set", ("rajbhandari-2020",)))
    elif stage == 3 and n > 1 and not model.has_architecture:
        notes.append(note("zero3-working-set-not-counted", ("rajbhandari-2020",)))

    paged = 0
    if setup.offload_optimizer:
        host += master + moments
        if not setup.offload_params and gradients:
            # DeepSpeed ZeRO-Offload streams each gradient to the host's fp32 gradient partition as the
            # backward produces it and frees it on the GPU (runtime/zero/stage_1_and_2.py,
            # async_inplace_copy_grad_to_fp32_buffer_from_gpu: "param.grad = None  #offload only"); what
            # stays is the reduce bucket of reduce_bucket_size elements (runtime/zero/config.py default 5e8),
            # beside the autograd gradient of the parameter being copied into it, or of a parameter larger
            # than the bucket, which is reduced as it is (stage_1_and_2.py reduce_independent_p_g_buckets_and_
            # remove_grads: new_grad_tensor.copy_(grad_reduc), extra_large_param_to_reduce), and under ZeRO-3
            # the gathered unit's unsharded gradients (gathered_grads).
            width = bytes_per_element(setup.precision if setup.method == "full"
                                      else (setup.lora or default_lora(model)).adapter_precision)
            elements = gradients / width
            host += elements * FP32_BYTES
            one = (Fraction(largest_parameter(model) * width, setup.tensor_parallel)
                   if setup.method == "full" and model.has_architecture else 0)
            gradients = min(gradients, DEEPSPEED_REDUCE_BUCKET * width + max(one, gathered_grads))
        notes.append(note("optimizer-offloaded", ("rajbhandari-2020",), host_bytes=float(host), master=bool(master),
                          bucket_values=DEEPSPEED_REDUCE_BUCKET))
        master = moments = 0
    elif paged_states:
        share = paged_share(model, setup)
        # Only the state buffers are paged (get_state_buffer); an 8-bit optimizer's fp32 absmax per block is an
        # ordinary GPU tensor (precision.py ADAM8BIT_BLOCK): 1 of the 1 + 4/256 bytes per moment value is paged.
        paged = moments * share * (1 / ADAM8BIT_MOMENT_BYTES if setup.optimizer == "paged-adamw-8bit" else 1)
        moments -= paged
        notes.append(note("paged-optimizer", ("dettmers-2023",), optimizer=setup.optimizer, paged_bytes=float(paged),
                          min_elements=PAGED_MIN_ELEMENTS, paged_share=float(share),
                          eight_bit=setup.optimizer == "paged-adamw-8bit"))
    return ModelStates(weights, gradients, master + moments, paged, host, tuple(notes), moments, stepped, width)


def _full(model: ModelSpec, setup: TrainingSetup, mixed: bool, pure: bool, fsdp_pp: bool) -> tuple:
    stage = setup.zero_stage
    wb, grad, master, moments = _per_param(setup, mixed, pure)
    opt_sharded = stage >= 1 or setup.optimizer_impl == "fp32-gradient-buffer"
    if fsdp_pp:
        # torchtitan (pytorch/torchtitan @ 9dec370, parallelize_llama.py apply_fsdp): with pipeline
        # parallelism reshard_after_forward is False, so a stage's parameters stay gathered across
        # its micro-batches, and the pipeline schedule accumulates unsharded gradients until the last
        # micro-batch's reduce-scatter (torch.distributed.pipelining turns gradient sync off for the
        # earlier micro-batches; FSDP2 _fsdp_param.py FSDPParam.to_accumulated_grad_if_needed keeps
        # the unsharded gradient as unsharded_accumulated_grad in reduce_dtype, fp32 under torchtitan's
        # mixed_precision_reduce); the fp32 sharded parameters (the master), moments and sharded
        # gradients are divided over the data-parallel GPUs.
        whole = _params_per_gpu(model, setup, False)
        shard = _params_per_gpu(model, setup, True)
        unsharded_grad = FP32_BYTES if mixed else wb
        weights = whole * wb
        gradients = whole * unsharded_grad + shard * (FP32_BYTES if mixed else wb)
        optimizer_master, optimizer_moments = shard * master, shard * moments
        note_ = note("fsdp-under-pipeline", ("torchtitan-sac",), weight_bytes=float(wb),
                     gradient_dtype="fp32" if mixed else setup.precision)
        return weights, gradients, optimizer_master, optimizer_moments, note_
    weights = _params_per_gpu(model, setup, stage >= 3) * wb
    grad_sharded = stage >= 2 and setup.optimizer_impl != "fp32-gradient-buffer"
    gradients = _params_per_gpu(model, setup, grad_sharded) * grad
    per_opt = _params_per_gpu(model, setup, opt_sharded)
    total = wb + grad + master + moments
    # The gradients' own arrangement where an optimizer keeps more than the weights' dtype (OPTIMIZER_IMPLS).
    gradient_form = {"fp32-main-gradients": "megatron-fp32-main" if setup.precision == "bf16" else None,
                     "fp32-gradient-buffer": "deepspeed-fp32-buffer"}.get(setup.optimizer_impl)
    states = note("model-states", ("rajbhandari-2020",) + (("micikevicius-2018",) if mixed else ()),
                  weight_bytes=float(wb), gradient_bytes=float(grad), gradient_form=gradient_form,
                  state_bytes=float(master + moments), optimizer=setup.optimizer, precision=setup.precision,
                  master_copy=mixed, pure_16bit=pure, paged=setup.optimizer in PAGED_OPTIMIZERS,
                  total_bytes=float(total), autocast=mixed and setup.optimizer_impl == "torch")
    return weights, gradients, per_opt * master, per_opt * moments, states


def _lora(model: ModelSpec, setup: TrainingSetup, pure: bool, notes: list[Note]) -> tuple:
    stage, n = setup.zero_stage, setup.data_parallel
    weight_shard = exact(1, n) if stage >= 3 else 1
    grad_shard = exact(1, n) if stage >= 2 else 1
    opt_shard = exact(1, n) if stage >= 1 else 1
    model_split = Fraction(worst_stage_fraction(model, setup.pipeline_parallel)) / setup.tensor_parallel
    lora = setup.lora or default_lora(model)
    if setup.lora is None:
        notes.append(note("lora-defaults", ("hu-2021",), rank=lora.rank, targets=tuple(lora.targets)))
    if setup.method == "qlora":
        base = weight_bytes(model, "nf4", unquantized=setup.precision)
        if model.has_architecture:
            notes.append(note("qlora-base-weights", ("dettmers-2023",), precision=setup.precision))
        else:
            notes.append(note("qlora-base-weights-params-only", ("dettmers-2023",)))
    else:
        base = model.params * bytes_per_element(setup.precision)
        notes.append(note("lora-base-frozen", ("hu-2021",), precision=setup.precision))
    if model.has_architecture:
        adapters = lora_trainable_params(model, lora)
    else:
        adapters = 0
        notes.append(note("lora-adapters-not-counted", ("hu-2021",)))
    adapter_bytes = bytes_per_element(lora.adapter_precision)
    paged = setup.optimizer in PAGED_OPTIMIZERS
    moment_dtype = lora.adapter_precision if pure and not paged else "fp32"
    adapter_opt = optimizer_state_bytes(setup.optimizer, moment_bytes=bytes_per_element(moment_dtype))
    if setup.expert_parallel > 1:
        # the routed experts' frozen weights are split over the expert-parallel GPUs
        expert_bytes = expert_params(model) * (NF4_BITS / 8 if setup.method == "qlora"
                                               else bytes_per_element(setup.precision))
        base -= expert_bytes * (1 - exact(1, setup.expert_parallel))
    # The adapters sit in the layers only: the fullest stage holds ⌈L/p⌉ of the L layers' adapters.
    p = setup.pipeline_parallel
    stage_layers, layers = (-(-model.layers // p), model.layers) if p > 1 and adapters else (1, 1)
    adapter_params = exact(adapters * stage_layers, layers * setup.tensor_parallel)
    weights = (base * model_split + adapter_params * adapter_bytes) * weight_shard
    gradients = adapter_params * adapter_bytes * grad_shard
    moments = adapter_params * adapter_opt * opt_shard
    if adapters:
        # why the adapters' width: PEFT's fp32 upcast by default, or pure 16-bit training
        why = "peft-upcast" if lora.adapter_precision == "fp32" else "pure-16bit" if pure else None
        notes.append(note("lora-adapters", ("hu-2021",), adapters=adapters, adapter_precision=lora.adapter_precision,
                          state_bytes=float(adapter_opt), state_dtype=moment_dtype, optimizer=setup.optimizer,
                          bytes_per_param=float(2 * adapter_bytes + adapter_opt), why=why))
    return weights, gradients, 0, moments, adapter_params * opt_shard


def _in_backward(model: ModelSpec, setup: TrainingSetup, gradients) -> tuple:
    """Gradients under the optimizer step in backward: the largest one parameter's (torchtune optimizer_in_bwd)."""
    if not model.has_architecture:
        return gradients, note("optimizer-in-backward-params-only", ("torchtune-readme",))
    if setup.method == "full":
        largest = largest_parameter(model)
        wb = bytes_per_element(setup.precision)
        what = "parameter"
    else:
        lora = setup.lora or default_lora(model)
        largest = max(lora.rank * max(x.d_in, x.d_out) for x in lora_matrices(model, lora))
        wb = bytes_per_element(lora.adapter_precision)
        what = "adapter matrix"
    one = Fraction(largest * wb, setup.tensor_parallel)
    return min(one, gradients), note("optimizer-in-backward", ("torchtune-readme",), what=what, largest=largest,
                                     value_bytes=float(wb))
