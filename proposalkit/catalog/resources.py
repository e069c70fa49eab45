"""The resource catalog: allocatable resources, their charging rules, tracks and credit tiers.

Pure: the catalog (``catalog/resources.yaml``) is read lazily by the cached
``resources()``, ``systems()``, ``tracks()`` and ``credit_tiers()``; nothing
happens at import. Every row carries its source and a confidence level.
``charges.py`` turns jobs into these resources' units and holds a plan
against its track's caps and ACCESS credit limits.

Cloud partners (AWS, Azure, Google via CloudBank) are rows too: an instance type is a "node" of its GPUs,
charged per whole instance-hour in US dollars at its on-demand price (``Price``: per hour, region, the date
it was read); ``Resource.priced`` puts a workload's or proposal's ``price_per_hour`` in its place.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass, fields
from importlib import resources as _package_files

from .sources import cite
from ..errors import ProposalkitError
from .prices import PRICED_BASES, Price, dollars, parse_price, usd  # noqa: F401  (dollars, usd: named here too)

CONFIDENCE_LEVELS = ("verified", "secondhand", "inferred")
CHARGE_BASES = ("gpu-hour", "node-hour", "instance-hour")

DAYS_PER_MONTH = 365.25 / 12   # a Julian year over 12 months: 30.4375 days


class ResourceError(ProposalkitError):
    """A resource id, GPU type, track or job shape the catalog cannot serve (a caller's mistake)."""


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class ChargeRule:
    """How a resource turns a job into its allocation unit (catalog ``charge:``)."""

    per: str                    # "gpu-hour", "node-hour" or "instance-hour" (a cloud instance: a node)
    factor: float               # units per GPU-hour or per node-hour; dollars per instance-hour (Price.per_hour)
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
    max_nodes_per_job: int | None = None   # the most nodes one job may take (None: the partition's size)
    nodes: tuple[tuple[str, int], ...] = ()  # (GPU id, nodes of gpus_per_node GPUs) for each GPU type
    size_source: str = ""
    size_confidence: str = ""
    access_credits: CreditRate | None = None
    price: Price | None = None             # cloud instance types (charge per instance-hour); None elsewhere
    notes: str = ""

    @property
    def is_cloud(self) -> bool:
        """A cloud partner's instance type, charged in dollars at a price per instance-hour."""
        return self.charge.per in PRICED_BASES

    @property
    def rule_confidence(self) -> str:
        """How far what a job is charged can be trusted (CONFIDENCE_LEVELS): a cloud instance type's price
        ("" where the researcher gave it, price_per_hour), else the charging rule's."""
        if self.is_cloud:
            return "" if self.price.set_by else self.price.confidence
        return self.confidence

    @property
    def node_word(self) -> str:
        """What one of its nodes is called: 'instance' for a cloud instance type, else 'node'."""
        return "instance" if self.is_cloud else "node"

    def priced(self, per_hour: float, set_by: str) -> Resource:
        """The row at another price per instance-hour (a workload's or proposal's price_per_hour): the one
        charging rule (charges.job_amount) then bills whole instances at that price."""
        if not self.is_cloud:
            raise ResourceError(f"{self.id} is charged in {self.unit}, not at a price per instance-hour")
        return dataclasses.replace(self, charge=dataclasses.replace(self.charge, factor=float(per_hour)),
                                   price=dataclasses.replace(self.price, per_hour=float(per_hour), set_by=set_by))

    def nodes_for(self, gpus_per_job: int) -> int:
        """Whole nodes a job of this many GPUs occupies: ⌈GPUs ÷ GPUs per node⌉."""
        return math.ceil(gpus_per_job / self.gpus_per_node)

    def node_count(self, gpu: str | None = None) -> int:
        """Nodes of the partition (with `gpu`, those of that GPU type; a job runs on one type)."""
        return sum(n for g, n in self.nodes if gpu is None or g == gpu)

    def gpu_count(self, gpu: str | None = None) -> int:
        """GPUs of the partition: nodes × GPUs per node (of one type with `gpu`)."""
        return self.node_count(gpu) * self.gpus_per_node

    def largest_job_nodes(self, gpu: str | None = None) -> int:
        """The most nodes one job may take: the per-job limit, at most the nodes there are (of `gpu`)."""
        there = self.node_count(gpu) if gpu is not None else max(n for _, n in self.nodes)
        return there if self.max_nodes_per_job is None else min(self.max_nodes_per_job, there)

    def largest_job_gpus(self, gpu: str | None = None) -> int:
        """The most GPUs one job may take: largest_job_nodes × GPUs per node."""
        return self.largest_job_nodes(gpu) * self.gpus_per_node

    def size_short(self, gpu: str | None = None) -> str:
        """'100 nodes (400 GPUs)'; '8 nodes (64 GPUs), 1 node per job' where a job may take fewer than all."""
        nodes, word = self.node_count(gpu), self.node_word
        if self.is_cloud:     # no partition: the planner's bound on one job (catalog size_source)
            return f"up to {nodes:,} {word}s ({gpus_text(nodes * self.gpus_per_node)}) per job"
        text = f"{nodes:,} {word}{'s' if nodes != 1 else ''} ({gpus_text(nodes * self.gpus_per_node)})"
        limit = self.max_nodes_per_job
        if limit is not None and limit < nodes:
            text += f", {limit:,} {word}{'s' if limit != 1 else ''} per job"
        return text

    def size_text(self, gpu: str | None = None) -> str:
        """'100 nodes × 4 = 400 GPUs, no per-job node limit'; '8 nodes × 8 = 64 GPUs, 1 node per job'."""
        nodes = self.node_count(gpu)
        text = f"{nodes:,} node{'s' if nodes != 1 else ''} × {self.gpus_per_node} = {gpus_text(nodes * self.gpus_per_node)}"
        if self.max_nodes_per_job is None:
            return text + ", no per-job node limit"
        limit = self.max_nodes_per_job
        return text + f", {limit:,} node{'s' if limit != 1 else ''} per job"

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
    price = parse_price(row.pop("price", None), rule, row, bad, CONFIDENCE_LEVELS)
    rule = ChargeRule(
        per=rule["per"],
        # A cloud row's factor is its price (one home: price.per_hour); an unpriced one charges nothing
        # until price_per_hour is given (charges.charge refuses it: Resource.price.per_hour is None).
        factor=(price.per_hour or 0.0) if price is not None else float(rule["factor"]),
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
    for key in ("source", "size_source", "walltime_source"):
        if row.get(key):
            row[key] = cite(row[key], f"resources.yaml: {rid}: {key}")
    credits = row.pop("access_credits", None)
    if credits is not None:
        if set(credits) != {"per_unit", "source", "confidence"} or credits["confidence"] not in CONFIDENCE_LEVELS \
                or not float(credits["per_unit"]) > 0:
            raise bad(f"access_credits: expected per_unit > 0, source and confidence, got {credits!r}")
        row["access_credits"] = CreditRate(float(credits["per_unit"]),
                                           cite(credits["source"], f"resources.yaml: {rid}: access_credits.source"),
                                           credits["confidence"])
    nodes = row.get("nodes")
    if isinstance(nodes, int) and not isinstance(nodes, bool):
        nodes = {g: nodes for g in row["gpus"]} if len(row["gpus"]) == 1 else None
    if not isinstance(nodes, dict) or set(nodes) != set(row["gpus"]) or \
            not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in nodes.values()):
        raise bad(f"nodes: expected a positive integer (or GPU id -> nodes for each of its GPUs), got {row.get('nodes')!r}")
    row["nodes"] = tuple(nodes.items())
    limit = row.get("max_nodes_per_job")
    if limit is not None and not (isinstance(limit, int) and not isinstance(limit, bool) and limit >= 1):
        raise bad(f"max_nodes_per_job: expected a positive integer or null, got {limit!r}")
    if not row.get("size_source") or row.get("size_confidence") not in CONFIDENCE_LEVELS:
        raise bad("size_source and size_confidence: every row says where its size was read")
    walltime = row.get("max_walltime_hours")
    row["max_walltime_hours"] = float(walltime) if walltime is not None else None
    row["gpus"] = tuple(row["gpus"])
    row["notes"] = " ".join(str(row.get("notes", "")).split())
    return Resource(charge=rule, walltime_by_nodes=tuple(tiers), price=price, **row)


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


def plain(x: float) -> str:
    """Factors and counts in charging text: 1, 0.5, 1.5, 128 (no forced decimal)."""
    return f"{x:,.4f}".rstrip("0").rstrip(".")


def gpus_text(n: int) -> str:
    """'1 GPU', '4 GPUs'."""
    return f"{n:,} GPU" + ("" if n == 1 else "s")


# ------------------------------------------------------------------------ rules


def as_resource(res: Resource | str) -> Resource:
    """A Resource, or the single row behind a resource id."""
    return res if isinstance(res, Resource) else resource(res)


def describe_rule(res: Resource | str) -> str:
    """A resource's charging rule in words, for the report's units table.

    Examples: NCSA Delta H200 '3 SUs per GPU-hour, 1 SU minimum'; ALCF
    Polaris 'node-hours, whole nodes of 4 GPUs'; TACC Vista '1 SU per
    node-hour, whole nodes of 1 GPU, 15-min minimum'; AWS p5.48xlarge '$55.04
    per instance-hour (on-demand, Linux, us-east-1, read 2026-11-09), whole
    instances of 8 GPUs'. Minimums and whole-node rounding apply to each job
    (``charge``).
    """
    res = as_resource(res)
    rule = res.charge
    one = res.unit.removesuffix("s")                 # "SUs" → "SU", "node-hours" → "node-hour"
    unit = one if rule.factor <= 1 else res.unit     # 0.5 SU, 1 SU, 3 SUs
    if res.is_cloud:
        return f"{res.price.text}, whole instances of {gpus_text(res.gpus_per_node)}"
    if rule.per == "gpu-hour":
        text = ("GPU-hours as used" if res.unit == "GPU-hours" and rule.factor == 1
                else f"{plain(rule.factor)} {unit} per GPU-hour")
    else:
        text = ("node-hours" if res.unit == "node-hours" and rule.factor == 1
                else f"{plain(rule.factor)} {unit} per node-hour")
        text += (f", whole nodes of {gpus_text(res.gpus_per_node)}" if rule.whole_nodes
                 else f", GPUs ÷ {res.gpus_per_node} per node")
    if rule.minimum_hours:
        text += f", {plain(rule.minimum_hours * 60)}-min minimum"
    if rule.minimum_amount:
        amount = one if rule.minimum_amount <= 1 else res.unit
        text += f", {plain(rule.minimum_amount)} {amount} minimum"
    return text


def fits(res: Resource | str, gpus_per_job: int, gpu: str | None = None) -> bool:
    """Whether one job of this many GPUs (of type `gpu`) is allowed on the resource: within its per-job node
    limit and within the nodes it has (Resource.largest_job_nodes)."""
    res = as_resource(res)
    return res.nodes_for(gpus_per_job) <= res.largest_job_nodes(gpu)


# ----------------------------------------------------------------- tracks, tiers


@functools.lru_cache(maxsize=None)
def tracks() -> dict[str, AllocationTrack]:
    """Track id (startup, standard) → AllocationTrack."""
    out = {}
    for row in _catalog()["allocation_tracks"]:
        out[row["id"]] = AllocationTrack(
            id=row["id"], name=row["name"], period_months=float(row["period_months"]),
            source=cite(row["source"], f"resources.yaml: {row['id']}: source"), confidence=row["confidence"],
            gpu_hours_cap=row.get("gpu_hours_cap"), jetstream2_su_cap=row.get("jetstream2_su_cap"),
            max_resources=row.get("max_resources"),
        )
    return out


@functools.lru_cache(maxsize=None)
def credit_tiers() -> tuple[CreditTier, ...]:
    """ACCESS project types by credit limit, smallest first."""
    cat = _catalog()
    source = cite(cat["access_credit_tiers_source"], "resources.yaml: access_credit_tiers_source")
    tiers = (CreditTier(t["id"], t["name"], float(t["credits"]), source, cat["access_credit_tiers_confidence"])
             for t in cat["access_credit_tiers"])
    return tuple(sorted(tiers, key=lambda t: t.credits))


def credit_tier(tier_id: str) -> CreditTier:
    """The ACCESS project type of this id (proposal.access_tier, which the schema checks)."""
    return next(t for t in credit_tiers() if t.id == tier_id)


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
