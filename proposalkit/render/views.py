"""One workload's view for the report: the WorkloadPlan with every derivation written out.

`workload_view(w)` gives the templates what they show for a workload: its
kind in words, the memory components with their shares, the derivation steps
of the body (memory, tokens, throughput, runtime, GPU-hours, units) and of
the appendix (MFU source, calendar, walltime, storage arithmetic), the
settings, the alternatives and the rules of thumb beside the estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..notes import of_kind
from ..planning.records import Candidate, WorkloadPlan, WorkloadStorage
from ..units import SECONDS_PER_HOUR, ms_number
from .format import fmt_count, fmt_days, fmt_gib, fmt_hours, fmt_pct, fmt_rate, limit_hours, unpinned
from .notes import document_notes, note_texts
from .notes_ranges import range_line
from .pilots import SHORT_HASH
from .words import batch_tokens_words, n_explained, rate_clause, tokens_words


@dataclass(frozen=True)
class Step:
    """One line of a derivation: what is computed and the arithmetic with every number substituted."""

    label: str
    text: str


@dataclass(frozen=True)
class Component:
    name: str
    bytes: int
    share: float


@dataclass(frozen=True)
class CrossCheckRow:
    name: str
    formula: str
    bytes: int
    ratio: float | None          # rule ÷ this estimate (all GPUs together)
    source: str


@dataclass(frozen=True)
class Setting:
    name: str
    value: str


@dataclass(frozen=True)
class StorageRow:
    """A workload's row of the supplement's storage table, each cell as printed: "—" where the workload keeps
    no such thing (an inference service: no checkpoint, dataset or final weights), "shared with NAME" where the
    model file it starts from is another workload's copy. Each column adds to the totals under it."""

    checkpoint: str
    kept: str                   # checkpoints kept × runs at once
    peak_scratch: str
    dataset: str
    raw_text: str
    model_weights: str
    final_weights: str          # size × runs
    shared: bool = False        # model_weights names another workload (a cell that may wrap)


NONE_KEPT = "—"


def storage_row(st: WorkloadStorage) -> StorageRow:
    def size(n_bytes: int) -> str:
        return fmt_gib(n_bytes, 2) if n_bytes else NONE_KEPT

    return StorageRow(
        checkpoint=size(st.checkpoint_bytes),
        kept=f"{st.retained} × {st.concurrency}" if st.checkpoint_bytes else NONE_KEPT,
        peak_scratch=size(st.peak_scratch_bytes), dataset=size(st.dataset_bytes), raw_text=size(st.dataset_raw_bytes),
        model_weights=(f"shared with {st.model_weights_shared_with}" if st.model_weights_shared_with
                       else size(st.model_weights_bytes)),
        final_weights=f"{fmt_gib(st.final_weights_bytes, 2)} × {st.variants}" if st.final_weights_bytes else NONE_KEPT,
        shared=st.model_weights_shared_with is not None)


@dataclass(frozen=True)
class WorkloadView:
    name: str
    kind: str                    # "fine-tuning (LoRA)", "pretraining", "inference service", ...
    short_kind: str              # for the summary table: "finetune/lora"
    description: str | None
    model_id: str
    model_name: str
    params: int
    gpu_id: str
    gpu_name: str
    gpu_count: int
    usable_bytes: int
    memory_bytes: int
    components: tuple[Component, ...]       # the non-zero ones, in the plan's order
    tokens: int | None           # None for a service costed by hours
    throughput_source: str
    runtime_hours: float
    variants: int
    gpu_hours: float
    buffer: float
    gpu_hours_requested: float
    steps: tuple[Step, ...]      # the body's derivation
    details: tuple[Step, ...]    # the appendix's: sources and arithmetic too long for the body
    settings: tuple[Setting, ...]
    alternatives: tuple[Candidate, ...]   # the planner's immutable records, as they are
    cross_checks: tuple[CrossCheckRow, ...]
    assumptions: tuple[str, ...]
    warnings: tuple[str, ...]
    charge_amount: float | None
    charge_unit: str | None
    charge_resource: str | None
    storage: WorkloadStorage | None     # the plan's record, as it is
    storage_row: StorageRow | None      # its row of the supplement's storage table
    calendar_days: float
    gpu_hours_range: tuple[float, float] | None = None     # the GPU-hours needed at p10 and p90 (its ranges)
    request_coverage: float | None = None   # the share of validated cases its request covers
    cost: float | None = None    # what the GPU choice compared, in cost_unit: the charge, else requested GPU-hours
    cost_unit: str = "GPU-hours"



_COMPONENT_NAMES = {"weights": "weights", "gradients": "gradients", "optimizer": "optimizer",
                    "activations": "activations", "kv_cache": "KV cache", "overhead": "overhead"}


def _kind(w: WorkloadPlan) -> tuple[str, str]:
    if w.kind == "inference":
        return ("inference service" if w.throughput.source == "service" else "batch inference"), "inference"
    if w.kind == "pretrain":
        return "pretraining", "pretrain"
    label = {"full": "full fine-tuning", "lora": "fine-tuning (LoRA)", "qlora": "fine-tuning (QLoRA)"}[w.method]
    return label, f"finetune/{w.method}"


def _gpus(n: int) -> str:
    return f"{n} GPU" if n == 1 else f"{n} GPUs"


def checkpointing_label(value) -> str:
    """on (full), selective, or off."""
    return "selective" if value == "selective" else ("on" if value else "off")


def _memory_step(w: WorkloadPlan) -> Step:
    parts = [f"{fmt_gib(b, 2, unit=False)} {_COMPONENT_NAMES[k]}"
             for k, b in w.memory.components().items() if b]
    used = w.memory.total / w.gpu.usable_memory_bytes
    if w.kind != "inference":
        how = f"ZeRO stage {w.zero_stage}, activation checkpointing {checkpointing_label(w.activation_checkpointing)}"
    else:
        how = "KV cache: Kwon et al. 2023"
    phases = w.memory.phases
    if phases is not None:   # gradients freed between steps (estimate/phases.py): say which moment is counted
        how += {"loss": "; at the loss peak, before the other gradients exist",
                "backward": "; later in the backward, the loss's buffers freed",
                "step": "; at the optimizer step, activations freed, foreach AdamW's temporary in the optimizer "
                        "figure"}[phases.peak]
    text = (f"{' + '.join(parts)} = {fmt_gib(w.memory.total, 2)} on the device (what must fit) of "
            f"{fmt_gib(w.gpu.usable_memory_bytes, 2)} usable on one {w.gpu.id} ({fmt_pct(round(used, 3))}; {how})")
    return Step("Memory per GPU", text)


def _statistics_step(w: WorkloadPlan) -> Step:
    """The estimate as the three figures a run is measured by, to check a run against (breakdown.py)."""
    m = w.memory
    text = (f"allocated {fmt_gib(m.allocated_bytes, 2)} (torch.cuda.max_memory_allocated) · "
            f"reserved {fmt_gib(m.reserved_bytes, 2)} (torch.cuda.max_memory_reserved) · "
            f"device {fmt_gib(m.device_bytes, 2)} (nvidia-smi), per GPU")
    # Beside them, never in them (estimate/model_states.py): paged states and offloaded bytes.
    if m.paged_bytes:
        text += (f"; beside these, paged optimizer states {fmt_gib(m.paged_bytes, 2)} in CUDA unified memory "
                 "(evicted to host memory when the GPU runs short)")
    if m.host_bytes:
        text += f"; host memory for the offloaded states {fmt_gib(m.host_bytes, 2)} per GPU"
    if m.cached_bytes:   # CPU offload's pool where memory is free, which the allocator gives back near capacity
        text += (f"; under CPU offload the reserved pool reaches {fmt_gib(m.reserved_bytes + m.cached_bytes, 2)} "
                 "where the GPU has memory to spare, but the allocator frees those cached blocks before an "
                 "out-of-memory error, so the fit counts the device figure")
    return Step("Which memory", text)


def _throughput_steps(w: WorkloadPlan, appendix: str) -> tuple[list[Step], list[Step]]:
    """(body steps, appendix details) for where the throughput came from."""
    tp = w.throughput
    if tp.source == "service":
        return [], []
    # A pilot log is cited by its short hash (Appendix A's Pilot measurements table has the file); one
    # line in the body, which has a page budget.
    logs = ", ".join(c.run.sha256[:SHORT_HASH] for c in w.pilots)
    cited = f" (log{'s' if len(w.pilots) > 1 else ''} sha256 {logs})" if logs else ""
    if tp.source == "pilot":
        return [Step("Throughput", f"{rate_clause(w)}{cited}")], []
    if tp.source == "pilot-extrapolated":
        stated = f"; {w.extrapolation}" if w.extrapolation else ""
        # The two modelled steps whose rates' ratio carried a training pilot, written out in the appendix.
        where = f" ({appendix})" if tp.carried else ""
        return ([Step("Throughput", f"extrapolated from a pilot: {tp.derivation}{where}{cited}{stated}")],
                [Step(label, text) for label, text in tp.carried])
    steps, details = [], []
    fpt = tp.flops_per_token
    if fpt is not None:
        terms = [f"{fpt.dense_factor} × {fmt_count(fpt.matmul_params)}"]
        if fpt.attention_shape is not None:
            layers, heads, head_size, seq_len = fpt.attention_shape
            terms.append(f"12 × {layers} × {heads} × {head_size} × {fmt_count(seq_len)}")
        text = f"{fpt.model_formula} = {' + '.join(terms)} = {fpt.model / 1e9:,.2f} GFLOP"
        text += f" ({fpt.dense_source}; attention: {fpt.attention_source}); {n_explained(w, fpt.matmul_params)}"
        steps.append(Step("FLOPs per token", text))
        if fpt.recompute:
            steps.append(Step("Recomputed", f"{fpt.checkpointing_name} activation checkpointing reruns {fpt.recompute_formula} "
                                            f"= {fpt.recompute / 1e9:,.2f} GFLOP per token on the GPUs, not model "
                                            f"FLOPs ({fpt.recompute_source})"))
    if tp.step is not None:
        # One line in the body (its page budget); the parts, written out, in the appendix.
        steps.append(Step("Throughput", f"{tp.summary} ({appendix})"))
        details.append(Step("Step time", tp.derivation))
        if tp.mfu_source:
            details.append(Step("Matmul rate", tp.mfu_source))
        return steps, details
    if fpt is not None and tp.mfu_base is not None:
        steps.append(Step("MFU", f"{_mfu(tp.mfu_base)} with nothing recomputed ({appendix}) × "
                                 f"{fpt.model / 1e9:,.2f} ÷ ({fpt.model / 1e9:,.2f} + {fpt.recompute / 1e9:,.2f}) "
                                 f"GFLOP = {_mfu(tp.mfu)} (the GPUs keep their rate and spend part of it on the rerun, "
                                 "as llm-foundry's MFU and HFU columns show)"))
    if fpt is not None and tp.mfu is not None:
        where = "" if tp.mfu_base is not None else f" ({appendix})"
        steps.append(Step("Throughput", f"{_gpus(w.gpu_count)} × {w.gpu.peak_16bit_flops / 1e12:,.0f} TFLOP/s × MFU "
                                        f"{_mfu(tp.mfu)}{where} ÷ {fpt.model / 1e9:,.2f} GFLOP (model FLOPs) = "
                                        f"{fmt_rate(tp.tokens_per_second)} tokens/s"))
    else:
        steps.append(Step("Throughput", tp.derivation))
    if tp.mfu_source:
        details.append(Step("MFU", tp.mfu_source))
    return steps, details


def _mfu(x: float) -> str:
    """MFU with two decimals, three when the third is not zero: 0.40, 0.313."""
    text = f"{x:.3f}"
    return text.removesuffix("0")


def _runtime_step(w: WorkloadPlan) -> Step:
    tp = w.throughput
    if tp.source == "service":
        return Step("Runtime", f"{fmt_hours(w.runtime_hours)} h kept up (given in the workload file)")
    return Step("Runtime", f"{fmt_count(w.tokens)} tokens ÷ {fmt_rate(tp.tokens_per_second)} tokens/s ÷ "
                           f"{SECONDS_PER_HOUR:,} s/h = {fmt_hours(w.runtime_hours)} h per run (rounded up to a hundredth of an hour)")


def _gpu_hours_step(w: WorkloadPlan) -> Step:
    s = w.settings
    runs = "1 run" if s.variants == 1 else f"{s.variants} runs"
    reason = f" (the buffer: {s.buffer_reason})" if s.buffer_reason else ""
    return Step("GPU-hours", f"{fmt_hours(w.runtime_hours)} h × {_gpus(w.gpu_count)} × {runs} = "
                             f"{fmt_hours(w.gpu_hours)}; × (1 + {fmt_pct(s.buffer)} buffer) = "
                             f"{fmt_hours(w.gpu_hours_requested)} requested{reason}")


def _range_step(w: WorkloadPlan) -> Step | None:
    """Where the GPU-hours' range comes from, and what the request covers (planning/ranges.py's notes)."""
    r = w.ranges
    if r is None:
        return None
    basis = next(n for n in of_kind(w.assumptions, "range-basis") if "gpu_hours" in n["quantities"])
    (coverage,) = of_kind(w.assumptions, "request-coverage")
    return Step("Range", range_line(r.get("gpu_hours"), basis, coverage))


def _walltime_step(w: WorkloadPlan) -> Step | None:
    if w.walltime_segments <= 1 or w.walltime_hours is None:
        return None
    return Step("Walltime", f"⌈{fmt_hours(w.runtime_hours)} h ÷ {limit_hours(w.walltime_hours)} job "
                            f"limit⌉ = {w.walltime_segments} jobs per run, "
                            + ("the engine restarted at each (nothing to checkpoint)" if w.kind == "inference"
                               else "chained through checkpoints"))


def _calendar_step(w: WorkloadPlan) -> Step:
    s = w.settings
    if s.variants == 1:
        return Step("Calendar", f"{fmt_hours(w.runtime_hours)} h ÷ 24 = {fmt_days(w.calendar_days)} days "
                                "(queue wait not included)")
    return Step("Calendar", f"⌈{s.variants} runs ÷ {s.concurrency} at once⌉ = {w.calendar_waves} × "
                            f"{fmt_hours(w.runtime_hours)} h ÷ 24 = {fmt_days(w.calendar_days)} days "
                            "(queue wait not included)")


def _settings(w: WorkloadPlan) -> tuple[Setting, ...]:
    s = w.settings
    out = [Setting("precision", s.precision)]
    m = w.model
    if m.experts > 1:
        shared = f" + {m.shared_experts} shared" if m.shared_experts else ""
        out.append(Setting("parameters", f"{fmt_count(m.params)} total, {fmt_count(m.active_params)} active per token "
                                         f"(mixture of experts: {m.experts_per_token} of {m.experts} routed "
                                         f"experts{shared}; weights use the total, FLOPs the active)"))
    if w.kind == "inference":
        out += _inference_settings(w)
        if s.attention != "flash":
            out.append(Setting("attention", s.attention))
    else:
        if s.framework:
            out.append(Setting("framework", f"{s.framework} (its recipe's defaults: see the assumptions)"))
        out += [Setting("sequence length", f"{fmt_count(s.seq_len)} tokens"),
                Setting("micro-batch", fmt_count(s.micro_batch)),
                Setting("optimizer", s.optimizer),
                Setting("ZeRO stage", str(w.zero_stage)),
                Setting("activation checkpointing", checkpointing_label(w.activation_checkpointing)),
                Setting("FlashAttention", "on" if s.flash_attention else "off"),
                Setting("loss", s.loss)]
        if s.activation_offload:
            out.append(Setting("activation offloading", "on"))
        if s.context_parallel > 1:
            out.append(Setting("context parallel", fmt_count(s.context_parallel)))
        if s.tensor_parallel > 1 or s.pipeline_parallel > 1:
            out.append(Setting("tensor × pipeline parallel", f"{s.tensor_parallel} × {s.pipeline_parallel}"))
        if s.expert_parallel > 1:
            out.append(Setting("expert parallel", fmt_count(s.expert_parallel)))
        if s.lora is not None:
            out.append(Setting("LoRA", f"rank {s.lora.rank} on {', '.join(s.lora.targets)}"))
        if w.trainable_params is not None:
            out.append(Setting("trainable parameters", fmt_count(w.trainable_params)))
    if s.concurrency > 1:
        out.append(Setting("concurrent runs", fmt_count(s.concurrency)))
    return tuple(out)


def _inference_settings(w: WorkloadPlan) -> list[Setting]:
    s, i = w.settings, w.inference
    if i is None:
        out = [Setting("context", f"{fmt_count(s.context)} tokens")] if s.context else []
        return out + [Setting("concurrent sequences", fmt_count(s.batch))]
    out = [Setting("engine", i.engine)]
    if i.input_tokens is not None:
        out.append(Setting("tokens per request", f"{fmt_count(i.input_tokens)} in + {fmt_count(i.output_tokens)} out"))
    else:
        out.append(Setting("context", f"{fmt_count(i.context)} tokens"))
    if i.requests is not None:
        out.append(Setting("requests", fmt_count(i.requests)))
    if i.request_rate is not None:
        out.append(Setting("request rate", f"{i.request_rate:g} request{'' if i.request_rate == 1 else 's'}/s"))
    out.append(Setting("replica", f"{i.tensor_parallel}-way tensor parallel" if i.tensor_parallel > 1 else "1 GPU"))
    if i.replicas > 1:
        out.append(Setting("replicas", fmt_count(i.replicas)))
    out.append(Setting("concurrent sequences per replica", f"{fmt_count(i.batch)} (the KV cache holds "
                                                           f"{fmt_count(i.max_concurrency)})"))
    p = f" p{i.ttft_percentile:g}" if i.ttft_percentile is not None else ""
    latency = [f"TTFT{p} {ms_number(i.ttft_ms)} ms"] if i.ttft_ms is not None else []
    if i.tpot_ms is not None:
        latency.append(f"TPOT {ms_number(i.tpot_ms)} ms")
    out.append(Setting("latency (estimated)", ", ".join(latency) or "not modelled for this engine"))
    return out


def _storage(w: WorkloadPlan) -> tuple[WorkloadStorage | None, list[Step]]:
    st = w.storage
    if st is None:
        return None, []
    details = [Step("Checkpoint", f"{fmt_gib(st.checkpoint_bytes, 2)} = {st.checkpoint_arithmetic}"),
               Step("Dataset", st.dataset_arithmetic)]
    return st, details


def workload_view(w: WorkloadPlan, appendix: str = "Appendix A", shared=frozenset()) -> WorkloadView:
    """Everything the templates show for one workload, derivations written out."""
    kind, short_kind = _kind(w)
    total = w.memory.total
    components = tuple(Component(_COMPONENT_NAMES[k], b, b / total if total else 0.0)
                       for k, b in w.memory.components().items() if b)
    all_gpus = total * w.gpu_count
    checks = tuple(CrossCheckRow(c.name, c.formula, c.bytes, c.bytes / all_gpus if all_gpus else None, c.source)
                   for c in w.cross_checks)
    throughput, details = _throughput_steps(w, appendix)
    details.insert(0, _statistics_step(w))
    steps = [_memory_step(w)]
    if w.inference is not None and w.inference.mode == "batch":
        # The batch-job line gives the throughput and the runtime at once; the tokens as section B has them.
        throughput = []
        steps.append(Step("Tokens", batch_tokens_words(w)))
    elif w.data is not None:
        # A product (samples × length × epochs), as section B has it; tokens given outright appear in the
        # runtime line.
        steps.append(Step("Tokens", tokens_words(w)))
    if w.inference is not None:
        # The body keeps the sizing line; the KV cache, prefill and decode-step arithmetic under it go
        # to the appendix, with the engine's factors.
        body = {"Batch job", "Replicas"}
        steps += [Step(label, text) for label, text in w.inference.steps if label in body]
        details += [Step(label, text) for label, text in w.inference.steps if label not in body]
        details.append(Step("Engine factors", f"{w.inference.engine}: {w.inference.engine_source}"))
    steps += throughput
    # A batch job's runtime is in its batch-job line; a service by load's hours kept up are the
    # GPU-hours line's first factor (its replicas line says how many GPUs).
    if w.inference is None or w.inference.mode == "hours":
        steps.append(_runtime_step(w))
    steps.append(_gpu_hours_step(w))
    if (spread := _range_step(w)) is not None:
        steps.append(spread)
    charge = w.charge
    if charge is not None:
        steps.append(Step("US dollars" if charge.unit == "USD" else charge.unit,
                          f"{charge.resource_id}: {charge.arithmetic}"))
    details.append(_calendar_step(w))
    walltime = _walltime_step(w)
    if walltime is not None:
        details.append(walltime)
    storage, storage_details = _storage(w)
    details += storage_details
    return WorkloadView(
        name=w.name, kind=kind, short_kind=short_kind, description=w.description,
        model_id=w.model.id, model_name=w.model.name, params=w.model.params,
        gpu_id=w.gpu.id, gpu_name=w.gpu.name, gpu_count=w.gpu_count,
        usable_bytes=w.gpu.usable_memory_bytes, memory_bytes=total, components=components,
        tokens=None if w.throughput.source == "service" else w.tokens,
        throughput_source=w.throughput.source, runtime_hours=w.runtime_hours, variants=w.settings.variants,
        gpu_hours=w.gpu_hours, buffer=w.settings.buffer, gpu_hours_requested=w.gpu_hours_requested,
        steps=tuple(Step(x.label, unpinned(x.text)) for x in steps),
        details=tuple(Step(x.label, unpinned(x.text)) for x in details), settings=_settings(w),
        alternatives=w.alternatives,
        cross_checks=checks,
        assumptions=tuple(unpinned(t) for t in note_texts(n for n in document_notes(w.assumptions) if n not in shared)),
        warnings=tuple(w.warnings),
        charge_amount=charge.amount if charge is not None else None,
        charge_unit=charge.unit if charge is not None else None,
        charge_resource=charge.resource_id if charge is not None else None,
        storage=storage, storage_row=storage_row(storage) if storage is not None else None,
        calendar_days=w.calendar_days,
        gpu_hours_range=(w.ranges.get("gpu_hours").p10, w.ranges.get("gpu_hours").p90) if w.ranges else None,
        request_coverage=w.ranges.request_coverage if w.ranges else None,
        cost=charge.amount if charge is not None else w.gpu_hours_requested,
        cost_unit=charge.unit if charge is not None else "GPU-hours",
    )

