"""Plan → the context the report templates get (`report_context`).

Views of the plan made for the templates: the title block, one WorkloadView
per workload (views.py), totals by GPU type and resource, the units table
(`resources_view`: requested GPU-hours → charging rule → allocation units per
resource), storage and calendar totals, ACCESS credits, the references
(references.py) and the two charts (charts.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..planning.records import Plan, StorageTotals
from ..units import GiB
from . import charts
from .format import CONFIDENCE_MARKS, confidence_notes, fmt_gib, fmt_hours, limit_hours, shown_amount, unpinned
from .notes import document_notes, note_text
from .pilots import PilotsView, pilots_view
from .references import Reference, references
from .section_b import SectionB, section_b
from .views import WorkloadView, workload_view

CHART_FILES = {"gpu_hours": "charts/gpu-hours.svg", "memory": "charts/memory.svg"}
GPU_HOURS_CHART = ("Requested GPU-hours per workload, buffer included; error bars: the GPU-hours needed, p10 to p90 "
                   "of the estimate's validated error")


@dataclass(frozen=True)
class TitleBlock:
    title: str | None
    pi: str | None
    institution: str | None
    resource: str | None
    track: str | None
    date: str | None

    @property
    def items(self) -> tuple[tuple[str, str], ...]:
        """The lines under the title that are given: (label, value)."""
        pairs = (("PI: ", self.pi), ("", self.institution), ("target resource: ", self.resource),
                 ("track: ", self.track), ("", self.date))
        return tuple((label, value) for label, value in pairs if value)


@dataclass(frozen=True)
class GpuTotal:
    gpu_id: str
    gpu_hours_requested: float


@dataclass(frozen=True)
class ResourceTotal:
    resource: str
    unit: str
    amount: float


@dataclass(frozen=True)
class ResourceRow:
    """One resource (partition) and GPU type the request runs on: requested GPU-hours → rule → its unit.

    A partition offers one GPU type except NERSC Perlmutter (A100 40 GB and 80 GB), which gets a
    row per type. `resource_id` None: workloads with no target resource, requested in GPU-hours.
    """

    resource_id: str | None
    system: str                  # system id (ncsa-delta): partitions of one system share an allocation
    partition: str               # as the provider names it: "gpuH200x8" ("" without a resource)
    name: str                    # the catalog's full name, the reference key in Appendix B
    gpu_type: str
    gpus_per_node: int | None
    rule: str                    # the charging rule in words (the plan's Charge.rule)
    rule_source: str
    rule_confidence: str         # verified | secondhand | inferred ("" without a resource)
    gpu_hours_requested: float   # buffer included, all workloads on it
    amount: float                # in `unit`, all workloads on it (per-job rounding and minimums applied)
    unit: str
    walltime: str                # the per-job limit(s) that apply to the plan's jobs, in words
    walltime_source: str
    walltime_confidence: str
    workloads: tuple[str, ...]
    size: str = ""               # the partition's nodes and GPUs of this type, and its per-job node limit
    size_confidence: str = ""

    @property
    def size_mark(self) -> str:
        return CONFIDENCE_MARKS.get(self.size_confidence, "")

    @property
    def rule_mark(self) -> str:
        return CONFIDENCE_MARKS.get(self.rule_confidence, "")

    @property
    def walltime_mark(self) -> str:
        return CONFIDENCE_MARKS.get(self.walltime_confidence, "")


@dataclass(frozen=True)
class UnitTotal:
    """The amount requested on one system in one unit: partitions of one system add up, systems do not."""

    label: str                   # the partition id when it is the only one, else the system id
    system: str                  # "" for workloads with no target resource (GPU-hours)
    unit: str
    gpu_hours_requested: float | None    # None where its rows are of several GPU types (never added)
    amount: float
    rows: int                    # resource rows summed
    note: str = ""               # a cloud provider's dollars: the period and the dates of the prices they are at


@dataclass(frozen=True)
class ResourcesView:
    """The units table (section B.3): one row per resource, totals per system and unit, footnotes."""

    rows: tuple[ResourceRow, ...]
    totals: tuple[UnitTotal, ...]    # one per (system, unit), in order of first use
    notes: tuple[tuple[str, str], ...]   # (mark, meaning) for each mark the table uses
    rounded_apart: bool = False  # some total differs from the sum of its rows as shown (it adds unrounded amounts)

    @property
    def summed(self) -> tuple[UnitTotal, ...]:
        """The totals that add several rows (a one-row total would repeat its row), and every cloud provider's
        dollars (a provider's total, with the dates of its prices, is what is asked of it through CloudBank)."""
        return tuple(t for t in self.totals if t.rows > 1 or t.note)

    @property
    def adds_partitions(self) -> bool:
        """Whether a total adds the amounts of a system's partitions (the table says why it may)."""
        return any(t.system and t.rows > 1 for t in self.summed)

    @property
    def charged(self) -> tuple[UnitTotal, ...]:
        """The totals on named resources (not the GPU-hours of workloads without one)."""
        return tuple(t for t in self.totals if t.system)


@dataclass(frozen=True)
class Chart:
    svg: str                     # inline SVG (HTML and PDF)
    path: str                    # the file written beside report.md, relative to it
    alt: str
    height: float                # CSS px, for the page-length estimate


@dataclass(frozen=True)
class AccessView:
    """The request in ACCESS Credits, shown when the proposal names an ACCESS project type."""

    tier: str                   # the project type asked for, e.g. "Explore ACCESS"
    limit: float                # its credit limit
    arithmetic: str             # per resource: amount × rate = credits
    credits: float | None       # None: some resource has no rate in the catalog
    fits: str | None            # the smallest project type that covers the credits (None: Maximize)
    within: bool                # the credits are within the limit of the type asked for
    secondhand: bool
    missing: tuple[str, ...]


def _access_view(plan: Plan) -> AccessView | None:
    tier, access = plan.access_tier, plan.access
    if tier is None or access is None:
        return None
    # The planner holds the credits to the limit (a CapFinding when they are above it or unknown).
    within = not any(f.what == "access_credits" for f in plan.cap_findings)
    return AccessView(tier.name, tier.credits, access.arithmetic, access.credits,
                      access.tier.name if access.tier else None, within, access.secondhand, access.missing)


@dataclass(frozen=True)
class CloudRequest:
    label: str                   # the resource (instance type) id
    amount: float                # US dollars, all its workloads


@dataclass(frozen=True)
class CloudView:
    """The dollar request for the cloud partners (AWS, Azure, Google via CloudBank), with its prices' dates."""

    total: float                 # US dollars over every cloud resource
    requests: tuple[CloudRequest, ...]
    prices: tuple[tuple[str, str], ...]    # (instance type, its price in words: per hour, basis, region, date)
    period_months: float         # the allocation period the request is over


def cloud_view(plan: Plan) -> CloudView | None:
    """The charges in dollars, per resource, and each instance type's price as charged; None without any."""
    charges = plan.cloud_charges()
    if not charges:
        return None
    amounts: dict[str, float] = {}
    for c in charges:       # per provider: its instance types draw on one allocation (as section B's request)
        amounts[c.system] = amounts.get(c.system, 0.0) + c.amount
    # A price not read on the provider's own page is marked as the units table marks it.
    prices = tuple(dict.fromkeys((c.resource.partition, " ".join(filter(None, (
        c.resource.price.text, CONFIDENCE_MARKS.get(c.resource.rule_confidence))))) for c in charges))
    return CloudView(sum(amounts.values()), tuple(CloudRequest(k, v) for k, v in amounts.items()), prices,
                     plan.period_months)


@dataclass(frozen=True)
class SharedAssumption:
    """An assumption several workloads make alike (the same kind and values), listed once."""

    text: str
    workloads: tuple[str, ...]


@dataclass(frozen=True)
class ReportContext:
    heading: str
    title: TitleBlock
    workloads: tuple[WorkloadView, ...]
    gpu_hours: float
    gpu_hours_requested: float
    by_gpu: tuple[GpuTotal, ...]
    by_resource: tuple[ResourceTotal, ...]
    resources: ResourcesView | None  # the units table; None when no workload has a target resource
    has_charges: bool
    has_storage: bool
    storage: StorageTotals | None
    calendar_days: float         # all workloads one after another
    warnings: tuple[str, ...]
    references: tuple[Reference, ...]
    charts: dict[str, Chart]
    access: AccessView | None = None
    pilots: PilotsView | None = None     # the "Pilot measurements" table; None without pilot logs
    cloud: CloudView | None = None       # the dollar request for cloud partners; None without a cloud resource
    total_range: tuple[float, float] | None = None  # the GPU-hours all workloads need, p10 and p90 (fully correlated)
    total_coverage: float | None = None  # the share of validated cases the whole request covers
    auto_buffer: bool = False           # some workload's buffer was set by buffer: auto
    section_b: SectionB | None = None    # what section B (report.md) says, worded from the plan (section_b.py)
    shared_assumptions: tuple[SharedAssumption, ...] = ()    # the supplement's S.4
    validation: str = ""                 # the supplement's S.5 beside the pilot table
    supplement_heading: str = "Supplement to section B: derivations, alternatives, assumptions and sources"

    @property
    def has_ranges(self) -> bool:
        return self.total_range is not None

    @property
    def resources_heading(self) -> str | None:
        """Section B.3's title: the units table and storage share it; None when there is neither."""
        if self.resources is not None:
            return ("Resources, allocation units, storage and calendar time" if self.has_storage
                    else "Resources and allocation units")
        return "Storage and calendar time" if self.has_storage else None


# Papers and documents the estimate stands on, by the in-text citation the plan
# and this report use. A reference is listed only when its key (a regular


def _title(plan: Plan) -> TitleBlock:
    p = plan.proposal
    if p is None:
        return TitleBlock(None, None, None, None, None, None)
    return TitleBlock(p.title, p.pi, p.institution, p.resource, p.track, p.date)




def _charts(views: tuple[WorkloadView, ...]) -> dict[str, Chart]:
    bars = [(v.name, v.gpu_hours_requested, f"{fmt_hours(v.gpu_hours_requested)}") for v in views]
    gpu_svg = charts.bar_chart(bars, title=GPU_HOURS_CHART, unit="GPU-hours requested",
                               whiskers=[v.gpu_hours_range for v in views])
    stacked = [charts.StackedBar(
        label=v.name,
        parts=tuple((c.name, c.bytes / GiB) for c in v.components),
        capacity=v.usable_bytes / GiB,
        shown=f"{fmt_gib(v.memory_bytes, 2, unit=False)} of {fmt_gib(v.usable_bytes, 2)} ({v.gpu_id})",
    ) for v in views]
    mem_svg = charts.memory_chart(stacked, title="Memory per GPU by component against the GPU's usable memory",
                                  unit="GiB per GPU")

    def height(svg: str) -> float:
        return float(re.search(r'height="([0-9.]+)"', svg).group(1))

    return {
        "gpu_hours": Chart(gpu_svg, CHART_FILES["gpu_hours"], GPU_HOURS_CHART, height(gpu_svg)),
        "memory": Chart(mem_svg, CHART_FILES["memory"], "Memory per GPU by component against the GPU's usable "
                        "memory", height(mem_svg)),
    }


def _walltime_text(walltimes) -> str:
    """The per-job walltime limit(s) the planner applied to these jobs; tiers name their node range."""
    parts = []
    for limit, tier in walltimes:
        if limit is None:
            text = "none"
        elif tier is not None:
            text = f"{limit_hours(limit)} ({tier.min_nodes}–{tier.max_nodes} nodes)"
        else:
            text = limit_hours(limit)
        if text not in parts:
            parts.append(text)
    return "; ".join(parts)


def _prices_note(plan: Plan, groups) -> str:
    """A cloud provider's total: '12 months, at prices read 2026-11-09', the allocation period and the dates as
    each price states them (a price_per_hour given in a file has none)."""
    prices = [g.resource.price for g in groups]
    dates = sorted({p.read for p in prices if not p.set_by and p.read})
    at = ([f"prices read {', '.join(dates)}"] if dates else []) + \
         (["a given price_per_hour"] if any(p.set_by for p in prices) else [])
    return f"{plan.period_months:g} months, at {' and '.join(at)}"


def resources_view(plan: Plan) -> ResourcesView | None:
    """The units table: for each resource (partition) used, requested GPU-hours → rule → amount.

    Rows are the plan's charge groups and totals its system totals
    (Plan.charge_groups, Plan.system_totals: whole-node rounding and per-job
    minimums already applied per workload); this adds the catalog's words
    (rule, partition, walltime, sources). Totals are per system and unit:
    partitions of one system draw on one allocation in the same unit (Delta's
    A100, A40 and H200 SUs), so their amounts add; amounts on different
    systems are never added, even when both are called SUs. Workloads with no
    target resource get a row per GPU type in GPU-hours. None when no workload
    has a target resource.
    """
    if all(w.charge is None for w in plan.workloads):
        return None
    rows = []
    for g in plan.charge_groups():
        if g.resource_id is None:
            rows.append(ResourceRow(
                resource_id=None, system="", partition="", name="", gpu_type=g.gpu_type, gpus_per_node=None,
                rule="GPU-hours as requested", rule_source="", rule_confidence="",
                gpu_hours_requested=g.gpu_hours, amount=g.amount, unit=g.unit,
                walltime="—", walltime_source="", walltime_confidence="", workloads=g.workloads))
            continue
        res = g.resource
        # A cloud instance type's rule is its price: the price's source and confidence (a given price_per_hour
        # is the researcher's figure, not the catalog's).
        rule_source = res.price.source if res.is_cloud else res.source
        rows.append(ResourceRow(
            resource_id=g.resource_id, system=g.system, partition=res.partition, name=res.name,
            gpu_type=g.gpu_type, gpus_per_node=res.gpus_per_node, rule=g.rule,
            rule_source=" ".join(rule_source.split()), rule_confidence=res.rule_confidence,
            gpu_hours_requested=g.gpu_hours, amount=g.amount, unit=g.unit,
            walltime=_walltime_text(g.walltimes),
            walltime_source=" ".join(res.walltime_source.split()), walltime_confidence=res.walltime_confidence,
            workloads=g.workloads, size=res.size_short(g.gpu_type), size_confidence=res.size_confidence,
        ))
    totals = []
    for total in plan.system_totals():
        ids = list(dict.fromkeys(g.resource_id for g in total.groups))
        cloud = bool(total.system) and all(g.resource.is_cloud for g in total.groups)
        label = (ids[0] if len(ids) == 1 and not cloud else total.system) if total.system else "no target resource"
        one_type = len({g.gpu_type for g in total.groups}) == 1      # GPU-hours of different types never add
        totals.append(UnitTotal(label=label, system=total.system, unit=total.unit,
                                gpu_hours_requested=total.gpu_hours if one_type else None, amount=total.amount,
                                rows=len(total.groups), note=_prices_note(plan, total.groups) if cloud else ""))
    notes = confidence_notes({c for row in rows
                              for c in (row.rule_confidence, row.walltime_confidence, row.size_confidence)})
    apart = any(shown_amount(t.amount) != shown_amount(sum(shown_amount(g.amount) for g in t.groups))
                for t in plan.system_totals())
    return ResourcesView(rows=tuple(rows), totals=tuple(totals), notes=notes, rounded_apart=apart)


def shared_notes(plan: Plan) -> tuple[SharedAssumption, ...]:
    """The assumptions (notes of the same kind and values) that more than one workload makes, once each, in
    the order first made, with the workloads that make them."""
    who: dict[str, list[str]] = {}
    for w in plan.workloads:
        # By the sentence a reader sees: two records that read alike (values that differ past the digits shown)
        # are one assumption to the reader.
        for text in dict.fromkeys(unpinned(note_text(n)) for n in document_notes(w.assumptions)):
            who.setdefault(text, []).append(w.name)
    return tuple(SharedAssumption(text, tuple(names)) for text, names in who.items() if len(names) > 1)


# Derivation lines that state an assumption's basis rather than a workload's arithmetic: alike in several
# workloads, the supplement gives them once, with the assumptions they share.
SHAREABLE_DETAILS = ("MFU", "Matmul rate", "Engine factors")


def shared_details(views: tuple[WorkloadView, ...]) -> tuple[tuple[WorkloadView, ...], tuple[SharedAssumption, ...]]:
    """The views without the SHAREABLE_DETAILS lines several of them have alike, and those lines once each."""
    who: dict[tuple[str, str], list[str]] = {}
    for v in views:
        for d in v.details:
            if d.label in SHAREABLE_DETAILS:
                who.setdefault((d.label, d.text), []).append(v.name)
    shared = {key: names for key, names in who.items() if len(names) > 1}
    if not shared:
        return views, ()
    views = tuple(replace(v, details=tuple(d for d in v.details if (d.label, d.text) not in shared)) for v in views)
    return views, tuple(SharedAssumption(f"{label}: {text}", tuple(names)) for (label, text), names in shared.items())


def report_context(plan: Plan) -> ReportContext:
    """The context the templates get: views of the plan with every derivation written out."""
    shared = shared_notes(plan)
    common = {n for w in plan.workloads for n in document_notes(w.assumptions)
              if unpinned(note_text(n)) in {a.text for a in shared}}
    views = tuple(workload_view(w, f"S.2.{i}", common) for i, w in enumerate(plan.workloads, start=1))
    views, basis = shared_details(views)
    # A workload whose MFU basis went to S.4 with the others' points its MFU there, not at its own section.
    moved = {name for a in basis if a.text.startswith("MFU: ") for name in a.workloads}
    if moved:
        views = tuple(workload_view(w, "S.4" if w.name in moved else f"S.2.{i}", common)
                      for i, w in enumerate(plan.workloads, start=1))
        views, basis = shared_details(views)
    shared += basis
    storage = None
    if any(w.storage is not None for w in plan.workloads):
        storage = plan.storage_totals()
    return ReportContext(
        heading="B. Estimate of Compute, Storage and Other Resources",
        title=_title(plan),
        workloads=views,
        gpu_hours=plan.gpu_hours,
        gpu_hours_requested=plan.gpu_hours_requested,
        by_gpu=tuple(GpuTotal(gpu, hours) for gpu, hours in plan.by_gpu_type().items()),
        by_resource=tuple(ResourceTotal(r, unit, amount) for r, (unit, amount) in plan.by_resource().items()),
        resources=resources_view(plan),
        has_charges=any(w.charge is not None for w in plan.workloads),
        has_storage=storage is not None,
        storage=storage,
        calendar_days=plan.calendar_days,
        warnings=tuple(plan.warnings),
        references=references(plan),
        charts=_charts(views),
        access=_access_view(plan),
        pilots=pilots_view(plan),
        cloud=cloud_view(plan),
        total_range=(plan.total_range.gpu_hours.p10, plan.total_range.gpu_hours.p90) if plan.total_range else None,
        total_coverage=plan.total_range.request_coverage if plan.total_range else None,
        auto_buffer=any(w.settings.coverage is not None for w in plan.workloads),
        section_b=section_b(plan),
        shared_assumptions=shared,
    )

