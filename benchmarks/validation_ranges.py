"""The Ranges section of docs/validation.md: each estimate's validated error, left one out, and the tails.

A plan's range is its estimate times the 10th and 90th percentiles of its regime's residuals
(proposalkit/catalog/errors.yaml, written by benchmarks/errors.py from the rows of the other sections;
planning/ranges.py). Here every row of a regime a plan uses is left out in turn: its interval is taken
from the other rows (its regime's, or its set's pool where the regime has fewer than MIN_ROWS), and the
row is inside when its residual lies between that interval's p10 and p90. Issue 22 asks for 70% to 90%
of the rows of each set inside. The pilot-steps regime (a measured rate's own step-to-step spread) and
the whole published runs (reported, never a plan's range) are not estimates' errors and are not counted.

The tails are the rows planned faster than measured by more than 25% (planned ÷ measured speed above
1.25; a latency: measured ÷ planned time) and the memory rows under-estimated by more than 10%, every
row of the sets (held-out or calibration, in the summary or left out of it), each with its own words.
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _path in (HERE, ROOT):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import errors as generator  # noqa: E402  (benchmarks/errors.py: which regime a row's plan takes)
import validation_inference as vi  # noqa: E402
import validation_memory as vm  # noqa: E402
import validation_speed as vs  # noqa: E402
from proposalkit.catalog import errors  # noqa: E402
from proposalkit.planning.intervals import HIGH, LOW, quantile  # noqa: E402

# Issue 22, "Done when": no row planned faster than measured by more than 25%, no memory row under-estimated
# by more than 10% (validation_memory.py's own target, TARGET_WORST_UNDER_PCT), except rows named out of scope.
TOO_FAST = vs.TAIL
TOO_LOW_PCT = vm.TARGET_WORST_UNDER_PCT
COVERAGE_TARGET = (0.70, 0.90)
# Regimes whose rows are not an estimate's error: a measured rate's steps, and whole runs (reported only).
NOT_COUNTED = ("pilot-steps", "whole-run")


@dataclass(frozen=True)
class Coverage:
    """One set's (or regime's) leave-one-out intervals: how many rows fall inside, and their widths."""

    inside: int
    rows: int
    widths: tuple[float, ...]       # each row's interval, p90 ÷ p10

    @property
    def share(self) -> float:
        return self.inside / self.rows

    @property
    def median_width(self) -> float:
        return statistics.median(self.widths)


def _left_out(regime: str) -> list[tuple[bool, float]]:
    """(inside, p90 ÷ p10) of each row of `regime`, its interval taken from the other rows."""
    out = []
    for row in errors.table()[regime]:
        residuals = errors.basis(regime, leave_out=row.id).residuals
        low, high = quantile(residuals, LOW), quantile(residuals, HIGH)
        out.append((low <= row.residual <= high, high / low))
    return out


def _coverage(found: list[tuple[bool, float]]) -> Coverage:
    return Coverage(sum(inside for inside, _ in found), len(found), tuple(width for _, width in found))


def counted(regime: str) -> bool:
    return errors.REGIMES[regime].used and regime not in NOT_COUNTED


def leave_one_out() -> dict[str, Coverage]:
    """Per set (memory, speed, inference): every counted row's leave-one-out p10–p90 interval."""
    found: dict[str, list[tuple[bool, float]]] = {s: [] for s in errors.SETS}
    for rid, regime in errors.REGIMES.items():
        if counted(rid):
            found[regime.set] += _left_out(rid)
    return {s: _coverage(rows) for s, rows in found.items()}


@dataclass(frozen=True)
class Tail:
    row: str
    estimate: str       # the regime's few words (or the set's, for a row outside the error table)
    off: str            # '1.39× faster' or '−23.8%'
    what: str           # the row's own words: its note, what it needs, its scenario


def _cell(text: object) -> str:
    return " ".join(str(text).replace("|", "\\|").split())


def speed_tails() -> tuple[list[Tail], list[Tail]]:
    """Steady-state training rows (and extrapolation pairs) planned faster than measured by more than TOO_FAST;
    then the whole published runs that are."""
    steady, whole = [], []
    for r in vs.results():
        if r.ratio <= TOO_FAST:
            continue
        w = r.workload
        run = f"{w['model']['id']}, {w['gpu']['count']}× {w['gpu']['type']}"
        if r.row["compare"] == "gpu_hours":
            whole.append(Tail(r.id, errors.REGIMES["whole-run"].short, f"{r.ratio:.2f}", f"{run}; {r.row['counts']}"))
            continue
        note = r.row.get("note")
        what = f"{run}; {note}" if note else run
        if r.row.get("out_of_scope"):       # named so in the speed section's tails
            what += f"; out of scope: {r.row['out_of_scope'].split(':')[0]} (the speed section says why)"
        steady.append(Tail(r.id, errors.REGIMES[generator._regime_of(w)].short, f"{r.ratio:.2f}", what))
    index = {row["id"]: row for row in vs.load()}
    for row in errors.table()["pilot-extrapolated"]:
        if 1 / row.residual > TOO_FAST:
            first, second = row.id.split(">")
            what = f"{first}'s measured rate carried to {second}'s GPUs"
            why = index[second].get("carried_out_of_scope", {}).get(first)
            if why:                 # named so in the speed index, with its whole reason here
                what += f"; out of scope: {why}"
            steady.append(Tail(row.id, errors.REGIMES["pilot-extrapolated"].short, f"{1 / row.residual:.2f}", what))
    return steady, whole


def inference_tails() -> list[Tail]:
    out = []
    for r in vi.results():
        if r.estimate is None:
            continue
        row = r.row
        faster = r.faster
        if faster > TOO_FAST:
            regime = errors.REGIMES[generator.INFERENCE_REGIME[row["metric"]]]
            role = "calibration row (in-sample)" if r.role == "calibrate" else "held-out row"
            what = (f"{row['model']} on {row['gpus']}× {row['gpu']}, {row['engine']} {row['precision']}, "
                    f"{row['input_tokens']}/{row['output_tokens']} tokens, {row['scenario']}; {role}")
            if row.get("diagnosis", "").startswith("out of scope"):     # named so in the inference section
                what += f"; {' '.join(row['diagnosis'].split()).split(':')[0]} (the inference section says why)"
            out.append(Tail(r.id, regime.short, f"{faster:.2f}", what))
    return out


def memory_tails() -> list[Tail]:
    out = []
    for r in vm.results():
        if not r.whole or r.diff_pct is None or r.diff_pct >= TOO_LOW_PCT:
            continue
        statistic = r.row["compare"].removeprefix("memory.").removesuffix("_bytes")
        if r.row["group"] == "left-out":
            what = f"left out of the memory summary: needs {r.row['needs']}"
        else:
            what = r.row.get("notes", "")
        out.append(Tail(r.id, errors.REGIMES[errors.MEMORY_REGIME[statistic]].short,
                        f"{r.diff_pct:+.1f}%".replace("-", "−"), what))
    return out


def _regime_rows() -> list[str]:
    lines = ["| regime | the estimate | rows | p10 | p90 | left one out: inside |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    for rid, regime in errors.REGIMES.items():
        b = errors.basis(rid)
        if not b.rows:
            continue
        rows = f"{b.own_rows} (pooled: {len(b.rows)})" if b.pooled else str(len(b.rows))
        low, high = quantile(b.residuals, LOW), quantile(b.residuals, HIGH)
        if counted(rid):
            c = _coverage(_left_out(rid))
            inside = f"{c.inside} of {c.rows}"
        else:
            inside = "not counted"
        lines.append(f"| `{rid}` | {_cell(regime.what)} | {rows} | {low:.3f} | {high:.3f} | {inside} |")
    return lines


def _tails_table(title: str, tails: list[Tail], off: str) -> list[str]:
    if not tails:
        return [f"{title}: none.", ""]
    return [f"{title} ({len(tails)}):", "", f"| row | estimate | {off} | what the row is |", "| --- | --- | ---: | --- |",
            *(f"| {_cell(t.row)} | {t.estimate} | {t.off} | {_cell(t.what)} |" for t in tails), ""]


def section() -> str:
    coverage = leave_one_out()
    steady, whole = speed_tails()
    low, high = COVERAGE_TARGET
    lines = [
        "## Ranges",
        "",
        "Generated by `benchmarks/validation_ranges.py` from `proposalkit/catalog/errors.yaml` (each row of the "
        "sections above as a residual, measured ÷ planned for a rate or bytes, planned ÷ measured for a "
        "latency; `make errors`). A plan's `ranges` are its estimate times the 10th and 90th percentiles of "
        "its regime's residuals, `ranges_basis` names the regime and its rows, `request_coverage` is the share "
        "of them the request covers, and `buffer: auto` takes the least buffer that covers `coverage` of them "
        "([JSON output](json-output.md#ranges)). A regime with fewer than "
        f"{errors.MIN_ROWS} rows takes its set's pool.",
        "",
        "Left one out: each row's interval is taken from the other rows, and the row is inside when its residual "
        f"lies between that p10 and p90. Target: {low:.0%} to {high:.0%} of each set's rows inside. A measured "
        "rate's step-to-step spread (`pilot-steps`) and the whole published runs (`whole-run`, reported only) "
        "are not an estimate's error and are not counted.",
        "",
        "| set | rows | inside p10–p90 | share | median width p90 ÷ p10 |",
        "| --- | ---: | ---: | ---: | ---: |",
        *(f"| {name} | {c.rows} | {c.inside} | **{c.share:.1%}** | {c.median_width:.2f} |"
          for name, c in coverage.items()),
        "",
        "Each regime's rows, and the factors on the estimate a plan's p10 and p90 take (all its rows):",
        "",
        *_regime_rows(),
        "",
        "### The tails",
        "",
        f"Rows planned faster than measured by more than {TOO_FAST - 1:.0%} (speed: planned ÷ measured above "
        f"{TOO_FAST:g}; a time to first token: measured ÷ planned time) and memory rows under-estimated by more "
        f"than {-TOO_LOW_PCT:g}%: every row of the sets, held-out or calibration, in the summaries or left out, "
        "with its own words. A whole run's hours hold restarts, evaluation, long-context stages and idle time "
        "that a steady-state speed does not: those rows, last, say how much a whole run costs beyond it, not "
        "how fast its steps ran.",
        "",
        *_tails_table("Training speed, steady state", steady, "planned ÷ measured"),
        *_tails_table("Inference", inference_tails(), "planned ÷ measured"),
        *_tails_table("Memory", memory_tails(), "planned ÷ measured − 1"),
        *_tails_table("Whole published runs, out of scope as said above", whole,
                      "planned ÷ measured"),
    ]
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.stdout.write(section())
