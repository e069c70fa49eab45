"""The charge records: a workload's charge on its resource, the limits a plan exceeds, its ACCESS credits,
and the charges grouped by resource and by system (made by charges.py and the planner; records.py
re-exports them with the plan's other records)."""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog.resources import CreditTier, Resource, WalltimeTier


@dataclass(frozen=True)
class Charge:
    """A job (or a set of identical jobs) converted into a resource's unit."""

    resource_id: str
    """The resource (partition) charged, its catalog id."""
    resource: Resource
    """The catalog's row of the partition charged (name, node size, sources)."""
    system: str
    """The system it belongs to: its partitions share an allocation."""
    rule: str
    """The charging rule in words (catalog/resources.describe_rule)."""
    unit: str
    """The resource's unit: GPU-hours, SUs, node-hours, …"""
    amount: float
    """In `unit`, all jobs together."""
    arithmetic: str
    """The conversion written out for a reviewer."""
    gpu_type: str
    """The GPU type charged, its catalog id."""
    gpus_per_job: int
    """GPUs one job runs on."""
    hours_per_job: float
    """Hours one job holds its GPUs: the run's hours with the buffer added."""
    hours_charged_per_job: float
    """Hours charged per job, after the minimum charge time."""
    nodes_per_job: float
    """Whole nodes, or the node fraction where nodes are shared."""
    jobs: int
    """Identical jobs (the workload's variants)."""
    gpu_hours: float
    """GPUs × hours × jobs, before any rounding or factor."""
    idle_gpus: int = 0
    """GPUs of the whole nodes charged that the job leaves idle, per job."""


@dataclass(frozen=True)
class CapFinding:
    """One limit a plan exceeds: what, the plan's amount and the limit, with the message.

    The plan's warnings print `message`; `check` fails on them (Plan.cap_findings).
    """

    field: str
    """The setting that names the limit: proposal.track or proposal.access_tier."""
    what: str
    """gpu_hours, resources, jetstream2_sus, calendar_days or access_credits."""
    amount: float | None
    """The plan's figure (None: it cannot be computed)."""
    limit: float | None
    """The limit exceeded."""
    message: str
    """The finding in words, as the plan's warnings print it."""


@dataclass(frozen=True)
class AccessCredits:
    """A plan's charges in ACCESS Credits (None when a resource has no rate in the catalog)."""

    credits: float | None
    """The charges in ACCESS Credits (None: some resource has no rate)."""
    arithmetic: str
    """Per resource: amount × rate = credits."""
    missing: tuple[str, ...]
    """Resources charged without a known rate."""
    secondhand: bool
    """Some rate is not from ACCESS or the provider."""
    tier: CreditTier | None
    """The smallest ACCESS project type that covers them."""


@dataclass(frozen=True)
class ChargeGroup:
    """The workloads on one resource (partition) and GPU type, their charges summed (a row of the
    report's units table)."""

    resource_id: str | None
    """The resource (partition); None: the workloads with no target resource, in requested GPU-hours."""
    resource: Resource | None
    """The catalog's row (None: no target resource)."""
    rule: str
    """The charging rule in words ("" without a resource)."""
    system: str
    """The resource's system ("" without one): its partitions share an allocation."""
    gpu_type: str
    """The GPU type, its catalog id."""
    unit: str
    """The unit of `amount`."""
    gpu_hours: float
    """The charges' GPU-hours (no resource: the requested GPU-hours)."""
    amount: float
    """In `unit`, per-job rounding and minimums applied."""
    gpus_per_job: tuple[int, ...]
    """Per workload: GPUs per job."""
    workloads: tuple[str, ...]
    """The workloads' names."""
    walltimes: tuple[tuple[float | None, WalltimeTier | None], ...] = ()
    """Per workload: the walltime limit in hours and the tier that set it."""


@dataclass(frozen=True)
class SystemTotal:
    """The groups of one system in one unit, summed: partitions of a system add up, systems do not."""

    system: str
    """The system ("" for the workloads with no target resource, in GPU-hours)."""
    unit: str
    """The unit of `amount`."""
    gpu_hours: float
    """The groups' GPU-hours."""
    amount: float
    """The groups' amounts, in `unit`."""
    groups: tuple[ChargeGroup, ...]
    """The groups summed."""
