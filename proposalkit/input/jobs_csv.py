"""Job accounting as a plain CSV, for sites and clouds without Slurm (CONTRACT.md, `usage`).

A header line names the columns, in any order:

- `job` (required): the job's id; also its name where there is no `name` column.
- `gpus` (required): GPUs the job held (empty or 0: none named, reported).
- `start` (required): ISO 8601 date and time, as written (`2026-10-01T08:00:00`; an offset such as `Z`
  or `+02:00` is kept as the zone of every time, never converted); empty for a job never started.
- `end` or `hours` (one of them required): when it ended, or its elapsed hours. A running job gives
  `hours` so far (or `end` empty and `hours`).
- optional: `workload` (attributes the job to that workload), `name` (the job name the `jobs:`
  patterns match), `gpu` (GPU type, catalog id), `nodes`, `partition`, `state` (sacct's names or
  codes; default COMPLETED), `tokens` (tokens the job processed, bounded as sacct.job_tokens says),
  `log` (a pilot log of the job, `proposalkit pilot` formats, relative to the CSV: its steady rate × the
  elapsed time gives the tokens).
"""

from __future__ import annotations

import csv
import difflib
import math
import os
from collections.abc import Iterator
from datetime import datetime

from ..errors import InputError, Problem
from . import sacct
from .jobs import Job, Reading
from .sacct import FieldError

REQUIRED = ("job", "gpus", "start")
OPTIONAL = ("end", "hours", "workload", "name", "gpu", "nodes", "partition", "state", "tokens", "log")


def csv_rows(path: str, first: tuple[int, str], lines, reader: Reading) -> Iterator[Job | Problem]:
    header = [h.strip().lower() for h in next(csv.reader([first[1]]))]
    unknown = [h for h in header if h not in REQUIRED + OPTIONAL]
    missing = [h for h in REQUIRED if h not in header]
    if "end" not in header and "hours" not in header:
        missing.append("end or hours")
    if unknown or missing or len(set(header)) != len(header):
        parts = [f"unknown column {h!r}" + _near(h) for h in unknown]
        parts += [f"no {h} column" for h in missing]
        parts += [f"column {h!r} twice" for h in sorted({h for h in header if header.count(h) > 1})]
        yield Problem(path, first[0], "header", f"{'; '.join(parts)} (expected job, gpus, start, end or hours; "
                                                f"optional {', '.join(OPTIONAL[2:])}); not sacct output either "
                                                "(no '|')")
        return
    column = {h: i for i, h in enumerate(header)}
    logs: dict[tuple[str, int | None], float] = {}
    for row in csv.reader(_texts(lines, holder := [0])):
        lineno = holder[0]
        if len(row) != len(header):
            yield Problem(path, lineno, "", f"{len(row)} fields, expected {len(header)} ({','.join(header)})")
            continue
        try:
            yield _job(path, lineno, {h: row[i].strip() for h, i in column.items()}, reader, logs)
        except FieldError as error:
            yield Problem(path, lineno, error.field, error.message)


def _texts(numbered, holder: list[int]) -> Iterator[str]:
    for lineno, text in numbered:
        holder[0] = lineno
        yield text


def _near(name: str) -> str:
    close = difflib.get_close_matches(name, REQUIRED + OPTIONAL, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _number(text: str, field: str, integer: bool = False) -> float | int | None:
    if text == "":
        return None
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        value = -1
    if not (value >= 0 and math.isfinite(value)):
        raise FieldError(field, f"expected a non-negative {'integer' if integer else 'number'}, got {text!r}")
    return value


def _time(text: str, field: str, path: str, lineno: int, reader: Reading) -> datetime | None:
    if text in sacct.NOT_A_TIME:
        return None
    try:
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        raise FieldError(field, f"expected an ISO 8601 date and time (2026-10-01T08:00:00), got {text!r}") from None
    return reader.zone_of(path, lineno, moment)


def _job(path: str, lineno: int, v: dict[str, str], reader: Reading, logs) -> Job:
    if not v["job"]:
        raise FieldError("job", "empty: expected the job's id")
    state_text = v.get("state") or "COMPLETED"
    state, category = sacct.state_of(state_text.upper())
    start = _time(v["start"], "start", path, lineno, reader)
    end = _time(v.get("end", ""), "end", path, lineno, reader)
    hours = _number(v.get("hours", ""), "hours")
    if start is None:
        seconds = 0.0
        if hours or end is not None:
            raise FieldError("start", "empty, but the job has an end or hours: give when it started")
    elif hours is not None:
        seconds = hours * 3600
        if end is not None and abs((end - start).total_seconds() - seconds) > 1:
            raise FieldError("hours", f"{hours:g} h, but end - start is {(end - start).total_seconds() / 3600:g} h: "
                                      "give one of them")
    elif end is not None:
        seconds = (end - start).total_seconds()
        if seconds < 0:
            raise FieldError("end", f"{v['end']} is before start {v['start']}")
    else:
        raise FieldError("end", "empty, and no hours: give when the job ended, or its hours (so far, if running)")
    sacct.bounded(seconds, "hours", "hours" if hours is not None else "end", v.get("hours") or v.get("end", ""))
    gpus = _number(v["gpus"], "gpus", integer=True) or None
    if gpus:
        sacct.bounded(gpus, "gpus", "gpus", v["gpus"])
    tokens = _number(v.get("tokens", ""), "tokens")
    if tokens is not None:
        sacct.job_tokens(sacct.bounded(tokens, "tokens", "tokens", v["tokens"]), gpus, seconds, "tokens", v["tokens"])
    if v.get("log"):
        if tokens is not None:
            raise FieldError("log", "both tokens and a log: give one of them")
        tokens = _log_rate(path, v["log"], gpus, logs) * seconds
    job = Job(v["job"], v.get("name") or v["job"], state, category or sacct.UNKNOWN, gpus, seconds, start, path,
              lineno, v.get("gpu") or None, _number(v.get("nodes", ""), "nodes", integer=True) or None,
              v.get("workload") or None, tokens, v.get("partition") or None)
    reader.check(job, state_text, v["gpus"])
    return job


def _log_rate(path: str, log: str, gpus: int | None, logs) -> float:
    """The log's steady tokens per second (the whole job), read once per log; FieldError naming it."""
    from ..pilot import Options, read_log

    full = os.path.join(os.path.dirname(path), log)
    if (full, gpus) not in logs:
        try:
            result = read_log(full, Options(gpus=gpus))
        except InputError as error:
            raise FieldError("log", "; ".join(str(p) for p in error.problems)) from None
        if result.tokens_per_second is None:
            raise FieldError("log", f"{log}: gives no tokens per second ({result.format})")
        logs[(full, gpus)] = result.tokens_per_second
    return logs[(full, gpus)]
