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
from .format import (CONFIDENCE_MARKS, Safe, confidence_notes, fmt_count, fmt_hours, fmt_in_unit, fmt_pct, fmt_si,
                     fmt_span)
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
    widths: dict[str, str]       # each other column's CSS width but the purpose's, {"gpus": "5.9em", …}
    wraps: frozenset[str]        # the columns whose figures wrap (column_widths)
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
# back on where Liberation Sans is not installed (its bold face for the headings and totals); any other
# character counted 1 em.
NAME_BREAKS = "-_."
_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,%$/ –×()"
_DEJAVU_SANS = dict(zip(_CHARS, (
    1255, 1300, 1126, 1300, 1260, 721, 1300, 1298, 569, 569, 1186, 569, 1995, 1298, 1253, 1300, 1300, 842, 1067,
    803, 1298, 1212, 1675, 1212, 1212, 1075, 1401, 1405, 1430, 1577, 1294, 1178, 1587, 1540, 604, 604, 1343, 1141,
    1767, 1532, 1612, 1235, 1612, 1423, 1300, 1251, 1499, 1401, 2025, 1403, 1251, 1403, *(1303,) * 10, 739, 1024,
    651, 651, 1946, 1303, 690, 651, 1024, 1716, 799, 799)))
_DEJAVU_SANS_BOLD = dict(zip(_CHARS, (
    1382, 1466, 1214, 1466, 1389, 891, 1466, 1458, 702, 702, 1362, 702, 2134, 1458, 1407, 1466, 1466, 1010, 1219,
    979, 1458, 1335, 1892, 1321, 1335, 1192, 1585, 1561, 1503, 1700, 1399, 1399, 1681, 1714, 762, 762, 1587, 1305,
    2038, 1714, 1741, 1501, 1741, 1577, 1475, 1397, 1663, 1585, 2259, 1579, 1483, 1485, *(1425,) * 10, 850, 1024,
    778, 778, 2052, 1425, 748, 713, 1024, 1716, 936, 936)))
NAME_PAD_EM = 0.29       # the cell's 3 px (2.25 pt) of padding on the right (report.css): 0.28125 em at section B's
                         # 8 pt, rounded up
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


# The other columns (but the purpose's, which takes what they leave) are as wide as their widest cell: a figure
# does not wrap (report.css .num), the GPUs cell ("16× a100-40gb") and a heading wrap at a space only, and the
# totals and headings are bold. Issue 23: fixed percentages gave the units column 8% of the width, and a bold
# "16,943.25" ran 13 pt into the right margin; with a buffer column they added up to more than 100%.
CELL_PAD_EM = 0.57       # the cell's 3 px of padding each side (report.css): 4.5 pt, 0.5625 em at section B's 8 pt,
                         # rounded up


def text_em(text: str, bold: bool = False) -> float:
    """The width of `text` in em of DejaVu Sans (bold or book); a character outside the tables counts 1 em."""
    if not bold:
        return sum(map(_char_em, text))
    return sum(_DEJAVU_SANS_BOLD.get(c, 2048) / 2048 for c in text)


def column_em(cells=(), bold=(), wraps=False) -> float:
    """A column's width in em: its widest cell (`cells` in book, `bold` in bold; with `wraps`, a cell's widest
    piece between the points it breaks at) and the padding, rounded up to a tenth."""
    pieces = [p for c in cells for p in (_PIECE.findall(c) if wraps else [c])]
    widest = max([text_em(c) for c in pieces] + [text_em(c, True) for c in bold] + [0.0])
    return math.ceil(10 * (widest + CELL_PAD_EM)) / 10


_PIECE = re.compile(r"[^ –]+–?")      # a cell breaks at a space and after an en dash (UAX #14: class BA)
# US Letter's text width (612 pt less print.css's 0.8-in margins) in em of the table's 8 pt (print.css).
TEXT_EM = (612 - 2 * 0.8 * 72) / 8
# What the purpose column keeps before figures wrap: its width before issue 23's sizing (24% of the text).
PURPOSE_MIN_EM = 14.0
WRAPS_FIRST = ("range", "work")       # the columns that wrap first where the purpose would be narrower


def column_widths(rows, totals, buffers, heading: str, has_ranges: bool, has_units: bool,
                  name_em: float) -> tuple[dict[str, float], frozenset[str]]:
    """The width in em of each column of section B's table but the name's and the purpose's (table.html.j2),
    and the columns whose figures wrap: none where the purpose keeps PURPOSE_MIN_EM, else the need's range
    (after its dash), then the work (at its space). The units heading breaks at a space and, like a name,
    after a hyphen ("node-<wbr>hours", table.html.j2)."""
    cells = {"work": [r.work for r in rows]}
    if has_ranges:
        cells["range"] = [fmt_span(r.need) if r.need is not None else "—" for r in rows]

    def widths(wrap):
        em = {
            "gpus": column_em([r.gpus for r in rows], ["GPUs"], wraps=True),
            "work": column_em(cells["work"], ["tokens or", "requests"], "work" in wrap),
            "hours": column_em([fmt_hours(r.hours_per_run) for r in rows], ["h per", "run"]),
            "runs": column_em([str(r.runs) for r in rows], ["runs"]),
        }
        if buffers is not None:
            em["buffer"] = column_em(buffers, ["buffer"])
        em["requested"] = column_em([fmt_hours(r.requested) for r in rows], ["requested", "GPU-h"]
                                    + [fmt_hours(t.requested) for t in totals if t.requested is not None])
        if has_ranges:
            em["range"] = column_em(cells["range"], ["need", "p10–p90"], "range" in wrap)
            em["covers"] = column_em([fmt_pct(r.covers) if r.covers is not None else "—" for r in rows],
                                     ["covers"])
        if has_units:
            em["units"] = column_em([r.amount or "—" for r in rows],
                                    [p for w in heading.split(" ") for p in name_parts(w)]
                                    + [t.amount for t in totals if t.amount is not None])
        return em

    wrap: frozenset[str] = frozenset()
    for column in WRAPS_FIRST:
        if name_em + sum(widths(wrap).values()) <= TEXT_EM - PURPOSE_MIN_EM:
            break
        wrap |= {column} & cells.keys()
    return widths(wrap), wrap


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
    has_ranges = any(r.covers is not None for r in rows)
    totals = total_rows(plan, unit)
    name_em = name_column_em(w.name for w in plan.workloads)
    widths, wraps = column_widths(rows, totals, buffers if len(buffers) > 1 else None, unit_heading(unit),
                                  has_ranges, has_units, name_em)
    return SectionB(
        requests=_requests(plan), rows=tuple(rows), totals=totals, has_units=has_units,
        name_width=f"{name_em:g}em",
        widths={k: f"{v:g}em" for k, v in widths.items()}, wraps=wraps,
        unit_heading=unit_heading(unit),
        has_ranges=has_ranges, ranges_note=_ranges_note(plan) if has_ranges else None,
        buffer=buffers[0] if len(buffers) == 1 else None,
        buffers=tuple(fmt_pct(w.settings.buffer) for w in plan.workloads),
        lines=tuple(lines), rate_rule=flops_rule(plan.workloads),
        units_rule=_units_rule(parts), marks_note=_marks_note(plan, parts),
        request_marks_note=_marks_note(plan, [p for p in parts if p.priced]),
        storage=storage_sentence(plan), caveats=caveats(plan), storage_note=storage_note(plan))

