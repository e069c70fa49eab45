"""Usage → JSON (CONTRACT.md, `usage`) and → a text table for the terminal.

Both emit the records of planning/usage_records.py as they are; the Markdown table and the progress
report are progress.py's.
"""

from __future__ import annotations

import json

from ..planning.usage_records import BURN_WINDOW_DAYS, Burn, GpuTypeUsage, LostHours, Usage, WorkloadUsage
from ..text import json_control_escape
from .format import control_escape

SCHEMA_VERSION = 1
LOST_WORDS = {"failed": "failed", "timeout": "timeout", "out_of_memory": "out of memory", "preempted": "preempted",
              "cancelled": "cancelled", "node_fail": "node failure", "requeued": "requeued"}


def _round(x: float | None, digits: int = 6) -> float | None:
    return None if x is None else round(float(x), digits)


def _date(d) -> str | None:
    return None if d is None else d.isoformat()


def _lost(lost: LostHours) -> dict:
    return {name: _round(value) for name, value in lost.items()}


def _burn(b: Burn) -> dict:
    return {"planned": _round(b.planned), "used": _round(b.used), "remaining": _round(b.remaining),
            "last_30_days": _round(b.last_30_days), "burn_rate_per_day": _round(b.rate_per_day),
            "runs_out_on": _date(b.runs_out_on)}


def workload_dict(w: WorkloadUsage) -> dict:
    rate = w.rate
    return {
        "name": w.name, "jobs_pattern": w.pattern,
        "gpu_hours_estimated": _round(w.gpu_hours_estimated), "gpu_hours_planned": _round(w.gpu_hours.planned),
        "gpu_hours_used": _round(w.gpu_hours.used),
        "units_used": {"unit": w.units.unit, "amount": _round(w.units.used)},
        "units_planned": {"unit": w.units.unit, "amount": _round(w.units.planned)},
        "units_remaining": {"unit": w.units.unit, "amount": _round(w.units.remaining)},
        "resource": w.resource_id,
        "runs_planned": w.runs_planned, "runs_completed": w.runs_completed,
        "jobs": w.jobs, "jobs_planned": w.jobs_planned, "jobs_completed": w.jobs_completed,
        "jobs_running": w.jobs_running, "jobs_pending": w.jobs_pending, "jobs_unknown_state": w.jobs_unknown_state,
        "jobs_without_gpus": w.jobs_without_gpus, "walltime_segments": w.walltime_segments,
        "gpu_hours_lost": _lost(w.lost), "gpu_hours_lost_share": _round(w.lost_share),
        "gpu_hours_remaining": _round(w.gpu_hours.remaining),
        "gpu_hours_last_30_days": _round(w.gpu_hours.last_30_days),
        "burn_rate_gpu_hours_per_day": _round(w.gpu_hours.rate_per_day),
        "runs_out_on": _date(w.gpu_hours.runs_out_on),
        "measured_tokens_per_second": _round(rate.tokens_per_second, 3) if rate else None,
        "measured_tokens_per_second_per_gpu": _round(rate.per_gpu, 3) if rate else None,
        "planned_tokens_per_second_per_gpu": _round(rate.planned_per_gpu, 3) if rate else None,
        "throughput_ratio": _round(rate.ratio) if rate else None,
        "throughput_jobs": rate.jobs if rate else 0,
    }


def gpu_type_dict(g: GpuTypeUsage) -> dict:
    b = g.gpu_hours
    return {"workloads": list(g.workloads), "jobs": g.jobs, "gpu_hours_planned": _round(b.planned),
            "gpu_hours_used": _round(b.used), "gpu_hours_remaining": _round(b.remaining),
            "gpu_hours_lost": _lost(g.lost), "gpu_hours_lost_share": _round(g.lost_share),
            "gpu_hours_last_30_days": _round(b.last_30_days), "burn_rate_gpu_hours_per_day": _round(b.rate_per_day),
            "runs_out_on": _date(b.runs_out_on)}


def usage_dict(u: Usage) -> dict:
    t = u.gpu_hours
    return {
        "schema_version": SCHEMA_VERSION,
        "as_of": _date(u.as_of), "as_of_source": u.as_of_source, "burn_window_days": BURN_WINDOW_DAYS,
        "burn_window_start": _date(u.window_start), "time_zone": u.zone,
        "allocation": {"track": u.track, "start": _date(u.allocation_start), "end": _date(u.allocation_end)},
        "accounting": {"files": list(u.files), "jobs": u.jobs, "job_steps_skipped": u.steps_skipped,
                       "duplicates": u.duplicates, "jobs_after_as_of": u.jobs_after_as_of},
        "workloads": [workload_dict(w) for w in u.workloads],
        "unattributed": [{"job": j.job, "name": j.name, "gpu_hours": _round(j.gpu_hours), "state": j.state,
                          "where": j.where, "reason": j.reason} for j in u.unattributed],
        "unattributed_not_listed": {"jobs": u.unlisted[0], "gpu_hours": _round(u.unlisted[1])},
        "allocations": [{"system": b.label, "unit": b.unit, **_burn(b)} for b in u.allocations],
        "totals": {"gpu_hours_planned": _round(t.planned), "gpu_hours_used": _round(t.used),
                   "gpu_hours_unattributed": _round(u.unattributed_gpu_hours),
                   "gpu_hours_remaining": _round(t.remaining), "gpu_hours_lost": _lost(u.lost),
                   "gpu_hours_lost_share": _round(u.lost_share), "gpu_hours_last_30_days": _round(t.last_30_days),
                   "burn_rate_gpu_hours_per_day": _round(t.rate_per_day), "runs_out_on": _date(t.runs_out_on),
                   "by_gpu_type": {g.gpu_type: gpu_type_dict(g) for g in u.by_gpu_type}},
        "notes": list(u.notes),
    }


def usage_json(u: Usage) -> str:
    return json_control_escape(json.dumps(usage_dict(u), indent=2, ensure_ascii=False) + "\n")


# ------------------------------------------------------------------ text


def _h(x: float) -> str:
    """Hours and amounts: two decimals below 10, one below 1,000, none above."""
    return f"{x:,.2f}" if abs(x) < 10 else (f"{x:,.1f}" if abs(x) < 1000 else f"{x:,.0f}")


def _share(x: float | None) -> str:
    return "—" if x is None else f"{x * 100:.0f}%" if x >= 0.1 or x == 0 else f"{x * 100:.1f}%"


def runs_out_text(b: Burn) -> str:
    """'2026-11-26', 'used up 2026-10-10', or '—' (nothing used in the last 30 days)."""
    if b.runs_out_on is None:
        return "—"
    return f"used up {b.runs_out_on}" if b.used >= b.planned else str(b.runs_out_on)


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]], text: tuple[int, ...] = (0,),
           total: int = 0) -> list[str]:
    """Fixed-width columns: those in `text` left-aligned, the figures right-aligned; a rule above the last
    `total` rows."""
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]

    def line(row) -> str:
        return "  ".join(c.ljust(widths[i]) if i in text else c.rjust(widths[i]) for i, c in enumerate(row)).rstrip()

    rule = "  ".join("-" * n for n in widths)
    body = [line(r) for r in rows]
    if total:
        body.insert(len(body) - total, rule)
    return [line(header), rule] + body


def usage_text(u: Usage) -> str:
    files = ", ".join(control_escape(f) for f in u.files)
    out = [f"usage: {u.jobs:,} job{'s' if u.jobs != 1 else ''} in {files}"
           + (f" ({u.steps_skipped:,} job steps skipped)" if u.steps_skipped else "")
           + f"; times {u.zone}"]
    if u.as_of is not None:
        out.append(f"as of {u.as_of} ({u.as_of_source}); burn rate over the {BURN_WINDOW_DAYS} days "
                   f"{u.window_start} to {u.as_of}; the allocation runs {u.allocation_start} to "
                   f"{u.allocation_end} ({u.track} track)")
    out.append("")
    header = ("workload", "jobs", "runs done", "GPU-h used", "planned", "remaining", "used", "lost", "lost %",
              "GPU-h/day", "runs out")
    rows = [(control_escape(w.name), f"{w.jobs:,}", f"{w.runs_completed}/{w.runs_planned}", _h(w.gpu_hours.used),
             _h(w.gpu_hours.planned), _h(w.gpu_hours.remaining), _share(w.gpu_hours.used_share), _h(w.lost.total),
             _share(w.lost_share), _h(w.gpu_hours.rate_per_day), runs_out_text(w.gpu_hours))
            for w in u.workloads]
    unattributed = len(u.unattributed) + u.unlisted[0]
    if unattributed:
        rows.append(("unattributed", f"{unattributed:,}", "", _h(u.unattributed_gpu_hours), "", "", "", "", "", "",
                     ""))
    totals = [(f"total, {control_escape(g.gpu_type)}", f"{g.jobs:,}", "", _h(g.gpu_hours.used),
               _h(g.gpu_hours.planned), _h(g.gpu_hours.remaining), _share(g.gpu_hours.used_share), _h(g.lost.total),
               _share(g.lost_share), _h(g.gpu_hours.rate_per_day), runs_out_text(g.gpu_hours))
              for g in u.by_gpu_type]
    out += _table(header, rows + totals, total=len(totals))
    if u.allocations or any(w.resource_id for w in u.workloads):
        out += ["", "in the resources' units (each job charged by its resource's rule, as the plan charges it):"]
        rows = [(control_escape(w.name), w.resource_id or "—", _h(w.units.used), _h(w.units.planned),
                 _h(w.units.remaining), w.units.unit) for w in u.workloads]
        rows += [(f"{b.label} (all)", "", _h(b.used), _h(b.planned), _h(b.remaining), b.unit) for b in u.allocations]
        out += _table(("workload", "resource", "used", "planned", "remaining", "unit"), rows, text=(0, 1, 5))
        for b in u.allocations:
            out.append(f"{b.label}: {_h(b.rate_per_day)} {b.unit}/day over the last {BURN_WINDOW_DAYS} days"
                       + ("" if b.runs_out_on is None else
                          f"; runs out {b.runs_out_on}" if b.used < b.planned else f"; used up {b.runs_out_on}"))
    out += ["", "lost GPU-hours: " + ", ".join(f"{LOST_WORDS[k]} {_h(v)}" for k, v in u.lost.items())
            + f" ({_h(u.lost.total)}, {_share(u.lost_share)} of all jobs' GPU-hours; each GPU type's in its total)"]
    measured = [w for w in u.workloads if w.rate is not None]
    if measured:
        out += ["", "measured throughput (jobs that give tokens), per GPU:"]
        out += _table(("workload", "jobs", "tokens/s per GPU", "planned", "measured ÷ planned"),
                      [(control_escape(w.name), str(w.rate.jobs), f"{w.rate.per_gpu:,.0f}",
                        f"{w.rate.planned_per_gpu:,.0f}" if w.rate.planned_per_gpu else "—",
                        f"{w.rate.ratio:.2f}" if w.rate.ratio is not None else "—") for w in measured])
    if unattributed:
        out += ["", "unattributed jobs (listed; charged, but in no GPU type's total):"]
        out += ["  " + line for line in _table(
            ("job", "name", "GPU-h", "state", "where", "why"),
            [(control_escape(j.job), control_escape(j.name), _h(j.gpu_hours), j.state, control_escape(j.where),
              control_escape(j.reason)) for j in u.unattributed], text=(0, 1, 3, 4, 5))]
        if u.unlisted[0]:
            out.append(f"  … and {u.unlisted[0]:,} more ({_h(u.unlisted[1])} GPU-hours), not listed one by one")
    if u.duplicates or u.jobs_after_as_of:
        out.append("")
    if u.duplicates:
        out.append(f"{u.duplicates:,} jobs were in more than one file: each counted once, from the file named last")
    if u.jobs_after_as_of:
        out.append(f"{u.jobs_after_as_of:,} jobs started after {u.as_of}: not counted")
    if u.notes:
        out.append("")
        out += [f"note: {control_escape(n)}" for n in u.notes]
    return "\n".join(out) + "\n"
