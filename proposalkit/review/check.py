"""`proposalkit check`: validate and plan for CI; every reason to fail, one per line.

Fails (exit 1) when a workload cannot be planned (a pinned GPU type or count
cannot hold it), when the total requested GPU-hours exceed `--max-gpu-hours`,
or when the plan breaks its proposal track's caps (Start-Up: about 2,000
GPU-hours on one resource; the planner's Plan.cap_findings, at the line of the
setting: lint.cap_findings); with `--review`, also on a reviewer's finding that
is an error (lint.py). Invalid input raises InputError (exit 2) before any of
that. Every number comes from the planner.
"""

from __future__ import annotations

import math

from ..errors import InfeasibleError, InputError, Problem
from ..render.format import fmt_hours, fmt_in_unit, fmt_limit


def _plan_each(files):
    """Plan every workload on its own, so one infeasible workload does not hide
    the others or the caps: → (the feasible workloads' plans, infeasible messages)."""
    from ..input.loading import LoadedFile
    from ..planning.planner import plan_files

    plans, messages = [], []
    for f in files:
        for lw in f.workloads:
            try:
                plans += plan_files([LoadedFile(f.path, f.proposal, (lw,))]).workloads
            except InfeasibleError as error:
                messages += error.messages
    return tuple(plans), messages


def _hours(x: float) -> str:
    return fmt_hours(x)     # hours read the same in check as in every document


def _largest(plans, n: int = 3) -> str:
    top = sorted(plans, key=lambda w: (-w.gpu_hours_requested, w.name))[:n]
    return ", ".join(f"{w.name} {_hours(w.gpu_hours_requested)}" for w in top)


def requested(plan) -> str:
    """What the plan requests, as section B's totals give it (issue 23: never GPU-hours summed across GPU
    types as one request): 'requested 377.67 GPU-hours of h200, 650.00 of a40 (1,458.01 SUs on ncsa-delta)'
    (workloads/code-models.yaml), each system's amount in its own unit."""
    by_type = plan.by_gpu_type()
    if not by_type:
        return "nothing requested"
    hours = ", ".join(f"{_hours(h)}{' GPU-hours' if i == 0 else ''} of {gpu}"
                      for i, (gpu, h) in enumerate(by_type.items()))
    units = "; ".join(f"{fmt_in_unit(t.amount, t.unit)} on {t.system}" for t in plan.system_totals() if t.system)
    return f"requested {hours}" + (f" ({units})" if units else "")


def pilot_warnings(plans) -> list[str]:
    """Pilot logs and the estimate more than 25% apart (planning/pilots.py): warned, not failed,
    since the plan uses the measurement; an estimate under the measured memory says so."""
    from ..planning.pilots import DISAGREEMENT, SETTINGS_HINT

    out = []
    for w in plans:
        for c in w.pilots:
            texts = c.warnings(w.name)
            if c.memory_ratio is not None and c.memory_ratio > 1 + DISAGREEMENT:
                texts[-1] += f"; {SETTINGS_HINT}"       # the memory's statement is the last (Comparison.warnings)
            out += [f"{w.path}: warning: {text}" for text in texts]
    return out


def check(paths: list[str], max_gpu_hours: float | None = None, *, review: bool = False,
          pilot_above: float | None = None, defaults: bool = False) -> tuple[list[str], str, list[str]]:
    """→ (every reason to fail, the one-line summary, warnings that do not fail: pilot_warnings).

    `review`: also a reviewer's findings (lint.py), its errors among the reasons and its warnings among the
    warnings; `pilot_above` sets its pilot rule's size. `defaults`: also, as hints, the defaults each workload
    takes that the author may set (lint.default_hints; the documents state them as assumptions only). Raises InputError for invalid input."""
    from ..input.loading import load_files
    from ..planning.planner import assemble
    from . import lint

    if max_gpu_hours is not None and not (math.isfinite(max_gpu_hours) and max_gpu_hours > 0):
        raise InputError([Problem("proposalkit check", None, "--max-gpu-hours",
                                  f"expected a positive number of GPU-hours (got {max_gpu_hours:g})")])
    if pilot_above is not None and not review:
        raise InputError([Problem("proposalkit check", None, "--pilot-above",
                                  "applies to the reviewer's findings (expected --review beside it)")])
    if pilot_above is not None and not (math.isfinite(pilot_above) and pilot_above >= 0):
        raise InputError([Problem("proposalkit check", None, "--pilot-above",
                                  f"expected a number of GPU-hours, 0 or more (got {pilot_above:g})")])
    files = load_files(paths)
    plans, reasons = _plan_each(files)
    plan = assemble(list(plans), next((f.proposal for f in files if f.proposal is not None), None))
    total = plan.gpu_hours_requested
    partial = f"; {len(reasons)} infeasible workload(s) not counted" if reasons else ""
    if max_gpu_hours is not None and total > max_gpu_hours:
        where = ", ".join(f.path for f in files)
        reasons.append(f"{where}: total requested GPU-hours {_hours(total)} exceed --max-gpu-hours "
                       f"{fmt_limit(max_gpu_hours)} by {_hours(total - max_gpu_hours)} "
                       f"(largest: {_largest(plans)}{partial})")
    warnings = pilot_warnings(plans)
    if review:
        findings = lint.review(files, plan, pilot_above=lint.PILOT_ABOVE_GPU_HOURS if pilot_above is None
                               else pilot_above)
    else:
        findings = lint.cap_findings(files, plan)
    reasons += [str(f) for f in findings if f.severity == lint.ERROR]
    warnings += [str(f) for f in findings if f.severity == lint.WARNING]
    if defaults:
        warnings += [str(f) for f in lint.default_hint_findings(files, plan)]
    n = len(plans)
    cap = ""
    if max_gpu_hours is not None:     # --max-gpu-hours bounds the GPU-hours of every type together
        cap = (f"; {_hours(total)} GPU-hours of all types" if len(plan.by_gpu_type()) > 1 else "") + \
              f" within --max-gpu-hours {fmt_limit(max_gpu_hours)}"
    ok = (f"OK: {n} workload{'s' if n != 1 else ''} in {len(files)} file{'s' if len(files) != 1 else ''} "
          f"feasible; {requested(plan)}{cap}.")
    if review:
        ok += f" Review: no finding{'' if not findings else ' that fails (warnings on stderr)'}."
    return reasons, ok, warnings
