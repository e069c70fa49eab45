"""Workload × catalogs → Plan: the GPU choice, tokens, runtime and GPU-hours.

Pure: takes validated workloads (loading.py) and the catalogs, returns frozen
dataclasses. Every default the planner fills in and every rule it applies is
recorded as an assumption, so the report can print it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import NamedTuple

from .. import catalog
from ..catalog import GPUSpec
from ..estimate.flops import (
    DEFAULT_MFU, DEFAULT_MFU_SOURCE, QLORA_SPEED_FACTOR, QLORA_SPEED_SOURCE,
    FlopsPerToken, flops_throughput, runtime_hours, scale_pilot, training_flops_per_token,
)
from ..errors import InfeasibleError, InputError, Problem
from ..input.loading import LoadedFile, LoadedWorkload
from ..estimate.cross_checks import cross_checks
from ..estimate.lora import LoraSpec, lora_trainable_params
from ..estimate.memory import (
    DEFAULT_OVERHEAD, InferenceSetup, MemoryBreakdown, TrainingSetup, inference_memory, training_memory,
)
from ..estimate.shapes import ModelSpec
from . import resources as res_catalog
from ..estimate import storage as storage_model
from ..units import GiB

DEFAULT_BUFFER = 0.30       # seed 000 / NAIRR community guide: "Add 30% buffer"
# Training sequence length when the workload gives none: the model's context,
# capped, since long-context models (Llama 3.1: 131,072) are not fine-tuned at
# full length by default (torchtune and Hugging Face TRL recipes pack to 2,048-4,096).
DEFAULT_SEQ_LEN = 4096
# GPU counts tried: 1, 2, 4, 8 (within a node), then whole 8-GPU nodes doubling.
CANDIDATE_COUNTS = (1, 2, 4, 8) + tuple(8 * 2**k for k in range(1, 11))


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
    activation_checkpointing: bool | None
    flash_attention: bool
    lora: LoraSpec | None
    context: int | None
    batch: int | None
    concurrency: int
    checkpoints_retained: int


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
    activation_checkpointing: bool | None
    extrapolated: bool
    reason: str = ""
    cost: float | None = None       # what the choice compared: the target resource's unit, else requested GPU-hours
    cost_unit: str = "GPU-hours"


@dataclass(frozen=True)
class Throughput:
    tokens_per_second: float | None
    source: str                 # "pilot" | "pilot-extrapolated" | "flops" | "service"
    derivation: str
    mfu: float | None = None
    mfu_source: str | None = None
    flops_per_token: FlopsPerToken | None = None


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
    cross_checks: tuple
    assumptions: tuple[str, ...]
    warnings: tuple[str, ...]
    path: str
    charge: res_catalog.Charge | None = None
    storage: "StoragePlan | None" = None
    calendar_days: float = 0.0
    walltime_hours: float | None = None
    walltime_segments: int = 1


@dataclass(frozen=True)
class StoragePlan:
    """Storage of one workload (issue 6), bytes; see storage.py for the sources."""

    checkpoint_bytes: int           # one checkpoint a restart reads (full training state; LoRA: adapters)
    checkpoint_arithmetic: str
    final_weights_bytes: int        # what one variant keeps at the end
    dataset_bytes: int              # tokenized dataset (unique tokens, not epochs)
    dataset_raw_bytes: int
    dataset_arithmetic: str
    retained: int
    concurrency: int
    variants: int

    @functools.cached_property   # frozen, so computed once (plan JSON, report and totals ask)
    def peak_scratch_bytes(self) -> int:
        return storage_model.peak_scratch_bytes(self.checkpoint_bytes, self.retained, self.concurrency,
                                                self.dataset_bytes)


@dataclass(frozen=True)
class Plan:
    workloads: tuple[WorkloadPlan, ...]
    proposal: object | None
    warnings: tuple[str, ...] = ()
    track: str = "standard"
    access: res_catalog.AccessCredits | None = None    # the charges in ACCESS Credits
    cap_findings: tuple[res_catalog.CapFinding, ...] = ()   # track caps and ACCESS limits exceeded

    def by_resource(self) -> dict[str, tuple[str, float]]:
        """Resource (partition) id → (unit, amount), summed over workloads."""
        out: dict[str, tuple[str, float]] = {}
        for w in self.workloads:
            if w.charge is not None:
                unit, amount = out.get(w.charge.resource_id, (w.charge.unit, 0.0))
                out[w.charge.resource_id] = (unit, amount + w.charge.amount)
        return out

    def storage_totals(self) -> storage_model.StorageTotals:
        return storage_model.storage_totals(
            storage_model.WorkloadStorage(
                name=w.name, checkpoint_bytes=w.storage.checkpoint_bytes,
                final_weights_bytes=w.storage.final_weights_bytes,
                dataset_tokenized_bytes=w.storage.dataset_bytes, dataset_raw_bytes=w.storage.dataset_raw_bytes,
                retained=w.storage.retained, concurrency=w.storage.concurrency, variants=w.storage.variants)
            for w in self.workloads if w.storage is not None)

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


# ----------------------------------------------------------------- settings

def _settings(w, model: ModelSpec, notes: list[str]) -> Settings:
    seq_len = w.seq_len or (w.data.seq_len if w.data else None)
    if seq_len is None and w.kind != "inference":
        seq_len = min(model.max_context or DEFAULT_SEQ_LEN, DEFAULT_SEQ_LEN)
        notes.append(f"sequence length {seq_len:,} tokens (not given: the model's maximum context, "
                     f"capped at {DEFAULT_SEQ_LEN:,}; set seq_len or data.seq_len)")
    lora = None
    if w.method in ("lora", "qlora"):
        given = w.lora
        rank = given.rank if given else 16
        targets = tuple(given.targets) if given else ("q_proj", "k_proj", "v_proj", "o_proj")
        lora = LoraSpec(rank=rank, targets=targets)
        if given is None:
            notes.append("LoRA rank 16 on the attention projections q, k, v, o (planner default; set lora: {rank, targets})")
    buffer = DEFAULT_BUFFER if w.buffer is None else w.buffer
    if w.buffer is None:
        notes.append("contingency buffer 30% (default; NAIRR community guide: 20–30% for retries, sweeps, profiling)")
    if w.storage is None and w.kind != "inference":
        notes.append("3 checkpoints kept on scratch per run (planner default; set storage: {checkpoints_retained})")
    flash = True if w.flash_attention is None else w.flash_attention
    if w.flash_attention is None and w.kind != "inference":
        notes.append("FlashAttention on (current training recipes; Dao et al. 2022): no s² attention activations")
    return Settings(
        precision=w.precision or "bf16",
        buffer=buffer,
        variants=w.variants or 1,
        seq_len=seq_len,
        micro_batch=w.micro_batch or 1,
        optimizer=w.optimizer or "adamw",
        tensor_parallel=w.tensor_parallel or 1,
        pipeline_parallel=w.pipeline_parallel or 1,
        zero_stage=w.zero_stage,
        activation_checkpointing=w.activation_checkpointing,
        flash_attention=flash,
        lora=lora,
        context=w.context,
        batch=w.batch or 1,
        concurrency=w.concurrency or 1,
        checkpoints_retained=w.storage.checkpoints_retained if w.storage else 3,
    )


def _tokens(w) -> tuple[int, str]:
    if w.kind == "inference" and w.tokens is None:
        return 0, f"service kept up {w.hours:,.0f} h (costed by hours, not tokens)"
    if w.tokens is not None:
        return w.tokens, f"{w.tokens:,} tokens (given)"
    d = w.data
    tokens = round(d.samples * d.seq_len * d.epochs)
    return tokens, f"{d.samples:,} samples × {d.seq_len:,} tokens × {d.epochs:g} epochs = {tokens:,} tokens"


# ----------------------------------------------------------------- memory

def _memory(model: ModelSpec, w, s: Settings, count: int, zero_stage: int, checkpointing: bool) -> MemoryBreakdown:
    if w.kind == "inference":
        # Quantized weights still keep a 16-bit KV cache (vLLM's default kv_cache_dtype "auto").
        kv = s.precision if s.precision in ("fp32", "fp16") else "bf16"
        setup = InferenceSetup(context=s.context, batch=s.batch, precision=s.precision, kv_precision=kv,
                               tensor_parallel=count)
        return inference_memory(model, setup, DEFAULT_OVERHEAD)
    method = w.method or "full"
    model_parallel = s.tensor_parallel * s.pipeline_parallel
    setup = TrainingSetup(method=method, seq_len=s.seq_len, micro_batch=s.micro_batch,
                          precision="bf16" if method == "qlora" else s.precision,
                          optimizer=s.optimizer, data_parallel=count // model_parallel, zero_stage=zero_stage,
                          tensor_parallel=s.tensor_parallel, pipeline_parallel=s.pipeline_parallel,
                          activation_checkpointing=checkpointing, flash_attention=s.flash_attention, lora=s.lora)
    return training_memory(model, setup, DEFAULT_OVERHEAD)


def _fit(model: ModelSpec, w, s: Settings, gpu: GPUSpec, count: int, cache: dict):
    """The first setting (no checkpointing before checkpointing, lower ZeRO
    stage first) under which the workload fits on `count` GPUs of `gpu`;
    else the smallest-memory setting, marked as not fitting.

    Memory does not depend on the GPU type, so `cache` (one per workload)
    keeps each (count, stage, checkpointing) breakdown for every type."""

    def memory(stage: int, ckpt: bool) -> MemoryBreakdown:
        key = (count, stage, ckpt)
        if key not in cache:
            cache[key] = _memory(model, w, s, count, stage, ckpt)
        return cache[key]

    if w.kind == "inference":
        mem = memory(0, False)
        return mem.total <= gpu.usable_memory_bytes, mem, None, None
    model_parallel = s.tensor_parallel * s.pipeline_parallel
    dp = count // model_parallel
    stages = [s.zero_stage] if s.zero_stage is not None else ([0, 1, 2, 3] if dp > 1 else [0])
    ckpts = [s.activation_checkpointing] if s.activation_checkpointing is not None else [False, True]
    smallest = None
    for ckpt in ckpts:
        for stage in stages:
            mem = memory(stage, ckpt)
            if mem.total <= gpu.usable_memory_bytes:
                return True, mem, stage, ckpt
            if smallest is None or mem.total < smallest[0].total:
                smallest = (mem, stage, ckpt)
    return False, smallest[0], smallest[1], smallest[2]


# ----------------------------------------------------------------- throughput

def _mfu(w, notes: list[str]) -> tuple[float, str]:
    if w.mfu is not None:
        return w.mfu, f"{w.mfu:.2f} given in the workload file"
    if w.method == "qlora":
        mfu = DEFAULT_MFU * QLORA_SPEED_FACTOR
        return mfu, f"{DEFAULT_MFU:.2f} × {QLORA_SPEED_FACTOR:.3f} for NF4 dequantization = {mfu:.3f} ({QLORA_SPEED_SOURCE})"
    return DEFAULT_MFU, DEFAULT_MFU_SOURCE


def _throughput(model: ModelSpec, w, s: Settings, gpu: GPUSpec, count: int, checkpointing: bool | None,
                gpus: dict[str, GPUSpec], mfu: tuple[float, str]) -> Throughput:
    if w.kind == "inference" and w.tokens is None:
        return Throughput(None, "service", f"{w.hours:,.0f} h × {count} GPU{'s' if count > 1 else ''}")
    pilot = w.throughput
    if pilot is not None:
        if pilot.gpu == gpu.id and pilot.gpus == count:
            tps = pilot.tokens_per_second
            return Throughput(tps, "pilot", f"{tps:,.0f} tokens/s measured on {count}× {gpu.id} (pilot)")
        source = gpus[pilot.gpu]
        if w.kind == "inference":
            scaled = scale_pilot(pilot.tokens_per_second, from_gpu=source.id, from_count=pilot.gpus,
                                 from_rate=source.memory_bandwidth, to_gpu=gpu.id, to_count=count,
                                 to_rate=gpu.memory_bandwidth, rate_name="memory bandwidth")
        else:
            scaled = scale_pilot(pilot.tokens_per_second, from_gpu=source.id, from_count=pilot.gpus,
                                 from_rate=source.peak_16bit_flops, to_gpu=gpu.id, to_count=count,
                                 to_rate=gpu.peak_16bit_flops, rate_name="dense 16-bit peak")
        return Throughput(scaled.tokens_per_second, "pilot-extrapolated", scaled.rule)
    fpt = training_flops_per_token(model, w.method or "full", s.seq_len, bool(checkpointing))
    tps = flops_throughput(fpt, count, gpu.peak_16bit_flops, mfu[0])
    derivation = (f"{count} GPU{'s' if count > 1 else ''} × {gpu.peak_16bit_flops / 1e12:,.0f} TFLOP/s × "
                  f"MFU {mfu[0]:.3f} ÷ "
                  f"{fpt.hardware / 1e9:,.2f} GFLOP/token = {tps:,.0f} tokens/s")
    return Throughput(tps, "flops", derivation, mfu[0], mfu[1], fpt)


# ----------------------------------------------------------------- choice

@dataclass(frozen=True)
class _Target:
    """A target resource (system or partition) as the GPU choice sees it."""

    id: str
    partitions: tuple[res_catalog.Resource, ...]

    @property
    def gpus(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(g for r in self.partitions for g in r.gpus))

    def node_sizes(self, gpu: str) -> set[int]:
        return {r.gpus_per_node for r in self.partitions if gpu in r.gpus}

    def takes(self, gpu: str, count: int) -> bool:
        return any(gpu in r.gpus and res_catalog.fits(r, count) for r in self.partitions)

    def charge(self, gpu: str, count: int, hours_per_job: float, jobs: int) -> res_catalog.Charge:
        partition = res_catalog.choose_partition(self.id, gpu, count, hours_per_job)
        return res_catalog.charge(partition, gpu, count, hours_per_job, jobs)


def _target(resource_id: str | None) -> _Target | None:
    if resource_id is None:
        return None
    return _Target(resource_id, res_catalog.resolve(resource_id))


def _candidate_gpus(w, target: _Target | None, gpus: dict[str, GPUSpec]) -> list[GPUSpec]:
    if w.gpu is not None:
        return [gpus[w.gpu]]
    if target is not None:
        return [gpus[g] for g in target.gpus if g in gpus]
    if w.throughput is not None:
        return [gpus[w.throughput.gpu]]
    return list(gpus.values())


def _candidate_counts(w, s: Settings, gpu: GPUSpec, target: _Target | None) -> tuple[int, ...]:
    if w.gpus is not None:
        return (w.gpus,)
    first = w.throughput.gpus if w.throughput is not None and w.throughput.gpu == gpu.id else None
    model_parallel = 1 if w.kind == "inference" else s.tensor_parallel * s.pipeline_parallel
    return _counts(first, model_parallel, gpu.id, target)


@functools.lru_cache(maxsize=512)
def _counts(first: int | None, model_parallel: int, gpu: str, target: _Target | None) -> tuple[int, ...]:
    """The GPU counts tried, in order: the pilot's count first, then ascending."""
    counts = set(CANDIDATE_COUNTS)
    if target is not None:
        # Every count up to a node, then whole nodes (a 3-GPU node takes 1, 2, 3, 6, 12, ...).
        for node in target.node_sizes(gpu):
            counts |= set(range(1, node + 1)) | {node * 2**k for k in range(11)}
        counts = {c for c in counts if target.takes(gpu, c)}
    out = [c for c in ([first] if first is not None else []) + sorted(counts) if c % model_parallel == 0]
    return tuple(dict.fromkeys(out))


def _storage(w, model: ModelSpec, s: Settings, tokens: int, trainable: int | None) -> StoragePlan:
    """Checkpoint, final weights and dataset sizes (storage.py has the sources)."""
    params = model.params
    if w.kind == "inference":
        weights = storage_model.weights_checkpoint_bytes(params, s.precision)
        checkpoint, arithmetic = 0, "no training checkpoints (inference)"
        dataset = raw = 0
        dataset_text = "no training data (inference)"
        return StoragePlan(checkpoint, arithmetic, weights, dataset, raw, dataset_text, 1, s.concurrency,
                           s.variants)
    if w.method in ("lora", "qlora"):
        ckpt = storage_model.lora_checkpoint_size(trainable)
        final = storage_model.weights_checkpoint_bytes(trainable, storage_model.LORA_ADAPTER_PRECISION)
    else:
        ckpt = storage_model.checkpoint_size(params, s.precision, s.optimizer)
        final = ckpt.weights_bytes
    epochs = w.data.epochs if w.data is not None else 1
    unique_tokens = round(tokens / epochs)
    # An unknown vocabulary is assumed above 65,536 ids: 4-byte token ids, the larger choice.
    data = storage_model.dataset_size(unique_tokens, model.vocab or 2**17)
    text = (f"{unique_tokens:,} unique tokens × {data.token_id_bytes} B per token id = {data.tokenized_bytes:,} B "
            f"tokenized; × {data.raw_bytes_per_token:g} B per token ≈ {data.raw_text_bytes:,} B raw text")
    return StoragePlan(ckpt.full_state_bytes, f"{params if w.method not in ('lora', 'qlora') else trainable:,} "
                       f"params × {ckpt.basis}", final, data.tokenized_bytes, data.raw_text_bytes,
                       text, s.checkpoints_retained, s.concurrency, s.variants)


def plan_workload(lw: LoadedWorkload, resource_id: str | None = None) -> WorkloadPlan:
    w, model = lw.spec, lw.model
    gpus = catalog.gpus()
    target = _target(resource_id)
    notes: list[str] = []
    warnings: list[str] = []
    if target is not None and w.gpu is not None and w.gpu not in target.gpus:
        where = f"workloads[{lw.index}].gpu"
        raise InputError([Problem(lw.path, lw.line, where,
                                  f"{w.gpu} is not a GPU of {target.id} (it has {', '.join(target.gpus)}): pin one "
                                  "of those, or target another resource")])
    s = _settings(w, model, notes)
    tokens, tokens_derivation = _tokens(w)
    mfu = _mfu(w, notes) if w.kind != "inference" else (None, None)

    candidates: list[Candidate] = []
    best = None  # (sort key, candidate, mem, throughput, hours, charge)
    memory_cache: dict = {}
    service = w.kind == "inference" and w.tokens is None
    for gpu in _candidate_gpus(w, target, gpus):
        for count in _candidate_counts(w, s, gpu, target):
            fits, mem, stage, ckpt = _fit(model, w, s, gpu, count, memory_cache)
            if not fits:
                candidates.append(Candidate(gpu.id, count, False, mem.total, gpu.usable_memory_bytes,
                                         None, stage, ckpt, False))
                continue
            # A service's cost is its hours, whatever the GPU: its Throughput (a
            # description) is made once, for the chosen configuration.
            tp = None if service else _throughput(model, w, s, gpu, count, ckpt, gpus, mfu)
            hours = w.hours if service else runtime_hours(tokens, tp.tokens_per_second)
            requested = hours * count * s.variants * (1 + s.buffer)
            extrapolated = tp is not None and tp.source == "pilot-extrapolated"
            charge = None
            if target is not None and gpu.id in target.gpus:
                charge = target.charge(gpu.id, count, hours * (1 + s.buffer), s.variants)
            # With a target resource the allocation is charged in its unit, so that is the cost.
            cost = charge.amount if charge is not None else requested
            cand = Candidate(gpu.id, count, True, mem.total, gpu.usable_memory_bytes, requested, stage, ckpt,
                          extrapolated, cost=cost, cost_unit=charge.unit if charge is not None else "GPU-hours")
            candidates.append(cand)
            # A measured pilot beats any extrapolation of it (DESIGN.md): the pilot's own
            # configuration wins whenever it fits; otherwise the cheapest, then fewer GPUs,
            # then the smaller GPU.
            key = (extrapolated, round(cost, 6), count, gpu.usable_memory_bytes)
            if best is None or key < best[0]:
                best = (key, cand, mem, tp, hours, charge)
            # Larger counts of this type cost the same or more (linear scaling); stop here
            # unless checkpointing was needed, when more GPUs may avoid the recompute.
            if not ckpt:
                break

    if best is None:
        raise InfeasibleError([_infeasible_message(lw, candidates, resource_id)])

    _, chosen, mem, tp, hours, charge = best
    gpu = gpus[chosen.gpu]
    if tp is None:
        tp = _throughput(model, w, s, gpu, chosen.count, chosen.activation_checkpointing, gpus, mfu)
    alternatives = _alternatives(candidates, chosen)
    if tp.source == "pilot-extrapolated":
        warnings.append(f"{w.name}: throughput extrapolated from the pilot: {tp.derivation}")
    if tp.source == "flops":
        warnings.append(f"{w.name}: no measured pilot yet; the runtime is estimated from FLOPs at MFU "
                        f"{tp.mfu:.2f} and will be replaced by a measured throughput")
    if w.mfu is not None and w.mfu > 0.6:
        warnings.append(f"{w.name}: MFU {w.mfu:.2f} is above published achieved results (≤ 0.56, "
                        "Korthikanti et al. 2022 Table 3)")
    if s.seq_len and model.max_context and s.seq_len > model.max_context:
        warnings.append(f"{w.name}: sequence length {s.seq_len:,} exceeds {model.id}'s maximum context {model.max_context:,}")
    if s.context and model.max_context and s.context > model.max_context:
        warnings.append(f"{w.name}: context {s.context:,} exceeds {model.id}'s maximum context {model.max_context:,}")
    if w.kind != "inference":
        if w.zero_stage is None and chosen.zero_stage:
            notes.append(f"ZeRO stage {chosen.zero_stage} chosen so the model states fit "
                         f"({chosen.count} GPUs, Rajbhandari et al. 2020)")
        if w.activation_checkpointing is None and chosen.activation_checkpointing:
            notes.append("full activation checkpointing turned on to fit; the recomputed forward pass is "
                         "charged in the runtime")
    if not model.has_architecture:
        notes.append(f"{model.id}: parameter count only; activations and attention FLOPs not modelled")
    trainable = None
    if w.kind != "inference":
        trainable = lora_trainable_params(model, s.lora) if s.lora else model.params

    walltime, segments = None, 1
    if charge is not None:
        partition = res_catalog.resource(charge.resource_id)
        walltime = partition.walltime_limit_hours(chosen.count)
        segments = res_catalog.walltime_segments(hours, walltime)
        warnings += [f"{w.name}: {text}" for text in res_catalog.job_limit_warnings(partition, chosen.count, hours)]
    gpu_hours = hours * chosen.count * s.variants
    return WorkloadPlan(
        name=w.name, kind=w.kind, method=(w.method or "full") if w.kind != "inference" else None,
        description=w.description, model=model, gpu=gpu, gpu_count=chosen.count, memory=mem,
        zero_stage=chosen.zero_stage, activation_checkpointing=chosen.activation_checkpointing,
        settings=s, tokens=tokens, tokens_derivation=tokens_derivation, throughput=tp,
        runtime_hours=hours, gpu_hours=gpu_hours, gpu_hours_requested=gpu_hours * (1 + s.buffer),
        trainable_params=trainable, alternatives=alternatives,
        cross_checks=tuple(cross_checks(model, kind=w.kind, method=w.method or "full", precision=s.precision,
                                        context=s.context if w.kind == "inference" else None)),
        assumptions=tuple(notes + list(mem.notes)), warnings=tuple(warnings), path=lw.path,
        charge=charge, storage=_storage(w, model, s, tokens, trainable),
        calendar_days=res_catalog.calendar_days(hours, s.variants, s.concurrency),
        walltime_hours=walltime, walltime_segments=segments,
    )


def _alternatives(candidates: list[Candidate], chosen: Candidate) -> tuple[Candidate, ...]:
    """Per GPU type, the best candidate (or the largest that did not fit), with why it lost."""
    by_type: dict[str, Candidate] = {}
    for c in candidates:
        if c.gpu == chosen.gpu and c.count == chosen.count:
            continue
        current = by_type.get(c.gpu)
        if c.fits and (current is None or not current.fits or c.cost < current.cost):
            by_type[c.gpu] = c
        elif not c.fits and (current is None or (not current.fits and c.count > current.count)):
            by_type[c.gpu] = c
    out = []
    for c in by_type.values():
        if c.fits:
            if c.extrapolated and not chosen.extrapolated:
                reason = (f"fits on {c.count}× {c.gpu}, but its throughput would be extrapolated from the "
                          "pilot; the measured configuration is preferred")
            elif c.cost > chosen.cost * (1 + 1e-9):
                more = c.cost / chosen.cost - 1
                reason = f"fits on {c.count}× {c.gpu} but costs {more:.0%} more {c.cost_unit}"
                if c.activation_checkpointing:
                    reason += " (needs activation checkpointing: the recompute costs time)"
            else:
                reason = f"fits on {c.count}× {c.gpu} at the same cost; ties go to fewer GPUs, then the smaller GPU"
        else:
            reason = _does_not_fit(c)
        out.append(c._replace(reason=reason))
    return tuple(out)


def _does_not_fit(c: Candidate) -> str:
    return (f"does not fit: needs {c.per_gpu_bytes / GiB:,.1f} GiB per GPU, "
            f"{c.gpu} has {c.usable_bytes / GiB:,.1f} GiB")


def _infeasible_message(lw: LoadedWorkload, candidates: list[Candidate], resource_id: str | None) -> str:
    w = lw.spec
    where = f"{lw.path}:{lw.line}: workloads[{lw.index}]" if lw.line else lw.path
    closest = min(candidates, key=lambda c: c.per_gpu_bytes / c.usable_bytes) if candidates else None
    if closest is None:
        return f"{where}: {w.name}: no GPU configuration to consider"
    msg = (f"{where}: {w.name} does not fit: it needs {closest.per_gpu_bytes / GiB:,.1f} GiB per GPU on "
           f"{closest.count}× {closest.gpu}, which has {closest.usable_bytes / GiB:,.1f} GiB usable")
    relaxed = _relaxed_fit(lw, resource_id) if (w.gpu is not None or w.gpus is not None) else None
    if relaxed:
        msg += f"; it would fit on {relaxed} (remove the gpu/gpus pin, or pin that)"
    elif w.gpu is None and w.gpus is None:
        msg += "; try tensor_parallel, activation_checkpointing: true, or a smaller micro_batch or seq_len"
    return msg


def _relaxed_fit(lw: LoadedWorkload, resource_id: str | None) -> str | None:
    """The configuration the planner would choose with the pins loosened: first the count, then both."""
    w = lw.spec
    tries = [w.model_copy(update={"gpus": None})] if w.gpu is not None and w.gpus is not None else []
    tries.append(w.model_copy(update={"gpus": None, "gpu": None}))
    for spec in tries:
        try:
            p = plan_workload(LoadedWorkload(spec, lw.model, lw.path, lw.line, lw.index), resource_id)
        except InfeasibleError:
            continue
        return f"{p.gpu_count}× {p.gpu.id}"
    return None


def plan_files(files: list[LoadedFile]) -> Plan:
    """Plan every workload of every file; collect all infeasible workloads before raising."""
    plans, problems = [], []
    proposal = next((f.proposal for f in files if f.proposal is not None), None)
    for f in files:
        for lw in f.workloads:
            resource_id = lw.spec.resource or (f.proposal.resource if f.proposal else None)
            try:
                plans.append(plan_workload(lw, resource_id))
            except InfeasibleError as error:
                problems += error.messages
    if problems:
        raise InfeasibleError(problems)
    return assemble(plans, proposal)


def assemble(plans: list[WorkloadPlan], proposal) -> Plan:
    """Workload plans → the Plan: warnings, the track's caps and the ACCESS credits checked once.

    `check` calls it on the workloads that could be planned, so that one infeasible
    workload hides neither the others nor the caps.
    """
    track = (proposal.track if proposal is not None and proposal.track else "standard")
    warnings = [text for p in plans for text in p.warnings]
    plan = Plan(tuple(plans), proposal, (), track)
    used = [p.charge.resource_id for p in plans if p.charge is not None]
    charges = [p.charge for p in plans if p.charge is not None]
    findings = res_catalog.cap_findings(track, plan.gpu_hours_requested, used, plan.calendar_days,
                                        jetstream2_sus=res_catalog.jetstream2_sus(charges))
    access = res_catalog.access_credits(charges, [p.name for p in plans if p.charge is None])
    findings += res_catalog.access_findings(access, proposal.access_tier if proposal is not None else None)
    warnings += [f.message for f in findings]
    return Plan(tuple(plans), proposal, tuple(warnings), track, access, tuple(findings))
