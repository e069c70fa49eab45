"""The records of `proposalkit usage`: the plan beside what the jobs used (planning/usage.py makes them,
render/usage.py and render/progress.py write them; nothing there recomputes a figure).

GPU-hours are GPUs × elapsed hours as the accounting states them; units are the plan's resource's
(planning/charges.job_amount, per job: whole nodes, factors, minimum charges). "Planned" is what the
plan requests (buffer included); "estimated" the plan's GPU-hours before the buffer.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import date, timedelta

BURN_WINDOW_DAYS = 30       # the "burn rate over the last 30 days"


@dataclass(frozen=True)
class LostHours:
    """GPU-hours of jobs that ended without completing, by why (input/sacct.py STATES)."""

    failed: float = 0.0
    """FAILED, LAUNCH_FAILED, RECONFIG_FAIL."""
    timeout: float = 0.0
    """TIMEOUT, DEADLINE: a walltime segment that ended on its limit counts here."""
    out_of_memory: float = 0.0
    """OUT_OF_MEMORY."""
    preempted: float = 0.0
    """PREEMPTED."""
    cancelled: float = 0.0
    """CANCELLED (also `CANCELLED by UID`)."""
    node_fail: float = 0.0
    """NODE_FAIL, BOOT_FAIL."""
    requeued: float = 0.0
    """REQUEUED, REQUEUE_HOLD, REQUEUE_FED, SPECIAL_EXIT."""

    @property
    def total(self) -> float:
        return sum(getattr(self, f.name) for f in fields(self))

    def items(self) -> tuple[tuple[str, float], ...]:
        return tuple((f.name, getattr(self, f.name)) for f in fields(self))


@dataclass(frozen=True)
class MeasuredRate:
    """Tokens per second measured in the jobs that give tokens, beside the plan's."""

    tokens: float
    """Tokens the jobs processed."""
    seconds: float
    """Their elapsed seconds."""
    gpu_seconds: float
    """Their GPUs × elapsed seconds."""
    jobs: int
    """Jobs that gave tokens."""
    planned_per_gpu: float | None
    """The plan's tokens per second ÷ its GPUs per run (None: a service, sized by hours)."""

    @property
    def tokens_per_second(self) -> float:
        """Σ tokens ÷ Σ elapsed seconds: the jobs as they ran, all their GPUs together."""
        return self.tokens / self.seconds

    @property
    def per_gpu(self) -> float:
        """Σ tokens ÷ Σ (GPUs × elapsed seconds)."""
        return self.tokens / self.gpu_seconds

    @property
    def ratio(self) -> float | None:
        """Measured ÷ planned, per GPU (above 1: faster than planned)."""
        return None if not self.planned_per_gpu else self.per_gpu / self.planned_per_gpu


@dataclass(frozen=True)
class Burn:
    """One budget over time: what was planned, what was used, the rate of the last 30 days."""

    label: str
    """What is counted: "GPU-hours", a workload's name, or a resource's system ("Delta")."""
    unit: str
    """GPU-hours, SUs, node-hours, …"""
    planned: float
    """The plan's request, in `unit`."""
    used: float
    """Used up to the as-of date (running jobs: so far)."""
    last_30_days: float
    """Used in the BURN_WINDOW_DAYS days that end with the as-of date."""
    runs_out_on: date | None
    """At the rate of the last 30 days, the day the request is used up (already used up: the day it was);
    None when nothing was used in those days."""
    daily: tuple[tuple[date, float], ...] = ()
    """Used per day (days with use only), as the accounting's times place it."""

    @property
    def remaining(self) -> float:
        return self.planned - self.used

    @property
    def rate_per_day(self) -> float:
        return self.last_30_days / BURN_WINDOW_DAYS

    @property
    def used_share(self) -> float | None:
        return self.used / self.planned if self.planned else None


@dataclass(frozen=True)
class WorkloadUsage:
    """One workload of the plan beside the jobs attributed to it."""

    name: str
    """The workload's `name`."""
    pattern: str
    """The glob its jobs' names matched (`jobs:`, else the workload's name)."""
    gpu_hours_estimated: float
    """The plan's GPU-hours before the buffer."""
    gpu_hours: Burn
    """GPU-hours: planned (requested), used, rate and run-out."""
    resource_id: str | None
    """The resource (partition) the plan charges it on (None: none targeted; units are GPU-hours)."""
    units: Burn
    """In the resource's unit, each job charged by its rule."""
    jobs: int
    """Job allocations attributed to it (every state)."""
    jobs_planned: int
    """variants × walltime segments: the jobs the plan's runs take."""
    jobs_completed: int
    """Jobs that ended COMPLETED."""
    runs_planned: int
    """The plan's variants."""
    walltime_segments: int
    """Jobs one run takes under the resource's walltime limit."""
    jobs_running: int = 0
    """Jobs still holding their allocation (running, suspended, completing, …): their time so far counts."""
    jobs_pending: int = 0
    """Never started (pending, held, revoked)."""
    jobs_unknown_state: int = 0
    """Jobs whose state sacct does not document: counted as used, neither completed nor lost (a note says so)."""
    jobs_without_gpus: int = 0
    """Jobs with elapsed time whose accounting names no GPU: their hours are not GPU-hours (a note says so)."""
    lost: LostHours = LostHours()
    """Its jobs' GPU-hours lost, by why they ended."""
    rate: MeasuredRate | None = None
    """Tokens per second measured in its jobs that give tokens (None: none gave any)."""

    @property
    def runs_completed(self) -> int:
        """⌊completed jobs ÷ walltime segments⌋: a run is done when its segments are."""
        return self.jobs_completed // self.walltime_segments

    @property
    def lost_share(self) -> float | None:
        return self.lost.total / self.gpu_hours.used if self.gpu_hours.used else None


@dataclass(frozen=True)
class GpuTypeUsage:
    """One GPU type's workloads together: each type burns its own allocation, so its totals are never added to
    another type's (issue 23: never a sum across GPU types presented as one request)."""

    gpu_type: str
    """The plan's GPU type id (`h200`)."""
    workloads: tuple[str, ...]
    """Its workloads' names, in the plan's order: its figures are the sums of theirs."""
    jobs: int
    """Jobs attributed to those workloads."""
    gpu_hours: Burn
    """Their GPU-hours: planned (requested), used, the rate of the last 30 days and the run-out day."""
    lost: LostHours
    """Their lost GPU-hours, by why."""

    @property
    def lost_share(self) -> float | None:
        return self.lost.total / self.gpu_hours.used if self.gpu_hours.used else None


@dataclass(frozen=True)
class UnattributedJob:
    """A job no workload's pattern matched: listed, never dropped."""

    job: str
    """The job id as written."""
    name: str
    """The job name the `jobs:` globs were matched against."""
    gpu_hours: float
    """GPUs × elapsed hours."""
    state: str
    """The state's long name as sacct writes it."""
    where: str
    """FILE:LINE of its accounting line."""
    reason: str
    """Why it is not attributed, in words."""


@dataclass(frozen=True)
class Usage:
    """What `proposalkit usage` reports: per workload, per resource, in total."""

    workloads: tuple[WorkloadUsage, ...]
    """One per workload of the plan, in the plan's order (those without jobs too)."""
    unattributed: tuple[UnattributedJob, ...]
    """Jobs attributed to no workload, up to MAX_LISTED; the rest are counted in `unlisted`."""
    unlisted: tuple[int, float]
    """(jobs, GPU-hours) of unattributed jobs past the listed ones."""
    gpu_hours: Burn
    """Every job's GPU-hours (unattributed ones too: the allocation is charged for them) against the plan's
    requested GPU-hours, all GPU types added: only a sum, not one request (by_gpu_type has each type's)."""
    allocations: tuple[Burn, ...]
    """Per system and unit (partitions of a system share an allocation): the attributed jobs' units
    against the plan's charges."""
    lost: LostHours
    """Every job's lost GPU-hours, by why."""
    unattributed_gpu_hours: float
    """GPU-hours of the jobs attributed to no workload (listed or not): in `gpu_hours`, in no workload's."""
    as_of: date | None
    """Usage and the burn window end with this day (None: no job started and none given)."""
    as_of_source: str
    """"--as-of", or "the latest job end"."""
    allocation_start: date | None
    """The allocation's first day: --start, else the first day a job ran."""
    allocation_end: date | None
    """allocation_start + the track's period (the planned line of the burn-down reaches 0 there)."""
    track: str
    """The NAIRR Pilot track whose period the allocation runs for (the plan's)."""
    zone: str
    """The accounting's time zone as written (input/accounting.py ZONE_NONE: none written)."""
    files: tuple[str, ...]
    """The accounting files read, as named."""
    jobs: int
    """Job allocations read (each once)."""
    steps_skipped: int
    """Job-step lines (`123.batch`, `123.0`) skipped: the allocation's line holds the GPUs and the time."""
    duplicates: int
    """Jobs found in more than one file, counted once."""
    jobs_after_as_of: int
    """Jobs that started after the as-of day, not counted."""
    by_gpu_type: tuple[GpuTypeUsage, ...] = ()
    """Per GPU type of the plan (the plan's order): its workloads' GPU-hours against its requested GPU-hours,
    burn rate and run-out day. Unattributed jobs are in no type's."""
    notes: tuple[str, ...] = ()
    """What reading and attributing found to report: unknown states, jobs without GPUs, FILE:LINE each."""

    @property
    def window_start(self) -> date | None:
        return None if self.as_of is None else self.as_of - timedelta(days=BURN_WINDOW_DAYS - 1)

    @property
    def lost_share(self) -> float | None:
        return self.lost.total / self.gpu_hours.used if self.gpu_hours.used else None

    @property
    def jobs_counted(self) -> int:
        """The jobs read, less those that started after the as-of day."""
        return self.jobs - self.jobs_after_as_of
