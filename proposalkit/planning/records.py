"""The planner's records: what render and review read, and nothing they recompute.

Frozen dataclasses (Candidate is a NamedTuple, for speed) made by
``planner.plan_files``; every default the planner filled in and every rule it
applied is in them, as an assumption or a derivation string.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ..catalog import GPUSpec
from ..estimate.checkpointing import DEFAULT_SELECTIVE_POLICY
from ..estimate.cross_checks import CrossCheck
from ..estimate.flops import FlopsPerToken
from ..catalog.modules import LoraSpec
from ..estimate.memory import MemoryBreakdown
from ..catalog.shapes import ModelSpec
from ..estimate.storage import StorageTotals, WorkloadStorage, storage_totals
from ..input.schema import Proposal
from .pilots import Comparison, Scaling
from ..catalog.resources import CreditTier, Resource, WalltimeTier


@dataclass(frozen=True)
class Settings:
    """What the planner used for a workload, user-given or filled in."""

    precision: str
    buffer: float
    variants: int
    seq_len: int | None
    micro_batch: int
    optimizer: str
    tensor_parallel: int
    pipeline_parallel: int
    zero_stage: int | None
    activation_checkpointing: bool | str | None     # False, True (full), "selective", None: the planner chooses
    flash_attention: bool
    lora: LoraSpec | None
    context: int | None
    batch: int | None
    concurrency: int
    checkpoints_retained: int
    expert_parallel: int = 1
    loss: str = "standard"          # training: standard | chunked | fused (estimate/loss.py)
    mixed_precision: bool = True        # fp32 master weights (false: pure 16-bit training)
    optimizer_in_backward: bool = False
    offload_optimizer: bool = False
    offload_params: bool = False
    optimizer_impl: str = "torch"       # estimate/model_states.py OPTIMIZER_IMPLS (set by framework presets)
    # Which selective-checkpointing policy (estimate/checkpointing.py); a framework preset may set "op".
    selective_policy: str = DEFAULT_SELECTIVE_POLICY
    activation_offload: bool = False
    context_parallel: int = 1
    framework: str | None = None     # the workload's `framework` (its preset is already in the other settings)
    attention: str = "flash"        # inference: flash | sdpa | eager (estimate/activations.py)
    # Training without FlashAttention: the softmax in fp32 (eager PyTorch); a Megatron preset may set False
    # (its fused 16-bit softmax kernel).
    softmax_fp32: bool = True
    # Tensor parallelism with sequence parallelism (Korthikanti §4.2.2); a deepspeed preset sets False (frameworks.py).
    sequence_parallel: bool = True
    autocast_fp32_params: bool = False   # HF Trainer AMP: autocast over fp32 parameters (frameworks.py)
    kernels: str = "eager"     # training: eager | compiled | fused (estimate/memory.py TrainingSetup.kernels)
    gradient_accumulation_steps: int | None = None   # training: None when the workload does not say (estimate/phases.py)


class Candidate(NamedTuple):
    """One GPU type × count the planner considered.

    An immutable record like the frozen dataclasses here, but a NamedTuple: the
    choice makes one per GPU type × count tried, and a tuple is several times
    cheaper to create.
    """

    gpu: str
    count: int
    fits: bool
    per_gpu_bytes: int
    usable_bytes: int
    gpu_hours_requested: float | None
    zero_stage: int | None
    activation_checkpointing: bool | str | None
    extrapolated: bool
    reason: str = ""
    cost: float | None = None       # what the choice compared: the target resource's unit, else requested GPU-hours
    cost_unit: str = "GPU-hours"
    idle_gpus: int = 0              # GPUs of the whole nodes charged that it leaves idle (node-hour resources)


@dataclass(frozen=True)
class Throughput:
    tokens_per_second: float | None
    source: str                 # "pilot" | "pilot-extrapolated" | "flops" | "service"
    derivation: str
    mfu: float | None = None
    mfu_source: str | None = None
    flops_per_token: FlopsPerToken | None = None
    mfu_base: float | None = None   # MFU without recompute, when `mfu` charges activation checkpointing's recompute


@dataclass(frozen=True)
class InferencePlan:
    """What an inference workload's estimate used and gave (planning/inference.py).

    `mode`: "batch" (requests of input + output tokens), "rate" (a service sized by
    request_rate and latency targets) or "hours" (a service of `batch` sequences kept up
    `hours`). Rates are per replica unless named `_all`; `steps` is the arithmetic written
    out, (label, text), for the report.
    """

    mode: str
    engine: str                         # vllm | sglang | trt-llm | hf
    engine_source: str                  # the published measurement the engine's factors came from
    tensor_parallel: int
    replicas: int
    batch: int                          # concurrent sequences per replica
    max_concurrency: int                # sequences of `context` tokens the KV cache holds, per replica
    context: int                        # tokens per sequence (input + output)
    input_tokens: int | None
    output_tokens: int | None
    requests: int | None
    prefill_tokens_per_second: float | None    # one replica (None: the engine's speed is not modelled)
    output_tokens_per_second: float | None     # all replicas
    ttft_ms: float | None
    tpot_ms: float | None
    request_rate: float | None          # requests per second the replicas sustain together
    steps: tuple[tuple[str, str], ...] = ()
    ttft_percentile: float | None = None    # a service by load: the percentile ttft_ms is (99: p99)


@dataclass(frozen=True)
class WorkloadPlan:
    name: str
    kind: str
    method: str | None
    description: str | None
    model: ModelSpec
    gpu: GPUSpec
    gpu_count: int
    memory: MemoryBreakdown
    zero_stage: int | None
    activation_checkpointing: bool | None
    settings: Settings
    tokens: int
    tokens_derivation: str
    throughput: Throughput
    runtime_hours: float
    gpu_hours: float
    gpu_hours_requested: float
    trainable_params: int | None
    alternatives: tuple[Candidate, ...]
    cross_checks: tuple[CrossCheck, ...]
    assumptions: tuple[str, ...]
    warnings: tuple[str, ...]
    path: str
    charge: Charge | None = None
    storage: WorkloadStorage | None = None     # estimate/storage.py's record, as the planner made it
    calendar_days: float = 0.0
    calendar_waves: int = 1                     # ⌈variants ÷ concurrency⌉ runs one after another
    walltime_hours: float | None = None
    walltime_tier: WalltimeTier | None = None   # the catalog's node-range tier that set walltime_hours
    walltime_segments: int = 1
    pilots: tuple[Comparison, ...] = ()         # one per pilot log, in the order written
    pilot_scaling: Scaling | None = None        # two pilots on two GPU counts
    inference: InferencePlan | None = None     # inference workloads planned by the estimate


@dataclass(frozen=True)
class Charge:
    """A job (or a set of identical jobs) converted into a resource's unit."""

    resource_id: str
    resource: Resource          # the catalog's row of the partition charged (name, node size, sources)
    system: str                 # the system it belongs to: its partitions share an allocation
    rule: str                   # the charging rule in words (catalog/resources.describe_rule)
    unit: str
    amount: float               # in `unit`, all jobs together
    arithmetic: str             # the conversion written out for a reviewer
    gpu_type: str
    gpus_per_job: int
    hours_per_job: float        # wall-clock hours the job runs
    hours_charged_per_job: float  # after the minimum charge time
    nodes_per_job: float        # whole nodes, or the node fraction where nodes are shared
    jobs: int
    gpu_hours: float            # GPUs × hours × jobs, before any rounding or factor
    idle_gpus: int = 0          # GPUs of the whole nodes charged that the job leaves idle, per job


@dataclass(frozen=True)
class CapFinding:
    """One limit a plan exceeds: what, the plan's amount and the limit, with the message.

    The plan's warnings print `message`; `check` fails on them (Plan.cap_findings).
    """

    field: str                  # the setting that names the limit: proposal.track | proposal.access_tier
    what: str                   # gpu_hours | resources | jetstream2_sus | calendar_days | access_credits
    amount: float | None        # the plan's figure (None: it cannot be computed)
    limit: float | None
    message: str


@dataclass(frozen=True)
class AccessCredits:
    """A plan's charges in ACCESS Credits (None when a resource has no rate in the catalog)."""

    credits: float | None
    arithmetic: str                 # per resource: amount × rate = credits
    missing: tuple[str, ...]        # resources charged without a known rate
    secondhand: bool                # some rate is not from ACCESS or the provider
    tier: CreditTier | None         # the smallest ACCESS project type that covers them


@dataclass(frozen=True)
class ChargeGroup:
    """The workloads on one resource (partition) and GPU type, their charges summed (a row of the
    report's units table). resource_id None: workloads with no target resource, in requested GPU-hours."""

    resource_id: str | None
    resource: Resource | None   # the catalog's row (None: no target resource)
    rule: str                   # the charging rule in words ("" without a resource)
    system: str                 # the resource's system ("" without one): its partitions share an allocation
    gpu_type: str
    unit: str
    gpu_hours: float            # the charges' GPU-hours (no resource: the requested GPU-hours)
    amount: float               # in `unit`, per-job rounding and minimums applied
    gpus_per_job: tuple[int, ...]
    workloads: tuple[str, ...]
    walltimes: tuple[tuple[float | None, WalltimeTier | None], ...] = ()   # per workload: limit hours, tier


@dataclass(frozen=True)
class SystemTotal:
    """The groups of one system in one unit, summed: partitions of a system add up, systems do not."""

    system: str                 # "" for the workloads with no target resource (GPU-hours)
    unit: str
    gpu_hours: float
    amount: float
    groups: tuple[ChargeGroup, ...]


@dataclass(frozen=True)
class Plan:
    workloads: tuple[WorkloadPlan, ...]
    proposal: Proposal | None
    warnings: tuple[str, ...] = ()
    track: str = "standard"
    access: AccessCredits | None = None    # the charges in ACCESS Credits
    cap_findings: tuple[CapFinding, ...] = ()   # track caps and ACCESS limits exceeded
    access_tier: CreditTier | None = None  # the ACCESS project type the proposal asks for (proposal.access_tier)

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
        return sum(w.calendar_days for w in self.workloads)

    @property
    def gpu_hours(self) -> float:
        return sum(w.gpu_hours for w in self.workloads)

    @property
    def gpu_hours_requested(self) -> float:
        return sum(w.gpu_hours_requested for w in self.workloads)

    def by_gpu_type(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for w in self.workloads:
            out[w.gpu.id] = out.get(w.gpu.id, 0.0) + w.gpu_hours_requested
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
