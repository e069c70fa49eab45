"""The progress report: Usage → context → Jinja2 → progress.{md,html,pdf}, written as report.py writes its set.

For the NAIRR Pilot's progress reports (1, 3 and 9 months) and an ACCESS renewal or supplement: what
each workload used against the plan, what was lost and why, how fast the allocation goes and when it
runs out, with a burn-down chart per budget. The templates (progress.md.j2, progress.html.j2 and the
tables they share with `usage --format markdown`, usage_tables.md.j2) use report.py's environments,
filters and stylesheets; the files are written by report.swap_in (all or nothing, under the folder's
lock); the PDF by pdf.render_pdf.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from markupsafe import Markup

from ..planning.records import Plan
from ..planning.usage_records import BURN_WINDOW_DAYS, Burn, Usage
from . import charts, pdf
from .context import Chart
from .format import Safe, fmt_hours, fmt_pct
from .report import FORMATS as REPORT_FORMATS, _render, swap_in
from .usage import LOST_WORDS, runs_out_text

FORMATS = REPORT_FORMATS      # the same files as a report set: md, html, pdf
HEADING = "Progress report: the allocation's use against the plan"


def _h(x: float) -> Safe:
    return fmt_hours(x) if x >= 0 else Safe("−" + fmt_hours(-x))


def _share(x: float | None) -> Safe:
    return Safe("—") if x is None else fmt_pct(round(x, 3))


@dataclass(frozen=True)
class ProgressContext:
    """What the progress templates print; every figure already formatted (Safe), user text as given."""

    heading: str
    title: str | None
    as_of: str
    as_of_source: str
    window: str
    zone: str
    files: tuple[str, ...]
    jobs: int
    steps_skipped: int
    summary: tuple[Safe, ...]          # the lead's sentences
    workloads: tuple[tuple, ...]       # (name, jobs, runs, used, planned, remaining, used %, lost, lost %, /day, out)
    totals: tuple[tuple, ...]          # per GPU type: ("total, h200", jobs, "", used, …, out), as a workload row
    units: tuple[tuple, ...]           # (name, resource, used, planned, remaining, unit)
    allocations: tuple[tuple, ...]     # (system, unit, used, planned, remaining, /day, out)
    lost: tuple[tuple, ...]            # (cause, GPU-hours, share of used)
    lost_total: tuple
    throughput: tuple[tuple, ...]      # (name, jobs, measured per GPU, planned per GPU, ratio)
    unattributed: tuple[tuple, ...]    # (job, name, GPU-hours, state, where)
    unlisted: str | None
    notes: tuple[str, ...]
    charts: dict[str, Chart]
    window_days: int = BURN_WINDOW_DAYS


def _burn_row(b: Burn) -> tuple:
    return (_h(b.used), _h(b.planned), _h(b.remaining), _share(b.used_share), Safe(f"{b.rate_per_day:,.2f}"),
            runs_out_text(b))


def _month_labels(start: date, days: int) -> tuple[tuple[int, str], ...]:
    out, d = [], date(start.year, start.month, 1)
    while (d - start).days <= days:
        if d >= start:
            text = d.strftime("%b") + (f" {d.year}" if not out or d.month == 1 else "")
            out.append(((d - start).days, text))
        d = date(d.year + (d.month == 12), d.month % 12 + 1, 1)
    if len(out) < 2:        # a short span: weekly ticks
        out = [(k, (start + timedelta(days=k)).strftime("%b %d")) for k in range(0, days + 1, 7)]
    return tuple(out)


def burndown(b: Burn, u: Usage) -> charts.BurnDown | None:
    """A budget's remaining amount day by day from the allocation's start to the as-of day."""
    if u.allocation_start is None or u.as_of is None or u.allocation_end is None:
        return None
    start, days = u.allocation_start, (u.allocation_end - u.allocation_start).days
    daily = dict(b.daily)
    last = (u.as_of - start).days
    remaining = b.planned - sum(v for d, v in b.daily if d < start)
    used = []
    for k in range(0, last + 1):
        remaining -= daily.get(start + timedelta(days=k), 0.0)
        used.append((k + 1, remaining))
    projection = None
    if b.rate_per_day > 0 and remaining > 0:
        left = remaining / b.rate_per_day
        end = min(last + 1 + left, days) if days > last + 1 else last + 1 + left
        projection = ((last + 1, remaining), (end, remaining - b.rate_per_day * (end - last - 1)))
    return charts.BurnDown(b.label, b.unit, b.planned, days, tuple(used), projection, _month_labels(start, days))


def _charts(u: Usage) -> dict[str, Chart]:
    """A burn-down per GPU type (each burns its own GPU-hours) and per system in its unit."""
    out = {}
    for key, b in ([(f"gpu-hours-{g.gpu_type}", g.gpu_hours) for g in u.by_gpu_type]
                   + [(b.label, b) for b in u.allocations]):
        drawn = burndown(b, u)
        if drawn is None:
            continue
        title = f"{b.label}: {b.unit} remaining, planned against used"
        svg = charts.burndown_chart(drawn, title=title)
        out[key] = Chart(svg, f"charts/burndown-{key}.svg", title, 250.0)
    return out


def progress_context(u: Usage, plan: Plan, *, drawn: bool = True) -> ProgressContext:
    """`drawn`: with the burn-down charts (the report's files; the tables alone need none)."""
    t = u.gpu_hours
    summary = [Safe(f"As of {u.as_of}, each GPU type against its own planned GPU-hours:")] if u.as_of else []
    for g in u.by_gpu_type if u.as_of else ():
        b = g.gpu_hours
        summary.append(Safe(
            f"{g.gpu_type}: {fmt_hours(b.used)} of {fmt_hours(b.planned)} used ({_share(b.used_share)}), "
            f"{_h(b.remaining)} remaining"
            + ("" if b.rate_per_day <= 0 else f"; {b.rate_per_day:,.2f} a day over the last {BURN_WINDOW_DAYS} days"
               + (f", at which they run out on {b.runs_out_on}" if b.used < b.planned else ""))
            + (f"; used up on {b.runs_out_on}" if b.used >= b.planned and b.runs_out_on else "") + "."))
    if u.as_of is not None and u.allocation_end:
        summary.append(Safe(f"The allocation ends on {u.allocation_end}."))
    if u.lost.total:
        summary.append(Safe(f"{fmt_hours(u.lost.total)} GPU-hours ({_share(u.lost_share)} of those used) went to "
                            "jobs that failed, timed out, ran out of memory, were preempted, cancelled, hit a node "
                            "failure or were requeued."))
    rows = tuple((w.name, w.jobs, f"{w.runs_completed} of {w.runs_planned}", *_burn_row(w.gpu_hours)[:4],
                  _h(w.lost.total), _share(w.lost_share), *_burn_row(w.gpu_hours)[4:]) for w in u.workloads)
    unattributed = len(u.unattributed) + u.unlisted[0]
    if unattributed:
        rows += (("unattributed", unattributed, "", _h(u.unattributed_gpu_hours), "", "", "", "", "", "", ""),)
    totals = tuple((f"total, {g.gpu_type}", g.jobs, "", *_burn_row(g.gpu_hours)[:4], _h(g.lost.total),
                    _share(g.lost_share), *_burn_row(g.gpu_hours)[4:]) for g in u.by_gpu_type)
    return ProgressContext(
        heading=HEADING, title=plan.proposal.title if plan.proposal is not None else None,
        as_of=str(u.as_of) if u.as_of else "—", as_of_source=u.as_of_source,
        window=f"{u.window_start} to {u.as_of}" if u.as_of else "—", zone=u.zone, files=u.files, jobs=u.jobs,
        steps_skipped=u.steps_skipped, summary=tuple(summary), workloads=rows, totals=totals,
        units=tuple((w.name, w.resource_id or "—", _h(w.units.used), _h(w.units.planned), _h(w.units.remaining),
                     w.units.unit) for w in u.workloads),
        allocations=tuple((b.label, b.unit, *_burn_row(b)) for b in u.allocations),
        lost=tuple((LOST_WORDS[k], _h(v), _share(v / t.used if t.used else None)) for k, v in u.lost.items()),
        lost_total=(_h(u.lost.total), _share(u.lost_share)),
        throughput=tuple((w.name, w.rate.jobs, Safe(f"{w.rate.per_gpu:,.0f}"),
                          Safe(f"{w.rate.planned_per_gpu:,.0f}") if w.rate.planned_per_gpu else Safe("—"),
                          Safe(f"{w.rate.ratio:.2f}") if w.rate.ratio is not None else Safe("—"))
                         for w in u.workloads if w.rate is not None),
        unattributed=tuple((j.job, j.name, _h(j.gpu_hours), j.state, j.where) for j in u.unattributed),
        unlisted=(f"… and {u.unlisted[0]:,} more ({fmt_hours(u.unlisted[1])} GPU-hours), not listed one by one"
                  if u.unlisted[0] else None) if unattributed else None,
        notes=u.notes, charts=_charts(u) if drawn else {})


def usage_markdown(u: Usage, plan: Plan) -> str:
    """The progress tables as Markdown (`usage --format markdown`)."""
    text = _render("md", "usage_tables.md.j2", r=progress_context(u, plan, drawn=False))
    return text.rstrip("\n") + "\n"


def write_progress(u: Usage, plan: Plan, out_dir: str | os.PathLike[str], formats) -> tuple[list[str], list[str]]:
    """progress.md (charts/burndown-*.svg beside it), progress.html and progress.pdf into `out_dir`, all or none."""
    shown = os.fspath(out_dir)
    out = Path(shown)
    context = progress_context(u, plan)
    if "pdf" in formats:
        pdf.require_weasyprint(out / "progress.pdf")
    files: dict[str, bytes] = {}
    if "md" in formats:
        for chart in context.charts.values():
            files[chart.path] = chart.svg.encode("utf-8")
        files["progress.md"] = _render("md", "progress.md.j2", r=context).encode("utf-8")
    if "html" in formats or "pdf" in formats:
        html = _render("html", "progress.html.j2", r=context,
                       svg={k: Markup(c.svg) for k, c in context.charts.items()})
        if "html" in formats:
            files["progress.html"] = html.encode("utf-8")
        if "pdf" in formats:
            files["progress.pdf"] = pdf.render_pdf(html)[0]
    return swap_in(out, files, shown)
