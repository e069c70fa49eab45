"""What a memory estimate is: bytes per GPU by component, and the three statistics a run is measured by.

PyTorch reports two peaks, torch.cuda.max_memory_allocated() (memory occupied
by tensors) and max_memory_reserved() ("memory managed by the caching
allocator"); nvidia-smi shows the whole device, that pool plus the CUDA context
and library workspaces, which PyTorch's statistics do not count (PyTorch docs,
"CUDA semantics: memory management" and torch.cuda.max_memory_reserved).
A plan must fit the whole device into the usable memory; a measured figure is
compared with the statistic it measured. The fixed costs between them are
Overhead's, each constant with its source.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property

from .arith import fraction, memo
from ..notes import Note, note
from ..units import GiB, memory_carried, memory_share

# CUDA context and library workspaces, per GPU. The context alone is ~300 MB
# with CUDA >= 11.7 lazy kernel loading and was > 1000 MB before it
# (pytorch/pytorch#107667, ptrblck 2023-08-28); Hugging Face's "Model training
# anatomy" measured 1343 MiB on the device after creating a 1-element tensor
# (nvidia-smi, all kernels loaded). cuBLAS workspaces and NCCL communicator
# buffers come on top of the lazy-loaded context; 1 GiB covers both ends of
# the published range for a current stack.
CUDA_CONTEXT_BYTES = 1 * GiB
# The caching allocator reserves more than it allocates (fragmentation, cached
# blocks), by regime:
# - one GPU: 10% of the allocated bytes. This project's H100 runs measured their
#   reserved peak 1.4-12.6% above the allocated one (median 6.2%, 12 runs: benchmarks/validation/measured,
#   the M-... rows and their -RES twins); serving engines hold back 10% of the GPU
#   (vLLM gpu_memory_utilization = 0.9).
# - more than one GPU: 15%. The collectives run on NCCL's own stream, and
#   ProcessGroupNCCL keeps their buffers alive with recordStream, which holds
#   blocks in the caching allocator past their last use (pytorch/torchtitan#735,
#   awgu 2024-12-13; FSDP1 bounds it with limit_all_gathers); GMLake (Guo et al.,
#   ASPLOS 2024) measured PyTorch's allocator wasting on average 15% (up to 33%)
#   across eight LLM fine-tuning setups with ZeRO, LoRA and recomputation. Not
#   fitted. FSDP1 runs measured more: Answer.AI's (benchmarks/validation, A-AAI-2
#   and -4 to -10) 11-27% above the planned allocated bytes, and meta-llama/llama-recipes
#   pull request #41 (awgu, 2023-07-25; Llama-2-7B LoRA, 4 A100s) its peak reserved 26-35%
#   above its peak active (32.67 / 25.86, 27.36 / 20.20, 19.36 / 15.22 GB); torchtitan's
#   FSDP2 rows, which avoid recordStream for their all-gathers, are closer at 10% (A-TITAN-2
#   and -8: +7.0% and -0.1%, at 15% +11.9% and +4.5%). The workload does not say which FSDP.
# - CPU offload (parameters or optimizer states in host memory; DeepSpeed ZeRO-Offload/-Infinity, FSDP1
#   CPUOffload): 38% where the GPU has memory to spare. The host copies and the gathered parameters they feed
#   come and go every layer in sizes the rest of the step does not use, so the pool caches blocks it cannot reuse:
#   GMLake (Guo et al., ASPLOS 2024; GMLake/README.md and docs/figures/stra-*.png of
#   intelligent-machine-learning/glake @ 0274a9c, read off the figures to ±0.01) measured PyTorch's utilization
#   (peak active ÷ peak reserved) under ZeRO-3 with recomputation and offload at 0.64, 0.775 and 0.73 (OPT-1.3B,
#   Vicuna-13B, GPT-NeoX-20B; 4 A100s) and with LoRA added at 0.64, 0.80 and 0.72: reserved 25-56% above
#   active, median 38% (1/0.73 and 1/0.72). Fitted to those six; held out: A-AAI-12 (FSDP1 CPU offload, -1.8%)
#   and A-AAI-11 (73% above its planned allocated; docs/validation.md says why it stays out). FSDP2's offload
#   (torchtune, torchtitan: data_parallel_impl fsdp2) copies without recordStream and stays in the regime above
#   (A-TT31-6 is over at 15%).
#   Near capacity that further pool is not needed: the caching allocator frees its non-split cached blocks and
#   retries before it raises an out-of-memory error (c10/cuda/CUDACachingAllocator.cpp malloc:
#   release_available_cached_blocks, then release_cached_blocks, "Free all non-split cached blocks and retry
#   alloc"), and A-AAI-13 to -15 ran on 24 GiB cards with their pool 17-18% above the planned allocated bytes where
#   38% would be 26.3 GiB. What must fit keeps the reserve of the regime without offload (10% or 15%: the blocks
#   split and partly in use, which cannot be freed); the offload pool is stated beside it (reserved_ample_bytes).
ALLOCATOR_RESERVE = 0.10
MULTI_GPU_ALLOCATOR_RESERVE = 0.15
OFFLOAD_ALLOCATOR_RESERVE = 0.38


@dataclass(frozen=True)
class Overhead:
    cuda_context_bytes: int      # CUDA context + cuBLAS/cuDNN/NCCL workspaces, per GPU
    allocator_reserve: float     # fraction of the allocated bytes the caching allocator holds on top (what must fit)
    regime: str = "one GPU"      # which of the reserve's regimes (above) it is
    ample_reserve: float = 0.0   # CPU offload: the fraction the pool grows to where memory is free (0: as above)


DEFAULT_OVERHEAD = Overhead(cuda_context_bytes=CUDA_CONTEXT_BYTES, allocator_reserve=ALLOCATOR_RESERVE)
MULTI_GPU_OVERHEAD = Overhead(cuda_context_bytes=CUDA_CONTEXT_BYTES, allocator_reserve=MULTI_GPU_ALLOCATOR_RESERVE,
                              regime="more than one GPU")


OFFLOAD_REGIME = "CPU offload"


def gpus_overhead(gpus: int, offload: bool = False) -> Overhead:
    """The fixed costs of a job whose model copy and data-parallel group span `gpus` GPUs (the regimes above);
    `offload`: parameters or optimizer states in host memory, copied by FSDP1 or DeepSpeed (not FSDP2)."""
    base = MULTI_GPU_OVERHEAD if gpus > 1 else DEFAULT_OVERHEAD
    return _offload_overhead(base) if offload else base


@memo
def _offload_overhead(base: Overhead) -> Overhead:
    return Overhead(base.cuda_context_bytes, base.allocator_reserve, OFFLOAD_REGIME, OFFLOAD_ALLOCATOR_RESERVE)


@dataclass(frozen=True)
class PeakPhases:
    """Allocated bytes at the two moments of a training step that do not share their gradients
    (phases.py): at the loss peak (start of the backward) and later in the backward (all gradients).
    `peak` names the larger, the one the components describe; `gradients` is every gradient, which
    exists only in the backward phase. A foreach AdamW adds a third moment, the optimizer step (peak
    "step", step_bytes); where the gradients persist, loss_bytes and backward_bytes are both the summed
    figure, the one moment the sum rule has."""

    peak: str            # "loss" | "backward" | "step"
    loss_bytes: int
    backward_bytes: int
    gradients: int
    step_bytes: int = 0  # the optimizer step's moment where a foreach AdamW adds its temporary (phases.py), else 0


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per GPU by component; `total` is their sum, the figure that must fit.

    The overhead component is the caching allocator's reserve plus the CUDA
    context, kept apart so the breakdown also gives the three statistics a run
    is measured by (DESIGN.md, "Which memory?"):
      allocated_bytes  live tensors, what torch.cuda.max_memory_allocated() peaks at:
                       weights + gradients + optimizer + activations + KV cache;
      reserved_bytes   the caching allocator's pool, torch.cuda.max_memory_reserved():
                       allocated + the allocator reserve;
      device_bytes     the whole device as nvidia-smi shows it: reserved + the CUDA
                       context and library workspaces (outside PyTorch's statistics);
                       equal to `total`.
    Beside them, not in `total`: paged_bytes (paged optimizer states in CUDA unified
    memory, evictable to the host) and host_bytes (offloaded to CPU memory).
    """

    weights: int
    """Model weights held on this GPU."""
    gradients: int
    """Gradients held at the peak (0 for inference)."""
    optimizer: int
    """Optimizer states, and fp32 master weights in mixed precision (0 for inference)."""
    activations: int
    """Activations saved for the backward pass at the peak (inference: the forward pass's working set)."""
    kv_cache: int
    """Inference: the KV cache (0 for training)."""
    allocator_reserve: int
    """reserved − allocated: cached blocks and fragmentation."""
    cuda_context: int
    """device − reserved: CUDA context, cuBLAS/NCCL workspaces."""
    notes: tuple[Note, ...] = ()
    """How each component was counted: a record each (notes.Note)."""
    paged_bytes: int = 0
    """Outside `total`: paged optimizer states in CUDA unified memory, evicted to host memory under
    pressure (bitsandbytes paged optimizers)."""
    host_bytes: int = 0
    """Outside `total`: bytes offloaded to host memory per GPU (ZeRO-Offload, FSDP CPUOffload)."""
    cached_bytes: int = 0
    """Outside `total`: CPU offload's further pool where the GPU has memory to spare (cached blocks the allocator
    frees before an out-of-memory error: not needed to fit); reserved_bytes + cached_bytes is reserved_ample_bytes."""
    phases: PeakPhases | None = None
    """Training where gradients are freed between optimizer steps (phases.py): the components are those
    of the peak phase, and the gradients that exist only in the other phase are shown here, not dropped."""
    estimated: MemoryBreakdown | None = field(default=None, compare=False, repr=False)
    """A breakdown as printed (as_printed): the estimate it was rounded from, in exact bytes (the plan JSON's
    memory.estimate); None on the estimate itself."""

    @property
    def overhead(self) -> int:
        """allocator_reserve + cuda_context."""
        return self.allocator_reserve + self.cuda_context

    @property
    def allocated_bytes(self) -> int:
        """Live tensors: what torch.cuda.max_memory_allocated() peaks at."""
        return self.weights + self.gradients + self.optimizer + self.activations + self.kv_cache

    @property
    def reserved_bytes(self) -> int:
        """The caching allocator's pool: torch.cuda.max_memory_reserved()."""
        return self.allocated_bytes + self.allocator_reserve

    @property
    def device_bytes(self) -> int:
        """The whole device as nvidia-smi shows it."""
        return self.reserved_bytes + self.cuda_context

    @cached_property  # the planner compares it on every GPU type and count it tries
    def total(self) -> int:
        """The figure that must fit in the GPU's usable memory: device_bytes."""
        return self.device_bytes

    def components(self) -> dict[str, int]:
        """The six components by name, keyed as in the plan JSON's `memory.components`."""
        return {
            "weights": self.weights,
            "gradients": self.gradients,
            "optimizer": self.optimizer,
            "activations": self.activations,
            "kv_cache": self.kv_cache,
            "overhead": self.overhead,
        }

    def statistics(self) -> dict[str, int]:
        """The three measured statistics, keyed as in the plan JSON's `memory`."""
        stats = {"allocated_bytes": self.allocated_bytes, "reserved_bytes": self.reserved_bytes,
                 "device_bytes": self.device_bytes}
        # Only where they apply, so plans without them keep their keys.
        if self.paged_bytes:
            stats["paged_optimizer_bytes"] = self.paged_bytes
        if self.host_bytes:
            stats["host_bytes"] = self.host_bytes
        if self.cached_bytes:
            stats["reserved_ample_bytes"] = self.reserved_bytes + self.cached_bytes
        return stats


    def phase_fields(self) -> dict:
        """The plan JSON's `memory.phases`, only where the phase rule applies (phases.py)."""
        if self.phases is None:
            return {}
        p = self.phases
        fields = {"peak": p.peak, "loss_allocated_bytes": p.loss_bytes, "backward_allocated_bytes": p.backward_bytes,
                  "gradients_bytes": p.gradients}
        if p.step_bytes:
            fields["step_allocated_bytes"] = p.step_bytes
        return {"phases": fields}


def overhead_bytes(allocated: int, overhead: Overhead) -> tuple[int, int]:
    """(allocator reserve, CUDA context): allocator_reserve × allocated bytes (rounded up once), the context as given."""
    if overhead.cuda_context_bytes < 0 or overhead.allocator_reserve < 0:
        raise ValueError("overhead: expected non-negative cuda_context_bytes and allocator_reserve")
    return _share(allocated, overhead.allocator_reserve), overhead.cuda_context_bytes


def _share(allocated: int, share: float) -> int:
    """⌈allocated × share⌉ in integers (-(-a // b) is the ceiling of a / b)."""
    f = fraction(share)
    return -(-allocated * f.numerator // f.denominator)


def cached_bytes(allocated: int, overhead: Overhead) -> int:
    """CPU offload's pool beyond the reserve a fit needs, where memory is free: ⌈allocated × ample_reserve⌉ less
    the reserve (0 in the other regimes)."""
    if not overhead.ample_reserve:
        return 0
    return max(0, _share(allocated, overhead.ample_reserve) - _share(allocated, overhead.allocator_reserve))


OVERHEAD = "overhead"    # the note stating Overhead's two figures (render/notes.py words it)


@memo
def overhead_note(overhead: Overhead) -> Note:
    # The regimes of more than one GPU and of CPU offload take GMLake's figures (above).
    sources = ("guo-2024",) if overhead.regime != DEFAULT_OVERHEAD.regime else ()
    extra = {"ample_reserve": overhead.ample_reserve} if overhead.ample_reserve else {}
    return note(OVERHEAD, sources, cuda_context_bytes=overhead.cuda_context_bytes,
                allocator_reserve=overhead.allocator_reserve, regime=overhead.regime, **extra)


# The notes that state a moment of the step in bytes (phases.py): their figures are carried as the components are.
MOMENT_NOTES = ("peak-phase", "optimizer-step", "tied-embeddings-end", "chunked-head-accumulation")
_MOMENT_FIELDS = ("allocated_bytes", "loss_bytes", "backward_bytes")
# The notes that state the figures beside the total (paged and host memory: model_states.py), carried alike.
STATE_NOTES = ("paged-optimizer", "optimizer-offloaded", "params-offloaded")


def as_printed(m: MemoryBreakdown, overhead: Overhead | None) -> MemoryBreakdown:
    """The breakdown as the plan carries it and the documents print it (issue 23: every figure from the printed
    ones): each component rounded up to 0.01 GiB (units.memory_carried), the caching allocator's reserve
    `overhead`'s share of the printed allocated figure, rounded up (units.memory_share), so the allocated,
    reserved and device figures and the total are sums of printed components, a reader who adds them gets the
    printed total, and the fit compares that total (never below the exact one). `overhead` None: the breakdown's
    own reserve, carried (a pre-allocating engine's, 0). The moments the notes state are carried alike, the
    counted one as the allocated figure."""
    parts = {k: memory_carried(getattr(m, k)) for k in ("weights", "gradients", "optimizer", "activations",
                                                          "kv_cache")}
    allocated = sum(parts.values())
    if overhead is None:
        reserve, cached = memory_carried(m.allocator_reserve), memory_carried(m.cached_bytes)
    else:
        reserve = memory_share(allocated, overhead.allocator_reserve)
        cached = max(0, memory_share(allocated, overhead.ample_reserve) - reserve) if overhead.ample_reserve else 0

    def moment(n_bytes: int) -> int:
        return allocated if n_bytes == m.allocated_bytes else memory_carried(n_bytes)

    phases = m.phases
    if phases is not None:
        phases = replace(phases, loss_bytes=moment(phases.loss_bytes), backward_bytes=moment(phases.backward_bytes),
                         gradients=memory_carried(phases.gradients),
                         step_bytes=moment(phases.step_bytes) if phases.step_bytes else 0)

    def carried(kind: str, key: str, value):
        if not key.endswith("_bytes") or isinstance(value, bool) or not isinstance(value, (int, float)):
            return value
        value = math.ceil(value)
        carried_value = moment(value) if kind in MOMENT_NOTES and key in _MOMENT_FIELDS else memory_carried(value)
        return float(carried_value) if isinstance(value, float) else carried_value

    notes = tuple(Note(n.kind, tuple((k, carried(n.kind, k, v)) for k, v in n.values), n.sources)
                  if n.kind in MOMENT_NOTES + STATE_NOTES else n for n in m.notes)
    return MemoryBreakdown(**parts, allocator_reserve=reserve, cuda_context=memory_carried(m.cuda_context),
                           notes=notes, paged_bytes=memory_carried(m.paged_bytes),
                           host_bytes=memory_carried(m.host_bytes), cached_bytes=cached, phases=phases,
                           estimated=m.estimated or m)
