"""Section B as it is submitted: the request in each resource's units, one table, one line of derivation
per workload, storage and calendar under one concurrency assumption, and the caveats (report.md/.html/.pdf).

Everything here is read from the plan's records and worded here (the supplement, supplement.md, gives
the same figures with their full arithmetic). Numbers go through format.py's filters, so a figure reads
the same in section B, in the supplement and in `proposalkit plan` (tests/test_section_b.py holds it).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..planning.records import Plan, WorkloadPlan
from .format import CONFIDENCE_MARKS, Safe, confidence_notes, fmt_count, fmt_in_unit, fmt_pct, fmt_si
from .words import caveats, derivation_line, flops_rule, storage_note, storage_sentence


@dataclass(frozen=True)
class RequestPart:
    """The part of a system's request on one partition and GPU type."""

    partition: str               # as the provider names it ("gpuA100x4"); the resource id without one
    gpu_type: str
    gpu_hours: float             # requested GPU-hours (buffer included)
    amount: float                # in the system's unit
    rule: str                    # the partition's charging rule in words
    mark: str = ""               # † or ‡ where the rule (a cloud price) was not read on the provider's page
    priced: bool = False         # a cloud instance type: the request sentence gives its price (and mark)


@dataclass(frozen=True)
class SystemRequest:
    """What one system is asked for, in its own unit (its partitions share one allocation)."""

    system: str                  # "ncsa-delta"; "" for the workloads with no target resource
    unit: str                    # "SUs", "node-hours", "USD", "GPU-hours"
    amount: float
    parts: tuple[RequestPart, ...]

    @property
    def amount_text(self) -> Safe:
        return fmt_in_unit(self.amount, self.unit)


@dataclass(frozen=True)
class Row:
    """One workload in section B's table."""

    name: str
    purpose: str                 # its description ("—" without one)
    gpus: str                    # "2× h200"
    work: Safe                   # "204.8M tokens", "200k requests", "1 request/s"
    hours_per_run: float
    runs: int
    requested: float             # GPU-hours, buffer included
    need: tuple[float, float] | None     # the need's p10 and p90 (GPU-hours, before the buffer), with ranges
    covers: float | None         # the share of validated cases the request covers (request_coverage), with ranges
    amount: Safe | None          # in the resource's unit, "—" where no resource is targeted

    @property
    def long_name(self) -> bool:
        """A part of the name wider than the first column can be (NAME_MAX_EM): it may break anywhere."""
        return name_em(self.name) + NAME_PAD_EM > NAME_MAX_EM


@dataclass(frozen=True)
class TotalRow:
    """A total under the table: one per GPU type (GPU-hours), then one per system (its unit)."""

    label: str
    requested: float | None      # GPU-hours of one GPU type; None for a system's total in its unit
    amount: Safe | None
    planned: float | None = None     # GPU-hours of one GPU type before the buffer (`plan`'s table gives it)


@dataclass(frozen=True)
class Line:
    """One workload's derivation in words."""

    name: str
    text: str


@dataclass(frozen=True)
class SectionB:
    requests: tuple[SystemRequest, ...]
    rows: tuple[Row, ...]
    totals: tuple[TotalRow, ...]
    has_units: bool              # some workload targets a resource: the table has a units column
    name_width: str              # the first column's CSS width, "6.3em" (name_column_em)
    unit_heading: str            # the units column's heading: the one unit of every charge, else "units"
    has_ranges: bool             # the table gives the need's p10–p90 and the request's coverage
    ranges_note: str | None      # what those two columns are (section B's derivation, plan's Markdown table)
    buffer: str | None           # "30%" where every workload has that buffer; None: the table has a column
    buffers: tuple[str, ...]     # each row's buffer where they differ
    lines: tuple[Line, ...]
    rate_rule: str | None        # how a rate without a pilot is estimated, once, its symbols defined
    units_rule: str | None       # how requested GPU-hours became each partition's units
    marks_note: str | None       # what the marks (†, ‡) on its second-hand or inferred figures mean
    request_marks_note: str | None   # the same for the request sentence alone (plan --format markdown)
    storage: str | None
    caveats: tuple[str, ...]
    storage_note: str | None = None     # under the supplement's storage table: what each store holds, its total


# Section B's first column (HTML and PDF): a workload name (lower-case letters, digits, '-' and '_': schema.py)
# breaks only after '-', '_' or '.' (table.html.j2 marks each with <wbr>), so the column is as wide as the
# name's widest part. Widths are in em of the table's font: DejaVu Sans's advance widths (version 2.37, hmtx
# table, units of 1/2048 em), the widest face of report.css's sans-serif stack and the one WeasyPrint falls
# back on where Liberation Sans is not installed; any other character counted 1 em.
NAME_BREAKS = "-_."
_DEJAVU_SANS = dict(zip("abcdefghijklmnopqrstuvwxyz0123456789-_.", (
    1255, 1300, 1126, 1300, 1260, 721, 1300, 1298, 569, 569, 1186, 569, 1995, 1298, 1253, 1300, 1300, 842, 1067,
    803, 1298, 1212, 1675, 1212, 1212, 1075, *(1303,) * 10, 739, 1024, 651)))
NAME_PAD_EM = 0.29       # the cell's 3 px of padding on the right (report.css): 0.28 em at section B's 8 pt
NAME_MIN_EM = 5.5        # what the column had (9% of US Letter's text width at 8 pt, print.css): short names keep it
NAME_MAX_EM = 12.0       # about a fifth of the text width; a part wider than that breaks anywhere


def _char_em(c: str) -> float:
    return _DEJAVU_SANS.get(c, 2048) / 2048


def name_parts(name: str) -> list[str]:
    """A workload name's parts between the points it may break at: 'code-1b-pretrain' → code-, 1b-, pretrain."""
    return [p for p in re.findall(rf"[^{re.escape(NAME_BREAKS)}]*[{re.escape(NAME_BREAKS)}]?", name) if p]


def name_em(name: str) -> float:
    """The width, in em, of a name's widest part (an upper bound in the stylesheet's fonts)."""
    return max((sum(map(_char_em, p)) for p in name_parts(name)), default=0.0)


def name_column_em(names) -> float:
    """The first column's width in em: its widest name part and the padding, within NAME_MIN_EM–NAME_MAX_EM,
    rounded up to a tenth."""
    widest = max((name_em(n) for n in names), default=0.0) + NAME_PAD_EM
    return math.ceil(10 * min(max(widest, NAME_MIN_EM), NAME_MAX_EM)) / 10


def _work(w: WorkloadPlan) -> Safe:
    """What one run processes, as the table gives it."""
    i = w.inference
    if i is not None and i.mode == "batch":
        return Safe(f"{fmt_si(i.requests)} requests")
    if i is not None and i.mode == "rate":
        rate = i.request_rate
        return Safe(f"{rate:g} request{'' if rate == 1 else 's'}/s")
    if i is not None and i.mode == "hours":
        return Safe(f"{fmt_count(i.batch)} at once")
    return Safe(f"{fmt_si(w.tokens)} tokens")


def _partition(group) -> str:
    """The partition as the provider names it where that is one word ("gpuA100x4"), else the resource id
    ("alcf-polaris" for Polaris's "prod / capacity / preemptable" queues)."""
    if group.resource is None:
        return ""
    name = group.resource.partition
    return name if name and " " not in name else group.resource_id


def _requests(plan: Plan) -> tuple[SystemRequest, ...]:
    out = []
    for total in plan.system_totals():
        parts = tuple(RequestPart(_partition(g), g.gpu_type, g.gpu_hours, g.amount, g.rule,
                                  CONFIDENCE_MARKS.get(g.resource.rule_confidence, "") if g.resource else "",
                                  g.resource is not None and g.resource.is_cloud)
                      for g in total.groups)
        out.append(SystemRequest(total.system, total.unit, total.amount, parts))
    return tuple(out)


def _units_rule(parts: list[RequestPart]) -> str | None:
    """How requested GPU-hours became each partition's units, a rule (a cloud price) not read on the
    provider's own page marked as the supplement's units table marks it."""
    if not parts:
        return None
    return "; ".join(dict.fromkeys(f"{p.partition}: {p.rule}" + (f" {p.mark}" if p.mark else "")
                                   for p in parts)) + "."


def _marks_note(plan: Plan, parts: list[RequestPart]) -> str | None:
    """What each mark among `parts` and the request sentence means, once: the units' rules and cloud prices
    (`_units_rule`, the request's prices) and ACCESS Credits from second-hand exchange rates."""
    levels = {level for level, mark in CONFIDENCE_MARKS.items() if any(p.mark == mark for p in parts)}
    # The request sentence gives the credits where the proposal names a project type (context._access_view).
    access = plan.access if plan.access_tier is not None else None
    if access is not None and access.credits is not None and access.secondhand:
        levels.add("secondhand")
    notes = confidence_notes(levels)
    return " ".join(f"{mark} {meaning}." for mark, meaning in notes) if notes else None


def _need(w: WorkloadPlan) -> tuple[float, float] | None:
    ranges = w.ranges       # the plan's ranges (planning/ranges.py), where planned
    if ranges is None:
        return None
    for quantity, interval in ranges.intervals:
        if quantity == "gpu_hours":
            return interval.p10, interval.p90
    return None


def _ranges_note(plan: Plan) -> str:
    """What the need and covers columns are (planning/ranges.py), and what a buffer set by coverage is for."""
    auto = any(w.settings.coverage is not None for w in plan.workloads)
    # units.range_ends: the printed GPU-hours ÷ the printed factors, the low end rounded down and the high end up.
    return ("Need p10–p90: GPU-hours before the buffer ÷ the 90th and 10th percentiles of the estimate's error on "
            "validation runs, rounded outward; covers: the share of those runs the request suffices for"
            + ("; a buffer set by coverage covers the estimate's error only" if auto else "") + ".")


def _gpu_amount(plan: Plan, gpu: str, unit: str | None) -> str | None:
    """One GPU type's charges in its unit, where they are all on one system in one unit (else None); without
    the unit where the column's heading gives it."""
    charges = [w.charge for w in plan.workloads if w.gpu.id == gpu]
    if any(c is None for c in charges) or len({(c.system, c.unit) for c in charges}) != 1:
        return None
    text = fmt_in_unit(sum(c.amount for c in charges), charges[0].unit)
    return text.removesuffix(f" {unit}") if unit else text


def units_column(plan: Plan) -> str | None:
    """The one unit of every charge, which the units column's heading then says instead of each cell; None
    where the charges are in several units (or there are none)."""
    units = {w.charge.unit for w in plan.workloads if w.charge is not None}
    return units.pop() if len(units) == 1 else None


def unit_heading(unit: str | None) -> str:
    """The units column's heading: the one unit of every charge, else "units"."""
    return ("US dollars" if unit == "USD" else unit) if unit else "units"


def amount_cell(w: WorkloadPlan, unit: str | None) -> str | None:
    """A workload's charge in the units column (without the unit where the heading gives it); None without one."""
    if w.charge is None:
        return None
    amount = fmt_in_unit(w.charge.amount, w.charge.unit)
    return amount.removesuffix(f" {unit}") if unit else amount


def total_rows(plan: Plan, unit: str | None) -> tuple[TotalRow, ...]:
    """The totals under the table (issue 23: never a sum across GPU types presented as one request): each GPU
    type's GPU-hours, with its amount where all its charges are on one system; then each system's total in
    its unit, unless a GPU type's row already gives that amount alone (the system's one GPU type, charged
    nowhere else)."""
    planned = plan.by_gpu_type(requested=False)
    rows = [TotalRow(gpu, hours, _gpu_amount(plan, gpu, unit), planned[gpu])
            for gpu, hours in plan.by_gpu_type().items()]
    for t in plan.system_totals():
        types = {g.gpu_type for g in t.groups}
        if t.system and not (len(types) == 1 and _gpu_amount(plan, types.pop(), unit) is not None):
            rows.append(TotalRow(t.system, None, fmt_in_unit(t.amount, t.unit).removesuffix(f" {unit}" if unit else "|")))
    return tuple(rows)


def section_b(plan: Plan) -> SectionB:
    rows, lines = [], []
    unit = units_column(plan)      # one unit: the column's heading says it, not each cell
    for w in plan.workloads:
        need = _need(w)
        amount = amount_cell(w, unit)
        covers = w.ranges.request_coverage if w.ranges is not None else None
        rows.append(Row(w.name, w.description or "—", f"{w.gpu_count}× {w.gpu.id}", _work(w), w.runtime_hours,
                        w.settings.variants, w.gpu_hours_requested, need, covers, amount))
        lines.append(Line(w.name, derivation_line(w)))
    has_units = any(w.charge is not None for w in plan.workloads)
    buffers = tuple(dict.fromkeys(fmt_pct(w.settings.buffer) for w in plan.workloads))
    parts = [p for r in _requests(plan) if r.system for p in r.parts]
    return SectionB(
        requests=_requests(plan), rows=tuple(rows), totals=total_rows(plan, unit), has_units=has_units,
        name_width=f"{name_column_em(w.name for w in plan.workloads):g}em",
        unit_heading=unit_heading(unit),
        has_ranges=any(r.covers is not None for r in rows),
        ranges_note=_ranges_note(plan) if any(r.covers is not None for r in rows) else None,
        buffer=buffers[0] if len(buffers) == 1 else None,
        buffers=tuple(fmt_pct(w.settings.buffer) for w in plan.workloads),
        lines=tuple(lines), rate_rule=flops_rule(plan.workloads),
        units_rule=_units_rule(parts), marks_note=_marks_note(plan, parts),
        request_marks_note=_marks_note(plan, [p for p in parts if p.priced]),
        storage=storage_sentence(plan), caveats=caveats(plan), storage_note=storage_note(plan))

