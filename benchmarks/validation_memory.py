"""The memory section of docs/validation.md: published measured peaks beside `proposalkit plan`.

Each row of benchmarks/validation/memory.yaml (the index: published value and unit, what the source
measured, the plan JSON figure it is compared with, source and quote) has one ordinary workload file,
benchmarks/validation/memory/<id>.yaml, written as its source ran the job. Every file is planned through
the command line users run (`proposalkit plan FILE --format json`, in-process through
proposalkit.cli.main), and the figure named by `compare` (memory.allocated_bytes, memory.reserved_bytes,
memory.device_bytes, or one component) is compared with the published number in its own unit.

Nothing here is tuned: a row the model misses stays in the table with its diagnosis; a row whose run
needs a setting the workload format cannot state is left out of the summary and names what it needs.
benchmarks/validation.py composes this section with the speed and inference sections.
"""

from __future__ import annotations

import contextlib
import io
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from proposalkit import cli

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

ROOT = Path(__file__).resolve().parent.parent
INDEX = ROOT / "benchmarks" / "validation" / "memory.yaml"
FILES = ROOT / "benchmarks" / "validation" / "memory"

UNITS = {"GB": 10**9, "GiB": 2**30, "MiB": 2**20}
MEASURES = ("allocated", "active", "reserved", "whole device", "not stated")
# memory.reserved_ample_bytes: a reserved figure under CPU offload on a GPU with memory to spare (the pool's further
# growth, which a run near capacity gives back: estimate/breakdown.py).
COMPARE = ("memory.allocated_bytes", "memory.reserved_bytes", "memory.device_bytes", "memory.reserved_ample_bytes")
COMPONENTS = ("weights", "gradients", "optimizer", "activations", "kv_cache", "overhead")
GROUPS = ("expressible", "left-out")
# The targets (issue 12, "Validation through the CLI").
TARGET_MEDIAN_PCT = 10.0
TARGET_WITHIN = 15.0
TARGET_WITHIN_SHARE = 0.80
TARGET_WORST_UNDER_PCT = -10.0


class PlanFailed(Exception):
    """A workload file that `proposalkit plan` did not plan (exit code and its message)."""


def load_index(path: Path = INDEX) -> dict:
    """The index, with the rows of the runs this project measured appended (validation_measured.py: their
    figures are read from the device's output; each names its workload file in `file`)."""
    with open(path, encoding="utf-8") as fh:
        index = yaml.safe_load(fh)
    if path == INDEX:
        from validation_measured import memory_rows

        index["rows"] += memory_rows()
    return index


def workload_file(row_id: str) -> Path:
    return FILES / f"{row_id}.yaml"


def row_file(row: dict) -> Path:
    """The row's workload file: `file` relative to benchmarks/validation/ where given, else memory/<id>.yaml."""
    return ROOT / "benchmarks" / "validation" / row["file"] if row.get("file") else workload_file(row["id"])


def plan_json(path: Path) -> dict:
    """`proposalkit plan PATH --format json`, in-process: the parsed JSON, or PlanFailed with the CLI's message."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["plan", str(path), "--format", "json"])
    if code != 0:
        raise PlanFailed(f"{path.name}: proposalkit plan exited {code}: {err.getvalue().strip()}")
    return json.loads(out.getvalue())


def figure(workload: dict, compare: str) -> int:
    """The plan JSON figure named by a dotted path (memory.reserved_bytes, memory.components.weights)."""
    value = workload
    for key in compare.split("."):
        value = value[key]
    return value


def check_row(row: dict) -> None:
    rid = row["id"]
    if row["group"] not in GROUPS:
        raise ValueError(f"{rid}: group must be one of {', '.join(GROUPS)}, got {row['group']!r}")
    if row["group"] == "left-out" and not str(row.get("needs", "")).strip():
        raise ValueError(f"{rid}: a left-out row names the mechanism it needs (needs: ...)")
    if row["measures"] not in MEASURES:
        raise ValueError(f"{rid}: measures must be one of {', '.join(MEASURES)}, got {row['measures']!r}")
    allowed = COMPARE + tuple(f"memory.components.{c}" for c in COMPONENTS)
    if row["compare"] not in allowed:
        raise ValueError(f"{rid}: compare must be one of {', '.join(allowed)}, got {row['compare']!r}")
    if row["unit"] not in UNITS:
        raise ValueError(f"{rid}: unit must be one of {', '.join(UNITS)}, got {row['unit']!r}")
    if not (row.get("source") and row.get("quote")):
        raise ValueError(f"{rid}: source and quote are required")


@dataclass(frozen=True)
class Result:
    row: dict
    workload: dict | None       # the plan JSON's workload (None: a left-out row with no file yet)
    estimate_bytes: int | None  # the figure named by row["compare"]

    @property
    def id(self) -> str:
        return self.row["id"]

    @property
    def whole(self) -> bool:
        """A whole-memory figure (allocated, reserved or device), not one component."""
        return self.row["compare"] in COMPARE

    @property
    def published(self) -> float:
        return self.row["value"]

    @property
    def estimate(self) -> float | None:
        return None if self.estimate_bytes is None else self.estimate_bytes / UNITS[self.row["unit"]]

    @property
    def diff_pct(self) -> float | None:
        return None if self.estimate is None else 100.0 * (self.estimate - self.published) / self.published


def results(index: dict | None = None) -> list[Result]:
    index = index if index is not None else load_index()
    out = []
    for row in index["rows"]:
        check_row(row)
        path = row_file(row)
        if row["group"] == "left-out" and not path.exists():
            # No workload states the run even roughly (context parallelism over 262k tokens fits no GPU).
            out.append(Result(row, None, None))
            continue
        plan = plan_json(path)
        (workload,) = plan["workloads"]
        out.append(Result(row, workload, figure(workload, row["compare"])))
    return out


@dataclass(frozen=True)
class Summary:
    rows: int
    median_abs_pct: float
    within: int                     # |diff| <= TARGET_WITHIN
    worst_under: Result | None      # the most negative diff among whole-memory rows

    @property
    def meets_targets(self) -> bool:
        return (self.median_abs_pct <= TARGET_MEDIAN_PCT and self.within >= TARGET_WITHIN_SHARE * self.rows
                and (self.worst_under is None or self.worst_under.diff_pct >= TARGET_WORST_UNDER_PCT))


def summarize(rs: list[Result]) -> Summary:
    diffs = [abs(r.diff_pct) for r in rs]
    under = [r for r in rs if r.whole and r.diff_pct < 0]
    return Summary(
        rows=len(rs),
        median_abs_pct=statistics.median(diffs) if diffs else 0.0,
        within=sum(d <= TARGET_WITHIN for d in diffs),
        worst_under=min(under, key=lambda r: r.diff_pct) if under else None,
    )


# --------------------------------------------------------------------------- rendering


def _decimals(value: float | int) -> int:
    """Decimals as the value is written in the index (60.0 has one, 14949 none)."""
    if isinstance(value, int):
        return 0
    text = repr(value)
    return len(text.split(".")[1]) if "." in text and "e" not in text else 2


def _fmt(value: float, decimals: int) -> str:
    return f"{value:,.{decimals}f}"


def _esc(text: object) -> str:
    return " ".join(str(text).replace("|", "\\|").split())


def _model(r: "Result") -> str:
    if r.workload is None:
        return r.row.get("model", "—")
    model = r.workload["model"]
    return model.get("id") or model.get("name") or "—"


def _published(r: Result) -> str:
    return r.row.get("as_published") or f"{_fmt(r.published, _decimals(r.published))} {r.row['unit']}"


def _compared(row: dict) -> str:
    compare = row["compare"]
    if compare.startswith("memory.components."):
        return compare.removeprefix("memory.components.") + " component"
    return {"memory.allocated_bytes": "allocated", "memory.reserved_bytes": "reserved",
            "memory.device_bytes": "device", "memory.reserved_ample_bytes": "reserved, memory to spare"}[compare]


def _link(row: dict) -> str:
    return f"[{row['id']}](../{row_file(row).relative_to(ROOT).as_posix()})"


def _table(rs: list[Result], left_out: bool) -> list[str]:
    head = ["id", "model", "settings (seq × batch, GPUs, sharding)", "GPU (as run)", "published", "measures",
            "compared with", "proposalkit", "diff"]
    head.append("needs" if left_out else "notes")
    lines = ["| " + " | ".join(head) + " |",
             "| " + " | ".join("---:" if h in ("published", "proposalkit", "diff") else "---" for h in head) + " |"]
    for r in rs:
        row = r.row
        decimals = _decimals(r.published)
        estimate = "no file" if r.estimate is None else f"{_fmt(r.estimate, decimals)} {row['unit']}"
        diff = "—" if r.diff_pct is None else f"{r.diff_pct:+.1f}%"
        cells = [_link(row) if r.workload is not None else r.id, _model(r), row["settings"], row["gpu"],
                 _published(r), row["measures"], _compared(row), estimate, diff,
                 row["needs"] if left_out else row.get("notes", "")]
        lines.append("| " + " | ".join(_esc(c) for c in cells) + " |")
    return lines


def summary_lines(rs: list[Result], before: dict | None) -> list[str]:
    expressible = [r for r in rs if r.row["group"] == "expressible"]
    whole = [r for r in expressible if r.whole]
    parts = [r for r in expressible if not r.whole]
    s = summarize(whole)
    lines = []
    if whole:
        share = s.within / s.rows
        lines.append(f"- **After** (this tree, {s.rows} expressible whole-memory rows): median |error| "
                     f"**{s.median_abs_pct:.1f}%**; {s.within} of {s.rows} ({share:.0%}) within ±{TARGET_WITHIN:g}%.")
        if s.worst_under is not None:
            w = s.worst_under
            decimals = max(1, _decimals(w.published))
            lines.append(f"- Worst under-estimate among them: {w.id}, **{w.diff_pct:+.1f}%** "
                         f"({_fmt(w.estimate, decimals)} {w.row['unit']} planned against {_published(w)} published, "
                         f"{w.row['measures']}).")
        else:
            lines.append("- No whole-memory row is under-estimated.")
    if parts:
        worst = max(abs(r.diff_pct) for r in parts)
        lines.append(f"- Component checks ({', '.join(r.id for r in parts)}): within {worst:.1f}% each.")
    shown = [r for r in rs if r.whole and r.estimate is not None]
    if shown:
        every = summarize(shown)
        lines.append(f"- Every whole-memory row with a file, left-out ones too ({every.rows}): median |error| "
                     f"{every.median_abs_pct:.1f}%, {every.within} within ±{TARGET_WITHIN:g}%.")
    if before:
        lines.append(f"- **Before** ({before['what']}): {before['text']}")
    if whole:
        worst = s.worst_under.diff_pct if s.worst_under is not None else 0.0
        checks = [(f"median |error| ≤ {TARGET_MEDIAN_PCT:g}% ({s.median_abs_pct:.2f}%)",
                   s.median_abs_pct <= TARGET_MEDIAN_PCT),
                  (f"at least {TARGET_WITHIN_SHARE:.0%} of rows within ±{TARGET_WITHIN:g}% ({s.within / s.rows:.0%})",
                   s.within >= TARGET_WITHIN_SHARE * s.rows),
                  (f"no whole-memory row under-estimated by more than {-TARGET_WORST_UNDER_PCT:g}% ({worst:+.1f}%)",
                   worst >= TARGET_WORST_UNDER_PCT)]
        lines.append("- Targets (issue 12): " + "; ".join(f"{text} — {'met' if ok else '**not met**'}"
                                                       for text, ok in checks) + ".")
    left = [r for r in rs if r.row["group"] == "left-out"]
    if left:
        lines.append(f"- {len(left)} more rows are left out of the summary, each naming what it needs (a setting the "
                     "workload format does not state, a mechanism the model does not have, or an input the source "
                     "does not give) in the second table.")
    return lines


def render(rs: list[Result] | None = None, index: dict | None = None) -> str:
    """The memory section (Markdown, starting with its `##` heading)."""
    index = index if index is not None else load_index()
    rs = rs if rs is not None else results(index)
    expressible = [r for r in rs if r.row["group"] == "expressible"]
    left = [r for r in rs if r.row["group"] == "left-out"]
    lines = [
        "## Memory: published measured peaks",
        "",
        "Every row is an ordinary workload file in `benchmarks/validation/memory/` (the rows M-…: "
        "`benchmarks/validation/measured/`, runs this project measured on one H100, their figures read from the "
        "device's output), written as its source ran the job and planned with `proposalkit plan FILE --format json`. The published figure is compared with the "
        "plan's figure for the statistic the source measured: `memory.allocated_bytes` for "
        "`torch.cuda.max_memory_allocated()` (and active bytes), `memory.reserved_bytes` for the caching "
        "allocator's pool (`max_memory_reserved()`; under CPU offload `memory.reserved_ample_bytes` where the "
        "run's card had memory to spare beyond it, since the pool grows into what is free), "
        "`memory.device_bytes` for the whole device (`nvidia-smi`), or one component. A figure whose statistic the source does not state is compared with the reserved "
        "figure. Published units are kept (GB = 10^9 bytes, GiB = 2^30, MiB = 2^20). Nothing is fitted to a row.",
        "",
        *summary_lines(rs, index.get("before")),
        "",
        "### Rows the workload format expresses",
        "",
        *_table(expressible, left_out=False),
        "",
    ]
    misses = index.get("misses", [])
    if misses:
        lines += ["### Where the plan misses, and the mechanism", ""]
        lines += [f"- {_esc(text)}" for text in misses]
        lines.append("")
    if left:
        lines += [
            "### Rows left out of the summary",
            "",
            "The file is the closest workload the format states today; the `needs` column names the setting, "
            "the mechanism or the missing input the row needs. Their differences are shown for the gap, not counted.",
            "",
            *_table(left, left_out=True),
            "",
        ]
    contexts = index.get("contexts", {})
    if contexts:
        lines += ["### Sources", ""]
        lines += [f"- **{key}**: {_esc(text)}" for key, text in contexts.items()]
        lines.append("")
    skipped = index.get("not_compared", [])
    if skipped:
        lines += ["### Published figures not compared", ""]
        lines += [f"- {s['id']} ({_esc(s['value'])}): {_esc(s['reason'])}" for s in skipped]
        lines.append("")
    return "\n".join(lines)


def section() -> str:
    """benchmarks/validation.py's entry point."""
    return render()
