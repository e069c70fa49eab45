"""Inference workloads planned from the estimate (estimate/inference.py), without a pilot.

Three forms (input/inference_rules.py):
- a batch job (`requests` of `input_tokens` + `output_tokens`): each GPU type × tensor-parallel
  degree is costed by the batch-job runtime, GPU-hours = runtime × GPUs × variants, and the
  cheapest is chosen as the training search does (planning/search.py);
- a service sized by load (`request_rate`, optional `ttft_ms`, `tpot_ms`): per replica the most
  requests per second it sustains within the targets (the concurrency by Little's law,
  L = λ × W: requests in flight = rate × (TTFT + output_tokens × TPOT)), replicas =
  ⌈request_rate ÷ that rate⌉, GPUs = replicas × tensor parallel, GPU-hours = GPUs × hours;
- a service by `hours` and `batch`: kept as declared, and checked against what the engine's
  KV pool holds (a configuration whose pool cannot hold `batch` sequences does not fit).

The physics (memory per replica under the engine's rule, prefill, decode steps, services) is
estimate/inference.py's; this module only searches and writes the arithmetic out.
"""

from __future__ import annotations

import functools

import math
from dataclasses import dataclass, replace

from ..errors import InputError, Problem
from ..notes import Note, note
from ..catalog.engines import Engine, engine as engine_named, engine_at_version
from ..estimate.links import INTERCONNECT, NODE_GPUS, PCIE4_X16, network_per_gpu
from ..estimate.inference import (
    InferenceError, Replica, decode_step, default_kv_precision, mean_context, prefill, replica,
)
from ..estimate.batch import batch_job
from ..estimate.lengths import Spread
from ..estimate.serving import DEFAULT_TTFT_PERCENTILE, replicas_needed, service, ttft_floor
from ..estimate.memory import InferenceSetup, inference_memory
from ..estimate.reservation import engine_memory, reservation_as_printed
from ..estimate.breakdown import DEFAULT_OVERHEAD, as_printed
from ..units import SECONDS_PER_HOUR, GiB, hours_per_run, ms_number, requested_gpu_hours
from ..catalog import resources
from . import charges, search
from .derivation import (
    batch_prefill_text, duration_text, kv_line, ms_text, pool_text, prefill_line, step_line, ttft_line,
)
from .records import Candidate, InferencePlan, Settings, Throughput

# The best latency a workload can reach is quoted for replicas within a node (node_gpus below: beyond
# it the all-reduces cross the network).
# What the engines' constants are fitted on (catalog/engines.py, benchmarks/calibrate_inference.py).
CALIBRATION = ("fitted on the TensorRT-LLM performance overview's H100 rows (trtllm-bench offline throughput, "
               "perf-overview.md @00f37686); the kernel launches per layer of a prefill pass on TensorRT-LLM v0.5's "
               "first-token latencies of GPT-J 6B and Falcon-180B (docs/source/performance.md @77d24b5f)")


def mode(w) -> str | None:
    """"batch", "rate", "hours", or None for batch inference by tokens with a measured pilot."""
    if w.kind != "inference":
        return None
    if w.requests is not None:
        return "batch"
    if w.request_rate is not None:
        return "rate"
    return "hours" if w.tokens is None else None


def settings(w, s: Settings) -> Settings:
    """A batch job's or a rate service's sequence is input + output tokens."""
    if mode(w) in ("batch", "rate"):
        return replace(s, context=w.input_tokens + w.output_tokens, batch=w.batch or 1)
    return s


def engine_of(w, notes: list[Note]) -> Engine:
    e = engine_named(getattr(w, "framework", None))
    if getattr(w, "framework", None) is None:
        notes.append(note("engine-default", e.paper, engine=e.name))
    e, why = engine_at_version(e, getattr(w, "engine_version", None))
    if why:
        notes.append(note("engine-version", e.paper, engine=e.name, version=e.release,
                          decode_step_seconds=e.decode_step_seconds, why=why))
    notes.append(note("engine-memory", e.paper, engine=e.name, memory_rule=e.memory_source, batch_rule=e.batch_source))
    if e.speed_modelled:
        notes.append(note("engine-speed", e.paper, engine=e.name, bandwidth_fraction=e.bandwidth_fraction,
                          compute_fraction_16bit=e.compute_fraction_16bit,
                          compute_fraction_8bit=e.compute_fraction_8bit,
                          launch_seconds_per_layer=e.prefill_layer_seconds, calibration=e.calibration))
    else:
        notes.append(note("engine-speed-not-modelled", e.paper, engine=e.name, calibration=e.calibration))
    return e


@dataclass(frozen=True)
class _Option:
    """One GPU type × tensor-parallel degree that serves the workload."""

    gpus: int
    hours: float
    batch: int
    plan: InferencePlan | None      # None while costed (_FORMS); written for the chosen replica only (_PLANS)
    tokens_per_second: float | None


def _source(e: Engine) -> str:
    return f"{e.calibration}; {CALIBRATION}"


# The works CALIBRATION names, and those a service's lines cite: requests in flight by Little's law, their
# Poisson spread about its mean (M/G/∞), and the wait for prefills ahead by its method (queueing.py).
CALIBRATION_REFERENCES = ("trt-llm-perf",)
SERVICE_REFERENCES = ("little-1961", "takacs-1962")
WAIT_REFERENCES = {"idle": (), "exact": ("erlang-1909", "crommelin-1932", "franx-2001"),
                   "bound": ("asmussen-albrecher-2010",)}


def _memory(model, s: Settings, rep: Replica, batch: int, context: int):
    """Memory per GPU. With no pool (transformers) what the planned batch allocates; under a pre-allocating
    engine (vLLM, SGLang, TensorRT-LLM) the engine's whole reservation, which the device holds whatever the
    batch (engine_memory)."""
    setup = InferenceSetup(context=context, batch=batch, precision=s.precision, kv_precision=rep.kv_precision,
                           tensor_parallel=rep.tensor_parallel, attention=s.attention, engine=rep.engine.id)
    mem = inference_memory(model, setup, DEFAULT_OVERHEAD)
    return (as_printed(mem, DEFAULT_OVERHEAD) if rep.engine.fraction_of == "none"
            else reservation_as_printed(engine_memory(rep, mem, batch, context)))


def spread_of(lw) -> Spread | None:
    """A batch job's length distributions (LoadedWorkload.lengths) as equally likely lengths, within the model's
    context; None where both are single numbers."""
    stats = getattr(lw, "lengths", (None, None))
    if stats == (None, None):
        return None
    w, most = lw.spec, lw.model.max_context
    inputs = stats[0].points(most) if stats[0] is not None else (float(w.input_tokens),)
    outputs = stats[1].points(most) if stats[1] is not None else (float(w.output_tokens),)
    return Spread(inputs, outputs)


def _batch(model, w, s: Settings, rep: Replica, variants: int, spread: Spread | None = None) -> _Option:
    """A batch job, costed: its runtime on this replica (the plan is written by _batch_plan, for the chosen)."""
    job = batch_job(rep, w.requests, w.input_tokens, w.output_tokens, batch=w.batch, spread=spread)
    return _Option(rep.tensor_parallel, job.runtime_seconds / SECONDS_PER_HOUR, job.batch, None,
                   job.output_tokens_per_second)



def _per_run_text(seconds: float) -> str:
    """A batch job's hours per run: the sum, and where it differs the hours the plan carries (rounded up to
    a hundredth of an hour, units.hours_per_run), so the line ends on the runtime line's figure."""
    text, carried = duration_text(seconds), hours_per_run(seconds / SECONDS_PER_HOUR)
    if seconds < 360 or text == f"{carried:,.2f} h":
        return text
    return f"{text}, {carried:,.2f} h rounded up,"

def _batch_plan(model, w, s: Settings, rep: Replica, variants: int, spread: Spread | None = None) -> _Option:
    I, O = w.input_tokens, w.output_tokens
    job = batch_job(rep, w.requests, I, O, batch=w.batch, spread=spread)
    most = rep.max_concurrency(I, O)
    t = rep.tensor_parallel
    steps = [kv_line(rep, I, O, most), prefill_line(rep, I)]
    steps.append(step_line(rep, job.step, "Decode step"))
    if spread is not None:
        n = next(n for n in job.notes if n.kind == "batch-length-spread")
        steps.append(("Lengths that vary", (
            f"a slot holds outputs of E[o²] ÷ E[o] = {n['held_output']:,} tokens (length-biased; the mean is {O:,}) "
            f"and a context of {n['held_context']:,} tokens over its steps; once no request is left to start, the "
            f"batch drains for {n['drain_steps']:,} steps at {n['drain_batch']:,} sequences, "
            f"{n['drain_share']:.0%} of the runtime (estimate/lengths.py)")))
    steps.append(("Batch job", f"{batch_prefill_text(rep, job)}; decode {job.requests:,} × {O:,} ÷ {job.batch:,} × "
                               f"{ms_text(job.step.seconds)} = {duration_text(job.decode_seconds)}; {_per_run_text(job.runtime_seconds)} "
                               f"per run ({job.output_tokens_per_second:,.0f} output tokens/s)"))
    plan = InferencePlan(
        mode="batch", engine=rep.engine.id, engine_source=_source(rep.engine), tensor_parallel=t, replicas=1,
        batch=job.batch, max_concurrency=most, context=I + O, input_tokens=I, output_tokens=O, requests=w.requests,
        prefill_tokens_per_second=job.prefill_tokens_per_second,
        output_tokens_per_second=job.output_tokens_per_second,
        ttft_ms=job.ttft_seconds * 1e3, tpot_ms=job.tpot_seconds * 1e3, request_rate=None, steps=tuple(steps),
        sources=rep.engine.paper + CALIBRATION_REFERENCES)
    return _Option(t, job.runtime_seconds / SECONDS_PER_HOUR, job.batch, plan, job.output_tokens_per_second)


def _rate(model, w, s: Settings, rep: Replica, variants: int) -> _Option:
    """A service sized by load, costed: its replicas and concurrency (serving.replicas_needed, the numbers
    service() finds; the plan is written by _rate_plan, for the chosen)."""
    q = w.ttft_percentile if w.ttft_percentile is not None else DEFAULT_TTFT_PERCENTILE
    replicas, concurrency = replicas_needed(rep, w.request_rate, w.input_tokens, w.output_tokens, ttft_ms=w.ttft_ms,
                                            tpot_ms=w.tpot_ms, batch=w.batch, ttft_percentile=q)
    return _Option(replicas * rep.tensor_parallel, w.hours, concurrency, None, None)


def _rate_plan(model, w, s: Settings, rep: Replica, variants: int) -> _Option:
    """The chosen replica of a service sized by load, with its plan: service() and the arithmetic written out."""
    I, O = w.input_tokens, w.output_tokens
    q = w.ttft_percentile if w.ttft_percentile is not None else DEFAULT_TTFT_PERCENTILE
    svc = service(rep, w.request_rate, I, O, ttft_ms=w.ttft_ms, tpot_ms=w.tpot_ms, batch=w.batch, ttft_percentile=q)
    t = rep.tensor_parallel
    steps = [kv_line(rep, I, O, svc.max_concurrency), prefill_line(rep, I)]
    steps.append(step_line(rep, svc.step, "Decode step"))
    busy = svc.rate_per_replica * svc.prefill.seconds
    limits = [f"{name} ≤ {value:g} ms" for name, value in ((f"TTFT p{q:g}", w.ttft_ms), ("TPOT", w.tpot_ms))
              if value is not None]
    if w.batch is not None:
        limits.append(f"at most {svc.max_concurrency:,} in flight (batch {w.batch:,})")
    targets = ", ".join(limits) or "as the KV pool allows"
    rate = svc.rate_per_replica
    steps.append(("Per replica", f"at {rate:,.3g} request{'' if f'{rate:,.3g}' == '1' else 's'}/s prefill keeps the GPUs busy u = "
                                 f"{rate:,.3g} × {ms_text(svc.prefill.seconds)} = {busy:.3f}; TPOT = "
                                 f"{ms_text(svc.step.seconds)} ÷ (1 − u) = {ms_number(svc.tpot_ms)} ms; requests in flight "
                                 f"(Little's law, TTFT ≈ prefill ÷ (1 − u) = {ms_number(svc.ttft_mean_ms)} ms) = "
                                 f"{rate:,.3g} × ({svc.ttft_mean_ms / 1e3:,.3f} s + "
                                 f"{O:,} × {svc.tpot_ms / 1e3:,.4f} s) = {svc.in_flight_mean:,.1f}, "
                                 f"rounded up to {svc.concurrency:,}; {pool_text(svc, q, w.ttft_ms is not None)}"))
    steps.append(("TTFT", ttft_line(svc, rate, q)))
    steps.append(("Replicas", f"⌈{w.request_rate:g} ÷ {svc.max_rate_per_replica:,.3g} req/s per replica "
                              f"({targets})⌉ = {svc.replicas:,} replica{'s' if svc.replicas > 1 else ''} of {t} "
                              f"GPU{'s' if t > 1 else ''}"))
    plan = InferencePlan(
        mode="rate", engine=rep.engine.id, engine_source=_source(rep.engine), tensor_parallel=t,
        replicas=svc.replicas, batch=svc.concurrency, max_concurrency=svc.max_concurrency, context=I + O,
        input_tokens=I, output_tokens=O, requests=None,
        prefill_tokens_per_second=svc.prefill.tokens_per_second,
        output_tokens_per_second=w.request_rate * O, ttft_ms=svc.ttft_ms, tpot_ms=svc.tpot_ms,
        request_rate=w.request_rate, steps=tuple(steps), ttft_percentile=q,
        sources=rep.engine.paper + CALIBRATION_REFERENCES + SERVICE_REFERENCES + WAIT_REFERENCES[svc.ttft_wait_method],
        rate_per_replica_max=svc.max_rate_per_replica, ttft_target_ms=w.ttft_ms, tpot_target_ms=w.tpot_ms)
    return _Option(svc.replicas * t, w.hours, svc.concurrency, plan, None)


def _hours(model, w, s: Settings, rep: Replica, variants: int) -> _Option:
    """A service by hours and batch, costed: its hours, where the KV pool holds the batch (the plan is
    written by _hours_plan, for the chosen; the prefill and step it prints are tried here for their errors)."""
    _hours_pool(rep, s.context, s.batch)
    if rep.engine.speed_modelled:
        decode_step(rep, s.batch, s.context)
        prefill(rep, s.context)
    return _Option(rep.tensor_parallel, w.hours, s.batch, None, None)


def _hours_pool(rep: Replica, context: int, batch: int) -> int:
    """The sequences of `context` tokens the replica holds; an InferenceError where fewer than `batch`."""
    most = rep.max_concurrency(context, 0)
    if most < batch:
        raise InferenceError(f"{rep.engine.name}'s KV pool on {rep.tensor_parallel}× {rep.gpu.id} holds "
                             f"{rep.kv_tokens:,} tokens = {most:,} sequences of {context:,} tokens, fewer than "
                             f"batch {batch:,}", achievable=most)
    return most


def _hours_plan(model, w, s: Settings, rep: Replica, variants: int) -> _Option:
    context, batch = s.context, s.batch
    most = _hours_pool(rep, context, batch)
    steps = [kv_line(rep, context, None, most)]
    if not rep.engine.speed_modelled:
        # Costed by the hours as declared, which need no speed; the memory check above stands.
        steps.append(("Speed", f"{rep.engine.name}: speed not modelled ({rep.engine.calibration}); the "
                                     "service is costed by its hours, the KV pool checked against its batch"))
        plan = InferencePlan(
            mode="hours", engine=rep.engine.id, engine_source=rep.engine.calibration,
            tensor_parallel=rep.tensor_parallel, replicas=1, batch=batch, max_concurrency=most, context=context,
            input_tokens=None, output_tokens=None, requests=None, prefill_tokens_per_second=None,
            output_tokens_per_second=None, ttft_ms=None, tpot_ms=None, request_rate=None, steps=tuple(steps),
            sources=rep.engine.paper)
        return _Option(rep.tensor_parallel, w.hours, batch, plan, None)
    step = decode_step(rep, batch, context)
    steps.append(prefill_line(rep, context))      # the plan's prefill_tokens_per_second: a lone full context
    steps.append(step_line(rep, step, "Decode step (full context)"))
    plan = InferencePlan(
        mode="hours", engine=rep.engine.id, engine_source=_source(rep.engine), tensor_parallel=rep.tensor_parallel,
        replicas=1, batch=batch, max_concurrency=most, context=context, input_tokens=None, output_tokens=None,
        requests=None, prefill_tokens_per_second=prefill(rep, context).tokens_per_second,
        output_tokens_per_second=batch / step.seconds, ttft_ms=None, tpot_ms=step.seconds * 1e3,
        request_rate=None, steps=tuple(steps), sources=rep.engine.paper + CALIBRATION_REFERENCES)
    return _Option(rep.tensor_parallel, w.hours, batch, plan, None)


# Each form costed for every replica tried; its plan, with the arithmetic written out, for the chosen one.
_FORMS = {"batch": _batch, "rate": _rate, "hours": _hours}
_PLANS = {"batch": _batch_plan, "rate": _rate_plan, "hours": _hours_plan}


def placements(target, gpu: str, count: int) -> list[tuple[int, object]]:
    """Where a replica of `count` GPUs can run, as (GPUs per node, the target it is charged on). No resource
    pinned: NODE_GPUS (an HGX/DGX baseboard), as stated in the plan. A pinned resource: its gpus_per_node;
    a system whose partitions of this GPU differ in node size (NCSA Delta's A100: 4 and 8) is tried on
    each, charged on that partition, so that a replica beyond one kind of node pays the network there
    and the planner can take the larger node where it costs less."""
    if target is None:
        return [(NODE_GPUS, None)]
    rows = [r for r in target.partitions if gpu in r.gpus and resources.fits(r, count, gpu)]
    sizes = sorted({r.gpus_per_node for r in rows})
    if len(sizes) <= 1:
        return [(sizes[0] if sizes else min(target.node_sizes(gpu) or {NODE_GPUS}), target)]
    out = []
    for node in sizes:
        same = tuple(r for r in rows if r.gpus_per_node == node)
        out.append((node, search.Target(same[0].id, same) if len(same) == 1 else target))
    return out


def node_note(rep: Replica, target) -> Note | None:
    """Where the tensor-parallel all-reduces go, and the link figure taken: a note for the assumptions."""
    t, node = rep.tensor_parallel, rep.node_gpus
    if t == 1:
        return None
    ids = [r.id for r in target.partitions if rep.gpu.id in r.gpus and r.gpus_per_node == node] if target else []
    # resource None: no resource pinned, an HGX/DGX baseboard's NODE_GPUS GPUs taken as one node
    resource = (ids[0] if len(ids) == 1 else target.id) if target else None
    if rep.nodes == 1:
        return note("tp-within-node", tensor_parallel=t, node_gpus=node, resource=resource, baseboard_gpus=NODE_GPUS,
                    link_bytes_per_second=INTERCONNECT.get(rep.gpu.id, PCIE4_X16),
                    link="NVLink" if rep.gpu.id in INTERCONNECT else "PCIe")
    network, source = network_per_gpu(rep.gpu.id)
    return note("tp-across-nodes", tensor_parallel=t, node_gpus=node, resource=resource, baseboard_gpus=NODE_GPUS,
                nodes=rep.nodes,
                link_bytes_per_second=rep.link_bandwidth, gpu=rep.gpu.id, network_bytes_per_second=network,
                why=source)


def choose(lw, s: Settings, target, gpus: dict, e: Engine, notes: list[Note] | None = None):
    """Every GPU type × tensor-parallel degree tried, and the best, as search.choose returns them:
    (candidates, (key, candidate, memory, throughput, hours, charge, InferencePlan) or None), and the
    reasons the ones that could not serve it failed, by (gpu, count). `notes` gets where the chosen
    replica's all-reduces go (node_note)."""
    w, model = lw.spec, lw.model
    form = _FORMS[mode(w)]
    spread = spread_of(lw) if mode(w) == "batch" else None
    if spread is not None:
        form = functools.partial(form, spread=spread)
    candidates: list[Candidate] = []
    failed: dict[tuple[str, int], str] = {}
    limits: list[tuple[float, str, str, int, int]] = []  # (achievable ms, field, gpu, tp, nodes) of latency misses
    best, best_at = None, None
    # A replica within one node is the same whatever the node's size (placements): sized once.
    sized: dict[tuple[str, int, int | None], _Option | InferenceError] = {}
    for gpu in search.candidate_gpus(w, target, gpus, s.precision):
        costs: dict[int, float] = {}       # the least cost found at each GPU count of this type
        for t in search._candidate_counts(w, s, gpu, target, model):
            if mode(w) == "rate" and _dearer(w, s, gpu.id, t, target, costs):
                continue
            served = False
            for node, where in placements(target, gpu.id, t):
                try:
                    rep = replica(model, gpu, tensor_parallel=t, precision=s.precision, engine=e, node_gpus=node)
                    if mode(w) == "rate":
                        limits += _latency_limits(w, rep)
                    key = (gpu.id, t, node if rep.nodes > 1 else None)
                    if key not in sized:
                        try:
                            sized[key] = form(model, w, s, rep, s.variants)
                        except InferenceError as error:
                            sized[key] = error
                    option = sized[key]
                    if isinstance(option, InferenceError):
                        raise option
                except InferenceError as error:
                    if (gpu.id, t) not in failed:
                        # What it would take: the declared batch of a service by hours, else one sequence.
                        mem = inference_memory(model, InferenceSetup(
                            context=s.context, batch=s.batch if mode(w) == "hours" else 1, precision=s.precision,
                            kv_precision=default_kv_precision(s.precision, e), tensor_parallel=t,
                            attention=s.attention, engine=e.id),
                            DEFAULT_OVERHEAD)
                        mem = as_printed(mem, DEFAULT_OVERHEAD)
                        candidates.append(Candidate(gpu.id, t, False, mem.total, gpu.usable_memory_bytes, None, None,
                                                    None, False))
                        failed[(gpu.id, t)] = str(error)
                    continue
                mem = _memory(model, s, rep, option.batch, s.context)
                if mem.total > gpu.usable_memory_bytes:    # sized in exact bytes; as printed it must fit too
                    if (gpu.id, t) not in failed:
                        candidates.append(Candidate(gpu.id, t, False, mem.total, gpu.usable_memory_bytes, None,
                                                    None, None, False))
                        failed[(gpu.id, t)] = (f"its memory as printed, {mem.total / GiB:,.2f} GiB per GPU, exceeds "
                                               f"the {gpu.usable_memory_bytes / GiB:,.2f} GiB usable")
                    continue
                count, hours = option.gpus, option.hours
                requested = requested_gpu_hours(hours, s.buffer, count, s.variants)
                charge = None
                if where is not None and gpu.id in where.gpus:
                    # Each replica, or each group of replicas one job holds, is a job of its own.
                    charge = where.charge_replicas(gpu.id, t, count // t, hours, s.variants, s.buffer)
                    if charge is None:
                        if (gpu.id, t) not in failed:
                            candidates.append(Candidate(gpu.id, t, False, mem.total, gpu.usable_memory_bytes, None,
                                                        None, None, False))
                            most = max(r.gpu_count(gpu.id) for r in where.partitions if gpu.id in r.gpus)
                            failed[(gpu.id, t)] = (f"{count // t:,} replicas of {resources.gpus_text(t)} need "
                                                   f"{count:,} {gpu.id} GPUs, more than any partition of "
                                                   f"{where.id} has ({most:,})")
                        continue
                served = True
                cost = charge.amount if charge is not None else requested
                cand = Candidate(gpu.id, count, True, mem.total, gpu.usable_memory_bytes, requested, None, None,
                                 False, cost=cost, cost_unit=charge.unit if charge is not None else "GPU-hours",
                                 idle_gpus=charge.idle_gpus if charge is not None else 0)
                candidates.append(cand)
                costs[count] = min(cost, costs.get(count, cost))
                key = (round(cost, 6), count, t, gpu.usable_memory_bytes)
                if best is None or key < best[0]:
                    tp = _throughput(w, option, rep)
                    best, best_at = (key, cand, mem, tp, hours, charge, option.plan), (rep, where)
            if served and mode(w) == "hours":
                break       # a service's hours are fixed: more GPUs never cost it less (search.choose)
    if best is None and limits and mode(w) == "rate":
        _impossible(lw, limits)
    if best is not None:
        plan = _PLANS[mode(w)] if spread is None else functools.partial(_PLANS[mode(w)], spread=spread)
        best = best[:-1] + (plan(model, w, s, best_at[0], s.variants).plan,)
    if best_at is not None and notes is not None and (note := node_note(*best_at)):
        notes.append(note)
    return candidates, best, failed


def _dearer(w, s: Settings, gpu: str, t: int, target, costs: dict[int, float]) -> bool:
    """Whether a rate service on tensor-parallel `t` of `gpu` costs more than two counts of that type found
    (`costs`: the least cost at each count), with no need to size it. It runs on replicas × t ≥ t GPUs, and
    a charge only grows with the GPU count (GPU-hours; a partition's charges.charge: GPUs or whole nodes ×
    hours × factor, at least its minimum), so it costs at least t GPUs' charge on its cheapest partition.
    Above both, it is neither the choice nor its type's alternative (search.alternatives shows each type's
    cheapest but the chosen count): leaving it out changes nothing, unless it might leave GPUs of a node
    charged whole idle, which alternatives lists whatever the cost."""
    if len(costs) < 2:
        return False
    second = sorted(costs.values())[1]
    least = []
    for _, where in placements(target, gpu, t):
        if where is None or gpu not in where.gpus:
            least.append(requested_gpu_hours(w.hours, s.buffer, t, s.variants))
            continue
        rows = [r for r in resources.resolve(where.id) if gpu in r.gpus]
        if any(r.charge.per != "gpu-hour" and r.charge.whole_nodes and t % r.gpus_per_node for r in rows):
            return False
        least += [charges.charge(r, gpu, t, w.hours, s.variants, s.buffer).amount for r in rows]
    return bool(least) and min(least) > second * (1 + 1e-9) + 1e-5


def _latency_limits(w, rep: Replica) -> list[tuple[float, str, str, int, int]]:
    """The best TTFT (a lone prompt's prefill) and TPOT (a decode step at batch 1) this replica
    reaches, for the targets given: what is achievable when no configuration meets them."""
    out = []
    if w.ttft_ms is not None:
        out.append((ttft_floor(rep, w.input_tokens, w.output_tokens) * 1e3, "ttft_ms", rep.gpu.id,
                    rep.tensor_parallel, rep.nodes))
    if w.tpot_ms is not None:
        step = decode_step(rep, 1, mean_context(w.input_tokens, w.output_tokens))
        out.append((step.seconds * 1e3, "tpot_ms", rep.gpu.id, rep.tensor_parallel, rep.nodes))
    return out


def _impossible(lw, limits: list[tuple[float, str, str, int, int]]) -> None:
    """Targets no configuration meets even with one request at a time: an input error that says what
    is achievable (the best over the GPUs tried, on a replica within one node where one fits)."""
    w = lw.spec
    problems = []
    for name in ("ttft_ms", "tpot_ms"):
        mine = [x for x in limits if x[1] == name]
        within = [x for x in mine if x[4] == 1] or mine
        if not within:
            continue
        ms, _, gpu, t, _ = min(within)
        target = getattr(w, name)
        if ms <= target:
            continue
        what = (f"a lone prompt of {w.input_tokens:,} tokens takes {ms:,.1f} ms to prefill and decode its first "
                "token" if name == "ttft_ms" else
                f"one decode step at batch 1 reads the weights and one sequence's KV cache in {ms:,.2f} ms")
        # Rounded up, so that the figure quoted is itself a target that can be planned.
        least = math.ceil(ms * 100) / 100
        problems.append(Problem(lw.path, lw.field_line(name), f"workloads[{lw.index}].{name}",
                                f"below what the GPUs can reach (got {target:g} ms, expected at least {least:,.2f} ms: "
                                f"{what} even on {t}× {gpu}, the fastest replica tried within a node)"))
    if problems:
        raise InputError(problems)


def _throughput(w, option: _Option, rep: Replica) -> Throughput:
    e = rep.engine
    if option.tokens_per_second is None:
        hours = f"{w.hours:,.0f} h × {option.gpus} GPU{'s' if option.gpus > 1 else ''}"
        how = "estimated, no pilot" if e.speed_modelled else "hours as declared; speed not modelled"
        return Throughput(None, "service", f"{hours} ({e.name}; {how})")
    return Throughput(option.tokens_per_second, "estimate",
                      f"{option.tokens_per_second:,.0f} output tokens/s on {rep.tensor_parallel}× {rep.gpu.id} "
                      f"({e.name}, calibrated roofline; no pilot)")


def failure_reasons(candidates, failed: dict) -> tuple:
    """The alternatives' reasons, with the estimate's own words where a configuration could not serve."""
    return tuple(c._replace(reason=f"cannot serve it: {failed[(c.gpu, c.count)]}")
                 if not c.fits and (c.gpu, c.count) in failed else c for c in candidates)


def no_fit_message(lw, candidates, failed: dict) -> str | None:
    """Why no configuration serves the workload, when the memory estimate says some would fit (so the
    estimate's own words, for the largest such configuration); None: none fits at all, which
    infeasible.does_not_fit explains with what to change."""
    roomy = [c for c in candidates if (c.gpu, c.count) in failed and c.per_gpu_bytes <= c.usable_bytes]
    if not roomy:
        return None
    where = f"{lw.path}:{lw.line}: workloads[{lw.index}]" if lw.line else lw.path
    c = max(roomy, key=lambda c: (c.count, c.usable_bytes))
    return f"{where}: {lw.spec.name} cannot be served on any GPU tried: {failed[(c.gpu, c.count)]}"
