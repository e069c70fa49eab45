"""Charges: a job in a resource's own unit, job limits, and a plan against its track and credits.

Every conversion is returned with its arithmetic written out, so the report
can show a reviewer how GPU-hours became SUs or node-hours. The rates and
limits come from the resource catalog (``catalog/resources.py``), each row with its
source; the records made here (Charge, AccessCredits, CapFinding) are in charge_records.py.

Charging rules (one per catalog row):

* ``per: gpu-hour`` — amount = GPUs × max(hours, minimum_hours) × factor
  (NCSA Delta, Purdue Anvil, PSC Bridges-2, SDSC Expanse, Jetstream2).
* ``per: node-hour`` — amount = nodes × max(hours, minimum_hours) × factor, with
  nodes = ⌈GPUs ÷ GPUs per node⌉ when whole nodes are charged (TACC, ALCF, OLCF,
  NERSC). Rounding up to whole nodes applies per job.
* ``per: instance-hour`` — a cloud instance type (AWS, Azure, Google via CloudBank):
  the node-hour rule with whole instances and the price per instance-hour as the
  factor, in US dollars (a 3-GPU job on an 8-GPU instance pays the instance).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

from .charge_records import AccessCredits, CapFinding, Charge
from ..catalog.resources import (
    Resource, ResourceError, access_tier, as_resource, credit_tier, describe_rule, dollars, fits, gpus_text, plain,
    resolve, resource, suggest, system_of, track, usd,
)
from ..units import days_shown, hours_per_run, pct_text, product, requested_per_run, shown



CALENDAR_ASSUMPTION = (
    "Calendar time = ⌈variants ÷ concurrency⌉ waves × wall-clock hours per run; "
    "queue wait, failed runs, restarts between walltime segments and maintenance "
    "downtime are not included."
)


# ------------------------------------------------------------------ number format


def fmt_amount(x: float) -> str:
    """Hours and amounts: thousands separators and two decimals, as every document shows them
    (render/format.py HOURS_DECIMALS)."""
    return f"{x:,.2f}"


def in_unit(amount: float, unit: str) -> str:
    """An amount with its unit: '1,234.5 SUs'; dollars to the cent, '$6,880.00'."""
    return usd(amount) if unit == "USD" else f"{fmt_amount(amount)} {unit}"


def _nodes(n: float, word: str = "node") -> str:
    return f"{plain(n)} {word}" + ("" if n == 1 else "s")


# ------------------------------------------------------------------------ charging


def rate_text(res: Resource) -> str:
    """The charge factor with its units, as a reviewer reads it: '3 SUs per GPU-hour', '1 node-hour per
    node-hour', '$55.04 per instance-hour'."""
    rule = res.charge
    if res.is_cloud:
        return f"{dollars(rule.factor)} per instance-hour"
    unit = res.unit.removesuffix("s") if rule.factor <= 1 else res.unit
    per = "GPU-hour" if rule.per == "gpu-hour" else f"{res.node_word}-hour"
    return f"{plain(rule.factor)} {unit} per {per}"


def charge(res: Resource | str, gpu_type: str, gpus_per_job: int, hours_per_job: float,
           jobs: int = 1, buffer: float | None = None) -> Charge:
    """Convert ``jobs`` identical jobs into the resource's unit, with the arithmetic.

    ``hours_per_job`` is the wall-clock time one job is expected to hold its GPUs
    (the planner passes the requested hours, buffer included). Whole-node
    rounding and the minimum charge apply to each job, then the total is
    multiplied by ``jobs``. Example (ALCF Polaris, 4 GPUs per node, node-hours):
    ``⌈6 GPUs ÷ 4 per node⌉ = 2 nodes × 10.0 h × 1 = 20.0 node-hours``.

    With ``buffer``, ``hours_per_job`` is a run's hours before it: the job holds its GPUs for the printed
    hours × (1 + buffer) (units.requested_per_run), and the arithmetic says so, ``1 GPU × 9.23 h × (1 + 30%
    buffer) per run × 3 SUs per GPU-hour``, so each factor is one a reader finds on the runtime line.
    """
    res = as_resource(res)
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
    if res.is_cloud and res.price.per_hour is None:
        raise ResourceError(f"{res.id} has no price per instance-hour in the catalog: {res.price.source}")

    rule = res.charge
    if buffer is None:
        run_text = f"{fmt_amount(hours_per_job)} h"
    else:
        run_text = f"{fmt_amount(hours_per_run(hours_per_job))} h × (1 + {pct_text(buffer)} buffer)"
        hours_per_job = requested_per_run(hours_per_job, buffer)
    per_job, billed, hours_charged, raised = job_amount(res, gpus_per_job, hours_per_job)
    if hours_charged > hours_per_job:
        hours_text = (f"{fmt_amount(hours_charged)} h (the {plain(rule.minimum_hours * 60)}-minute minimum; "
                      f"the job runs {fmt_amount(hours_per_job)} h)")
    else:
        hours_text = run_text

    idle = 0      # GPUs of charged whole nodes the job leaves unused
    word = res.node_word
    if rule.per == "gpu-hour":
        nodes = gpus_per_job / res.gpus_per_node
        head = gpus_text(gpus_per_job)
    elif rule.whole_nodes:
        nodes = billed
        idle = nodes * res.gpus_per_node - gpus_per_job
        head = f"⌈{gpus_text(gpus_per_job)} ÷ {res.gpus_per_node} per {word}⌉ = {_nodes(nodes, word)}"
    else:
        nodes = billed
        head = f"{gpus_text(gpus_per_job)} ÷ {res.gpus_per_node} per node = {_nodes(nodes)}"

    rate = rate_text(res)
    # A factor of 1 in the unit charged (node-hours per node-hour) says nothing: the product is in the unit.
    same = rule.factor == 1 and rate == f"1 {res.unit.removesuffix('s')} per {res.unit.removesuffix('s')}"
    runs = f" × {jobs:,} runs" if jobs > 1 else ""
    gpu_hours = shown(product(gpus_per_job, hours_per_job, jobs))
    if raised:
        text = f"{head} × {hours_text} per run" + ("" if same else f" × {rate}")
        text += (f" = {fmt_amount(billed * hours_charged * rule.factor)}, raised to the per-job minimum of "
                 f"{plain(rule.minimum_amount)} {res.unit}") + (f";{runs}" if runs else "")
        amount = per_job * jobs
    elif rule.per == "gpu-hour":
        # The GPU-hours first, the figure section B's table gives, then the rate: each product printed is the
        # one a reader gets from the figures before it (units.shown of the exact product).
        billed_hours = shown(product(billed, hours_charged, jobs))
        text = f"{head} × {hours_text} per run{runs} = {fmt_amount(billed_hours)} GPU-hours"
        if same:
            text, amount = text.removesuffix(" GPU-hours"), billed_hours
        else:
            amount = shown(product(billed_hours, rule.factor))
            text += f" × {rate}"
    else:
        text = f"{head} × {hours_text} per run" + ("" if same else f" × {rate}") + runs
        amount = shown(product(billed, hours_charged, rule.factor, jobs))
    text += f" = {in_unit(amount, res.unit)}"
    return Charge(
        resource_id=res.id, resource=res, system=system_of(res.id), rule=describe_rule(res), unit=res.unit, amount=amount, arithmetic=text, gpu_type=gpu_type,
        gpus_per_job=gpus_per_job, hours_per_job=float(hours_per_job),
        hours_charged_per_job=hours_charged, nodes_per_job=nodes, jobs=jobs,
        gpu_hours=gpu_hours,
        idle_gpus=idle,
    )


def charge_groups(res: Resource | str, gpu_type: str, tensor_parallel: int, replicas: int, hours_per_job: float,
                  jobs: int = 1, buffer: float | None = None) -> Charge:
    """A service whose replicas one job cannot hold: each job holds as many whole replicas as the partition's
    largest job takes, k = ⌊largest job's GPUs ÷ tensor_parallel⌋, so ⌊replicas ÷ k⌋ full jobs and one job of
    the rest, each charged by ``charge`` (its own whole nodes and minimums), `jobs` times over (variants)."""
    res = as_resource(res)
    per_job = res.largest_job_gpus(gpu_type) // tensor_parallel
    full, rest = divmod(replicas, per_job)
    parts = [charge(res, gpu_type, per_job * tensor_parallel, hours_per_job, full * jobs, buffer)] if full else []
    if rest:
        parts.append(charge(res, gpu_type, rest * tensor_parallel, hours_per_job, jobs, buffer))
    if len(parts) == 1:
        return parts[0]
    first, last = parts
    amount = first.amount + last.amount
    text = (f"{replicas:,} replicas of {gpus_text(tensor_parallel)}, {per_job:,} per job (the largest job "
            f"{res.id} takes): {first.arithmetic}; and the rest, {last.arithmetic}; together {fmt_amount(amount)} "
            f"{res.unit}")
    return dataclasses.replace(first, amount=amount, arithmetic=text, jobs=first.jobs + last.jobs,
                               gpu_hours=first.gpu_hours + last.gpu_hours)


def job_amount(res: Resource, gpus: int, hours: float, nodes: int | None = None) -> tuple[float, float, float, bool]:
    """One job in the resource's unit, by its charging rule: (amount, units billed, hours charged, raised
    to the per-job minimum). `charge` writes the same arithmetic out; the job accounting (planning/usage.py)
    charges each job it reads with this, without the words.

    Billed units: the GPUs (per gpu-hour), or the nodes: ⌈GPUs ÷ GPUs per node⌉ where whole nodes are
    charged (at least `nodes`, the nodes the accounting says the job held), else the node fraction.
    amount = billed × max(hours, minimum_hours) × factor, raised to minimum_amount.
    """
    rule = res.charge
    hours_charged = max(hours, rule.minimum_hours)
    if rule.per == "gpu-hour":
        billed = gpus
    elif rule.whole_nodes:
        billed = max(res.nodes_for(gpus), nodes or 0)
    else:
        billed = gpus / res.gpus_per_node
    amount = billed * hours_charged * rule.factor
    raised = amount < rule.minimum_amount
    return (rule.minimum_amount if raised else amount), billed, hours_charged, raised


def convert_gpu_hours(res: Resource | str, gpu_hours: float, gpus_per_job: int,
                      gpu_type: str | None = None) -> Charge:
    """Convert a plan's GPU-hours, run as jobs of ``gpus_per_job`` GPUs, into the unit.

    The simpler form of ``charge``: the GPU-hours are treated as one job of
    ``gpus_per_job`` GPUs lasting ``gpu_hours ÷ gpus_per_job`` hours. Whole-node
    rounding is exact (it scales with hours); a per-job minimum is applied once,
    so use ``charge`` with the real job count where minimums matter.
    ``gpu_type`` defaults to the resource's first GPU.
    """
    res = as_resource(res)
    if not (gpu_hours >= 0 and math.isfinite(gpu_hours)):
        raise ResourceError(f"gpu_hours: expected a non-negative number, got {gpu_hours!r}")
    if not isinstance(gpus_per_job, int) or isinstance(gpus_per_job, bool) or gpus_per_job < 1:
        raise ResourceError(f"gpus_per_job: expected a positive integer, got {gpus_per_job!r}")
    return charge(res, gpu_type or res.gpus[0], gpus_per_job, gpu_hours / gpus_per_job)


def choose_partition(name: str, gpu_type: str, gpus_per_job: int, hours_per_job: float,
                     partitions: tuple[Resource, ...] | None = None) -> Resource:
    """The cheapest partition of a system (or the named row) that has the GPU and takes the job.

    Cheapest means the smallest ``charge`` amount for one such job; partitions
    of one system share a unit, so the amounts compare. Ties keep catalog order.
    `partitions`: the rows behind `name` as the caller holds them (a cloud row at a
    given price_per_hour); default the catalog's.
    """
    every = resolve(name) if partitions is None else partitions
    rows = [r for r in every if gpu_type in r.gpus]
    if not rows:
        offered = sorted({g for r in every for g in r.gpus})
        raise ResourceError(f"{name} has no '{gpu_type}' GPUs (it has {', '.join(offered)})")
    allowed = [r for r in rows if fits(r, gpus_per_job, gpu_type)]
    if not allowed:
        limits = ", ".join(f"{r.id}: {r.largest_job_nodes(gpu_type)} node(s) of {r.gpus_per_node} GPUs" for r in rows)
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


def job_limit_warnings(res: Resource | str, gpus_per_job: int, hours_per_run: float,
                       kind: str = "finetune") -> list[str]:
    """Warnings for a run that breaks a per-job limit: node count, walltime (restart segments: a training
    run resumes from a checkpoint; an inference run has none to write, it is restarted)."""
    res = as_resource(res)
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
            f"a run of {fmt_amount(hours_per_run)} h exceeds {res.id}'s {plain(limit)} h job limit{where}: "
            f"⌈{fmt_amount(hours_per_run)} ÷ {plain(limit)}⌉ = {segments} "
            + ("consecutive jobs, the engine restarted at each" if kind == "inference"
               else "jobs, each resuming from the last checkpoint")
        )
    tier = res.walltime_tier(gpus_per_job)
    if tier is not None and "preempt" in tier.queue:
        out.append(f"{res.id}: {nodes:,}-node jobs run in {tier.queue}; checkpoint often")
    return out


def calendar_waves(variants: int, concurrency: int = 1) -> int:
    """Waves of runs one after another: ⌈variants ÷ concurrency⌉."""
    return math.ceil(variants / concurrency)


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
    # Worked in decimal from the printed hours and rounded half up to the tenth of a day printed
    # (units.days_shown), so ⌈10 ÷ 1⌉ = 10 × 18.36 h ÷ 24 reads 7.7 days, as a reader works it, not the
    # binary 7.6499…; the plan's total adds these figures.
    return days_shown(product(calendar_waves(variants, concurrency), runtime_hours_per_run))


def calendar_warning(days: float, track_name: str = "standard") -> str | None:
    """A warning when the campaign does not fit the track's allocation period."""
    t = track(track_name)
    if days <= t.period_days:
        return None
    return (
        f"the campaign needs {days:,.1f} calendar days at the stated concurrency, more than "
        f"the {plain(t.period_months)}-month {t.name} period ({t.period_days:,.1f} days; queue wait not included)"
    )


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
        parts.append(f"{rid}: {fmt_amount(amount)} {res.unit} × {plain(rate.per_unit)} = {credits:,.0f} credits")
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
    tier = credit_tier(tier_name)

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
                 calendar_days: float, *, jetstream2_sus: float | None = None, gpu_types: int = 1) -> list[CapFinding]:
    """Each cap or period of the track that the plan exceeds.

    * Start-Up: about 2,000 GPU-hours on one resource over 3 months (second-hand:
      NAIRR.md [S]); 128,000 SUs on Jetstream2.
    * Every track: the campaign's calendar days must fit the period (12 months
      standard, 3 Start-Up).
    ACCESS project types are checked apart (access_findings).

    ``resources_used`` are resource or system ids; partitions of one system
    (Delta's A100 and A40 nodes) count as one resource. ``gpu_types``: how many
    GPU types the GPU-hours are of (the cap counts them together; the message
    says so where there are several, never as one request of one kind).
    """
    t = track(track_name)
    out = []
    if t.gpu_hours_cap is not None and total_gpu_hours_requested > t.gpu_hours_cap:
        out.append(CapFinding(
            "proposal.track", "gpu_hours", total_gpu_hours_requested, t.gpu_hours_cap,
            f"The plan requests {total_gpu_hours_requested:,.0f} GPU-hours"
            f"{' of all GPU types together' if gpu_types > 1 else ''}; the {t.name} track is capped "
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
