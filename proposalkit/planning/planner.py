"""Workload × catalogs → Plan: the GPU choice, tokens, runtime and GPU-hours.

Pure: takes validated workloads (input/loading.py) and the catalogs, returns
the frozen records of records.py. Every default the planner fills in and every
rule it applies is recorded as an assumption, so the report can print it. The
GPU choice itself is search.py's; charges, caps and credits are charges.py's.
"""

from __future__ import annotations

from dataclasses import replace

from .. import catalog
from ..errors import InfeasibleError, InputError, Problem
from ..estimate.cross_checks import cross_checks
from ..estimate.flops import runtime_hours
from ..estimate.inference import kv_note
from ..estimate.links import NODE_GPUS
from ..catalog.modules import FAMILY_MODULES, LoraSpec, default_targets
from ..estimate.lora import lora_trainable_params
from ..estimate.loss import LOSS_REFERENCES, LOSS_SOURCES
from ..estimate.step_time import step_note
from ..knobs import AUTO_COVERAGE, KNOBS, Knob, default, knob
from ..catalog.shapes import ModelSpec, is_mla
from ..input import frameworks
from ..input.loading import LoadedFile, LoadedWorkload
from ..input.price_rules import price_for
from ..input.values import AUTO
from ..catalog import resources
from . import charges, comparison, infeasible, inference, pilots, ranges, search, speed
from .intervals import total
from .citations import plan_references
from ..notes import Note, note
from ..units import hours_per_run, product, requested_gpu_hours, shown
from .records import Candidate, DataSize, Plan, Settings, WorkloadPlan
from .stores import with_shared_models, workload_storage

# A workload's own `mfu` above this draws a warning: the highest model-FLOPs utilization
# published for dense transformer training that we know of (the warning's text and its
# threshold are this one number). Korthikanti et al. 2022 Table 3: 41.5% (22B), 51.4% (175B),
# 56.0% (530B), 56.3% (1T on 512 A100); Llama 3 405B reached 38–43% (Dubey et al. 2024 Table 4).
PUBLISHED_MFU_MAX = 0.563
PUBLISHED_MFU_MAX_SOURCE = "Korthikanti et al. 2022 Table 3, GPT 1T on 512 A100"


# ----------------------------------------------------------------- settings

def _precision(w, model: ModelSpec, notes: list[Note]) -> str:
    """The workload's precision; else a quantized checkpoint (config.json's quantization_config) is served
    at its own, and training loads it into 16-bit weights (QLoRA quantizes its base itself); else bf16."""
    fmt = model.weight_format
    if fmt is None:
        return w.precision or default("precision")
    method = fmt.method
    if w.precision is not None:
        notes.append(note("precision-given", precision=w.precision, checkpoint_method=method))
        return w.precision
    if w.kind == "inference":
        notes.append(note("precision-checkpoint", precision=fmt.precision))
        return fmt.precision
    notes.append(note("precision-training-dequantized", ("dettmers-2023",) if w.method == "qlora" else (),
                      precision=default("precision"), checkpoint_method=method, qlora=w.method == "qlora"))
    return default("precision")


def _attention(w, notes: list[Note]) -> str:
    """Inference attention kernel: as given; flash_attention: false is eager; else flash (serving engines)."""
    if w.kind != "inference":
        return default("attention")
    if w.attention is not None:
        return w.attention
    if w.flash_attention is False:
        notes.append(note("inference-attention-eager"))
        return "eager"
    return default("attention")


def _given(w, k: Knob):
    """The workload's value of knob `k` (its field, dotted under a section), None where it is unset."""
    value = w
    for part in k.workload_field.split("."):
        value = getattr(value, part) if value is not None else None
    return value


def _settings(w, model: ModelSpec, notes: list[Note], behaviour: frameworks.Behaviour) -> Settings:
    """Every knob of the workload: as given (its field, or `defaults:` or its framework's preset, merged into
    the workload when it was loaded), else computed where the planner does (below), else the table's default
    (proposalkit/knobs.py); the framework's behaviour flags as resolved at load. Each default filled in that
    changes a figure is stated in `notes`."""
    given = {k.name: _given(w, k) for k in KNOBS.values() if k.settings and k.workload_field}
    values = {name: default(name) if value is None else value for name, value in given.items()}
    seq_len = w.seq_len or (w.data.seq_len if w.data else None)
    if seq_len is None and w.kind != "inference":
        cap = default("seq_len")
        seq_len = min(model.max_context or cap, cap)
        notes.append(note("seq-len-default", seq_len=seq_len, cap=cap))
    lora = None
    if w.method in ("lora", "qlora"):
        given_lora = w.lora
        rank = given_lora.rank if given_lora else LoraSpec.rank   # the default rank has one home: catalog/modules.py
        targets = tuple(given_lora.targets) if given_lora and given_lora.targets else default_targets(model)
        lora = LoraSpec(rank=rank, targets=targets)
        if (given_lora is None or not given_lora.targets) and (is_mla(model) or model.family in FAMILY_MODULES):
            notes.append(note("lora-default", ("hu-2021",), rank=rank, targets=targets,
                              reason="mla" if is_mla(model) else model.family))
        elif given_lora is None:
            notes.append(note("lora-default", ("hu-2021",), rank=rank, targets=targets, reason=None))
    if w.buffer is None:
        notes.append(note("buffer-default", ("nairr-guide",), buffer=default("buffer")))
    if w.storage is None and w.kind != "inference":
        notes.append(note("checkpoints-default", retained=default("checkpoints_retained")))
    if w.loss is None and w.kind != "inference":
        notes.append(note("loss-default", LOSS_REFERENCES[default("loss")], loss=default("loss"),
                          why=LOSS_SOURCES[default("loss")]))
    if w.flash_attention is None and w.kind != "inference":
        notes.append(note("flash-attention-default", ("dao-2022",), why=knob("flash_attention").source))
    precision = _precision(w, model, notes)
    if w.kind == "inference" and (kv := kv_note(precision, w.framework)):
        notes.append(kv)
    notes += behaviour.notes
    if values["buffer"] == AUTO:    # resolved once the estimate's regime is known (ranges.buffer_at)
        values.update(buffer=0.0, coverage=AUTO_COVERAGE if values["coverage"] is None else values["coverage"])
    values.update(precision=precision, seq_len=seq_len, lora=lora, attention=_attention(w, notes),
                  offload_optimizer=values["offload_optimizer"] == "cpu",
                  offload_params=values["offload_params"] == "cpu")
    return Settings(**values, **dict(behaviour.flags), flag_sources=behaviour.sources)


def _tokens(w) -> tuple[int, str]:
    if w.requests is not None:
        tokens = w.requests * w.output_tokens
        return tokens, f"{w.requests:,} requests × {w.output_tokens:,} output tokens = {tokens:,} tokens generated"
    if w.kind == "inference" and w.request_rate is not None:
        return 0, (f"service of {w.request_rate:g} request{'' if w.request_rate == 1 else 's'}/s kept up {w.hours:,.0f} h (costed by hours, not "
                   "tokens)")
    if w.kind == "inference" and w.tokens is None:
        return 0, f"service kept up {w.hours:,.0f} h (costed by hours, not tokens)"
    if w.tokens is not None:
        return w.tokens, f"{w.tokens:,} tokens (given)"
    d = w.data
    tokens = round(d.samples * d.seq_len * d.epochs)
    return tokens, f"{d.samples:,} samples × {d.seq_len:,} tokens × {d.epochs:g} epochs = {tokens:,} tokens"


def plan_workload(lw: LoadedWorkload, resource_id: str | None = None, *, explain: bool = True,
                  period_days: float | None = None) -> WorkloadPlan:
    """`explain`: an infeasible workload's message says what would fit (False: the planner's own
    searches for it, which need only whether it fits). `period_days`: the allocation period, which one
    training run on the target resource must fit even on the largest job it takes."""
    w, model = lw.spec, lw.model
    gpus = catalog.gpus()
    # A cloud instance type at the workload's price_per_hour (or its proposal's, which plan_files put there).
    target = search.target(resource_id, w.price_per_hour,
                           "workload file" if "price_per_hour" in dict(lw.lines) else "proposal")
    notes: list[Note] = list(lw.preset_notes)
    warnings: list[str] = []
    if target is not None and w.gpu is not None and w.gpu not in target.gpus:
        where = f"workloads[{lw.index}].gpu"
        raise InputError([Problem(lw.path, lw.line, where,
                                  f"{w.gpu} is not a GPU of {target.id} (it has {', '.join(target.gpus)}): pin one "
                                  "of those, or target another resource")])
    if w.kind == "inference" and None not in (w.gpus, w.tensor_parallel) and w.gpus != w.tensor_parallel:
        raise InputError([Problem(lw.path, lw.line, f"workloads[{lw.index}].tensor_parallel",
                                  f"an inference replica runs on tensor_parallel GPUs (got {w.tensor_parallel}, and "
                                  f"gpus: {w.gpus}; expected the same number, or only one of them)")])
    s = _settings(w, model, notes, lw.behaviour)
    if (problem := infeasible.precision_problem(lw, s, target, gpus)) is not None:
        raise InputError([problem])
    if w.kind != "inference" and s.seq_len % s.context_parallel:
        raise InputError([Problem(lw.path, lw.line, f"workloads[{lw.index}].context_parallel",
                                  f"does not divide the sequence length (got {s.context_parallel} for the default "
                                  f"seq_len {s.seq_len:,}; expected a divisor, or set seq_len)")])
    tokens, tokens_derivation = _tokens(w)
    mfu = speed.mfu(w, notes) if w.kind != "inference" else (None, None, ())
    form, served, failed = inference.mode(w), None, {}
    if form is not None:
        s = inference.settings(w, s)
        if s.coverage is not None:      # buffer: auto, which for inference does not depend on the configuration
            s = replace(s, buffer=ranges.inference_buffer(form, s.coverage))
        candidates, best, failed = inference.choose(lw, s, target, gpus, inference.engine_of(w, notes), notes)
    else:
        # Chosen where the memory's p90 fits; where none does, the least that fits at its p10, planned "tight".
        low, high = ranges.memory_margins()
        candidates, best = search.choose(model, w, s, target, gpus, tokens, mfu, high)
        tight = best is None and bool(candidates)
        if tight:
            candidates, best = search.choose(model, w, s, target, gpus, tokens, mfu, low)
    if not candidates:
        problem = infeasible.no_configuration(lw, s, target, [g.id for g in search.candidate_gpus(w, target, gpus)])
        if problem is not None:
            raise InputError([problem])
        raise InfeasibleError([f"{lw.path}:{lw.line}: workloads[{lw.index}]: {w.name}: no GPU configuration "
                               "to consider"])
    if best is None:
        if not explain:
            raise InfeasibleError([f"{w.name} does not fit"])
        served = inference.no_fit_message(lw, candidates, failed)
        if served is not None and (w.gpu is not None or w.gpus is not None or w.tensor_parallel is not None):
            relaxed = _relaxed_fit(lw, s, resource_id)
            served += infeasible.would_fit(w, relaxed) if relaxed else ""
        raise InfeasibleError([served or _infeasible_message(lw, s, candidates, resource_id)])

    if form is not None:
        _, chosen, mem, tp, hours, charge, served = best
        s = replace(s, batch=served.batch, tensor_parallel=served.tensor_parallel)
    else:
        _, chosen, mem, tp, hours, charge = best
    # The hours per run as printed, rounded up to 0.01 h (units.hours_per_run): every product the documents
    # show starts from it, so it is the reviewer's.
    hours = hours_per_run(hours)
    gpu = gpus[chosen.gpu]
    if tp is None:
        tp = speed.throughput(model, w, s, gpu, chosen.count, chosen.activation_checkpointing, gpus, mfu,
                               chosen.zero_stage)
    s = replace(s, buffer=ranges.buffer_at(s, w.kind, tp, gpu.id, chosen.count, pilots.runs_of(w)))
    alternatives = inference.failure_reasons(search.alternatives(candidates, chosen), failed)
    if served is not None and served.mode != "hours":
        # A note, not a warning: sizing inference without a pilot is what the estimate is for, and its
        # measured error is in docs/validation.md (the training FLOPs estimate warns: it asks for a pilot).
        notes.append(note("inference-roofline"))
    if charge is not None and period_days is not None and w.kind != "inference" and hours > period_days * 24:
        _within_period(lw, s, target, candidates, tokens, mfu, period_days)
    if tp.source == "pilot-extrapolated":
        warnings.append(f"{w.name}: throughput extrapolated from the pilot: {tp.derivation}")
    if tp.step is not None:
        notes.append(step_note(tp.step, s.kernels, gpu))
        warnings.append(f"{w.name}: no pilot run yet: the speed is estimated from the step's parts (matrix "
                        f"multiplies, memory-bound kernels{', collectives' if tp.step.comm else ''})")
    elif tp.source == "flops":
        warnings.append(f"{w.name}: no pilot run yet: the speed is estimated from FLOPs at an assumed MFU")
    compared = comparison.compare(model, w, s, gpus, mfu)
    for pilot in compared:
        warnings += pilot.caveats(w.name, gpus[pilot.run.gpu].usable_memory_bytes if pilot.run.gpu in gpus else None)
    if w.mfu is not None and w.mfu > PUBLISHED_MFU_MAX:
        warnings.append(f"{w.name}: MFU {w.mfu:g} is above the highest published achieved MFU "
                        f"({PUBLISHED_MFU_MAX:g}: {PUBLISHED_MFU_MAX_SOURCE})")
    if s.seq_len and model.max_context and s.seq_len > model.max_context:
        warnings.append(f"{w.name}: sequence length {s.seq_len:,} exceeds {model.id}'s maximum context {model.max_context:,}")
    filled = [c.count for c in candidates if c.gpu == chosen.gpu and c.fits and c.idle_gpus and c.count < chosen.count]
    if filled and tp.source == "flops":
        notes.append(note("whole-nodes", gpus=chosen.count, fewer=filled[0], resource=charge.resource_id,
                          scaling=search.SCALING_RULE))
    if form is None and w.kind != "inference":
        notes.append(note("fit-margin", margin=high, tight=tight))
        if tight:
            warnings.append(infeasible.tight_warning(lw, s, chosen, mem, low, high))
    if w.kind != "inference":
        if w.zero_stage is None and chosen.zero_stage:
            notes.append(note("zero-stage-chosen", ("rajbhandari-2020",), zero_stage=chosen.zero_stage,
                              gpus=chosen.count))
        if w.activation_checkpointing is None and chosen.activation_checkpointing:
            notes.append(note("checkpointing-turned-on"))
    # What the model's reader assumed, each naming the model (its id is settled only here: a mapping's name renames
    # the model its config gave).
    notes += [Note(n.kind, (("model", model.id), *n.values), n.sources) for n in model.records]
    warnings += [f"{w.name}: {model.id}: {text}" for text in model.warnings]
    trainable = None
    if w.kind != "inference":
        trainable = lora_trainable_params(model, s.lora) if s.lora else model.params

    walltime, walltime_tier, segments = None, None, 1
    if charge is not None:
        # Per job: a service whose replicas one job cannot hold runs as several (charges.charge_groups).
        partition, per_job = resources.resource(charge.resource_id), charge.gpus_per_job
        walltime = partition.walltime_limit_hours(per_job)
        walltime_tier = partition.walltime_tier(per_job)
        segments = charges.walltime_segments(hours, walltime)
        warnings += [f"{w.name}: {text}" for text in charges.job_limit_warnings(partition, per_job, hours, w.kind)]
    cited: tuple[str, ...] = ()      # the works the warnings cite
    if w.kind != "inference" and s.tensor_parallel > 1 and (crossing := _tensor_parallel_nodes(
            w.name, s.tensor_parallel, charge)):
        warnings += crossing
        cited += ("narayanan-2021",)
    gpu_hours = shown(product(hours, chosen.count, s.variants))
    return _with_ranges(WorkloadPlan(
        name=w.name, kind=w.kind, method=(w.method or "full") if w.kind != "inference" else None,
        description=w.description, model=model, gpu=gpu, gpu_count=chosen.count, memory=mem,
        zero_stage=chosen.zero_stage, activation_checkpointing=chosen.activation_checkpointing,
        settings=s, tokens=tokens, tokens_derivation=tokens_derivation, throughput=tp,
        runtime_hours=hours, gpu_hours=gpu_hours,
        gpu_hours_requested=requested_gpu_hours(hours, s.buffer, chosen.count, s.variants),
        trainable_params=trainable, alternatives=alternatives,
        cross_checks=tuple(cross_checks(model, kind=w.kind, method=w.method or "full", precision=s.precision,
                                        context=s.context if w.kind == "inference" else None)),
        assumptions=(*notes, *mem.notes), warnings=tuple(warnings), path=lw.path,
        charge=charge, storage=workload_storage(w, model, s, tokens, trainable, chosen.zero_stage),
        calendar_days=charges.calendar_days(hours, s.variants, s.concurrency),
        calendar_waves=charges.calendar_waves(s.variants, s.concurrency),
        walltime_hours=walltime, walltime_tier=walltime_tier, walltime_segments=segments,
        pilots=compared, pilot_scaling=pilots.scaling(w), inference=served, sources=cited,
        extrapolation=w.extrapolation,
        data=(DataSize(w.data.samples, w.data.seq_len, w.data.epochs)
              if w.kind != "inference" and w.tokens is None and w.data is not None else None),
    ))


def _with_ranges(p: WorkloadPlan) -> WorkloadPlan:
    """The plan with its ranges (planning/ranges.py) and their notes after its other assumptions."""
    r = ranges.workload_ranges(p)
    return replace(p, ranges=r, assumptions=p.assumptions + tuple(ranges.range_notes(
        r, p.settings, illustrative=any(c.run.illustrative for c in p.pilots))))


def _within_period(lw: LoadedWorkload, s: Settings, target: search.Target, candidates: list[Candidate],
                   tokens: int, mfu, period_days: float) -> None:
    """One training run longer than the allocation period even on the largest job the target takes of each GPU
    type that holds it (at the FLOPs estimate's or the pilot's rate there): exit 1 with the tokens that fit the
    period on the fastest of them."""
    w, model, gpus = lw.spec, lw.model, catalog.gpus()
    options = []
    for c in candidates:
        largest = search.largest_count(w, s, gpus[c.gpu], target)
        if c.fits and largest is not None and c.gpu not in (o[2] for o in options):
            tp = speed.throughput(model, w, s, gpus[c.gpu], largest, c.activation_checkpointing, gpus, mfu,
                                   c.zero_stage)
            options.append((runtime_hours(tokens, tp.tokens_per_second), largest, c.gpu))
    if not options:     # a pinned count: the calendar warning says it
        return
    hours, largest, gpu = min(options)
    if hours <= period_days * 24:
        return
    fit = int(tokens * period_days * 24 / hours)
    where = f"{lw.path}:{lw.line}: workloads[{lw.index}]" if lw.line else lw.path
    _, rule = target.most_per_job(gpu)
    raise InfeasibleError([f"{where}: {w.name} does not finish within the {period_days:,.0f}-day allocation period on "
                           f"any job {target.id} takes: one run of {tokens:,} tokens takes {hours / 24:,.0f} days even "
                           f"on {largest:,}× {gpu} ({rule}); at most {fit:,} tokens fit the period there: fewer "
                           "tokens, or target another resource"])


def _tensor_parallel_nodes(name: str, t: int, charge) -> list[str]:
    """Training's runtime is FLOPs at an MFU, which prices no communication: tensor parallelism beyond one
    node (the charged partition's gpus_per_node; NODE_GPUS where no resource is pinned) is warned of."""
    node = resources.resource(charge.resource_id).gpus_per_node if charge is not None else NODE_GPUS
    if t <= node:
        return []
    where = (f"the {node} GPUs per node of {charge.resource_id}" if charge is not None else
             f"a node of {NODE_GPUS} GPUs (no resource pinned)")
    return [f"{name}: tensor_parallel {t} exceeds {where}: its all-reduces cross the network, which the runtime "
            "(FLOPs at an MFU) does not price; keep tensor parallelism within a node and pipeline parallelism "
            "across nodes (Narayanan et al. 2021 §3.2, Takeaway #1)"]


def _infeasible_message(lw: LoadedWorkload, s: Settings, candidates: list[Candidate], resource_id: str | None) -> str:
    w = lw.spec
    closest = min(candidates, key=lambda c: (c.per_gpu_bytes / c.usable_bytes, c.count))
    pinned = w.gpu is not None or w.gpus is not None or (w.kind == "inference" and w.tensor_parallel is not None)
    relaxed = _relaxed_fit(lw, s, resource_id) if pinned else None
    target = search.target(resource_id, lw.spec.price_per_hour)
    if target is None or pinned:
        return infeasible.does_not_fit(lw, s, closest, relaxed)
    return infeasible.beyond_resource(lw, s, closest, target, _fit_anywhere(lw, target))


def _fit_anywhere(lw: LoadedWorkload, target: search.Target) -> str | None:
    """The fewest GPUs of one of the target's types that hold the workload where jobs are not limited by the
    target's size (no resource, that type pinned): what a workload too large for the resource would take."""
    best = None
    for gpu in target.gpus:
        try:
            p = plan_workload(_with(lw, lw.spec.model_copy(update={"gpu": gpu, "gpus": None})), None, explain=False)
        except (InfeasibleError, InputError):
            continue
        if best is None or p.gpu_count < best[0]:
            best = (p.gpu_count, gpu)
    return f"{best[0]:,}× {best[1]}" if best else None


def _relaxed_fit(lw: LoadedWorkload, s: Settings, resource_id: str | None) -> str | None:
    """The smallest configuration that holds the workload with the pins loosened: the pinned GPU type
    first, else the type the planner would choose; on it the fewest GPUs (an inference replica's
    tensor-parallel degree) that fit, tried in ascending order. Not the cheapest plan's count, which
    may take more GPUs than needed to run faster."""
    w = lw.spec
    free = {"gpus": None, "tensor_parallel": None} if w.kind == "inference" else {"gpus": None}
    if w.gpu is not None and any(getattr(w, name) is not None for name in free):
        if (least := _least_fit(lw, s, w.gpu, resource_id)) is not None:
            return least
    try:
        p = plan_workload(_with(lw, w.model_copy(update={**free, "gpu": None})), resource_id, explain=False)
    except (InfeasibleError, InputError):
        return None
    return _least_fit(lw, s, p.gpu.id, resource_id)


def _least_fit(lw: LoadedWorkload, s: Settings, gpu: str, resource_id: str | None) -> str | None:
    """The fewest GPUs of type `gpu` the workload fits on, as '4× a100-40gb' (None: none the search tries)."""
    w = lw.spec
    name = "tensor_parallel" if w.kind == "inference" and w.gpus is None else "gpus"
    free = {"gpus": None, "gpu": gpu} | ({"tensor_parallel": None} if w.kind == "inference" else {})
    loose = w.model_copy(update=free)
    counts = search._candidate_counts(loose, s, catalog.gpus()[gpu], search.target(resource_id, w.price_per_hour),
                                      lw.model)
    for count in sorted(counts):
        try:
            p = plan_workload(_with(lw, loose.model_copy(update={name: count})), resource_id, explain=False)
        except (InfeasibleError, InputError):
            continue
        replicas = p.inference.replicas if p.inference is not None else 1
        return f"{count}× {gpu}" + (f" per replica ({replicas} replicas)" if replicas > 1 else "")
    return None


def _with(lw: LoadedWorkload, spec) -> LoadedWorkload:
    return LoadedWorkload(spec, lw.model, lw.path, lw.line, lw.index, lw.preset_notes, lw.lines)


def plan_files(files: list[LoadedFile]) -> Plan:
    """Plan every workload of every file; collect every input mistake, then every infeasible workload,
    before raising."""
    plans, problems, mistakes = [], [], []
    proposal = next((f.proposal for f in files if f.proposal is not None), None)
    period = resources.allocation_period_days(proposal.track if proposal is not None and proposal.track else "standard")
    for f in files:
        for lw in f.workloads:
            resource_id = lw.spec.resource or (f.proposal.resource if f.proposal else None)
            if lw.spec.price_per_hour is None and (price := price_for(lw.spec, f.proposal)) is not None:
                lw = _with(lw, lw.spec.model_copy(update={"price_per_hour": price}))     # the proposal's price
            try:
                plans.append(plan_workload(lw, resource_id, period_days=period))
            except InfeasibleError as error:
                problems += error.messages
            except InputError as error:
                mistakes += error.problems
    if mistakes:
        raise InputError(mistakes)
    if problems:
        raise InfeasibleError(problems)
    return assemble(plans, proposal)


def assemble(plans: list[WorkloadPlan], proposal) -> Plan:
    """Workload plans → the Plan: warnings, the track's caps and the ACCESS credits checked once.

    `check` calls it on the workloads that could be planned, so that one infeasible
    workload hides neither the others nor the caps.
    """
    track = (proposal.track if proposal is not None and proposal.track else "standard")
    plans = with_shared_models(plans)     # a model file several workloads start from is stored once
    warnings = [text for p in plans for text in p.warnings]
    plan = Plan(tuple(plans), proposal, (), track)
    used = [p.charge.resource_id for p in plans if p.charge is not None]
    charged = [p.charge for p in plans if p.charge is not None]
    findings = charges.cap_findings(track, plan.gpu_hours_requested, used, plan.calendar_days,
                                    jetstream2_sus=charges.jetstream2_sus(charged), gpu_types=len(plan.by_gpu_type()))
    access = charges.access_credits(charged, [p.name for p in plans if p.charge is None])
    tier_id = proposal.access_tier if proposal is not None else None
    findings += charges.access_findings(access, tier_id)
    warnings += [f.message for f in findings]
    return Plan(tuple(plans), proposal, tuple(warnings), track, access, tuple(findings),
                access_tier=resources.credit_tier(tier_id) if tier_id is not None else None,
                references=plan_references(plans), period_months=resources.track(track).period_months,
                total_range=total([(p.gpu_hours, p.gpu_hours_requested, p.ranges) for p in plans if p.ranges]))
