"""Compute resources: the request in each resource's own units, job limits, caps, calendar.

Pure: the catalog (``catalog/resources.yaml``) is read lazily by the cached
``resources()``, ``systems()``, ``tracks()`` and ``credit_tiers()``; nothing
happens at import. Every number a function uses comes from a catalog row that
carries its source; every conversion is returned with its arithmetic written
out, so the report can show a reviewer how GPU-hours became SUs or node-hours.

Charging rules (one per catalog row):

* ``per: gpu-hour`` — amount = GPUs × max(hours, minimum_hours) × factor
  (NCSA Delta, Purdue Anvil, PSC Bridges-2, SDSC Expanse, Jetstream2).
* ``per: node-hour`` — amount = nodes × max(hours, minimum_hours) × factor, with
  nodes = ⌈GPUs ÷ GPUs per node⌉ when whole nodes are charged (TACC, ALCF, OLCF,
  NERSC). Rounding up to whole nodes applies per job.
"""

from __future__ import annotations

import difflib
import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass, fields
from importlib import resources as _package_files

CONFIDENCE_LEVELS = ("verified", "secondhand", "inferred")
CHARGE_BASES = ("gpu-hour", "node-hour")

HOURS_PER_DAY = 24
DAYS_PER_MONTH = 365.25 / 12   # a Julian year over 12 months: 30.4375 days

CALENDAR_ASSUMPTION = (
    "Calendar time = ⌈variants ÷ concurrency⌉ waves × wall-clock hours per run; "
    "queue wait, failed runs, restarts between walltime segments and maintenance "
    "downtime are not included."
)


class ResourceError(ValueError):
    """A resource id, GPU type, track or job shape the catalog cannot serve."""


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class ChargeRule:
    """How a resource turns a job into its allocation unit (catalog ``charge:``)."""

    per: str                    # "gpu-hour" or "node-hour"
    factor: float               # units per GPU-hour or per node-hour
    whole_nodes: bool           # node-hour sites: a partly used node is charged whole
    minimum_hours: float = 0.0  # least wall-clock time charged per job (TACC: 0.25 h)
    minimum_amount: float = 0.0 # least amount charged per job, in the unit (Delta: 1 SU)


@dataclass(frozen=True)
class WalltimeTier:
    """A per-job walltime limit that holds for jobs of min_nodes..max_nodes nodes."""

    min_nodes: int
    max_nodes: int
    hours: float
    queue: str = ""


@dataclass(frozen=True)
class CreditRate:
    """ACCESS Credits per one unit of a resource (ACCESS Exchange Calculator)."""

    per_unit: float
    source: str
    confidence: str


@dataclass(frozen=True)
class Resource:
    """One allocatable resource, or one partition of it where charging differs."""

    id: str
    name: str
    site: str
    system: str
    partition: str
    gpus: tuple[str, ...]        # GPU catalog ids
    gpus_per_node: int
    unit: str                    # "SUs", "GPU-hours", "node-hours"
    charge: ChargeRule
    source: str
    confidence: str              # verified | secondhand | inferred
    max_walltime_hours: float | None = None
    walltime_by_nodes: tuple[WalltimeTier, ...] = ()
    walltime_source: str = ""
    walltime_confidence: str = ""
    max_nodes_per_job: int | None = None
    access_credits: CreditRate | None = None
    notes: str = ""

    def nodes_for(self, gpus_per_job: int) -> int:
        """Whole nodes a job of this many GPUs occupies: ⌈GPUs ÷ GPUs per node⌉."""
        return math.ceil(gpus_per_job / self.gpus_per_node)

    def walltime_limit_hours(self, gpus_per_job: int) -> float | None:
        """Per-job walltime limit for a job of this many GPUs (None: no limit known)."""
        tier = self.walltime_tier(gpus_per_job)
        return tier.hours if tier is not None else self.max_walltime_hours

    def walltime_tier(self, gpus_per_job: int) -> WalltimeTier | None:
        nodes = self.nodes_for(gpus_per_job)
        for tier in self.walltime_by_nodes:
            if tier.min_nodes <= nodes <= tier.max_nodes:
                return tier
        return None


@dataclass(frozen=True)
class Charge:
    """A job (or a set of identical jobs) converted into a resource's unit."""

    resource_id: str
    unit: str
    amount: float               # in `unit`, all jobs together
    arithmetic: str             # the conversion written out for a reviewer
    gpu_type: str
    gpus_per_job: int
    hours_per_job: float        # wall-clock hours the job runs
    hours_charged_per_job: float  # after the minimum charge time
    nodes_per_job: float        # whole nodes, or the node fraction where nodes are shared
    jobs: int
    gpu_hours: float            # GPUs × hours × jobs, before any rounding or factor


@dataclass(frozen=True)
class AllocationTrack:
    """An allocation track's caps and period (catalog ``allocation_tracks:``)."""

    id: str
    name: str
    period_months: float
    source: str
    confidence: str
    gpu_hours_cap: float | None = None
    jetstream2_su_cap: float | None = None
    max_resources: int | None = None

    @property
    def period_days(self) -> float:
        return self.period_months * DAYS_PER_MONTH


@dataclass(frozen=True)
class CapFinding:
    """One limit a plan exceeds: what, the plan's amount and the limit, with the message.

    The plan's warnings print `message`; `check` fails on them (Plan.cap_findings).
    """

    field: str                  # the setting that names the limit: proposal.track | proposal.access_tier
    what: str                   # gpu_hours | resources | jetstream2_sus | calendar_days | access_credits
    amount: float | None        # the plan's figure (None: it cannot be computed)
    limit: float | None
    message: str


@dataclass(frozen=True)
class CreditTier:
    """An ACCESS project type and its credit limit."""

    id: str
    name: str
    credits: float
    source: str
    confidence: str


# ------------------------------------------------------------------------ loading


def _read_catalog() -> dict:
    import yaml  # deferred: keeps `import proposalkit.resources` free of I/O and YAML

    text = _package_files.files("proposalkit.catalog").joinpath("resources.yaml").read_text(encoding="utf-8")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)


@functools.lru_cache(maxsize=None)
def _catalog() -> dict:
    return _read_catalog()


_RESOURCE_FIELDS = {f.name for f in fields(Resource)}
_RULE_FIELDS = {f.name for f in fields(ChargeRule)}
_TIER_FIELDS = {f.name for f in fields(WalltimeTier)}


def _resource_from_row(row: dict) -> Resource:
    rid = row.get("id", "?")

    def bad(message: str) -> ValueError:
        return ValueError(f"resources.yaml: {rid}: {message}")

    unknown = set(row) - _RESOURCE_FIELDS
    if unknown:
        raise bad(f"unknown keys {sorted(unknown)}")
    row = dict(row)
    rule = dict(row.pop("charge"))
    if set(rule) - _RULE_FIELDS:
        raise bad(f"charge: unknown keys {sorted(set(rule) - _RULE_FIELDS)}")
    if rule.get("per") not in CHARGE_BASES:
        raise bad(f"charge.per: expected one of {CHARGE_BASES}, got {rule.get('per')!r}")
    rule = ChargeRule(
        per=rule["per"],
        factor=float(rule["factor"]),
        whole_nodes=bool(rule["whole_nodes"]),
        minimum_hours=float(rule.get("minimum_hours") or 0),
        minimum_amount=float(rule.get("minimum_amount") or 0),
    )
    tiers = []
    for tier in row.pop("walltime_by_nodes", None) or ():
        if set(tier) - _TIER_FIELDS:
            raise bad(f"walltime_by_nodes: unknown keys {sorted(set(tier) - _TIER_FIELDS)}")
        tiers.append(WalltimeTier(int(tier["min_nodes"]), int(tier["max_nodes"]),
                                  float(tier["hours"]), str(tier.get("queue", ""))))
    if row.get("confidence") not in CONFIDENCE_LEVELS:
        raise bad(f"confidence: expected one of {CONFIDENCE_LEVELS}, got {row.get('confidence')!r}")
    if not row.get("source"):
        raise bad("source: every row needs the page it was read from")
    if not isinstance(row.get("gpus_per_node"), int) or row["gpus_per_node"] < 1:
        raise bad(f"gpus_per_node: expected a positive integer, got {row.get('gpus_per_node')!r}")
    credits = row.pop("access_credits", None)
    if credits is not None:
        if set(credits) != {"per_unit", "source", "confidence"} or credits["confidence"] not in CONFIDENCE_LEVELS \
                or not float(credits["per_unit"]) > 0:
            raise bad(f"access_credits: expected per_unit > 0, source and confidence, got {credits!r}")
        row["access_credits"] = CreditRate(float(credits["per_unit"]), credits["source"], credits["confidence"])
    walltime = row.get("max_walltime_hours")
    row["max_walltime_hours"] = float(walltime) if walltime is not None else None
    row["gpus"] = tuple(row["gpus"])
    row["notes"] = " ".join(str(row.get("notes", "")).split())
    return Resource(charge=rule, walltime_by_nodes=tuple(tiers), **row)


@functools.lru_cache(maxsize=None)
def resources() -> dict[str, Resource]:
    """Resource id → Resource, in catalog order."""
    out: dict[str, Resource] = {}
    for row in _catalog()["resources"]:
        res = _resource_from_row(row)
        if res.id in out:
            raise ValueError(f"resources.yaml: {res.id}: duplicate id")
        out[res.id] = res
    return out


@functools.lru_cache(maxsize=None)
def systems() -> dict[str, tuple[str, ...]]:
    """System id (what a workload file names) → its resource rows, preferred first."""
    rows = resources()
    out = {}
    for system, ids in (_catalog().get("systems") or {}).items():
        missing = [i for i in ids if i not in rows]
        if missing:
            raise ValueError(f"resources.yaml: systems.{system}: unknown resource ids {missing}")
        out[system] = tuple(ids)
    return out


def known_ids() -> list[str]:
    """Every id a workload may name: system ids, then resource (partition) ids."""
    return list(dict.fromkeys([*systems(), *resources()]))


def suggest(name: str, choices: Iterable[str] | None = None) -> str | None:
    """The nearest known id to a misspelt one, or None."""
    pool = list(choices) if choices is not None else known_ids()
    matches = difflib.get_close_matches(name, pool, n=1, cutoff=0.6)
    return matches[0] if matches else None


def _unknown(kind: str, name: str, pool: list[str]) -> ResourceError:
    near = suggest(name, pool)
    hint = f"; did you mean '{near}'?" if near else f" (known: {', '.join(pool)})"
    return ResourceError(f"unknown {kind} '{name}'{hint}")


def resolve(name: str) -> tuple[Resource, ...]:
    """The resource rows behind an id: a system id gives all its partitions, a row id itself."""
    rows = resources()
    if name in systems():
        return tuple(rows[i] for i in systems()[name])
    if name in rows:
        return (rows[name],)
    raise _unknown("resource", name, known_ids())


def resource(name: str) -> Resource:
    """The single row for a resource id, or for a system with exactly one partition."""
    rows = resolve(name)
    if len(rows) > 1:
        raise ResourceError(
            f"'{name}' has several partitions ({', '.join(r.id for r in rows)}); "
            "name one, or let the planner choose by GPU type (choose_partition)"
        )
    return rows[0]


def system_of(resource_id: str) -> str:
    """The system id a resource row belongs to (the row id itself when not grouped)."""
    for system, ids in systems().items():
        if resource_id in ids:
            return system
    return resource_id


# ------------------------------------------------------------------ number format


def _fmt(x: float) -> str:
    """Hours and amounts: thousands separators, at least one decimal, at most two."""
    text = f"{x:,.2f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def _plain(x: float) -> str:
    """Factors and counts: 1, 0.5, 1.5, 128 (no forced decimal)."""
    return f"{x:,.4f}".rstrip("0").rstrip(".")


def _gpus(n: int) -> str:
    return f"{n:,} GPU" + ("" if n == 1 else "s")


def _nodes(n: float) -> str:
    return f"{_plain(n)} node" + ("" if n == 1 else "s")


# ------------------------------------------------------------------------ charging


def _as_resource(res: Resource | str) -> Resource:
    return res if isinstance(res, Resource) else resource(res)


def charge(res: Resource | str, gpu_type: str, gpus_per_job: int, hours_per_job: float,
           jobs: int = 1) -> Charge:
    """Convert ``jobs`` identical jobs into the resource's unit, with the arithmetic.

    ``hours_per_job`` is the wall-clock time one job is expected to hold its GPUs
    (the planner passes the requested hours, buffer included). Whole-node
    rounding and the minimum charge apply to each job, then the total is
    multiplied by ``jobs``. Example (ALCF Polaris, 4 GPUs per node, node-hours):
    ``⌈6 GPUs ÷ 4 per node⌉ = 2 nodes × 10.0 h × 1 = 20.0 node-hours``.
    """
    res = _as_resource(res)
    if gpu_type not in res.gpus:
        near = suggest(gpu_type, res.gpus)
        raise ResourceError(
            f"{res.id} has no '{gpu_type}' GPUs (it has {', '.join(res.gpus)})"
            + (f"; did you mean '{near}'?" if near else "")
        )
    if not isinstance(gpus_per_job, int) or isinstance(gpus_per_job, bool) or gpus_per_job < 1:
        raise ResourceError(f"gpus_per_job: expected a positive integer, got {gpus_per_job!r}")
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise ResourceError(f"jobs: expected a positive integer, got {jobs!r}")
    if not (hours_per_job >= 0 and math.isfinite(hours_per_job)):
        raise ResourceError(f"hours_per_job: expected a non-negative number, got {hours_per_job!r}")

    rule = res.charge
    hours_charged = max(hours_per_job, rule.minimum_hours)
    if hours_charged > hours_per_job:
        hours_text = (f"{_fmt(hours_charged)} h (the {_plain(rule.minimum_hours * 60)}-minute minimum; "
                      f"the job runs {_fmt(hours_per_job)} h)")
    else:
        hours_text = f"{_fmt(hours_per_job)} h"

    if rule.per == "gpu-hour":
        nodes = gpus_per_job / res.gpus_per_node
        billed, head = gpus_per_job, _gpus(gpus_per_job)
    elif rule.whole_nodes:
        nodes = billed = res.nodes_for(gpus_per_job)
        head = f"⌈{_gpus(gpus_per_job)} ÷ {res.gpus_per_node} per node⌉ = {_nodes(nodes)}"
    else:
        nodes = billed = gpus_per_job / res.gpus_per_node
        head = f"{_gpus(gpus_per_job)} ÷ {res.gpus_per_node} per node = {_nodes(nodes)}"

    per_job = billed * hours_charged * rule.factor
    text = f"{head} × {hours_text} × {_plain(rule.factor)}"
    raised = per_job < rule.minimum_amount
    if raised:
        text += (f" = {_fmt(per_job)}, raised to the per-job minimum of "
                 f"{_plain(rule.minimum_amount)} {res.unit}")
        per_job = rule.minimum_amount
    amount = per_job * jobs
    if jobs > 1:
        text += f"; × {jobs:,} jobs" if raised else f" × {jobs:,} jobs"
    text += f" = {_fmt(amount)} {res.unit}"
    return Charge(
        resource_id=res.id, unit=res.unit, amount=amount, arithmetic=text, gpu_type=gpu_type,
        gpus_per_job=gpus_per_job, hours_per_job=float(hours_per_job),
        hours_charged_per_job=hours_charged, nodes_per_job=nodes, jobs=jobs,
        gpu_hours=gpus_per_job * hours_per_job * jobs,
    )


def describe_rule(res: Resource | str) -> str:
    """A resource's charging rule in words, for the report's units table.

    Examples: NCSA Delta H200 '3 SUs per GPU-hour, 1 SU minimum'; ALCF
    Polaris 'node-hours, whole nodes of 4 GPUs'; TACC Vista '1 SU per
    node-hour, whole nodes of 1 GPU, 15-min minimum'. Minimums and whole-node
    rounding apply to each job (``charge``).
    """
    res = _as_resource(res)
    rule = res.charge
    one = res.unit.removesuffix("s")                 # "SUs" → "SU", "node-hours" → "node-hour"
    unit = one if rule.factor <= 1 else res.unit     # 0.5 SU, 1 SU, 3 SUs
    if rule.per == "gpu-hour":
        text = ("GPU-hours as used" if res.unit == "GPU-hours" and rule.factor == 1
                else f"{_plain(rule.factor)} {unit} per GPU-hour")
    else:
        text = ("node-hours" if res.unit == "node-hours" and rule.factor == 1
                else f"{_plain(rule.factor)} {unit} per node-hour")
        text += (f", whole nodes of {_gpus(res.gpus_per_node)}" if rule.whole_nodes
                 else f", GPUs ÷ {res.gpus_per_node} per node")
    if rule.minimum_hours:
        text += f", {_plain(rule.minimum_hours * 60)}-min minimum"
    if rule.minimum_amount:
        amount = one if rule.minimum_amount <= 1 else res.unit
        text += f", {_plain(rule.minimum_amount)} {amount} minimum"
    return text


def convert_gpu_hours(res: Resource | str, gpu_hours: float, gpus_per_job: int,
                      gpu_type: str | None = None) -> Charge:
    """Convert a plan's GPU-hours, run as jobs of ``gpus_per_job`` GPUs, into the unit.

    The simpler form of ``charge``: the GPU-hours are treated as one job of
    ``gpus_per_job`` GPUs lasting ``gpu_hours ÷ gpus_per_job`` hours. Whole-node
    rounding is exact (it scales with hours); a per-job minimum is applied once,
    so use ``charge`` with the real job count where minimums matter.
    ``gpu_type`` defaults to the resource's first GPU.
    """
    res = _as_resource(res)
    if not (gpu_hours >= 0 and math.isfinite(gpu_hours)):
        raise ResourceError(f"gpu_hours: expected a non-negative number, got {gpu_hours!r}")
    if not isinstance(gpus_per_job, int) or isinstance(gpus_per_job, bool) or gpus_per_job < 1:
        raise ResourceError(f"gpus_per_job: expected a positive integer, got {gpus_per_job!r}")
    return charge(res, gpu_type or res.gpus[0], gpus_per_job, gpu_hours / gpus_per_job)


def fits(res: Resource | str, gpus_per_job: int) -> bool:
    """Whether a job of this many GPUs is allowed on the resource (max nodes per job)."""
    res = _as_resource(res)
    return res.max_nodes_per_job is None or res.nodes_for(gpus_per_job) <= res.max_nodes_per_job


def choose_partition(name: str, gpu_type: str, gpus_per_job: int, hours_per_job: float) -> Resource:
    """The cheapest partition of a system (or the named row) that has the GPU and takes the job.

    Cheapest means the smallest ``charge`` amount for one such job; partitions
    of one system share a unit, so the amounts compare. Ties keep catalog order.
    """
    rows = [r for r in resolve(name) if gpu_type in r.gpus]
    if not rows:
        offered = sorted({g for r in resolve(name) for g in r.gpus})
        raise ResourceError(f"{name} has no '{gpu_type}' GPUs (it has {', '.join(offered)})")
    allowed = [r for r in rows if fits(r, gpus_per_job)]
    if not allowed:
        limits = ", ".join(f"{r.id}: {r.max_nodes_per_job} node(s) of {r.gpus_per_node} GPUs" for r in rows)
        raise ResourceError(f"no {name} partition takes a {gpus_per_job}-GPU job of '{gpu_type}' ({limits})")
    return min(allowed, key=lambda r: charge(r, gpu_type, gpus_per_job, hours_per_job).amount)


# ------------------------------------------------------------------------ walltime


def walltime_segments(hours_per_run: float, max_walltime_hours: float | None) -> int:
    """Checkpoint/restart segments a run needs: ⌈hours per run ÷ walltime limit⌉ (1 when no limit).

    A 100-hour run under a 48-hour limit needs ⌈100 ÷ 48⌉ = 3 jobs chained
    through checkpoints (e.g. Slurm ``--dependency=afterok``).
    """
    if not (hours_per_run >= 0 and math.isfinite(hours_per_run)):
        raise ResourceError(f"hours_per_run: expected a non-negative number, got {hours_per_run!r}")
    if max_walltime_hours is None:
        return 1
    if not max_walltime_hours > 0:
        raise ResourceError(f"max_walltime_hours: expected a positive number, got {max_walltime_hours!r}")
    return max(1, math.ceil(hours_per_run / max_walltime_hours))


def job_limit_warnings(res: Resource | str, gpus_per_job: int, hours_per_run: float) -> list[str]:
    """Warnings for a run that breaks a per-job limit: node count, walltime (restart segments)."""
    res = _as_resource(res)
    out = []
    nodes = res.nodes_for(gpus_per_job)
    if res.max_nodes_per_job is not None and nodes > res.max_nodes_per_job:
        out.append(
            f"{res.id}: a {gpus_per_job:,}-GPU job needs {_nodes(nodes)}; {res.partition} allows "
            f"{res.max_nodes_per_job} per job ({res.max_nodes_per_job * res.gpus_per_node} GPUs)"
        )
    limit = res.walltime_limit_hours(gpus_per_job)
    segments = walltime_segments(hours_per_run, limit)
    if segments > 1:
        tier = res.walltime_tier(gpus_per_job)
        where = f" for {nodes:,}-node jobs ({tier.queue})" if tier and tier.queue else ""
        out.append(
            f"{res.id}: a run of {_fmt(hours_per_run)} h exceeds the {_fmt(limit)} h walltime limit{where}: "
            f"it needs ⌈{_fmt(hours_per_run)} ÷ {_fmt(limit)}⌉ = {segments} checkpoint/restart segments"
        )
    tier = res.walltime_tier(gpus_per_job)
    if tier is not None and "preempt" in tier.queue:
        out.append(f"{res.id}: {nodes:,}-node jobs run in {tier.queue}; checkpoint often")
    return out


# ------------------------------------------------------------------- caps, tiers


@functools.lru_cache(maxsize=None)
def tracks() -> dict[str, AllocationTrack]:
    """Track id (startup, standard) → AllocationTrack."""
    out = {}
    for row in _catalog()["allocation_tracks"]:
        out[row["id"]] = AllocationTrack(
            id=row["id"], name=row["name"], period_months=float(row["period_months"]),
            source=row["source"], confidence=row["confidence"],
            gpu_hours_cap=row.get("gpu_hours_cap"), jetstream2_su_cap=row.get("jetstream2_su_cap"),
            max_resources=row.get("max_resources"),
        )
    return out


@functools.lru_cache(maxsize=None)
def credit_tiers() -> tuple[CreditTier, ...]:
    """ACCESS project types by credit limit, smallest first."""
    cat = _catalog()
    tiers = (CreditTier(t["id"], t["name"], float(t["credits"]), cat["access_credit_tiers_source"],
                        cat["access_credit_tiers_confidence"]) for t in cat["access_credit_tiers"])
    return tuple(sorted(tiers, key=lambda t: t.credits))


def access_tier(credits: float) -> CreditTier | None:
    """The smallest ACCESS project type whose limit covers ``credits`` (None: Maximize)."""
    for tier in credit_tiers():
        if credits <= tier.credits:
            return tier
    return None


def track(name: str) -> AllocationTrack:
    try:
        return tracks()[name]
    except KeyError:
        raise _unknown("track", name, list(tracks())) from None


def allocation_period_days(track_name: str) -> float:
    """Days in the allocation period: 12 months standard, 3 months Start-Up (× 30.4375 days)."""
    return track(track_name).period_days


def calendar_days(runtime_hours_per_run: float, variants: int, concurrency: int = 1) -> float:
    """Calendar days of a campaign: ⌈variants ÷ concurrency⌉ waves × hours per run ÷ 24.

    Concurrency changes calendar time, not GPU-hours (NAIRR community guide,
    'Generalized Resource Estimation'). Assumes every wave starts when the
    previous one ends: queue wait is not included (CALENDAR_ASSUMPTION).
    """
    if not (runtime_hours_per_run >= 0 and math.isfinite(runtime_hours_per_run)):
        raise ResourceError(f"runtime_hours_per_run: expected a non-negative number, got {runtime_hours_per_run!r}")
    for label, value in (("variants", variants), ("concurrency", concurrency)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ResourceError(f"{label}: expected a positive integer, got {value!r}")
    waves = math.ceil(variants / concurrency)
    return waves * runtime_hours_per_run / HOURS_PER_DAY


def calendar_warning(days: float, track_name: str = "standard") -> str | None:
    """A warning when the campaign does not fit the track's allocation period."""
    t = track(track_name)
    if days <= t.period_days:
        return None
    return (
        f"The campaign needs {_fmt(round(days, 1))} calendar days at the stated concurrency, more than "
        f"the {_plain(t.period_months)}-month {t.name} period ({_fmt(round(t.period_days, 1))} days; "
        f"queue wait not included): run more variants at once (concurrency) or trim the plan"
    )


@dataclass(frozen=True)
class AccessCredits:
    """A plan's charges in ACCESS Credits (None when a resource has no rate in the catalog)."""

    credits: float | None
    arithmetic: str                 # per resource: amount × rate = credits
    missing: tuple[str, ...]        # resources charged without a known rate
    secondhand: bool                # some rate is not from ACCESS or the provider
    tier: CreditTier | None         # the smallest ACCESS project type that covers them


def access_credits(charges: Iterable[Charge], uncharged: Iterable[str] = ()) -> AccessCredits | None:
    """Σ amount × credits per unit over the charges, per resource; None when nothing is charged.

    ``uncharged`` names workloads with no target resource: they have no unit to
    exchange, so the credits are not computed (never a total that leaves them out).
    """
    by_resource: dict[str, float] = {}
    for c in charges:
        by_resource[c.resource_id] = by_resource.get(c.resource_id, 0.0) + c.amount
    if not by_resource:
        return None
    uncharged = list(uncharged)
    parts, total, secondhand = [], 0.0, False
    missing = [f"{', '.join(uncharged)} (no target resource)"] if uncharged else []
    for rid, amount in by_resource.items():
        res = resource(rid)
        rate = res.access_credits
        if rate is None:
            missing.append(rid)
            continue
        credits = amount * rate.per_unit
        total += credits
        secondhand |= rate.confidence != "verified"
        parts.append(f"{rid}: {_fmt(amount)} {res.unit} × {_fmt(rate.per_unit)} = {credits:,.0f} credits")
    if missing:
        return AccessCredits(None, "; ".join(parts), tuple(missing), secondhand, None)
    return AccessCredits(total, "; ".join(parts), (), secondhand, access_tier(total))


def access_warnings(credits: AccessCredits | None, tier_name: str | None) -> list[str]:
    """The plan against the ACCESS project type it names (proposal.access_tier), as messages."""
    return [f.message for f in access_findings(credits, tier_name)]


def access_findings(credits: AccessCredits | None, tier_name: str | None) -> list[CapFinding]:
    """The plan against the ACCESS project type it names (proposal.access_tier)."""
    if tier_name is None:      # a NAIRR request: credits are information, not a limit
        return []
    tier = next(t for t in credit_tiers() if t.id == tier_name)

    def finding(amount: float | None, message: str) -> CapFinding:
        return CapFinding("proposal.access_tier", "access_credits", amount, tier.credits, message)

    if credits is None:
        return [finding(None, f"The plan charges no resource, so it has no ACCESS credits to hold to the "
                              f"{tier.name} limit (set proposal.resource)")]
    if credits.credits is None:
        return [finding(None, f"No ACCESS exchange rate for {', '.join(credits.missing)}: the credits cannot be "
                              f"checked against the {tier.name} limit")]
    if credits.credits > tier.credits:
        return [finding(credits.credits,
                        f"The plan comes to {credits.credits:,.0f} ACCESS credits ({credits.arithmetic}); the "
                        f"{tier.name} limit is {tier.credits:,.0f}"
                        + (f"; it fits {credits.tier.name}" if credits.tier is not None else "; it needs Maximize ACCESS")
                        + ("; some exchange rates are second-hand: re-check with the ACCESS Exchange Calculator"
                           if credits.secondhand else ""))]
    return []


def jetstream2_sus(charges: Iterable[Charge]) -> float | None:
    """The SUs charged on Jetstream2 (the Start-Up track caps them apart), None when none are."""
    amounts = [c.amount for c in charges if system_of(c.resource_id) == "jetstream2"]
    return sum(amounts) if amounts else None


def cap_warnings(track_name: str, total_gpu_hours_requested: float, resources_used: Iterable[str],
                 calendar_days: float, *, jetstream2_sus: float | None = None) -> list[str]:
    """cap_findings as messages."""
    return [f.message for f in cap_findings(track_name, total_gpu_hours_requested, resources_used, calendar_days,
                                            jetstream2_sus=jetstream2_sus)]


def cap_findings(track_name: str, total_gpu_hours_requested: float, resources_used: Iterable[str],
                 calendar_days: float, *, jetstream2_sus: float | None = None) -> list[CapFinding]:
    """Each cap or period of the track that the plan exceeds.

    * Start-Up: about 2,000 GPU-hours on one resource over 3 months (second-hand:
      NAIRR.md [S]); 128,000 SUs on Jetstream2.
    * Every track: the campaign's calendar days must fit the period (12 months
      standard, 3 Start-Up).
    ACCESS project types are checked apart (access_findings).

    ``resources_used`` are resource or system ids; partitions of one system
    (Delta's A100 and A40 nodes) count as one resource.
    """
    t = track(track_name)
    out = []
    if t.gpu_hours_cap is not None and total_gpu_hours_requested > t.gpu_hours_cap:
        out.append(CapFinding(
            "proposal.track", "gpu_hours", total_gpu_hours_requested, t.gpu_hours_cap,
            f"The plan requests {total_gpu_hours_requested:,.0f} GPU-hours; the {t.name} track is capped "
            f"near {t.gpu_hours_cap:,.0f} GPU-hours ({t.confidence}: re-check at nairrpilot.org). "
            "Trim the plan or request the standard track (proposal.track: standard)"))
    used = list(dict.fromkeys(system_of(r) for r in resources_used))
    if t.max_resources is not None and len(used) > t.max_resources:
        out.append(CapFinding(
            "proposal.track", "resources", len(used), t.max_resources,
            f"The {t.name} track allows {t.max_resources} resource; the plan uses {len(used)} "
            f"({', '.join(used)}). Target one resource (proposal.resource)"))
    if t.jetstream2_su_cap is not None and jetstream2_sus is not None and jetstream2_sus > t.jetstream2_su_cap:
        out.append(CapFinding(
            "proposal.track", "jetstream2_sus", jetstream2_sus, t.jetstream2_su_cap,
            f"The plan requests {jetstream2_sus:,.0f} Jetstream2 SUs; the {t.name} track is capped near "
            f"{t.jetstream2_su_cap:,.0f} SUs ({t.confidence})"))
    late = calendar_warning(calendar_days, track_name)
    if late:
        out.append(CapFinding("proposal.track", "calendar_days", calendar_days, t.period_days, late))
    return out
