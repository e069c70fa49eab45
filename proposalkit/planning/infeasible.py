"""Why a workload cannot be planned, in words that fit it: what to change, with the numbers.

Two cases: no GPU configuration to consider at all (a pin or the parallel degrees rule out
every job the target resource takes: an input error), and configurations that were tried
but where the workload fits on none (InfeasibleError, exit 1).
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..catalog import PRECISION_FALLBACK, PRECISION_HARDWARE
from ..errors import Problem
from ..units import GiB, factor_text, gib_shown, gib_up
from .records import Candidate, Settings
from . import ranges, search
from .search import Target

# Weight precisions smaller than 16-bit that the inference memory model knows (precision.py).
QUANTIZED = ("int8", "fp8", "int4")


def _gib(n: float) -> str:
    """A memory figure as the plan prints it: GiB to 0.01, rounded up (units.gib_up)."""
    return f"{gib_up(math.ceil(n)):,.2f} GiB"


def no_configuration(lw, s: Settings, target: Target | None, gpu_types: list[str]) -> Problem | None:
    """Why no GPU type × count was left to try, as a problem on the field that caused it (None: unknown)."""
    w = lw.spec
    pinned = "gpus" if w.gpus is not None else ("tensor_parallel" if w.kind == "inference" and w.tensor_parallel
                                                 else None)
    if w.kind == "inference" and pinned and lw.model.has_architecture and getattr(w, pinned) > lw.model.heads:
        return Problem(lw.path, lw.line, f"workloads[{lw.index}].{pinned}",
                       f"no GPU configuration to consider: an inference replica on {getattr(w, pinned)} GPUs is "
                       f"{getattr(w, pinned)}-way tensor parallel, more ranks than {lw.model.id} has attention heads "
                       f"(expected at most {lw.model.heads}: each tensor-parallel rank holds at least one head)")
    if target is None:
        return None
    limits = [(limit, gpu) for gpu in gpu_types if (limit := target.most_per_job(gpu)) is not None]
    if not limits:
        return None
    (most, rule), gpu = max(limits)
    largest = f"at most {most:,} {gpu} GPUs: {rule}"

    def problem(name: str, why: str) -> Problem:
        return Problem(lw.path, lw.line, f"workloads[{lw.index}].{name}", f"no GPU configuration to consider: {why}")

    if pinned is not None:
        count = getattr(w, pinned)
        return problem(pinned, f"no {target.id} job takes {count:,} GPUs ({largest}); pin at most {most:,}, "
                               "or target another resource")
    model_parallel = s.tensor_parallel * s.pipeline_parallel
    if w.kind != "inference" and model_parallel > most:
        name = "tensor_parallel" if s.tensor_parallel > 1 else "pipeline_parallel"
        return problem(name, f"one model copy takes tensor_parallel × pipeline_parallel = {s.tensor_parallel} × "
                             f"{s.pipeline_parallel} = {model_parallel} GPUs, more than any {target.id} job takes "
                             f"({largest}); lower them, or target another resource")
    return None


def precision_problem(lw, s: Settings, target: Target | None, gpus: dict) -> Problem | None:
    """A precision no GPU the search would try runs natively (catalog.PRECISION_HARDWARE: bf16 on a V100,
    fp8 before Hopper and Ada): an input error on the field to change, never a plan at another format's
    peak. The pinned GPU (`gpu`), else the precision (a target or a pilot with no such GPU); it names the
    nearest precision those GPUs run (bf16 → fp16, fp8 → int8) and a GPU that runs this one."""
    w = lw.spec
    need = PRECISION_HARDWARE.get(s.precision)
    pool = search.candidate_gpus(w, target, gpus)
    if need is None or not pool or any(g.supports(s.precision) for g in pool):
        return None
    _, hardware, _ = need
    lacking = ", ".join(f"{g.id} ({g.architecture})" for g in pool)
    instead = PRECISION_FALLBACK.get(s.precision)
    if w.gpu is not None:
        name, what, where = "gpu", f"{lacking} has no {hardware}", f" on {w.gpu}"
    elif target is not None:
        name, where = "precision", ""
        what = f"no GPU of {target.id} runs {s.precision}: {lacking} {'has' if len(pool) == 1 else 'have'} no {hardware}"
    else:
        name, what, where = "precision", f"the pilot ran on {lacking}, which has no {hardware}", ", as the pilot did"
    expected = [f"precision: {instead}{where}"] if instead else []
    if target is None:
        other = next((g.id for g in gpus.values() if g.supports(s.precision)), None)
        pin = "a GPU" if w.gpu is not None else "pin a GPU"
        expected.append(f"{pin} with {s.precision}" + (f" such as {other}" if other else ""))
    else:
        expected.append("another resource")
    given = "" if w.precision is not None else ", the default"
    return Problem(lw.path, lw.field_line(name), f"workloads[{lw.index}].{name}",
                   f"{what} (got precision {s.precision}{given}; expected {', or '.join(expected)})")


def does_not_fit(lw, s: Settings, closest: Candidate, relaxed: str | None) -> str:
    """The message for a workload that fits on no configuration tried, with what to change."""
    w = lw.spec
    where = f"{lw.path}:{lw.line}: workloads[{lw.index}]" if lw.line else lw.path
    margin, p10 = factor_text(ranges.memory_margins()[0]), ranges.memory_range(closest.per_gpu_bytes)[0]
    low = f" (× {margin} = {p10:,.2f} GiB at the memory p10)" if w.kind != "inference" else ""
    msg = (f"{where}: {w.name} does not fit: it needs {_gib(closest.per_gpu_bytes)} per GPU{low} on "
           f"{closest.count}× {closest.gpu}, which has {gib_shown(closest.usable_bytes):,.2f} GiB usable")
    if relaxed:
        return msg + would_fit(w, relaxed)
    memory = search.memory_of(lw.model, w, s, closest.count, closest.zero_stage, closest.activation_checkpointing)
    hint = _inference_hint if w.kind == "inference" else _training_hint
    return msg + "; " + hint(lw, s, closest, memory)


def beyond_resource(lw, s: Settings, closest: Candidate, target: Target, anywhere: str | None) -> str:
    """The message for a workload that fits in no job the target resource takes: the closest of its largest jobs
    (the partition's size and per-job limit in words), what it would take elsewhere (`anywhere`: the fewest GPUs
    that hold it where jobs are not limited), and what to change in the workload to fit here."""
    w = lw.spec
    where = f"{lw.path}:{lw.line}: workloads[{lw.index}]" if lw.line else lw.path
    _, rule = target.most_per_job(closest.gpu)
    msg = (f"{where}: {w.name} does not fit in any job {target.id} takes: on {closest.count:,}× {closest.gpu} "
           f"({rule}) it needs {_gib(closest.per_gpu_bytes)} per GPU, which has "
           f"{gib_shown(closest.usable_bytes):,.2f} GiB usable")
    if anywhere:
        msg += f"; it would fit on {anywhere}, more than {target.id} takes in one job: target another resource"
    memory = search.memory_of(lw.model, w, s, closest.count, closest.zero_stage, closest.activation_checkpointing)
    hint = _inference_hint if w.kind == "inference" else _training_hint
    return msg + ("; or " if anywhere else "; ") + hint(lw, s, closest, memory)


def would_fit(w, relaxed: str) -> str:
    """'; it would fit on 4× a100-40gb (remove the gpu/gpus pin, or pin that)': the smallest configuration
    that holds the workload (planner._relaxed_fit), for a message that says the pinned one does not."""
    pins = "gpu/gpus/tensor_parallel" if w.kind == "inference" and w.tensor_parallel else "gpu/gpus"
    return f"; it would fit on {relaxed} (remove the {pins} pin, or pin that)"


def _large(part: int, memory) -> bool:
    """Whether a component is worth a suggestion: a tenth of the memory or more."""
    return part * 10 >= memory.total


def _inference_hint(lw, s: Settings, closest: Candidate, memory) -> str:
    w = lw.spec
    tries = []
    if _large(memory.kv_cache, memory):
        tries.append("lower context or batch")
    if _large(memory.weights, memory) and s.precision != "int4":
        smaller = "int4" if s.precision in QUANTIZED else "int8, fp8 or int4"
        int4 = search.memory_of(lw.model, w, replace(s, precision="int4"), closest.count, None, None)
        tries.append(f"quantize the weights (precision: {smaller}; with int4 it needs {_gib(int4.total)} per GPU)")
    if w.gpus is not None or w.tensor_parallel is not None:
        name = "gpus" if w.gpus is not None else "tensor_parallel"
        tries.append(f"raise {name}, the tensor-parallel degree (now {getattr(w, name):,})")
    return (f"per GPU the KV cache of context {s.context:,} × batch {s.batch:,} takes {_gib(memory.kv_cache)} "
            f"and the {s.precision} weights {_gib(memory.weights)}: " + _or(tries or ["raise gpus"]))


def _training_hint(lw, s: Settings, closest: Candidate, memory) -> str:
    w = lw.spec
    method = w.method or "full"
    states = memory.weights + memory.gradients + memory.optimizer
    for_states, for_activations = [], []
    if method == "full":
        for_states.append("method: lora or qlora")
    elif method == "lora":
        for_states.append("method: qlora")
    if w.zero_stage is not None and w.zero_stage < 3:
        for_states.append(f"zero_stage: 3 (now {w.zero_stage})")
    if w.gpus is not None:
        for_states.append(f"more GPUs (gpus: now {w.gpus:,})")
    if w.activation_checkpointing is False or w.activation_checkpointing == "selective":
        for_activations.append("activation_checkpointing: true")
    if s.micro_batch > 1:
        for_activations.append(f"a smaller micro_batch (now {s.micro_batch:,})")
    for_activations.append(f"a shorter seq_len (now {s.seq_len:,})")
    groups = [(states, for_states), (memory.activations, for_activations)]
    groups.sort(key=lambda g: -g[0])          # the larger part first
    tries = [t for part, items in groups if _large(part, memory) for t in items]
    tries.append(f"a larger tensor_parallel or pipeline_parallel (now {s.tensor_parallel} × {s.pipeline_parallel})")
    return (f"per GPU the model states take {_gib(states)} and the activations {_gib(memory.activations)}: try "
            + _or(tries))


def _or(items: list[str]) -> str:
    """'a', 'a, or b', 'a, b, or c' (the comma keeps 'lora or qlora' apart from the next choice)."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + ", or " + items[-1]


def tight_warning(lw, s: Settings, chosen: Candidate, memory, low: float, high: float) -> str:
    """A configuration that fits at the memory's p10 but not at its p90 (planned, not refused): the figures, and
    what would bring the p90 within the GPU, each with the memory it leaves (micro-batch, checkpointing,
    offload), the lever that frees the most first."""
    w = lw.spec
    usable = chosen.usable_bytes
    levers = []
    if s.micro_batch > 1:
        levers.append(("micro_batch: 1", replace(s, micro_batch=1), chosen.activation_checkpointing))
    if chosen.activation_checkpointing is not True:
        levers.append(("activation_checkpointing: true", s, True))
    if memory.optimizer and not s.offload_optimizer:
        levers.append(("offload: {optimizer: cpu}", replace(s, offload_optimizer=True), chosen.activation_checkpointing))
    cuts = []
    for text, settings, ckpt in levers:
        total = search.memory_of(lw.model, w, settings, chosen.count, chosen.zero_stage, ckpt).total
        if total < memory.total:
            cuts.append((total, f"{text} (p90 {ranges.memory_range(total)[1]:,.2f} GiB"
                                f"{', fits' if ranges.memory_at(total, high) <= usable else ''})"))
    cuts.sort()
    share = ranges.memory_fit_share(memory.total, usable)
    p10, p90 = ranges.memory_range(memory.total)
    return (f"{w.name}: tight on {chosen.count}× {chosen.gpu}: {_gib(memory.total)} per GPU planned "
            f"of {gib_shown(usable):,.2f} GiB usable, × {factor_text(low)}–{factor_text(high)} = "
            f"{p10:,.2f}–{p90:,.2f} GiB at the memory p10–p90: "
            f"it fits in {share:.0%} of the validated cases (whole-device memory, measured ÷ planned), so a run may "
            "need more than the GPU has; to cut: "
            + (_or([c for _, c in cuts]) if cuts else "a shorter seq_len, or more GPUs"))
