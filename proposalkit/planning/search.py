"""The GPU choice: which GPU types and counts to try, whether the workload fits, which is cheapest.

``choose`` tries every candidate GPU type × count, fitting the workload's memory
(ZeRO stage and activation checkpointing chosen as needed) and costing each
configuration that fits; ``alternatives`` says why each losing type lost.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..catalog import GPUSpec
from ..estimate.flops import runtime_hours
from ..estimate.breakdown import as_printed, gpus_overhead
from ..estimate.inference import default_kv_precision
from ..estimate.memory import (
    DEFAULT_OVERHEAD, InferenceSetup, MemoryBreakdown, inference_memory, training_memory,
)
from ..catalog.shapes import ModelSpec
from ..units import GiB, factor_text, gib_shown, gib_up, requested_gpu_hours, requested_per_run
from ..catalog import resources
from . import charges, pilots, ranges
from .speed import throughput, training_setup
from .records import Candidate, Settings, Throughput

# GPU counts tried: 1, 2, 4, 8 (within a node), then whole 8-GPU nodes doubling.
CANDIDATE_COUNTS = (1, 2, 4, 8) + tuple(8 * 2**k for k in range(1, 11))
# How the runtime changes with the GPU count when no pilot measured that count: the FLOPs
# estimate is GPUs × peak × MFU ÷ FLOPs per token with the same MFU at every count (data
# parallel; communication not modelled), and an inference pilot is scaled by count the same way
# (estimate/flops.py scale_pilot), flagged as an extrapolation.
SCALING_RULE = ("the runtime is taken to scale linearly with the GPU count (data parallel at the same MFU; "
                "communication not modelled)")


# ----------------------------------------------------------------- memory

def memory_of(model: ModelSpec, w, s: Settings, count: int, zero_stage: int | None,
              checkpointing: bool | None) -> MemoryBreakdown:
    """Bytes per GPU of the workload on `count` GPUs at this ZeRO stage and checkpointing, as printed (each
    component rounded up to 0.01 GiB, the total their sum: breakdown.as_printed), the figure the fit compares."""
    if w.kind == "inference":
        setup = InferenceSetup(context=s.context, batch=s.batch, precision=s.precision,
                               kv_precision=default_kv_precision(s.precision, s.framework),
                               tensor_parallel=count, attention=s.attention, engine=s.framework)
        return as_printed(inference_memory(model, setup, DEFAULT_OVERHEAD), DEFAULT_OVERHEAD)
    setup = training_setup(w, s, count, zero_stage, checkpointing)
    # CPU offload's allocator regime where FSDP1 or DeepSpeed copies (FSDP2 copies without recordStream: breakdown.py).
    offload = (setup.offload_params or setup.offload_optimizer) and setup.data_parallel_impl != "fsdp2"
    overhead = gpus_overhead(count, offload)
    return as_printed(training_memory(model, setup, overhead), overhead)


def fit(model: ModelSpec, w, s: Settings, gpu: GPUSpec, count: int, cache: dict, margin: float = 1.0):
    """The first setting (no checkpointing before checkpointing, lower ZeRO
    stage first) under which the workload fits on `count` GPUs of `gpu`;
    else the smallest-memory setting, marked as not fitting. Training fits where
    its memory × `margin` (a percentile of the validated memory error,
    planning/ranges.py memory_margins), as printed and rounded up
    (ranges.memory_at), is within the usable memory; an
    inference engine's reservation is sized to the memory by its own rule.

    Memory does not depend on the GPU type, so `cache` (one per workload)
    keeps each (count, stage, checkpointing) breakdown for every type."""

    def memory(stage: int, ckpt: bool) -> MemoryBreakdown:
        key = (count, stage, ckpt)
        if key not in cache:
            cache[key] = memory_of(model, w, s, count, stage, ckpt)
        return cache[key]

    if w.kind == "inference":
        mem = memory(0, False)
        return mem.total <= gpu.usable_memory_bytes, mem, None, None
    model_parallel = s.tensor_parallel * s.pipeline_parallel
    dp = count // model_parallel
    stages = [s.zero_stage] if s.zero_stage is not None else ([0, 1, 2, 3] if dp > 1 else [0])
    if s.zero_stage is None and s.offload_params:
        stages = [3]            # parameters are offloaded only under full sharding
    elif s.zero_stage is None and s.offload_optimizer and s.offload_under_zero:
        stages = [1, 2, 3] if dp > 1 else [1]   # ZeRO-Offload runs under ZeRO stages 1-3 (input/state_rules.py)
    ckpts = [s.activation_checkpointing] if s.activation_checkpointing is not None else [False, True]
    if s.activation_offload and s.activation_checkpointing is None:
        ckpts = [True]          # torchtune offloads activations only with checkpointing (input/state_rules.py)
    smallest = None
    for ckpt in ckpts:
        for stage in stages:
            mem = memory(stage, ckpt)
            if ranges.memory_at(mem.total, margin) <= gpu.usable_memory_bytes:     # as printed, rounded up
                return True, mem, stage, ckpt
            if smallest is None or mem.total < smallest[0].total:
                smallest = (mem, stage, ckpt)
    return False, smallest[0], smallest[1], smallest[2]


# ----------------------------------------------------------------- choice

@dataclass(frozen=True)
class Target:
    """A target resource (system or partition) as the GPU choice sees it."""

    id: str
    partitions: tuple[resources.Resource, ...]

    @property
    def gpus(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(g for r in self.partitions for g in r.gpus))

    def node_sizes(self, gpu: str) -> set[int]:
        return {r.gpus_per_node for r in self.partitions if gpu in r.gpus}

    def most_per_job(self, gpu: str) -> tuple[int, str]:
        """The most GPUs of this type one job may take (its partition's per-job node limit, else its size),
        with that limit in words."""
        limits = []
        for r in self.partitions:
            if gpu in r.gpus:
                nodes = r.largest_job_nodes(gpu)
                what = f"{nodes:,} node{'s' if nodes > 1 else ''} of {resources.gpus_text(r.gpus_per_node)}"
                limits.append((r.largest_job_gpus(gpu),
                               f"{r.id} allows {what} per job" if r.max_nodes_per_job is not None
                               and r.max_nodes_per_job <= r.node_count(gpu) else
                               f"{r.id} has {what}, with no per-job node limit"))
        return max(limits)

    def takes(self, gpu: str, count: int) -> bool:
        return any(gpu in r.gpus and resources.fits(r, count, gpu) for r in self.partitions)

    def charge(self, gpu: str, count: int, hours_per_job: float, jobs: int,
               buffer: float | None = None) -> charges.Charge:
        """`jobs` jobs of `count` GPUs; with `buffer`, `hours_per_job` is a run's hours before it (charges.charge)."""
        held = hours_per_job if buffer is None else requested_per_run(hours_per_job, buffer)
        partition = charges.choose_partition(self.id, gpu, count, held, self.partitions)
        return charges.charge(partition, gpu, count, hours_per_job, jobs, buffer)

    def charge_replicas(self, gpu: str, tensor_parallel: int, replicas: int, hours_per_job: float,
                        jobs: int, buffer: float | None = None) -> charges.Charge | None:
        """A service of `replicas` replicas of `tensor_parallel` GPUs: one job where one job takes them all (as
        charge), else each group of replicas that fits a job its own job, on the partition where they cost
        least (charges.charge_groups); None where no partition of this GPU holds them all."""
        count = replicas * tensor_parallel
        if self.takes(gpu, count):
            return self.charge(gpu, count, hours_per_job, jobs, buffer)
        options = [charges.charge_groups(r, gpu, tensor_parallel, replicas, hours_per_job, jobs, buffer)
                   for r in self.partitions if gpu in r.gpus and resources.fits(r, tensor_parallel, gpu)
                   and r.gpu_count(gpu) >= count]
        return min(options, key=lambda c: c.amount) if options else None


def target(resource_id: str | None, price_per_hour: float | None = None, set_by: str = "") -> Target | None:
    """The resource a workload targets; a cloud instance type at `price_per_hour` dollars per instance-hour
    where the workload (or its proposal, `set_by`) states one instead of the catalog's price."""
    if resource_id is None:
        return None
    rows = resources.resolve(resource_id)
    if len(rows) > 1:     # a provider's instance types without a catalog price are planned only when named
        rows = tuple(r for r in rows if not (r.is_cloud and r.price.per_hour is None))
    if price_per_hour is not None:
        if len(rows) != 1:
            raise resources.ResourceError(f"price_per_hour is the price of one instance type; {resource_id} has "
                                          f"several ({', '.join(r.id for r in rows)}): name one")
        rows = (rows[0].priced(price_per_hour, set_by),)
    return Target(resource_id, rows)


def candidate_gpus(w, target: Target | None, gpus: dict[str, GPUSpec], precision: str | None = None) -> list[GPUSpec]:
    """The GPU types tried: the pinned one, the target's, the pilot's, else every catalog GPU; with `precision`
    only those whose tensor cores run it (GPUSpec.supports: no bf16 on a V100, fp8 on Hopper, Ada, Blackwell
    and CDNA3 only); planner.py refuses a pin without it before the search."""
    if w.gpu is not None:
        pool = [gpus[w.gpu]]
    elif target is not None:
        pool = [gpus[g] for g in target.gpus if g in gpus]
    elif w.throughput is not None:
        pool = [gpus[w.throughput.gpu]]
    else:
        pool = list(gpus.values())
    return [g for g in pool if precision is None or g.supports(precision)]


def _candidate_counts(w, s: Settings, gpu: GPUSpec, target: Target | None, model: ModelSpec) -> tuple[int, ...]:
    # An inference replica on n GPUs is n-way tensor parallel, and each tensor-parallel rank
    # holds at least one attention head (Megatron-LM, vLLM split the heads across ranks); the
    # unpinned search tries only counts that divide the heads (_counts), as vLLM requires.
    most = model.heads if w.kind == "inference" and model.has_architecture else None
    # A pinned count, or an inference replica's tensor-parallel degree, is the one count tried.
    pinned = w.gpus if w.gpus is not None else (w.tensor_parallel if w.kind == "inference" else None)
    if pinned is not None:
        allowed = (target is None or target.takes(gpu.id, pinned)) and (most is None or pinned <= most)
        return (pinned,) if allowed else ()
    first = w.throughput.gpus if w.throughput is not None and w.throughput.gpu == gpu.id else None
    # Training: a model copy spans t·p GPUs, and expert parallelism splits the routed experts
    # over whole copies, so the count is a multiple of t·p·ep (and of the context-parallel degree).
    # Context parallelism splits each sequence over cp GPUs of a copy (torchtitan: dp × tp × pp × cp GPUs).
    model_parallel = 1 if w.kind == "inference" else (s.tensor_parallel * s.pipeline_parallel * s.expert_parallel
                                                      * s.context_parallel)
    counts = _counts(first, model_parallel, gpu.id, target, most)
    measured = pilots.measured_counts(w, gpu.id)    # two pilots: both measured counts first
    return tuple(c for c in counts if c in measured) + tuple(c for c in counts if c not in measured)


@functools.lru_cache(maxsize=512)
def _counts(first: int | None, model_parallel: int, gpu: str, target: Target | None,
            most: int | None) -> tuple[int, ...]:
    """The GPU counts tried, in order: the pilot's count first, then ascending; each a whole
    number of model copies (tensor × pipeline parallel); with `most` (an inference replica's
    attention heads) only divisors of it: vLLM refuses a tensor-parallel size that does not
    divide the heads (ModelConfig.verify_with_parallel_config), so 3 or 6 GPUs of a 3-GPU node
    are no replica of a 32-head model."""
    counts = set(CANDIDATE_COUNTS)
    if target is not None:
        # Every count up to a node, then whole nodes (a 3-GPU node takes 1, 2, 3, 6, 12, ...).
        for node in target.node_sizes(gpu):
            counts |= set(range(1, node + 1)) | {node * 2**k for k in range(11)}
    # Model copies of any size: tensor_parallel 3 is tried on 3, 6, 12, ... GPUs.
    counts |= {model_parallel * c for c in counts if model_parallel * c <= max(counts)}
    if target is not None:
        counts = {c for c in counts if target.takes(gpu, c)}
    out = [c for c in ([first] if first is not None else []) + sorted(counts)
           if c % model_parallel == 0 and (most is None or most % c == 0)]
    return tuple(dict.fromkeys(out))


def largest_count(w, s: Settings, gpu: GPUSpec, target: Target | None) -> int | None:
    """The most GPUs of this type one training job on the target may take, in whole model copies (None: no
    target, or a pinned count)."""
    if target is None or w.gpus is not None or w.kind == "inference":
        return None
    copy = s.tensor_parallel * s.pipeline_parallel * s.expert_parallel * s.context_parallel
    most = target.most_per_job(gpu.id)[0] // copy * copy
    return most or None


def _then_largest(counts: tuple[int, ...], largest: int | None, fitted):
    """The counts to try, then the target's largest job where none of them fitted (a workload that needs
    more GPUs than the ladder's last count below the partition's size is tried on all it allows)."""
    yield from counts
    if largest is not None and largest not in counts and not fitted():
        yield largest


def choose(model: ModelSpec, w, s: Settings, target: Target | None, gpus: dict[str, GPUSpec], tokens: int,
           mfu: tuple[float, str] | tuple[None, None], margin: float = 1.0):
    """Every candidate tried, and the best: (sort key, candidate, memory, throughput, hours, charge) or None.
    A candidate fits where its memory × `margin` does (fit)."""
    candidates: list[Candidate] = []
    options: list[tuple] = []
    memory_cache: dict = {}
    service = w.kind == "inference" and w.tokens is None
    for gpu in candidate_gpus(w, target, gpus, s.precision):
        counts = _candidate_counts(w, s, gpu, target, model)
        measured = pilots.measured_counts(w, gpu.id) & set(counts)   # every count a pilot log measured is tried
        for count in _then_largest(counts, largest_count(w, s, gpu, target),
                                   lambda: any(c.fits for c in candidates if c.gpu == gpu.id)):
            measured.discard(count)
            fits, mem, stage, ckpt = fit(model, w, s, gpu, count, memory_cache, margin)
            if not fits:
                candidates.append(Candidate(gpu.id, count, False, mem.total, gpu.usable_memory_bytes,
                                            None, stage, ckpt, False))
                continue
            # A service's cost is its hours, whatever the GPU: its Throughput (a
            # description) is made once, for the chosen configuration.
            tp = None if service else throughput(model, w, s, gpu, count, ckpt, gpus, mfu, stage)
            hours = w.hours if service else runtime_hours(tokens, tp.tokens_per_second)
            buffer = ranges.buffer_at(s, w.kind, tp, gpu.id, count, pilots.runs_of(w))
            requested = requested_gpu_hours(hours, buffer, count, s.variants)
            extrapolated = tp is not None and tp.source == "pilot-extrapolated"
            charge = None
            if target is not None and gpu.id in target.gpus:
                charge = target.charge(gpu.id, count, hours, s.variants, buffer)
            # With a target resource the allocation is charged in its unit, so that is the cost.
            cost = charge.amount if charge is not None else requested
            idle = charge.idle_gpus if charge is not None else 0
            cand = Candidate(gpu.id, count, True, mem.total, gpu.usable_memory_bytes, requested, stage, ckpt,
                             extrapolated, cost=cost, cost_unit=charge.unit if charge is not None else "GPU-hours",
                             idle_gpus=idle)
            candidates.append(cand)
            # A measured pilot beats any extrapolation of it (DESIGN.md): the pilot's own
            # configuration wins whenever it fits; otherwise the cheapest, then fewer GPUs,
            # then the smaller GPU.
            key = (extrapolated, round(cost, 6), count, gpu.usable_memory_bytes)
            options.append((key, cand, mem, tp, hours, charge))
            # Under linear scaling (SCALING_RULE) larger counts of this type cost the same or
            # more, so stop here, unless checkpointing was needed (more GPUs may avoid the
            # recompute) or the job leaves GPUs of a whole node idle that the resource charges
            # anyway (node-hour resources): then filling the node costs less (a service's
            # hours are fixed, so more GPUs never cost it less).
            if not ckpt and not (idle and not service) and not measured:
                break
    return candidates, _best(options)


# Costs within this share of the cheapest are a tie, which goes to fewer GPUs, then the smaller GPU: the step-time
# model's rate per GPU moves by about a percent with the data-parallel count (the ZeRO-sharded optimizer step shrinks
# with its shard; a 70B full fine-tune on 32 to 128 GPUs: 0.7%), far inside its own error (the speed rows' p10-p90,
# proposalkit/catalog/errors.yaml), and that is no reason for more GPUs.
COST_TIE = 0.01


def _best(options: list[tuple]):
    """Of the fitting options (key, …) with key (extrapolated, cost, count, memory): a measured configuration first;
    among those, every one within COST_TIE of the cheapest is a tie, won by fewer GPUs, then the smaller GPU, then
    the lower cost. The rule looks at all of them at once, so the order they were tried in does not matter."""
    if not options:
        return None
    extrapolated = min(o[0][0] for o in options)       # False (a measured configuration) where there is one
    pool = [o for o in options if o[0][0] == extrapolated]
    cheapest = min(o[0][1] for o in pool)
    tied = [o for o in pool if o[0][1] <= cheapest * (1 + COST_TIE)]
    return min(tied, key=lambda o: (o[0][2], o[0][3], o[0][1]))


def alternatives(candidates: list[Candidate], chosen: Candidate) -> tuple[Candidate, ...]:
    """Per GPU type, the best candidate (or the largest that did not fit), and on node-hour
    resources every count that cost more because it left GPUs of a charged node idle;
    each with why it lost."""
    of_type: dict[str, list[Candidate]] = {}
    for c in candidates:
        if not (c.gpu == chosen.gpu and c.count == chosen.count):
            of_type.setdefault(c.gpu, []).append(c)
    by_type = {gpu: _type_best(cs) for gpu, cs in of_type.items()}
    return tuple(c._replace(reason=_why_not(c, chosen)) for c in candidates
                 if not (c.gpu == chosen.gpu and c.count == chosen.count)
                 and (by_type[c.gpu] is c or (c.fits and c.idle_gpus and c.cost > chosen.cost * (1 + 1e-9))))


# Costs of one GPU type within this share of its cheapest are one cost in the alternatives listed: a pilot's rate
# carried to other GPUs is worked from printed figures (speed.carried_throughput: the modelled rates to whole
# tokens/s, their ratio to 3 decimals), which moves a count's cost by up to about 0.07% (0.0005 ÷ a ratio near 1,
# plus 0.5 ÷ rates of thousands of tokens/s), and that is no reason to show more GPUs.
PRINTED_TIE = 0.001


def _type_best(candidates: list[Candidate]) -> Candidate:
    """One GPU type's best candidate: of those that fit, the cheapest, where the rates are carried from a pilot
    the fewest GPUs within PRINTED_TIE of it; where none fits, the largest count tried."""
    fitting = [c for c in candidates if c.fits]
    if not fitting:
        return max(candidates, key=lambda c: c.count)
    cheapest = min(fitting, key=lambda c: c.cost)
    if not cheapest.extrapolated:
        return cheapest
    return min((c for c in fitting if c.extrapolated and c.cost <= cheapest.cost * (1 + PRINTED_TIE)),
               key=lambda c: (c.count, c.cost))


def _why_not(c: Candidate, chosen: Candidate) -> str:
    """Why a candidate lost to the chosen configuration."""
    if not c.fits:
        return does_not_fit(c)
    same_unit = c.cost_unit == chosen.cost_unit
    if c.extrapolated and not chosen.extrapolated:
        cheaper = same_unit and c.cost < chosen.cost * (1 - 1e-9)
        # Judged in the unit charged: an alternative that would cost less says so before why it lost.
        reason = (f"fits on {c.count}× {c.gpu} and would cost {1 - c.cost / chosen.cost:.0%} fewer {c.cost_unit}, "
                  if cheaper else f"fits on {c.count}× {c.gpu}, ")
        reason += "but its throughput would be extrapolated from the pilot; the measured configuration is preferred"
        if chosen.idle_gpus and cheaper:
            reason += (f" (it leaves {resources.gpus_text(chosen.idle_gpus)} of a node that is charged whole idle; a "
                       f"pilot on {c.count}× {c.gpu} would settle it)")
        return reason
    if c.cost > chosen.cost * (1 + 1e-9):
        if c.idle_gpus and same_unit:
            reason = (f"fits on {c.count}× {c.gpu} but costs {charges.fmt_amount(c.cost)} {c.cost_unit} vs "
                      f"{charges.fmt_amount(chosen.cost)}: a node is charged whole, so {resources.gpus_text(c.idle_gpus)} "
                      "would sit idle")
        else:
            reason = f"fits on {c.count}× {c.gpu} but costs {c.cost / chosen.cost - 1:.0%} more {c.cost_unit}"
        if c.activation_checkpointing:
            reason += " (needs activation checkpointing: the recompute costs time)"
        return reason
    return f"fits on {c.count}× {c.gpu} at the same cost; ties go to fewer GPUs, then the smaller GPU"


def does_not_fit(c: Candidate) -> str:
    """Why a configuration does not fit, with the settings of the smallest memory tried on it (search.fit): on
    many GPUs the reviewer sees that sharding did not help (activations are per GPU, whatever the count)."""
    tried = "" if c.zero_stage is None else (
        f" with ZeRO stage {c.zero_stage} and activation checkpointing "
        f"{'on' if c.activation_checkpointing else 'off'}")
    # GiB to 0.01, as the table beside the reason prints them (the memory rounded up: units.gib_up)
    need, has = f"{gib_up(c.per_gpu_bytes):,} GiB", f"{gib_shown(c.usable_bytes):,} GiB"
    if c.per_gpu_bytes <= c.usable_bytes:     # within the memory, not within the validated margin above it
        margin, p90 = factor_text(ranges.memory_margins()[1]), ranges.memory_range(c.per_gpu_bytes)[1]
        return (f"does not fit with the margin: needs {need} per GPU{tried}, × {margin} = {p90:,.2f} GiB at the "
                f"memory p90; {c.gpu} has {has}")
    return f"does not fit: needs {need} per GPU{tried}, {c.gpu} has {has}"

