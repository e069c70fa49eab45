"""The planner's records: what render and review read, and nothing they recompute.

Frozen dataclasses (Candidate is a NamedTuple, for speed) made by
``planner.plan_files``; every default the planner filled in and every rule it
applied is in them, as an assumption (a notes.Note record) or a derivation string.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ..catalog import GPUSpec
from ..knobs import default
from ..estimate.cross_checks import CrossCheck
from ..estimate.flops import FlopsPerToken
from ..catalog.modules import LoraSpec
from ..estimate.memory import MemoryBreakdown
from ..estimate.step_time import StepTime
from ..catalog.shapes import ModelSpec
from ..estimate.storage import StorageTotals, WorkloadStorage, storage_totals
from ..input.schema import Proposal
from ..units import days_total
from ..notes import Note, Reference
from .intervals import Ranges, TotalRange
from .pilots import Comparison, Scaling
from ..catalog.resources import CreditTier, WalltimeTier
# The charge records, read with the rest of the plan's records from here (render/ reads this module).
from .charge_records import AccessCredits, CapFinding, Charge, ChargeGroup, SystemTotal  # noqa: F401


@dataclass(frozen=True)
class Settings:
    """What the planner used for a workload, user-given or filled in.

    Each field is the workload field of the same name (docs/workload-format.md) after
    defaults and the framework preset were applied; the defaults filled in are the
    workload plan's `assumptions`.
    """

    precision: str
    """Weights' number format, one of options.PRECISIONS (a quantized checkpoint's own when served)."""
    buffer: float
    """Contingency on top of the GPU-hours, a fraction (0.3: 30%; with buffer: auto, as the choice resolved it)."""
    variants: int
    """Runs of the workload (a sweep of 10 is 10); GPU-hours are per run × variants."""
    seq_len: int | None
    """Training tokens per sequence (None for inference)."""
    micro_batch: int
    """Training sequences per GPU per forward pass."""
    optimizer: str
    """Training optimizer, one of options.OPTIMIZERS."""
    tensor_parallel: int
    """GPUs a layer's matrices are split over (an inference replica's GPU count)."""
    pipeline_parallel: int
    """Pipeline stages the layers are split into."""
    zero_stage: int | None
    """ZeRO/FSDP sharding stage as given (None: the planner chooses; the choice is WorkloadPlan.zero_stage)."""
    activation_checkpointing: bool | str | None
    """As given: False, True (full), "selective", or None (the planner turns it on where needed to fit)."""
    flash_attention: bool
    """Training with FlashAttention (no s×s attention scores kept)."""
    lora: LoraSpec | None
    """LoRA rank and target modules (None: no adapters)."""
    context: int | None
    """Inference: tokens per sequence, input + output."""
    batch: int | None
    """Inference: concurrent sequences per replica."""
    concurrency: int
    """Variants run at once: changes calendar time, not GPU-hours."""
    checkpoints_retained: int
    """Training checkpoints kept on scratch per run."""
    buffer_reason: str | None = default("buffer_reason")
    """Why the buffer is what it is, as the workload states it (None: not stated)."""
    coverage: float | None = default("coverage")
    """buffer: auto: the share of validated cases the request covers (None: the buffer is a number)."""
    expert_parallel: int = default("expert_parallel")
    """GPUs a mixture of experts' routed experts are split over."""
    loss: str = default("loss")
    """Training loss computation: standard, chunked, fused or transformers-4.37 (estimate/loss.py)."""
    mixed_precision: bool = default("mixed_precision")
    """Training keeps fp32 master weights (False: pure 16-bit training)."""
    optimizer_in_backward: bool = default("optimizer_in_backward")
    """Each parameter's optimizer step runs in the backward pass, its gradient freed at once."""
    offload_optimizer: bool = default("offload_optimizer")
    """Optimizer states offloaded to CPU memory (ZeRO-Offload, FSDP CPUOffload)."""
    offload_params: bool = default("offload_params")
    """Parameters offloaded to CPU memory."""
    optimizer_impl: str = default("optimizer_impl")
    """Who holds the optimizer's states and gradients (estimate/model_states.py OPTIMIZER_IMPLS; set by framework
    presets)."""
    selective_policy: str = default("selective_policy")
    """Which selective-checkpointing policy (estimate/checkpointing.py); a framework preset may set "op"."""
    activation_offload: bool = default("activation_offload")
    """Saved activations offloaded to CPU memory."""
    context_parallel: int = default("context_parallel")
    """GPUs a sequence's tokens are split over (ring attention)."""
    price_per_hour: float | None = default("price_per_hour")
    """Dollars per instance-hour on a cloud resource, the workload's or its proposal's (None: the catalog's)."""
    framework: str | None = default("framework")
    """The workload's `framework` (its preset is already in the other settings)."""
    attention: str = default("attention")
    """Inference attention kernel: flash, sdpa or eager (estimate/activations.py)."""
    softmax_fp32: bool = default("softmax_fp32")
    """Training without FlashAttention: the softmax in fp32 (eager PyTorch); a Megatron preset may set False
    (its fused 16-bit softmax kernel)."""
    sequence_parallel: bool = default("sequence_parallel")
    """Tensor parallelism with sequence parallelism (Korthikanti §4.2.2); a deepspeed preset sets False."""
    autocast_fp32_params: bool = default("autocast_fp32_params")
    """HF Trainer AMP: autocast over fp32 parameters (input/frameworks.py)."""
    kernels: str = default("kernels")
    """Training kernels: eager, compiled or fused (estimate/memory.py TrainingSetup.kernels)."""
    gradient_accumulation_steps: int | None = default("gradient_accumulation_steps")
    """Training: micro-batches per optimizer step; None when the workload does not say (estimate/phases.py)."""
    optimizer_step_temporary: str = default("optimizer_step_temporary")
    """What the optimizer step allocates beside the model states: "foreach" (torch's foreach AdamW) or "none"."""
    frees_gradients_between_steps: bool = default("frees_gradients_between_steps")
    """The gradients are freed after each optimizer step (False: the framework keeps its gradient buffers)."""
    data_parallel_impl: str = default("data_parallel_impl")
    """How data parallelism holds gradients: "ddp" (buckets kept across steps) or "fsdp2" (fully_shard)."""
    fsdp_fp32_params: bool = default("fsdp_fp32_params")
    """FSDP2's mixed-precision policy over fp32 sharded parameters (fp32 gradient reduce, fp32 checkpoints)."""
    offload_under_zero: bool = default("offload_under_zero")
    """Optimizer offload runs only under ZeRO stages 1-3 (DeepSpeed's offload_optimizer)."""
    flag_sources: tuple[tuple[str, str], ...] = ()
    """(flag, source): where the workload's framework does what each behaviour flag it set says."""


class Candidate(NamedTuple):
    """One GPU type × count the planner considered (WorkloadPlan.alternatives).

    An immutable record like the frozen dataclasses here, but a NamedTuple: the
    choice makes one per GPU type × count tried, and a tuple is several times
    cheaper to create.
    """

    gpu: str
    """The GPU type's catalog id."""
    count: int
    """GPUs per run."""
    fits: bool
    """Whether the workload's memory per GPU fits the GPU's usable memory."""
    per_gpu_bytes: int
    """Memory per GPU the workload needs on this configuration."""
    usable_bytes: int
    """The GPU's usable memory."""
    gpu_hours_requested: float | None
    """What it would request, buffer included (None: not costed)."""
    zero_stage: int | None
    """The ZeRO stage it was tried with."""
    activation_checkpointing: bool | str | None
    """The activation checkpointing it was tried with."""
    extrapolated: bool
    """Its throughput would be extrapolated from a pilot on another GPU type or count."""
    reason: str = ""
    """Why it was not chosen, in words."""
    cost: float | None = None
    """What the choice compared: the target resource's unit, else requested GPU-hours."""
    cost_unit: str = "GPU-hours"
    """The unit of `cost`."""
    idle_gpus: int = 0
    """GPUs of the whole nodes charged that it leaves idle (node-hour resources)."""


@dataclass(frozen=True)
class Throughput:
    """How fast a training run or batch job goes, and where the figure came from."""

    tokens_per_second: float | None
    """All GPUs of a run together (None: a service, sized by its hours)."""
    source: str
    """"pilot" (measured), "pilot-extrapolated" (measured on another GPU type or count), "flops" (FLOPs at an
    MFU) or "service"."""
    derivation: str
    """The figure's arithmetic, for the report."""
    mfu: float | None = None
    """Model-FLOPs utilization assumed (source "flops"), recompute of activation checkpointing included."""
    mfu_source: str | None = None
    """Where the MFU came from."""
    flops_per_token: FlopsPerToken | None = None
    """The FLOPs per token the rate divides (source "flops")."""
    mfu_base: float | None = None
    """MFU without recompute, when `mfu` charges activation checkpointing's recompute."""
    sources: tuple[str, ...] = ()
    """The reference ids the derivation cites: the MFU's source and the FLOPs terms' (estimate/flops.py)."""
    step: StepTime | None = None
    """The step's parts (estimate/step_time.py) where the rate is timed from them (no MFU given); `mfu` is then
    the utilization they imply."""
    summary: str = ""
    """With `step`: the rate in one line (planning/derivation.py step_summary); `derivation` writes the parts out."""
    carried: tuple[tuple[str, str], ...] = ()
    """A training pilot carried to other GPUs (source "pilot-extrapolated", planning/speed.py carried_throughput):
    (label, the modelled step written out) on the planned GPUs and on the pilot's, whose rates' ratio carries it."""


@dataclass(frozen=True)
class InferencePlan:
    """What an inference workload's estimate used and gave (planning/inference.py).

    Rates are per replica unless named `_all`.
    """

    mode: str
    """"batch" (requests of input + output tokens), "rate" (a service sized by request_rate and latency
    targets) or "hours" (a service of `batch` sequences kept up `hours`)."""
    engine: str
    """The serving engine: vllm, sglang, trt-llm or hf."""
    engine_source: str
    """The published measurement the engine's factors came from."""
    tensor_parallel: int
    """GPUs per replica."""
    replicas: int
    """Copies of the model serving at once."""
    batch: int
    """Concurrent sequences per replica."""
    max_concurrency: int
    """Sequences of `context` tokens the KV cache holds, per replica."""
    context: int
    """Tokens per sequence (input + output)."""
    input_tokens: int | None
    """Prompt tokens per request."""
    output_tokens: int | None
    """Generated tokens per request."""
    requests: int | None
    """Requests of a batch job."""
    prefill_tokens_per_second: float | None
    """Prompt tokens one replica reads per second (None: the engine's speed is not modelled)."""
    output_tokens_per_second: float | None
    """Tokens generated per second, all replicas."""
    ttft_ms: float | None
    """Time to first token, milliseconds (at `ttft_percentile` for a service by load)."""
    tpot_ms: float | None
    """Time per output token after the first, milliseconds."""
    request_rate: float | None
    """Requests per second the replicas sustain together."""
    steps: tuple[tuple[str, str], ...] = ()
    """The arithmetic written out, (label, text), for the report."""
    ttft_percentile: float | None = None
    """A service by load: the percentile `ttft_ms` is (99: p99)."""
    sources: tuple[str, ...] = ()
    """The reference ids `steps` and `engine_source` cite (catalog/references.py)."""
    rate_per_replica_max: float | None = None
    """A service by load: the most requests per second one replica sustains within the targets."""
    ttft_target_ms: float | None = None
    """A service by load: the workload's time-to-first-token target (`ttft_ms`), at `ttft_percentile`."""
    tpot_target_ms: float | None = None
    """A service by load: the workload's time-per-output-token target (`tpot_ms`)."""


@dataclass(frozen=True)
class DataSize:
    """A training set as the workload's `data` gives it: tokens = samples × seq_len × epochs."""

    samples: int
    seq_len: int
    epochs: float


@dataclass(frozen=True)
class WorkloadPlan:
    """One workload planned: the GPU chosen, memory per GPU, tokens, runtime, GPU-hours and charge."""

    name: str
    """The workload's `name`."""
    kind: str
    """finetune, pretrain or inference."""
    method: str | None
    """Training: full, lora or qlora (None for inference)."""
    description: str | None
    """The workload's `description`."""
    model: ModelSpec
    """The model's shape and parameter count, with its source."""
    gpu: GPUSpec
    """The GPU type chosen (or pinned), from the catalog with its datasheet figures."""
    gpu_count: int
    """GPUs per run."""
    memory: MemoryBreakdown
    """Bytes per GPU by component; `memory.total` is what must fit."""
    zero_stage: int | None
    """The ZeRO/FSDP stage used (given, or chosen so the model states fit)."""
    activation_checkpointing: bool | None
    """Whether activation checkpointing is used (given, or turned on to fit)."""
    settings: Settings
    """Every setting used, given or filled in."""
    tokens: int
    """Tokens one run processes (training: given, or samples × sequence length × epochs; a batch job: the
    tokens generated; a service: 0, costed by hours)."""
    tokens_derivation: str
    """How `tokens` was computed, in words."""
    throughput: Throughput
    """Tokens per second and where the figure came from."""
    runtime_hours: float
    """Wall-clock hours of one run."""
    gpu_hours: float
    """runtime_hours × gpu_count × variants."""
    gpu_hours_requested: float
    """gpu_hours × (1 + buffer): what the proposal asks for."""
    trainable_params: int | None
    """Parameters trained (LoRA: the adapters'; None for inference or a pilot-sized model)."""
    alternatives: tuple[Candidate, ...]
    """The other GPU types and counts considered, each with why it was not chosen."""
    cross_checks: tuple[CrossCheck, ...]
    """Published rules of thumb for the memory, computed beside the estimate."""
    assumptions: tuple[Note, ...]
    """Every default filled in and rule applied, one record each (notes.Note: kind, values, source ids;
    render/notes.note_text words it)."""
    warnings: tuple[str, ...]
    """What a reviewer should look at (a throughput not measured, a pilot far from the estimate, …)."""
    path: str
    """The workload file it came from (plan(text=...): "<string>", plan(data=...): "<dict>", or `name`)."""
    charge: Charge | None = None
    """The charge on the target resource (None: no resource targeted)."""
    storage: WorkloadStorage | None = None
    """Checkpoints, datasets and final weights, in bytes."""
    calendar_days: float = 0.0
    """Days from first run to last, ⌈variants ÷ concurrency⌉ waves one after another (no queue wait)."""
    calendar_waves: int = 1
    """⌈variants ÷ concurrency⌉ runs one after another."""
    walltime_hours: float | None = None
    """The resource's job walltime limit for this GPU count (None: no resource, or no limit)."""
    walltime_tier: WalltimeTier | None = None
    """The catalog's node-range tier that set walltime_hours."""
    walltime_segments: int = 1
    """Consecutive jobs a run takes under the walltime limit: ⌈runtime_hours ÷ walltime_hours⌉."""
    pilots: tuple[Comparison, ...] = ()
    """Each pilot log beside the estimate, in the order written."""
    pilot_scaling: Scaling | None = None
    """Two pilots on two GPU counts: the scaling measured between them."""
    inference: InferencePlan | None = None
    """What an inference workload's estimate used and gave (None for training)."""
    sources: tuple[str, ...] = ()
    """The reference ids its warnings cite (its notes, throughput, storage, cross-checks and inference plan
    name their own)."""
    extrapolation: str | None = None
    """The workload's `extrapolation`: how a pilot on another GPU type carries over, as the researcher states it."""
    ranges: Ranges | None = None
    """Low / likely / high of its estimates, where each comes from, and its request's coverage (ranges.py)."""
    data: DataSize | None = None
    """The workload's `data` (samples, sequence length, epochs) where its tokens were counted from it."""


@dataclass(frozen=True)
class Plan:
    """Every workload planned, with the totals, limits and credits checked over them (what proposalkit.plan returns)."""

    workloads: tuple[WorkloadPlan, ...]
    """One plan per workload, in the order of the files and of each file's `workloads`."""
    proposal: Proposal | None
    """The `proposal` block (title, track, resource, access_tier) of the first file that has one."""
    warnings: tuple[str, ...] = ()
    """The workloads' warnings, then the limits exceeded (the cap_findings' messages)."""
    track: str = "standard"
    """The NAIRR Pilot track whose caps were checked (proposal.track; standard when not given)."""
    access: AccessCredits | None = None
    """The charges in ACCESS Credits."""
    cap_findings: tuple[CapFinding, ...] = ()
    """Track caps and ACCESS limits exceeded."""
    access_tier: CreditTier | None = None
    """The ACCESS project type the proposal asks for (proposal.access_tier)."""
    references: tuple[Reference, ...] = ()
    """The works the records cite, each once, in the catalog's order (planning/citations.py): the supplement's S.6."""
    total_range: TotalRange | None = None
    """The whole request's GPU-hours range and coverage, the workloads fully correlated (intervals.total)."""
    period_months: float = 12.0
    """The track's allocation period in months (12 standard, 3 Start-Up): what a dollar request is over."""

    def cloud_charges(self) -> tuple[Charge, ...]:
        """The charges in US dollars (cloud instance types, at their price per instance-hour), in order."""
        return tuple(w.charge for w in self.workloads if w.charge is not None and w.charge.resource.is_cloud)

    def by_resource(self) -> dict[str, tuple[str, float]]:
        """Resource (partition) id → (unit, amount), summed over workloads."""
        out: dict[str, tuple[str, float]] = {}
        for w in self.workloads:
            if w.charge is not None:
                unit, amount = out.get(w.charge.resource_id, (w.charge.unit, 0.0))
                out[w.charge.resource_id] = (unit, amount + w.charge.amount)
        return out

    def storage_totals(self) -> StorageTotals:
        """Project, scratch and archive bytes over the workloads (estimate/storage.py)."""
        return storage_totals(w.storage for w in self.workloads if w.storage is not None)

    @property
    def calendar_days(self) -> float:
        """Campaign days if the workloads run one after another (an upper bound)."""
        return days_total(w.calendar_days for w in self.workloads)

    @property
    def gpu_hours(self) -> float:
        """GPU-hours of every workload, before the buffer."""
        return sum(w.gpu_hours for w in self.workloads)

    @property
    def gpu_hours_requested(self) -> float:
        """GPU-hours requested, buffers included: the plan's total."""
        return sum(w.gpu_hours_requested for w in self.workloads)

    def by_gpu_type(self, requested: bool = True) -> dict[str, float]:
        """GPU type → requested GPU-hours (`requested=False`: before the buffer), summed over workloads."""
        out: dict[str, float] = {}
        for w in self.workloads:
            out[w.gpu.id] = out.get(w.gpu.id, 0.0) + (w.gpu_hours_requested if requested else w.gpu_hours)
        return out

    def charge_groups(self) -> tuple[ChargeGroup, ...]:
        """The workloads by (resource, GPU type), charges summed; those with no target resource last."""
        keyed: dict[tuple[str | None, str], list[WorkloadPlan]] = {}
        for w in self.workloads:
            key = (w.charge.resource_id, w.charge.gpu_type) if w.charge is not None else (None, w.gpu.id)
            keyed.setdefault(key, []).append(w)
        out = []
        for (rid, gpu), ws in sorted(keyed.items(), key=lambda item: item[0][0] is None):   # stable
            names = tuple(w.name for w in ws)
            if rid is None:
                hours = sum(w.gpu_hours_requested for w in ws)
                out.append(ChargeGroup(None, None, "", "", gpu, "GPU-hours", hours, hours, (), names))
            else:
                first = ws[0].charge
                out.append(ChargeGroup(rid, first.resource, first.rule, first.system, gpu, first.unit,
                                       sum(w.charge.gpu_hours for w in ws), sum(w.charge.amount for w in ws),
                                       tuple(w.charge.gpus_per_job for w in ws), names,
                                       tuple((w.walltime_hours, w.walltime_tier) for w in ws)))
        return tuple(out)

    def system_totals(self) -> tuple[SystemTotal, ...]:
        """charge_groups summed per (system, unit), in order of first use."""
        keyed: dict[tuple[str, str], list[ChargeGroup]] = {}
        for group in self.charge_groups():
            keyed.setdefault((group.system, group.unit), []).append(group)
        return tuple(SystemTotal(system, unit, sum(g.gpu_hours for g in groups), sum(g.amount for g in groups),
                                 tuple(groups)) for (system, unit), groups in keyed.items())
