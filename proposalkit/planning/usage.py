"""The plan beside the job accounting: what each workload used, lost and has left, and how fast it goes.

Jobs arrive one at a time (input/accounting.py streams them) and are added to running sums, so the
memory does not grow with the accounting: per workload a few numbers, per day of use one number per
budget, and the first MAX_LISTED unattributed jobs.

- Attribution: a CSV row's `workload` names it; else the first workload, in the plan's order, whose
  `jobs:` glob matches the job name (fnmatch, case-sensitive; no `jobs:`: the name equal to the
  workload's). A job no pattern matches is unattributed: listed, counted in the all-types total, in no GPU type's.
- GPU-hours = GPUs × elapsed hours (a running job: so far). Every state counts: failed, cancelled and
  timed-out jobs are charged.
- Units: each job charged on the workload's resource by its rule (charges.job_amount: per GPU-hour or
  per whole node, the factor, the minimum hours and amount), as the plan charges its runs; a job not
  started is not charged. A workload with no resource is counted in GPU-hours.
- Lost: GPU-hours of jobs that ended failed, timed out, out of memory, preempted, cancelled, on a node
  failure or requeued (input/sacct.py STATES).
- Burn rate: used in the BURN_WINDOW_DAYS days ending with the as-of day (a job's hours spread over
  the days it ran, as its times are written), ÷ 30. The as-of day is --as-of, else the day of the latest
  job end; jobs started after it are left out. Runs out: the as-of day's end + remaining ÷ rate days.
- Per GPU type: each type's workloads together (their jobs' hours, their requested GPU-hours), with its own
  burn rate and run-out day: a type's hours are allocated and burnt apart from another's. The all-types
  figure (Usage.gpu_hours) is only their sum, unattributed jobs included.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date, datetime, timedelta
from fnmatch import translate

from ..catalog.resources import track as track_of
from ..input import sacct
from ..input.jobs import Job
from .charges import job_amount
from .records import Plan, WorkloadPlan
from .usage_records import (BURN_WINDOW_DAYS, Burn, GpuTypeUsage, LostHours, MeasuredRate, UnattributedJob, Usage,
                            WorkloadUsage)

MAX_LISTED = 1000       # unattributed jobs listed one by one; the rest are counted (bounded memory)
GPU_HOURS = "GPU-hours"


class _Sums:
    """A budget's running sums: the total and the amount per day (ordinal → amount)."""

    __slots__ = ("total", "daily")

    def __init__(self) -> None:
        self.total = 0.0
        self.daily: dict[int, float] = {}

    def add(self, amount: float, portions: list[tuple[int, float]]) -> None:
        self.total += amount
        for day, share in portions:
            self.daily[day] = self.daily.get(day, 0.0) + amount * share

    def burn(self, label: str, unit: str, planned: float, as_of: date | None) -> Burn:
        days = sorted(self.daily.items())
        if as_of is None:
            return Burn(label, unit, planned, self.total, 0.0, None, ())
        last = as_of.toordinal()
        window = sum(v for d, v in days if last - BURN_WINDOW_DAYS < d <= last)
        return Burn(label, unit, planned, self.total, window, _runs_out(days, planned, self.total, window, last),
                    tuple((date.fromordinal(d), v) for d, v in days))


def _runs_out(days: list[tuple[int, float]], planned: float, used: float, window: float, last: int) -> date | None:
    if used >= planned:        # already used up: the day the running sum reached the request
        running = 0.0
        for d, v in days:
            running += v
            if running >= planned:
                return date.fromordinal(d)
    if window <= 0:
        return None
    days_left = (planned - used) / (window / BURN_WINDOW_DAYS)
    return (datetime.fromordinal(last + 1) + timedelta(days=days_left)).date()


class _Workload:
    __slots__ = ("plan", "pattern", "gpu", "units", "jobs", "completed", "running", "pending", "unknown", "no_gpus",
                 "lost", "tokens", "token_seconds", "token_gpu_seconds", "token_jobs")

    def __init__(self, plan: WorkloadPlan, pattern: str):
        self.plan, self.pattern = plan, pattern
        self.gpu, self.units = _Sums(), _Sums()
        self.jobs = self.completed = self.running = self.pending = self.unknown = self.no_gpus = 0
        self.lost = dict.fromkeys(sacct.LOST, 0.0)
        self.tokens = self.token_seconds = self.token_gpu_seconds = 0.0
        self.token_jobs = 0


def portions(start: datetime, seconds: float) -> list[tuple[int, float]]:
    """The days a job ran on, each with its share of the job's time (a job of no time: its start day)."""
    day = start.toordinal()
    end = start + timedelta(seconds=seconds)
    if seconds <= 0 or end <= datetime.fromordinal(day + 1):
        return [(day, 1.0)]
    out, t = [], start
    while t < end:
        midnight = datetime.fromordinal(day + 1)
        out.append((day, (min(end, midnight) - t).total_seconds() / seconds))
        t, day = midnight, day + 1
    return out


def job_patterns(files) -> dict[str, str]:
    """Workload name → its `jobs:` glob, from the loaded workload files (input/loading.py LoadedFile): the
    attribution is the accounting's input, not a figure of the plan."""
    return {lw.spec.name: lw.spec.jobs for f in files for lw in f.workloads if lw.spec.jobs is not None}


def usage(plan: Plan, jobs: Iterable[Job], *, patterns: dict[str, str] | None = None, as_of: date | None = None,
          start: date | None = None, reader=None) -> Usage:
    """The plan beside `jobs` (an AccountingReader, or any iterable of Job; `reader` says what was read).
    `patterns`: workload name → its `jobs:` glob (job_patterns); a workload without one takes its name."""
    reader = reader if reader is not None else jobs
    given = as_of is not None
    globs = [(patterns or {}).get(w.name, w.name) for w in plan.workloads]
    sums = [_Workload(w, glob) for w, glob in zip(plan.workloads, globs)]
    by_name = {w.name: i for i, w in enumerate(plan.workloads)}
    patterns = [(i, re.compile(translate(glob))) for i, glob in enumerate(globs)]
    total, systems = _Sums(), {}
    lost = dict.fromkeys(sacct.LOST, 0.0)
    unattributed: list[UnattributedJob] = []
    unlisted_jobs, unlisted_hours, unattributed_hours = 0, 0.0, 0.0
    latest: datetime | None = None
    first: date | None = None
    after = 0
    for job in jobs:
        if as_of is not None and job.start is not None and job.start.date() > as_of:
            after += 1
            continue
        hours = job.seconds / 3600
        gpu_hours = (job.gpus or 0) * hours
        shares = portions(job.start, job.seconds) if job.start is not None else []
        if job.start is not None:
            end = job.end
            latest = end if latest is None or end > latest else latest
            first = job.start.date() if first is None or job.start.date() < first else first
        if job.category in lost:
            lost[job.category] += gpu_hours
        total.add(gpu_hours, shares)
        i, reason = _attribute(job, by_name, patterns)
        if i is None:
            unattributed_hours += gpu_hours
            if len(unattributed) < MAX_LISTED:
                unattributed.append(UnattributedJob(job.job_id, job.name, gpu_hours, job.state, job.where, reason))
            else:
                unlisted_jobs, unlisted_hours = unlisted_jobs + 1, unlisted_hours + gpu_hours
            continue
        w = sums[i]
        _count(w, job, gpu_hours, shares)
        if w.plan.charge is not None and job.gpus and job.start is not None:
            amount = job_amount(w.plan.charge.resource, job.gpus, hours, job.nodes)[0]
            w.units.add(amount, shares)
            key = (w.plan.charge.system, w.plan.charge.unit)
            systems.setdefault(key, _Sums()).add(amount, shares)
    if as_of is None and latest is not None:
        as_of = (latest - timedelta(microseconds=1)).date() if latest.time() == datetime.min.time() else latest.date()
    allocation_start = start or first
    track = track_of(plan.track)
    allocation_end = (None if allocation_start is None else
                      (datetime.combine(allocation_start, datetime.min.time())
                       + timedelta(days=track.period_days)).date())
    planned_units = {(s.system, s.unit): s.amount for s in plan.system_totals() if s.system}
    allocations = tuple(systems.get((system, unit), _Sums()).burn(system, unit, amount, as_of)
                        for (system, unit), amount in planned_units.items())
    by_type = _by_gpu_type(plan, sums, as_of)
    unattributed.sort(key=lambda u: (u.where.rsplit(":", 1)[0], int(u.where.rsplit(":", 1)[1])))
    return Usage(
        workloads=tuple(_workload_usage(w, as_of) for w in sums),
        unattributed=tuple(unattributed), unlisted=(unlisted_jobs, unlisted_hours),
        gpu_hours=total.burn(GPU_HOURS, GPU_HOURS, plan.gpu_hours_requested, as_of),
        allocations=allocations, lost=LostHours(**lost), unattributed_gpu_hours=unattributed_hours,
        as_of=as_of, as_of_source="--as-of" if given else "the latest job end",
        allocation_start=allocation_start, allocation_end=allocation_end, track=plan.track,
        zone=getattr(reader, "zone", None) or "as written, no zone", files=tuple(getattr(reader, "paths", ())),
        jobs=getattr(reader, "jobs", 0), steps_skipped=getattr(reader, "steps", 0),
        duplicates=getattr(reader, "duplicates", 0), jobs_after_as_of=after,
        by_gpu_type=by_type, notes=_notes(reader),
    )


def _by_gpu_type(plan: Plan, sums: list[_Workload], as_of: date | None) -> tuple[GpuTypeUsage, ...]:
    out = []
    for gpu, planned in plan.by_gpu_type().items():
        ws = [w for w in sums if w.plan.gpu.id == gpu]
        hours = _Sums()
        for w in ws:
            hours.total += w.gpu.total
            for day, amount in w.gpu.daily.items():
                hours.daily[day] = hours.daily.get(day, 0.0) + amount
        lost = {k: sum(w.lost[k] for w in ws) for k in sacct.LOST}
        out.append(GpuTypeUsage(gpu, tuple(w.plan.name for w in ws), sum(w.jobs for w in ws),
                                hours.burn(gpu, GPU_HOURS, planned, as_of), LostHours(**lost)))
    return tuple(out)


def _attribute(job: Job, by_name: dict[str, int], patterns) -> tuple[int | None, str]:
    if job.workload is not None:
        i = by_name.get(job.workload)
        return (i, "") if i is not None else (None, f"names workload {job.workload!r}, not in the plan")
    for i, pattern in patterns:
        if pattern.match(job.name):
            return i, ""
    return None, "no jobs: pattern matches its name"


def _count(w: _Workload, job: Job, gpu_hours: float, shares) -> None:
    w.jobs += 1
    w.gpu.add(gpu_hours, shares)
    category = job.category
    if category == sacct.COMPLETED:
        w.completed += 1
    elif category == sacct.RUNNING:
        w.running += 1
    elif category == sacct.PENDING:
        w.pending += 1
    elif category == sacct.UNKNOWN:
        w.unknown += 1
    else:
        w.lost[category] += gpu_hours
    if job.gpus is None and job.seconds > 0:
        w.no_gpus += 1
    if job.tokens is not None and job.seconds > 0 and job.gpus:
        w.tokens += job.tokens
        w.token_seconds += job.seconds
        w.token_gpu_seconds += job.seconds * job.gpus
        w.token_jobs += 1


def _workload_usage(w: _Workload, as_of: date | None) -> WorkloadUsage:
    p = w.plan
    unit = p.charge.unit if p.charge is not None else GPU_HOURS
    planned_units = p.charge.amount if p.charge is not None else p.gpu_hours_requested
    units = w.units if p.charge is not None else w.gpu
    rate = None
    if w.token_jobs:
        planned = p.throughput.tokens_per_second
        rate = MeasuredRate(w.tokens, w.token_seconds, w.token_gpu_seconds, w.token_jobs,
                            planned / p.gpu_count if planned else None)
    return WorkloadUsage(
        name=p.name, pattern=w.pattern, gpu_hours_estimated=p.gpu_hours,
        gpu_hours=w.gpu.burn(p.name, GPU_HOURS, p.gpu_hours_requested, as_of),
        resource_id=p.charge.resource_id if p.charge is not None else None,
        units=units.burn(p.name, unit, planned_units, as_of),
        jobs=w.jobs, jobs_planned=p.settings.variants * p.walltime_segments, jobs_completed=w.completed,
        runs_planned=p.settings.variants, walltime_segments=p.walltime_segments, jobs_running=w.running,
        jobs_pending=w.pending, jobs_unknown_state=w.unknown, jobs_without_gpus=w.no_gpus,
        lost=LostHours(**w.lost), rate=rate)


def _notes(reader) -> tuple[str, ...]:
    notes = getattr(reader, "notes", None)
    if notes is None:
        return ()
    out = []
    for kind, kept in notes.kept.items():
        out += [str(p) for p in kept]
        more = notes.counts[kind] - len(kept)
        if more:
            out.append(f"… and {more:,} more like the above ({kind})")
    return tuple(out)


def as_of_date(text: str) -> date:
    """--as-of and --start: YYYY-MM-DD (ValueError otherwise)."""
    if not re.fullmatch(r"\d{4}-\d\d-\d\d", text):
        raise ValueError(text)
    return date.fromisoformat(text)

