"""A training step's time: matrix multiplies at a compute rate, memory-bound kernels at HBM bandwidth, the
tensor-parallel collectives over the GPUs' links, and the host's kernel launches as a floor.

Per GPU and optimizer step (ga micro-batches of s·b tokens per model copy of t·p·cp GPUs), on the pipeline
stage that paces the step, the last: ⌈L/p⌉ layers and the LM head and loss (Narayanan et al. 2021 §2.2: the
stages run the same micro-batches one after another, so the slowest sets the pace; the first stage's embedding
is a lookup):

  compute   the stage's hardware FLOPs (flops.py: 6·N or 4·N + attention + recompute; the head's share of N on
            the last stage) ÷ (t·cp) ÷ (the GPU's maximum achievable matmul rate × MAMF_FRACTION)
  memory    the bytes the non-matmul kernels move (traffic.py: each layer and the head, eager or fused; a full
            checkpoint's rerun forward again) ÷ cp, and ÷ t as tensor parallelism splits them: the work inside
            the attention and MLP blocks and the vocabulary-parallel loss ÷ t, the norms, dropouts and residual
            adds around them ÷ t only with sequence parallelism (Korthikanti et al. 2022 §4.2.2; the shares of
            activations.tensor_parallel_shares); the per-micro-batch weight traffic (autocast's 16-bit weight
            casts and their gradients' casts; the gradients added under accumulation), the optimizer step and
            the gradient clip (per parameter this GPU updates), all ÷ (bandwidth × MEMORY_FRACTION)
  comm      tensor parallelism: per layer two collectives of s·b·h 16-bit values forward, two backward, two
            more in a rerun forward (Shoeybi et al. 2019 §3; with sequence parallelism a reduce-scatter and
            an all-gather of the same bytes, Korthikanti et al. 2022 §4.2.2), each a ring over the t GPUs'
            link (links.py), not overlapped (Megatron-LM's --tp-comm-overlap and torchtitan's
            enable_async_tensor_parallel are off unless given)
  host      kernels launched × HOST_SECONDS_PER_KERNEL: eager PyTorch runs Python, the dispatcher and autograd
            for every kernel, and a step cannot take less than its launches

  step = max(compute + memory + comm, host); tokens/s = copies × s·b·ga ÷ step.

Data-parallel gradient reduction, ZeRO/FSDP gathers and the pipeline's bubble ((p − 1) stage-steps of fill and
drain, Narayanan et al. 2021 §2.2.1) are not modelled: the frameworks overlap the first two with the backward,
and MAMF_FRACTION, fitted on published runs, carries what they leave (benchmarks/calibrate_step_time.py).
Pure: no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ..catalog import GPUSpec
from ..catalog.engines import TRT_ALLREDUCE_LATENCY, TRT_LINK_FRACTION
from ..catalog.modules import default_lora, weight_tensors
from ..catalog.shapes import ModelSpec, embedding_params, lm_head_params, linear_weight_params
from ..notes import Note, note
from ..precision import FP32_BYTES
from ..units import bytes_per_element, ms_shown
from .activations import tensor_parallel_shares
from .flops import FlopsPerToken
from .inference import ACTIVATION_BYTES as TP_VALUE_BYTES   # activations exchanged in 16 bits
from .kernels import AUTOCAST_RESIDUAL_BYTES
from .links import ring_allreduce_seconds, tensor_parallel_link
from .setups import TrainingSetup
from .traffic import LayerSetup, Regions, head_traffic, layer_traffic
from .model_states import ModelStates

# The fraction of the GPU's maximum achievable matmul rate (its MAMF: the best-shape BF16 matmul's FLOP/s that
# Stas Bekman's mamf-finder.py measured, catalog gpus.yaml mamf_flops) that a training step's matrix multiplies and
# attention sustain, once the memory-bound kernels and the tensor-parallel collectives are timed apart: the median
# over the published hardware-FLOPs utilizations of docs/validation.md's calibration rows (Megatron-LM, Korthikanti
# et al., BLOOM on A100 SXMs), each with its own memory-bound and collective time taken out, its matmuls timed on
# the stage that paces the step (a pipeline's last, which holds the LM head), and its share of the dense peak
# divided by its GPU's MAMF ÷ peak (benchmarks/calibrate_step_time.py). A GPU's share of its dense peak is this ×
# its own MAMF ÷ peak (matmul_fraction): 0.66 of the peak on the A100 SXM the rows ran on (MAMF 86.9% of it),
# 0.61 on an H100 SXM (80.3%), where one fraction of the peak on every GPU planned the H100 runs of
# docs/validation.md section D faster than measured. It replaces COMPUTE_FRACTION 0.66 (of the peak, every GPU)
# and, before it, DEFAULT_MFU 0.51 (the rows' median HFU, which had the memory-bound time inside it).
MAMF_FRACTION = 0.76
COMPUTE_FRACTION_REFERENCES = ("narayanan-2021", "korthikanti-2022", "bigscience-2022", "bekman-mamf")
# What the step's other parts stand on: this project's H100 runs (the memory and host constants); the tensor-
# parallel layers' collectives, where there are any.
STEP_REFERENCES = ("proposalkit-h100",)
TP_REFERENCES = ("shoeybi-2019",)
COMPUTE_FRACTION_SOURCE = ("the published hardware-FLOPs utilizations of Megatron-LM (Narayanan et al. 2021 Table 1), "
                           "Korthikanti et al. 2022 (Table 5) and BLOOM-176B on A100s, each with its memory-bound "
                           "kernels and tensor-parallel collectives timed apart by this model and taken as a share of "
                           "the A100's maximum achievable matmul rate (Bekman's MAMF table): their median")
# Achieved over the datasheet HBM bandwidth by the memory-bound kernels, for the bytes traffic.py counts:
# fitted on the kernel times of this project's ten eager H100 profiles (benchmarks/calibrate_step_time.py:
# leave-one-out, each profile's fraction from the other nine; the median is kept).
MEMORY_FRACTION = 0.68
# Host seconds per kernel an eager PyTorch step spends (Python, the dispatcher, autograd, the launch): fitted
# on the H100 runs whose GPU idles for want of launches (benchmarks/calibrate_step_time.py).
HOST_SECONDS_PER_KERNEL = 46e-6
# Tensor-parallel collectives go as the inference side's all-reduces do (estimate/inference.py Replica: the
# same ring over the same links, links.py), at the achieved link fraction and per-collective latency fitted
# there (catalog/engines.py TRT_LINK_FRACTION, TRT_ALLREDUCE_LATENCY, on TensorRT-LLM's tensor-parallel
# throughput); torchtitan's vanilla-TP rows (docs/validation.md D-TITAN-4, -5) validate them for training.
LINK_FRACTION = TRT_LINK_FRACTION
COLLECTIVE_LATENCY = TRT_ALLREDUCE_LATENCY
# torch's multi_tensor_apply (the fused and foreach optimizers, the gradient norm) launches a kernel per 320
# blocks of 65,536 values (pytorch/pytorch aten/src/ATen/native/cuda/MultiTensorApply.cuh: kChunkSize 65536,
# depth_to_max_blocks 320).
MULTI_TENSOR_VALUES = 320 * 65_536
# torch's foreach AdamW (torch/optim/adamw.py _multi_tensor_adamw): lerp_ (m, g → m), mul_ (v), addcmul_ (v, g, g
# → v), the weight-decay mul_ (p), sqrt (v → s), div_ (s), add_ (s), addcdiv_ (p, m, s → p): 84 B per fp32
# parameter where the fused kernel reads p, g, m, v and writes p, m, v, 28 B: three times the traffic.
FOREACH_PASSES = 3
# Collectives per layer in a forward pass (attention's and the MLP's output).
TP_COLLECTIVES_PER_PASS = 2



def matmul_fraction(gpu: GPUSpec) -> float:
    """The share of `gpu`'s dense 16-bit peak the step's matmuls run at: MAMF_FRACTION of its maximum achievable
    matmul rate (gpus.yaml mamf_flops; for a GPU the MAMF table does not measure, its vendor's lowest efficiency)."""
    return MAMF_FRACTION * gpu.matmul_efficiency

@dataclass(frozen=True)
class StepTime:
    """One optimizer step on one GPU, by part (seconds), and what it gives."""

    tokens: int                 # tokens of the step, all GPUs
    compute: float
    layers: float               # memory-bound: the layers' kernels (with a rerun forward)
    head: float                 # memory-bound: the final norm and the loss
    weights: float              # memory-bound: autocast's weight casts, gradient casts and accumulation
    optimizer: float            # memory-bound: the optimizer step and the gradient clip
    comm: float                 # tensor-parallel collectives
    kernels: int                # launched per step on each GPU
    host: float                 # kernels × HOST_SECONDS_PER_KERNEL
    gpus: int
    compute_fraction: float     # of the dense peak the matmuls ran at
    memory_fraction: float      # of the HBM bandwidth the memory-bound kernels ran at
    host_per_kernel: float      # host seconds per kernel launched
    collectives: int = 0        # tensor-parallel collectives per step on each GPU
    tensor_parallel: int = 1
    link: float = 0.0           # bytes/s one GPU sends to its tensor-parallel peers, one direction (links.py)

    @property
    def memory(self) -> float:
        return self.layers + self.head + self.weights + self.optimizer

    @property
    def device(self) -> float:
        return self.compute + self.memory + self.comm

    @property
    def seconds(self) -> float:
        return max(self.device, self.host)

    @property
    def host_bound(self) -> bool:
        return self.host > self.device

    @property
    def tokens_per_second(self) -> float:
        """Tokens per step ÷ the step's time as printed (units.ms_shown), so '8,192 tokens per step ÷ 443.0 ms'
        is the rate a reader gets (18,492), not that of the unprinted 442.97 ms (18,493)."""
        return self.tokens / ms_shown(self.seconds)

    @property
    def references(self) -> tuple[str, ...]:
        """The works the step's parts stand on (MAMF_FRACTION's aside)."""
        return STEP_REFERENCES + (TP_REFERENCES if self.comm else ())


def layer_setup(model: ModelSpec, setup: TrainingSetup, autocast_run: bool = False) -> LayerSetup:
    """The dtypes and flags the layer's graph depends on, from the training setup; `autocast_run`: the framework
    runs the step under torch.autocast (the Hugging Face Trainer's bf16/fp16), LoRA's frozen 16-bit base too."""
    e = bytes_per_element(setup.precision)          # a training precision: fp32 4, bf16/fp16 2
    autocast = setup.autocast_fp32_params and e < FP32_BYTES and setup.method == "full"
    lora = None
    adapter = FP32_BYTES
    if setup.method in ("lora", "qlora"):
        lora = setup.lora or default_lora(model)
        adapter = bytes_per_element(lora.adapter_precision)       # as model_states.py counts the adapter
    residual = AUTOCAST_RESIDUAL_BYTES if autocast else e
    # Under autocast over fp32 weights the norms' weights are fp32; LoRA's frozen base under PEFT runs its
    # layers under autocast too when the Trainer's bf16 is on (hf-trainer; autocast_fp32_params set).
    lora_autocast = lora is not None and autocast_run
    return LayerSetup(e=e, residual=residual, weight_bytes=FP32_BYTES if autocast else e,
                      trainable_norms=setup.method == "full", autocast=autocast or lora_autocast,
                      flash_attention=setup.flash_attention, lora=lora, adapter_bytes=adapter,
                      seq_len=setup.seq_len, softmax_fp32=setup.softmax_fp32)


def _multi_tensor_kernels(values: float) -> int:
    return max(1, math.ceil(values / MULTI_TENSOR_VALUES))


def training_step(model: ModelSpec, setup: TrainingSetup, fpt: FlopsPerToken, gpu: GPUSpec, gpus: int,
                  states: ModelStates, compute_fraction: float | None = None,
                  node_gpus: int | None = None, autocast: bool = False) -> StepTime:
    """The step on `gpus` GPUs of `gpu` (module docstring). `states` is the model states' memory on one GPU
    (model_states.py), whose gradient and optimizer bytes the optimizer step reads and writes; `compute_fraction`,
    the matmuls' share of the dense peak, is the GPU's own (matmul_fraction) unless given."""
    if compute_fraction is None:
        compute_fraction = matmul_fraction(gpu)
    t, p, cp = setup.tensor_parallel, setup.pipeline_parallel, setup.context_parallel
    copy = t * p * cp
    copies = gpus // copy
    ga = setup.gradient_accumulation_steps or 1
    tokens = setup.seq_len * setup.micro_batch      # per model copy and micro-batch
    split = Fraction(1, t * cp)                     # each GPU's share of its stage's work
    inside, outside = tensor_parallel_shares(t, setup.sequence_parallel or t == 1)
    bandwidth = gpu.memory_bandwidth * MEMORY_FRACTION

    # A pipeline's stages run the same micro-batches one after another, so the step goes at its slowest stage's
    # pace (Narayanan et al. 2021 §2.2, 1F1B): the last, with ⌈L/p⌉ layers and the LM head and loss (the first
    # holds the embedding, a lookup). Its share of the copy's FLOPs: the layers' part of them, and the head's
    # dense_factor·v·h (the output projection, a matmul of N).
    stage_layers = math.ceil(model.layers / p)
    stage_flops = fpt.hardware
    if p > 1:
        head_flops = fpt.dense_factor * model.vocab * model.hidden if model.vocab and model.hidden else 0
        stage_flops = float((Fraction(fpt.hardware) - head_flops) * Fraction(stage_layers, model.layers)
                            + head_flops)
    compute = stage_flops * tokens * split / (gpu.peak_16bit_flops * compute_fraction)

    ls = layer_setup(model, setup, autocast)
    kernels_mode = setup.kernels
    layer = layer_traffic(model, ls, kernels_mode)
    rerun = {"full": 1, None: 0}.get(fpt.checkpointing, 0)       # a full checkpoint reruns the forward

    def gpu_bytes(regions: Regions, reruns: int = 0) -> Fraction:
        """Bytes per token on one GPU: the blocks' part ÷ t, the part around them ÷ t only with sequence
        parallelism (activations.tensor_parallel_shares); a rerun forward's bytes again."""
        return sum(share * (part.bytes + reruns * part.forward_bytes)
                   for share, part in ((inside, regions.inside), (outside, regions.outside)))

    whole = layer.total
    layer_kernels = whole.kernels + rerun * whole.forward_kernels
    head = head_traffic(model, ls, kernels_mode, setup.loss)
    layers = float(gpu_bytes(layer, rerun) * tokens * Fraction(stage_layers, cp)) / bandwidth
    head_time = float(gpu_bytes(head) * tokens * Fraction(1, cp)) / bandwidth
    kernels_mb = stage_layers * layer_kernels + head.total.kernels   # the last stage launches these

    # Weight-sized traffic per micro-batch: autocast casts each fp32 linear weight to 16 bits in the forward
    # (again in a rerun forward) and the 16-bit weight gradient to fp32 in the backward, 6 B per cast each
    # way; gradients accumulated over micro-batches add the new to the held (3 × the gradient's bytes).
    cast_params = 0
    if ls.autocast and setup.method == "full":
        cast_params = (linear_weight_params(model) * Fraction(stage_layers, model.layers)
                       + model.vocab * model.hidden) * split          # the last stage's layers and head
    cast_bytes = cast_params * (ls.e + FP32_BYTES) * (2 + rerun)
    # Megatron-LM adds each micro-batch's weight gradient into its fp32 main gradient inside the wgrad GEMM
    # (megatron/training/arguments.py: gradient accumulation fusion is on unless --no-gradient-accumulation-fusion).
    fused_accumulation = setup.optimizer_impl == "fp32-main-gradients"
    held = float(states.stepped) * float(states.gradient_width) if setup.zero_stage >= 2 else \
        float(states.gradient_width) * (model.params * Fraction(1, copy) if setup.method == "full"
                                        else float(states.stepped))
    accumulate = 0 if fused_accumulation else (ga - 1) * 3 * held
    weights = (float(cast_bytes) * ga + accumulate) / bandwidth
    # Kernels per weight tensor (the model's own, catalog/modules.weight_tensors): a cast each way per pass of
    # what F.linear reads; an accumulating add per trainable tensor. The stage's layers, and all the ends.
    tensors = weight_tensors(model)
    cast_tensors = math.ceil(tensors.linear * stage_layers) + tensors.head
    trainable_tensors = math.ceil((tensors.linear + tensors.norms) * stage_layers) + tensors.ends
    cast_kernels = (2 + rerun) * cast_tensors if cast_params else 0
    kernels = ga * (kernels_mb + cast_kernels) + (ga - 1) * trainable_tensors * (setup.method == "full"
                                                                             and not fused_accumulation)

    # The optimizer step, on the parameters this GPU steps (its ZeRO shard; model_states.py), reads their
    # gradients, weights and states and writes weights and states: the states twice, the gradient-wide values
    # three times (the gradient read, the weight read and written); the gradient clip reads the gradients for
    # their norm and reads and writes them to scale them.
    stepped = float(states.stepped)
    grads = stepped * float(states.gradient_width)
    paged = float(states.paged)
    opt_bytes = 2 * (float(states.optimizer) + paged) + 3 * grads
    if setup.optimizer_step_temporary == "foreach":
        opt_bytes *= FOREACH_PASSES
    opt_bytes += 3 * grads
    opt_kernels = (FOREACH_PASSES * 3 if setup.optimizer_step_temporary == "foreach" else 3) * \
        _multi_tensor_kernels(stepped)
    if setup.offload_optimizer:
        # ZeRO-Offload runs the update, and the gradient norm with it, on the host's fp32 copies (Ren et al. 2021
        # §4); the GPU's share is the copies over PCIe, which this model does not time (nor did the FLOPs rule).
        opt_bytes, opt_kernels = 0, 0
    optimizer = opt_bytes / bandwidth
    kernels += opt_kernels

    comm, collectives, link = 0.0, 0, 0.0
    if t > 1:
        link = tensor_parallel_link(gpu.id, t, node_gpus)
        size = tokens // cp * model.hidden * TP_VALUE_BYTES
        one = ring_allreduce_seconds(size, t, link * LINK_FRACTION, COLLECTIVE_LATENCY)
        passes = 2 + rerun                          # forward, backward, a rerun forward
        collectives = ga * stage_layers * passes * TP_COLLECTIVES_PER_PASS
        comm = collectives * one

    return StepTime(tokens=tokens * ga * copies, compute=float(compute) * ga, layers=layers * ga,
                    head=head_time * ga, weights=weights, optimizer=optimizer, comm=comm, kernels=int(kernels),
                    host=kernels * HOST_SECONDS_PER_KERNEL, gpus=gpus, compute_fraction=compute_fraction,
                    memory_fraction=MEMORY_FRACTION, host_per_kernel=HOST_SECONDS_PER_KERNEL,
                    collectives=collectives, tensor_parallel=t, link=link)


def step_note(step: StepTime, kernels: str, gpu: GPUSpec) -> Note:
    """The assumption the step's time rests on (render/training_words.py words it): the matmuls' share of `gpu`'s
    dense peak, with the maximum achievable matmul rate it is MAMF_FRACTION of (measured on this GPU or, where the
    MAMF table measures none, its vendor's lowest efficiency taken) and any factor on top (QLoRA's dequantization)."""
    return note("step-time", COMPUTE_FRACTION_REFERENCES + step.references, compute_fraction=step.compute_fraction,
                mamf_fraction=MAMF_FRACTION, gpu=gpu.name, vendor=gpu.vendor, mamf_flops=gpu.mamf_flops,
                peak_flops=gpu.peak_16bit_flops, mamf_measured=gpu.mamf_measured,
                speed_factor=round(step.compute_fraction / matmul_fraction(gpu), 6),
                memory_fraction=step.memory_fraction, host_microseconds_per_kernel=round(step.host_per_kernel * 1e6, 3),
                kernels=kernels, tensor_parallel=step.tensor_parallel, host_bound=step.host_bound)
