"""`proposalkit check --review`: what a reviewer of a NAIRR resource request would reject, as findings.

Each rule reads the plan's records (and the plan JSON's names, for the ranges) and the loaded files'
line map, and says FILE:LINE: field: what is wrong; what to do. The rules (issue 23, item 7; what
reviewers look for: ../shared/NAIRR.md):

- description   a workload without a description ("a lack of a detailed description of resource
                needs" is the most common reason for rejection: Yale research computing's NAIRR page).
- pilot         a workload requesting more than `pilot_above` GPU-hours on an estimated speed (the
                NAIRR community guide's method: run a small pilot, measure throughput and scaling).
- extrapolation a pilot measured on another GPU type than the one planned, with no `extrapolation:`
                saying how the measurement carries over (NCAR and DOE guidance: say how results from
                another machine were extrapolated).
- buffer        a buffer outside the guide's 20–30% with no `buffer_reason:` (a buffer chosen for a
                coverage, `buffer: auto`, has its reason).
- cap           the request above the proposal track's caps or the ACCESS project type's credits
                (the planner's Plan.cap_findings; plain `check` fails on them too).
- pages         section B's body over its page budget (render/report.py body_length).
- coverage      a request whose chance to suffice (the plan JSON's request_coverage, where the plan
                has ranges) is below MIN_COVERAGE.
- framework     (a warning) a pilot log written by a framework the workload does not name: the
                estimate beside the pilot then follows the planner's generic defaults (issue 23, item 5).
- pilot         (a warning) a pilot log marked illustrative: the documents say it is no measurement.

`plan` prints the framework and illustrative findings as hints; `check --defaults` prints the defaults the
author may set (render/notes.py HINTS): the documents state what was assumed, never what to write (issue 23, item 3).

A finding is an error (check exits 1) or a warning (printed; the exit code stays 0).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..input.pilots import LOG_FRAMEWORKS, LOG_FRAMEWORKS_ALSO
from ..render.format import fmt_hours, fmt_limit
from ..text import one_line_escape

ERROR, WARNING, HINT = "error", "warning", "hint"     # HINT: `plan`'s suggestions on stderr

# The NAIRR community guide's buffer: "a stated, justified buffer (20–30%), broken into retries, sweeps,
# profiling, evaluation" ("Generalized Resource Estimation"; NAIRR.md [V]).
BUFFER_RANGE = (0.20, 0.30)
# Issue 23, item 7's example of a size that needs a pilot: 1,000 requested GPU-hours, half the Start-Up
# track's cap of about 2,000 (NAIRR.md [S]) — one workload that would spend half a Start-Up allocation on
# a speed nobody measured. NAIRR.md gives no threshold of its own (the guide asks a pilot of every scenario).
PILOT_ABOVE_GPU_HOURS = 1000.0
# Issue 23, item 7: a request whose stated chance to suffice is below 80% (about one request in five
# running out) is one a reviewer rejects; the plan's ranges state the chance (CONTRACT.md request_coverage).
MIN_COVERAGE = 0.80
# Plan.cap_findings' kind that is no cap on the request: the campaign's calendar days assume the workloads
# run one after another, an upper bound (`plan` warns about it), not a limit to fail on.
NOT_A_CAP = "calendar_days"


@dataclass(frozen=True)
class Finding:
    """One thing a reviewer would reject (or, a warning, question): where, what, and what to do."""

    path: str
    line: int | None
    field: str
    message: str
    suggestion: str             # what to do ("" where the message says it)
    rule: str
    severity: str = ERROR

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        label = "" if self.severity == ERROR else f"{self.severity}: "
        then = f"; {self.suggestion}" if self.suggestion else ""
        return one_line_escape(f"{where}: {self.field}: {label}{self.message}{then}")


def _hours(x: float) -> str:
    return fmt_hours(x)     # hours read the same in check as in every document


def _pct(x: float) -> str:
    return f"{100 * x:.4g}%"


# ----------------------------------------------------------------- one rule a function

def description_findings(lw, w) -> list[Finding]:
    if w.description and w.description.strip():
        return []
    return [Finding(lw.path, lw.line, f"workloads[{lw.index}].description",
                    f"{w.name} has no description: a reviewer meets {_hours(w.gpu_hours_requested)} GPU-hours "
                    "without what they are for (the most common reason for rejection)",
                    "add description: one line on what the runs are for and why this many", "description")]


def _estimated(w) -> str | None:
    """How the workload's GPU-hours rest on a speed nobody measured, in words; None where they do not."""
    source = w.throughput.source
    if source in ("pilot", "pilot-extrapolated"):
        return None
    if w.inference is not None:
        if w.inference.mode == "hours":     # a service kept up `hours`: its GPU-hours do not depend on a speed
            return None
        what = "replicas" if w.inference.mode == "rate" else "runtime"
        return f"its {what} rest on the {w.inference.engine} engine's calibrated roofline"
    mfu = f" at MFU {w.throughput.mfu:.2f}" if w.throughput.mfu is not None else ""
    return f"its runtime rests on FLOPs{mfu}"


def _pilot_suggestion(w) -> str:
    if w.inference is None:
        return (f"run a short pilot on {w.gpu_count}× {w.gpu.id} and add pilot: {{log, gpu, gpus}} (proposalkit "
                "pilot reads its log)")
    replica = f"{w.inference.tensor_parallel}× {w.gpu.id}"
    if w.inference.mode == "batch":
        return (f"benchmark the engine on {replica} (e.g. vLLM's offline throughput benchmark) and plan the job "
                "by tokens with pilot: {log, gpu, gpus}")
    return (f"benchmark one replica ({replica}) at its share of the load (e.g. vLLM's serving benchmark) and give "
            "the measured rate in the description (a service by request_rate takes no pilot log)")


def pilot_findings(lw, w, pilot_above: float) -> list[Finding]:
    how = _estimated(w)
    if how is None or w.gpu_hours_requested <= pilot_above:
        return []
    return [Finding(lw.path, lw.line, f"workloads[{lw.index}].pilot",
                    f"{w.name} requests {_hours(w.gpu_hours_requested)} GPU-hours, over {fmt_limit(pilot_above)}, "
                    f"with no pilot: {how}, and reviewers expect a measurement at this size",
                    _pilot_suggestion(w), "pilot")]


def extrapolation_findings(lw, w) -> list[Finding]:
    measured = lw.spec.throughput
    if w.throughput.source != "pilot-extrapolated" or measured is None or measured.gpu == w.gpu.id \
            or w.extrapolation:
        return []
    at = "pilot" if lw.spec.pilot is not None else "throughput"
    return [Finding(lw.path, lw.field_line(at), f"workloads[{lw.index}].extrapolation",
                    f"{w.name} is measured on {measured.gpu} and planned on {w.gpu_count}× {w.gpu.id}: the rate is "
                    f"carried there by the estimate's model of the two setups ({w.throughput.derivation}), with nothing "
                    "saying how the "
                    "measurement carries over",
                    f"state it in extrapolation: (e.g. a published {measured.gpu} to {w.gpu.id} speed ratio for "
                    f"this kind of job, with its source), run the pilot on {w.gpu.id}, or pin gpu: "
                    f"{measured.gpu}", "extrapolation")]


def buffer_findings(lw, w, workload_json: dict) -> list[Finding]:
    s = w.settings
    low, high = BUFFER_RANGE
    if low - 1e-9 <= s.buffer <= high + 1e-9 or s.buffer_reason or "coverage" in workload_json:
        return []       # "coverage" in the plan JSON: buffer: auto, the buffer chosen for that coverage
    return [Finding(lw.path, lw.field_line("buffer"), f"workloads[{lw.index}].buffer",
                    f"{w.name}'s buffer of {_pct(s.buffer)} is outside the NAIRR community guide's "
                    f"{_pct(low)}–{_pct(high)} and no reason is given",
                    f"state why in buffer_reason: (shown beside the buffer in the report), or set a buffer from "
                    f"{low:.2f} to {high:.2f}", "buffer")]


def coverage_findings(lw, w, workload_json: dict) -> list[Finding]:
    """Skipped where the plan has no ranges (no request_coverage in its JSON)."""
    coverage = workload_json.get("request_coverage")
    if coverage is None or coverage >= MIN_COVERAGE:
        return []
    return [Finding(lw.path, lw.field_line("buffer"), f"workloads[{lw.index}].buffer",
                    f"{w.name}'s request of {_hours(w.gpu_hours_requested)} GPU-hours suffices with a chance of "
                    f"{_pct(coverage)} (its ranges), under the {_pct(MIN_COVERAGE)} a reviewer expects",
                    "raise the buffer, or set buffer: auto with coverage: 0.9 to take the least that reaches 90%",
                    "coverage")]


def framework_findings(lw, w) -> list[Finding]:
    """A pilot log whose format names the framework that wrote it, beside a workload naming none: a warning."""
    if w.settings.framework is not None or not w.pilots:
        return []
    named = {LOG_FRAMEWORKS[c.run.format] for c in w.pilots if c.run.format in LOG_FRAMEWORKS}
    if len(named) != 1:
        return []
    framework = named.pop()
    logs = (f"the pilot log {w.pilots[0].run.log} is" if len(w.pilots) == 1 else
            f"the pilot logs {', '.join(c.run.log for c in w.pilots)} are")
    formats = {c.run.format for c in w.pilots}
    also = sorted({a for f in formats for a in LOG_FRAMEWORKS_ALSO.get(f, ())})
    others = f" (or {' or '.join(also)}, which write the same log)" if also else ""
    return [Finding(lw.path, lw.field_line("pilot"), f"workloads[{lw.index}].framework",
                    f"{logs} {framework}'s, but {w.name} names no framework: the estimate beside "
                    "the measurement follows the planner's generic defaults, not the recipe that ran",
                    f"set framework: {framework}{others}", "framework", WARNING)]


def illustrative_findings(lw, w) -> list[Finding]:
    """A pilot log marked illustrative (an example's): every document says so; a reviewer wants a measurement."""
    logs = [c.run.log for c in w.pilots if c.run.illustrative]
    if not logs:
        return []
    return [Finding(lw.path, lw.field_line("pilot"), f"workloads[{lw.index}].pilot",
                    f"{w.name}'s pilot log {', '.join(logs)} is marked illustrative, not a measurement, and the "
                    "documents say so",
                    "replace it with the log of a pilot you ran and drop illustrative: true", "pilot", WARNING)]


def default_hints(lw, w) -> list[Finding]:
    """The defaults the planner filled in that the author may set (render/notes.py HINTS), in one line: the
    documents state the assumption, never the instruction."""
    from ..render.notes import note_hint

    hints = list(dict.fromkeys(h for n in w.assumptions if (h := note_hint(n)) is not None))
    if not hints:
        return []
    return [Finding(lw.path, lw.line, f"workloads[{lw.index}]",
                    f"{w.name} takes the planner's defaults for {', '.join(field for field, _ in hints)}",
                    "where the run differs, set " + "; ".join(text for _, text in hints), "defaults", HINT)]


def cap_findings(files, plan) -> list[Finding]:
    """The limits the planner found exceeded, at the line of the setting that names them (proposal.track,
    proposal.access_tier) in the first file with a proposal block, which speaks for the plan."""
    speaker = next((f for f in files if f.proposal is not None), None)
    if speaker is None:
        return []
    out = []
    for c in plan.cap_findings:
        if c.what == NOT_A_CAP:
            continue
        line = speaker.field_line(c.field) or speaker.field_line("proposal")
        out.append(Finding(speaker.path, line, c.field, c.message, "", "cap"))     # the message says what to do
    return out


def page_findings(files, plan) -> list[Finding]:
    """Section B's body against its page budget, as render/report.py measures it (body_length)."""
    from ..render.report import body_length

    length = body_length(plan)
    if not length.over:
        return []
    first = files[0]
    return [Finding(first.path, first.field_line("workloads"), "workloads", length.text(), length.suggestion(),
                    "pages")]


def total_coverage_findings(files, plan_json: dict, flagged: bool) -> list[Finding]:
    """The whole request's chance to suffice, where no workload was flagged for its own."""
    coverage = plan_json.get("totals", {}).get("request_coverage")
    if flagged or coverage is None or coverage >= MIN_COVERAGE:
        return []
    first = files[0]
    return [Finding(first.path, first.field_line("workloads"), "workloads",
                    f"the whole request suffices with a chance of {_pct(coverage)} (the plan's ranges), under the "
                    f"{_pct(MIN_COVERAGE)} a reviewer expects",
                    "raise the buffers of the largest workloads, or set buffer: auto", "coverage")]


# ----------------------------------------------------------------- all of them

def review(files, plan, *, pilot_above: float = PILOT_ABOVE_GPU_HOURS) -> list[Finding]:
    """Every finding of every rule on the planned workloads of `files` (`plan`: the feasible ones), in file
    and line order."""
    from ..render.output import plan_dict

    plan_json = plan_dict(plan)
    by_name = {w["name"]: w for w in plan_json["workloads"]}
    loaded = {lw.spec.name: lw for f in files for lw in f.workloads}
    out: list[Finding] = []
    for w in plan.workloads:
        lw, wj = loaded[w.name], by_name[w.name]
        out += description_findings(lw, w)
        out += pilot_findings(lw, w, pilot_above)
        out += extrapolation_findings(lw, w)
        out += buffer_findings(lw, w, wj)
        out += coverage_findings(lw, w, wj)
        out += framework_findings(lw, w)
        out += illustrative_findings(lw, w)
    out += total_coverage_findings(files, plan_json, any(f.rule == "coverage" for f in out))
    out += cap_findings(files, plan)
    if plan.workloads:
        out += page_findings(files, plan)
    order = {f.path: i for i, f in enumerate(files)}
    return sorted(out, key=lambda f: (order.get(f.path, len(order)), f.line or 0))


def hints(files, plan) -> list[Finding]:
    """What `plan` suggests on stderr: the framework a pilot log names (issue 23, item 5) and an illustrative
    pilot log to replace."""
    loaded = {lw.spec.name: lw for f in files for lw in f.workloads}
    return [replace(f, severity=HINT) for w in plan.workloads
            for f in framework_findings(loaded[w.name], w) + illustrative_findings(loaded[w.name], w)]


def default_hint_findings(files, plan) -> list[Finding]:
    """What `check --defaults` prints: the defaults each workload takes that the author may set (the documents
    state the assumption only, issue 23 item 3; asked for, since nearly every workload takes some)."""
    loaded = {lw.spec.name: lw for f in files for lw in f.workloads}
    return [f for w in plan.workloads for f in default_hints(loaded[w.name], w)]
