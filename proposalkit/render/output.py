"""Plan → JSON (schema_version 1, CONTRACT.md) and → a text table for the terminal."""

from __future__ import annotations

import json

try:
    import orjson     # the C encoder of the standard library takes ~6× longer per workload
except ImportError:   # pragma: no cover - orjson is a dependency; the standard library gives the same text
    orjson = None

from ..planning import pilots as pilot_rules
from ..planning.records import Candidate, Plan, WorkloadPlan
from ..text import json_control_escape
from .format import control_escape, fmt_gib, fmt_hours, fmt_si
from .notes import note_record, note_texts
from ..units import ms_number
from .section_b import amount_cell, total_rows, unit_heading, units_column

SCHEMA_VERSION = 1


def _round(x: float | None, digits: int = 6) -> float | None:
    return None if x is None else round(float(x), digits)


def _candidate(c: Candidate) -> dict:
    return {"gpu": c.gpu, "count": c.count, "fits": c.fits, "per_gpu_bytes": c.per_gpu_bytes,
            "usable_bytes": c.usable_bytes, "gpu_hours_requested": _round(c.gpu_hours_requested),
            "cost": _round(c.cost), "cost_unit": c.cost_unit if c.fits else None, "reason": c.reason}


def _memory(m) -> dict:
    """The plan JSON's `memory`: the figures as printed (each component rounded up to 0.01 GiB, the totals their
    sums: estimate/breakdown.as_printed) and, under `estimate`, the same keys in the exact bytes they come from."""
    fields = {"per_gpu_bytes": m.total, **m.statistics(), "components": m.components(), **m.phase_fields()}
    if m.estimated is not None:
        fields["estimate"] = _memory(m.estimated)
    return fields


def workload_dict(w: WorkloadPlan) -> dict:
    tp = w.throughput
    s = w.settings
    out = {
        "name": w.name,
        "kind": w.kind,
        "method": w.method,
        "model": {"id": w.model.id, "params": w.model.params, "active_params": w.model.active_params},
        "gpu": {"type": w.gpu.id, "count": w.gpu_count, "memory_bytes": w.gpu.usable_memory_bytes,
                "nominal_memory_bytes": w.gpu.memory_bytes, "peak_16bit_flops": w.gpu.peak_16bit_flops},
        "memory": _memory(w.memory),
        "tokens": w.tokens,
        "tokens_per_second": _round(tp.tokens_per_second, 3),
        "runtime_hours": _round(w.runtime_hours),
        "variants": s.variants,
        "gpu_hours": _round(w.gpu_hours),
        "buffer": s.buffer,
        "gpu_hours_requested": _round(w.gpu_hours_requested),
        **ranges_fields(w.ranges, s.coverage),
        "throughput_source": tp.source,
        "derivation": {"tokens": w.tokens_derivation, "throughput": tp.derivation},
        "settings": {
            "precision": s.precision, "seq_len": s.seq_len, "micro_batch": s.micro_batch,
            "optimizer": s.optimizer if w.kind != "inference" else None,
            "loss": s.loss if w.kind != "inference" else None,
            "activation_offload": s.activation_offload if w.kind != "inference" else None,
            "context_parallel": s.context_parallel if w.kind != "inference" else None,
            # The layers' kernels: eager (no torch.compile), compiled (compile: true) or fused (Megatron's).
            "kernels": s.kernels if w.kind != "inference" else None,
            "attention": s.attention if w.kind == "inference" else None,
            "zero_stage": w.zero_stage, "activation_checkpointing": w.activation_checkpointing,
            "flash_attention": s.flash_attention, "tensor_parallel": s.tensor_parallel,
            "pipeline_parallel": s.pipeline_parallel, "context": s.context, "batch": s.batch,
            "lora": {"rank": s.lora.rank, "targets": list(s.lora.targets)} if s.lora else None,
            "concurrency": s.concurrency,
            **({"framework": s.framework} if s.framework else {}),   # present when the workload names one
            **({"buffer_reason": s.buffer_reason} if s.buffer_reason else {}),     # present when stated
            **({"gradient_accumulation_steps": s.gradient_accumulation_steps}      # present when the workload
               if s.gradient_accumulation_steps is not None else {}),                # states it
        },
        "trainable_params": w.trainable_params,
        "mfu": _round(tp.mfu), "mfu_source": tp.mfu_source, "mfu_without_recompute": _round(tp.mfu_base),
        # The step's parts where the rate is timed from them (estimate/step_time.py), seconds per GPU and step.
        "step": None if tp.step is None else {
            "seconds": _round(tp.step.seconds, 6), "tokens": tp.step.tokens,
            "compute_seconds": _round(tp.step.compute, 6), "compute_fraction": tp.step.compute_fraction,
            "memory_fraction": tp.step.memory_fraction,
            "host_microseconds_per_kernel": _round(tp.step.host_per_kernel * 1e6, 3),
            "memory_seconds": _round(tp.step.memory, 6),
            "memory": {"layers": _round(tp.step.layers, 6), "head": _round(tp.step.head, 6),
                       "weights": _round(tp.step.weights, 6), "optimizer": _round(tp.step.optimizer, 6)},
            "comm_seconds": _round(tp.step.comm, 6), "host_seconds": _round(tp.step.host, 6),
            "kernels": tp.step.kernels, "bound": "host" if tp.step.host_bound else "gpu"},
        "flops_per_token": None if tp.flops_per_token is None else _flops(tp.flops_per_token),
        "alternatives": [_candidate(c) for c in w.alternatives],
        "cross_checks": [{"name": c.name, "bytes": c.bytes, "formula": c.formula, "source": c.source}
                         for c in w.cross_checks],
        "assumptions": list(note_texts(w.assumptions)),
        # The same notes as records, in the same order: what each states (kind), its numbers (base units) and
        # ids (values), the works it cites (sources: ids of the plan's references) and its sentence (text).
        "assumption_records": [note_record(n) for n in w.assumptions],
        "warnings": list(w.warnings),
        "calendar_days": _round(w.calendar_days),
        "walltime": {"limit_hours": w.walltime_hours, "segments": w.walltime_segments},
    }
    if w.extrapolation:         # present when the workload states it
        out["extrapolation"] = w.extrapolation
    if w.data is not None:      # present where the tokens were counted from the workload's data
        out["data"] = {"samples": w.data.samples, "seq_len": w.data.seq_len, "epochs": w.data.epochs}
    if w.inference is not None:
        out["inference"] = inference_dict(w.inference)
    if w.storage is not None:
        out["storage"] = {"checkpoint_bytes": w.storage.checkpoint_bytes,
                          "peak_scratch_bytes": w.storage.peak_scratch_bytes,
                          "dataset_bytes": w.storage.dataset_bytes,
                          "final_weights_bytes": w.storage.final_weights_bytes,
                          "model_weights_bytes": w.storage.model_weights_bytes,
                          # the earlier workload whose copy of the same model file it reads (totals count it once)
                          "model_weights_shared_with": w.storage.model_weights_shared_with,
                          "checkpoints_retained": w.storage.retained}
    if w.pilots:
        records = [_pilot(c, w.name) for c in w.pilots]
        out["pilot"] = records[0] if len(records) == 1 else records     # as written: one mapping, or a list
        if w.pilot_scaling is not None:
            out["pilot_scaling"] = {"efficiency": _round(w.pilot_scaling.efficiency),
                                    "per_doubling": _round(w.pilot_scaling.per_doubling),
                                    "gpus": [w.pilot_scaling.small.gpus, w.pilot_scaling.large.gpus],
                                    "rule": pilot_rules.SCALING_RULE}
    if w.charge is not None:
        c = w.charge
        out["resource"] = {"id": c.resource_id, "unit": c.unit, "amount": _round(c.amount),
                           "arithmetic": c.arithmetic,
                           "rule": {"text": c.rule, "factor": c.resource.charge.factor,
                                    "minimum_hours": c.resource.charge.minimum_hours,
                                    "minimum_amount": c.resource.charge.minimum_amount}}
        if w.charge.resource.is_cloud:
            out["resource"] |= cloud_dict(w.charge)
    return out


def cloud_dict(c) -> dict:
    """A charge in dollars: whole instances per job, instance-hours (all jobs), and the price they are billed at
    (per instance-hour, region, when read, from where; set_by: catalog, or the workload file or proposal that
    gave price_per_hour). amount = instance_hours × price.per_instance_hour."""
    p = c.resource.price
    return {"instance_type": c.resource.partition, "instances_per_job": round(c.nodes_per_job),
            "instance_hours": _round(c.nodes_per_job * c.hours_charged_per_job * c.jobs),
            "price": {"per_instance_hour": p.per_hour, "currency": "USD", "region": p.region, "basis": p.basis,
                      "read": p.read, "source": p.source, "confidence": p.confidence,
                      "set_by": p.set_by or "catalog"}}


# Decimals of each range as its own field has them (bytes: integers; rates and latencies 3; hours 6).
_RANGE_DIGITS = {"tokens_per_second": 3, "output_tokens_per_second": 3, "ttft_ms": 3, "tpot_ms": 3}


def _interval(i, quantity: str = "gpu_hours") -> dict:
    """p10, p50, p90, rounded as the quantity's own field is (p50 is that field)."""
    if quantity.endswith("_bytes"):
        return {"p10": round(i.p10), "p50": round(i.p50), "p90": round(i.p90)}
    digits = _RANGE_DIGITS.get(quantity, 6)
    return {"p10": _round(i.p10, digits), "p50": _round(i.p50, digits), "p90": _round(i.p90, digits)}


def ranges_fields(r, coverage: float | None) -> dict:
    """CONTRACT.md's ranges, ranges_basis and request_coverage (and buffer: auto's coverage asked for)."""
    if r is None:
        return {}
    out = {"ranges": {q: _interval(i, q) for q, i in r.intervals},
           "ranges_basis": {q: {"regime": b.regime, "rows": b.rows, "ids": list(b.ids), "pooled": b.pooled,
                                "own_rows": b.own_rows, **({"why": b.why} if b.why else {})} for q, b in r.bases},
           "request_coverage": _round(r.request_coverage)}
    if coverage is not None:
        out["coverage"] = coverage
    return out


def _flops(f) -> dict:
    """Model FLOPs per token and its terms: N (weights in matrix multiplies) and L, H, Q, T of the attention."""
    out = {"model": f.model, "hardware": f.hardware, "recompute": f.recompute, "formula": f.formula,
           "matmul_params": f.matmul_params, "dense_factor": f.dense_factor}
    if f.attention_shape is not None:
        out["attention_shape"] = dict(zip(("layers", "heads", "head_size", "seq_len"), f.attention_shape))
    return out


def _pilot(c, name: str) -> dict:
    """One pilot log beside the estimate for its GPU type and count (planning/pilots.py)."""
    r = c.run
    return {"log": r.log, "sha256": r.sha256, "format": r.format, "steps_used": r.steps_used,
            "steps_dropped": r.steps_dropped, "gpu": r.gpu, "gpus": r.gpus,
            "tokens_per_second": _round(r.tokens_per_second, 3), "token_definition": r.token_definition,
            "peak_memory": {"bytes": r.peak_memory[1], "statistic": r.peak_memory[0]} if r.peak_memory else None,
            "estimate": {"tokens_per_second": _round(c.estimate_tokens_per_second, 3),
                         "memory_bytes": c.estimate_memory_bytes, "memory_statistic": c.estimate_statistic},
            "ratios": {"tokens_per_second": _round(c.throughput_ratio), "memory": _round(c.memory_ratio)},
            "warnings": c.warnings(name)}


def inference_dict(i) -> dict:
    """CONTRACT.md's inference block (prefill and output tokens/s, maximum concurrency, TTFT, TPOT) and
    what they rest on: replicas × tensor-parallel GPUs, the batch, the engine and its published row."""
    return {"prefill_tokens_per_second": _round(i.prefill_tokens_per_second, 3),
            "output_tokens_per_second": _round(i.output_tokens_per_second, 3),
            "max_concurrency": i.max_concurrency, "ttft_ms": _round(i.ttft_ms, 3), "tpot_ms": _round(i.tpot_ms, 3),
            "ttft_percentile": i.ttft_percentile, "mode": i.mode, "replicas": i.replicas, "tensor_parallel": i.tensor_parallel, "batch": i.batch,
            "context": i.context, "input_tokens": i.input_tokens, "output_tokens": i.output_tokens,
            "requests": i.requests, "request_rate": _round(i.request_rate),
            "engine": i.engine, "engine_source": i.engine_source,
            **({"rate_per_replica_max": _round(i.rate_per_replica_max, 6), "ttft_target_ms": i.ttft_target_ms,
                "tpot_target_ms": i.tpot_target_ms} if i.mode == "rate" else {}),
            "derivation": [{"label": label, "text": text} for label, text in i.steps]}


def plan_dict(plan: Plan) -> dict:
    by_type: dict[str, float] = {k: _round(v) for k, v in plan.by_gpu_type().items()}
    totals = {"gpu_hours": _round(plan.gpu_hours), "gpu_hours_requested": _round(plan.gpu_hours_requested),
              "by_gpu_type": by_type}
    if plan.total_range is not None:
        # The workloads' errors taken as fully correlated (planning/intervals.py total).
        totals["ranges"] = {"gpu_hours": _interval(plan.total_range.gpu_hours)}
        totals["request_coverage"] = _round(plan.total_range.request_coverage)
    by_resource = plan.by_resource()
    if by_resource:
        totals["by_resource"] = {k: {"unit": unit, "amount": _round(amount)}
                                 for k, (unit, amount) in by_resource.items()}
        # A system's partitions draw on one allocation in one unit: what section B requests of it.
        totals["by_system"] = {t.system: {"unit": t.unit, "amount": _round(t.amount)}
                               for t in plan.system_totals() if t.system}
    cloud = plan.cloud_charges()
    if cloud:     # the dollar request over the allocation period, and the dates of the prices it is at
        totals["usd"] = {"amount": _round(sum(c.amount for c in cloud)), "period_months": plan.period_months,
                         "prices_read": sorted({c.resource.price.read or "" for c in cloud} - {""})}
    storage = plan.storage_totals()
    totals["storage"] = {"project_bytes": storage.project_bytes, "scratch_bytes": storage.scratch_bytes,
                         "archive_bytes": storage.archive_bytes}
    totals["calendar_days"] = _round(plan.calendar_days)
    if plan.access is not None:
        a = plan.access
        totals["access_credits"] = {"credits": _round(a.credits), "tier": a.tier.id if a.tier else None,
                                    "arithmetic": a.arithmetic, "missing_rates": list(a.missing),
                                    "secondhand": a.secondhand}
    return {
        "schema_version": SCHEMA_VERSION,
        "track": plan.track,
        "workloads": [workload_dict(w) for w in plan.workloads],
        "totals": totals,
        "warnings": list(plan.warnings),
        # The works the workloads' notes and derivations cite, once each (the report's Appendix B lists them
        # first): an assumption record's sources are these ids.
        "references": [{"id": r.id, "key": r.key, "text": r.text} for r in plan.references],
    }


def compact_json(value) -> str:
    """JSON without spaces, written by orjson; the standard library when orjson is
    missing or refuses a value (integers beyond 64 bits).

    The two give the same values and, for the numbers a plan holds, the same
    text; they spell floats below 10^-4 differently (orjson 1e-6, the
    standard library 1e-06), which any JSON reader reads as the same number.
    """
    if orjson is not None:
        try:
            return orjson.dumps(value).decode("utf-8")
        except TypeError:
            pass
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def plan_json(plan: Plan) -> str:
    """The plan as JSON: one top-level key per line and one workload per line.

    Line-per-workload keeps `git diff` of saved plans readable and lets a C
    encoder do the work (json.dumps with indent runs in pure Python, about
    3 ms per workload); `jq .` pretty-prints it in full.
    """
    data = plan_dict(plan)
    encode = compact_json
    lines = []
    for key, value in data.items():
        if key == "workloads":
            body = ",\n".join(f"    {encode(w)}" for w in value)
            lines.append(f'  "workloads": [\n{body}\n  ]' if value else '  "workloads": []')
        else:
            lines.append(f"  {encode(key)}: {encode(value)}")
    return json_control_escape("{\n" + ",\n".join(lines) + "\n}\n")


def _hours(x: float) -> str:
    return fmt_hours(x)      # as the documents give hours (format.py HOURS_DECIMALS)


def _replicas(inference) -> str:
    """'3 × 2': replicas × GPUs per replica (tensor parallel); '—' for training."""
    return f"{inference.replicas} × {inference.tensor_parallel}" if inference is not None else "—"


def _latency(inference) -> str:
    """'920 (p99) / 47.4': a service's time to first token and per output token, ms; '—' for the rest."""
    if inference is None or inference.mode == "batch" or inference.ttft_ms is None or inference.tpot_ms is None:
        return "—"
    percentile = f" (p{inference.ttft_percentile:g})" if inference.ttft_percentile else ""
    # as the supplement's settings line and derivation give them (units.ms_number)
    return f"{ms_number(inference.ttft_ms)}{percentile} / {ms_number(inference.tpot_ms)}"


def plan_text(plan: Plan) -> str:
    """A fixed-width table a person reads in a terminal; user text with control characters escaped.

    Where inference is served by more than one GPU, a column says how (replicas × tensor-parallel GPUs
    per replica); where a service is sized for latency, one gives it (time to first token, p99 for a
    service by load, and time per output token after it). Columns that would say nothing are left out.
    """
    replicas = [_replicas(w.inference) for w in plan.workloads]
    latency = [_latency(w.inference) for w in plan.workloads]
    show_replicas = any(r not in ("—", "1 × 1") for r in replicas)
    show_latency = any(t != "—" for t in latency)
    show_units = any(w.charge is not None for w in plan.workloads)     # as section B's table: a units column
    unit = units_column(plan)
    header = (("workload", "kind", "model", "GPUs") + (("replicas × TP",) if show_replicas else ())
              + ("mem/GPU", "tokens", "h/run", "runs", "GPU-h", "+buffer")
              + ((unit_heading(unit),) if show_units else ()) + (("TTFT / TPOT ms",) if show_latency else ()))
    rows = []
    for w, served, latent in zip(plan.workloads, replicas, latency):
        kind = w.kind if w.kind == "inference" else f"{w.kind}/{w.method}"
        rows.append((control_escape(w.name), kind, control_escape(w.model.id), f"{w.gpu_count}× {w.gpu.id}")
                    + ((served,) if show_replicas else ())
                    + (fmt_gib(w.memory.total, 2), fmt_si(w.tokens) if w.tokens else "—",
                       _hours(w.runtime_hours), str(w.settings.variants), _hours(w.gpu_hours),
                       _hours(w.gpu_hours_requested))
                    + ((amount_cell(w, unit) or "—",) if show_units else ())
                    + ((latent,) if show_latency else ()))
    # Section B's totals: GPU-hours per GPU type, amounts per system in its unit, never GPU-hours summed
    # across GPU types (issue 23).
    blank = len(header) - 3 - show_units - show_latency
    totals = [(f"total, {t.label}",) + ("",) * blank
              + tuple("" if x is None else _hours(x) for x in (t.planned, t.requested))
              + ((t.amount or "",) if show_units else ()) + (("",) if show_latency else ())
              for t in total_rows(plan, unit)]
    widths = [max(len(r[i]) for r in [header] + rows + totals) for i in range(len(header))]
    numeric = set(range(header.index("GPUs") + 1, len(header)))

    def line(row) -> str:
        return "  ".join(c.rjust(widths[i]) if i in numeric else c.ljust(widths[i]) for i, c in enumerate(row)).rstrip()

    rule = "  ".join("-" * n for n in widths)
    out = [line(header), rule, *map(line, rows), rule, *map(line, totals)]
    cloud = plan.cloud_charges()
    if cloud:     # the dollars are the table's; what they are over and at
        prices = dict.fromkeys(f"{c.resource.partition} {c.resource.price.text}" for c in cloud)
        out += ["", f"US dollars over the {plan.period_months:g}-month allocation period, at " + "; ".join(prices)]
    if plan.warnings:
        out.append("")
        out += [f"warning: {control_escape(w)}" for w in plan.warnings]
    if any(w.throughput.source == "flops" for w in plan.workloads):
        out.append("hint: reviewers expect measured throughput; after a pilot run add "
                   "pilot: {log, gpu, gpus} (its log) or throughput: {tokens_per_second, gpu, gpus} to the workload")
    return "\n".join(out) + "\n"
