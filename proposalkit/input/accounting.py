"""Job accounting files → Job records, streamed: Slurm `sacct --parsable2` output or a plain CSV.

A file is read a line at a time and each job handed on as it is read, so a file of any size is read in
memory bounded by its longest line (MAX_LINE_CHARS) and the few problems kept to report. The format is
told from the first line: `|`-separated is sacct's (sacct.py), else CSV (jobs_csv.py).

- Job steps (`123.batch`, `123.0`) are skipped: the allocation's own line holds the GPUs and the time
  charged, and a step's would count them again. Files written with `--allocations` have none.
- A job in two files (monthly exports that overlap: a job running across the month's end) is counted
  once, from the file named last (a later export knows more). The files are read last to first, and the
  ids of those already read are kept as 8-byte digests (array 'Q', sorted): 8 bytes per job, only when
  more than one file is given. Within one file a JobID may repeat (`sacct --duplicates`: each run of a
  requeued job is charged), and each line counts.
- Malformed lines are input errors, FILE:LINE: field: message, all of a file's collected (up to
  MAX_PROBLEMS) before giving up. An unknown state, or a job without a GPU count, is reported as a
  note (UNKNOWN_STATE, NO_GPUS), never guessed.
- Times are kept as written: sacct prints the cluster's local time without a zone. A CSV time may carry
  an offset (`Z`, `+02:00`); every time of a run must then be in that one zone (the zone is said in the
  output), and no time is converted.
"""

from __future__ import annotations

import hashlib
import os
from array import array
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from ..errors import InputError, Problem
from ..files import Refused, open_regular
from . import sacct
from .jobs import Job
from .jobs_csv import csv_rows
from .sacct import FieldError

# A line longer than this is not accounting (sacct's longest fields, a job name and a TRES list, are
# a few hundred characters); refusing it keeps the memory bounded.
MAX_LINE_CHARS = 65_536
# Problems of one kind kept to print; the rest are counted ("… and 1,234 more").
MAX_PROBLEMS = 20
UNKNOWN_STATE, NO_GPUS = "unknown-state", "no-gpus"
ZONE_NONE = "as written, no zone"


@dataclass
class Notes:
    """What reading found to say, bounded: counts, and the first MAX_PROBLEMS notes of each kind."""

    kept: dict[str, list[Problem]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str, problem: Problem) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        kept = self.kept.setdefault(kind, [])
        if len(kept) < MAX_PROBLEMS:
            kept.append(problem)


class AccountingReader:
    """Iterate over the jobs of `paths` (each once); after the iteration the attributes say what was read."""

    def __init__(self, paths: list[str], sacct_format: str | None = None):
        self.paths = list(paths)
        self.sacct_fields = tuple(f.strip() for f in sacct_format.split(",")) if sacct_format else None
        self.jobs = 0                 # job allocations handed on
        self.steps = 0                # job-step lines skipped
        self.duplicates = 0           # jobs found again in an earlier file, counted once
        self.zone: str | None = None  # the time zone of every time read (ZONE_NONE: none written)
        self.zone_where: str | None = None
        self.notes = Notes()
        self.formats: dict[str, str] = {}      # path → "sacct" or "csv"

    def __iter__(self) -> Iterator[Job]:
        several = len(self.paths) > 1
        seen: list[array] = []
        for i, path in enumerate(reversed(self.paths)):
            ids = array("Q")
            for job in self._file(path):
                if several:
                    key = _digest(job.job_id)
                    if any(_holds(a, key) for a in seen):
                        self.duplicates += 1
                        continue
                    ids.append(key)
                self.jobs += 1
                yield job
            if several and i < len(self.paths) - 1:
                seen.append(array("Q", sorted(ids)))

    # ------------------------------------------------------------------ one file

    def _file(self, path: str) -> Iterator[Job]:
        problems: list[Problem] = []
        more = 0
        try:
            fd, _ = open_regular(path, "an accounting file (sacct --parsable2 output or CSV)")
            with os.fdopen(fd, encoding="utf-8", errors="replace", newline="") as handle:
                lines = _bounded_lines(path, handle)
                first = next(lines, None)
                if first is None:
                    raise InputError([Problem(path, None, "", "empty: expected sacct --parsable2 output "
                                              "(JobID|JobName|…) or CSV with a header line (job,gpus,…)")])
                if "|" in first[1]:
                    self.formats[path] = "sacct"
                    rows = self._sacct_rows(path, first, lines)
                else:
                    self.formats[path] = "csv"
                    rows = csv_rows(path, first, lines, self)
                for item in rows:
                    if isinstance(item, Problem):
                        if len(problems) < MAX_PROBLEMS:
                            problems.append(item)
                        else:
                            more += 1
                    elif not problems:
                        yield item
        except Refused as error:
            raise InputError([Problem(path, None, "", str(error))]) from None
        except OSError as error:
            raise InputError([Problem(path, None, "", f"cannot read ({error.strerror}); expected a readable "
                                                      "accounting file")]) from None
        if problems:
            if more:
                problems.append(Problem(path, None, "", f"… and {more:,} more malformed lines"))
            raise InputError(problems)

    def _sacct_rows(self, path: str, first: tuple[int, str], lines) -> Iterator[Job | Problem]:
        names = [f.strip() for f in first[1].rstrip("\r\n").split("|")]
        header = any(n.lower() == "jobid" for n in names)
        fields = names if header else list(self.sacct_fields or sacct.DEFAULT_FIELDS)
        if fields and fields[-1] == "":             # `--parsable` ends the header with '|'
            fields.pop()
        column = {name.lower(): i for i, name in enumerate(fields)}
        missing = [n for n in sacct.REQUIRED if n not in column]
        if "elapsedraw" not in column and "elapsed" not in column:
            missing.append("elapsedraw")
        if missing:
            given = "its header" if header else ("--sacct-format" if self.sacct_fields else
                                                 "the default --format (no header line)")
            yield Problem(path, first[0], "header", f"{given} lacks {', '.join(missing)} (fields: "
                                                    f"{', '.join(fields)}); expected sacct --parsable2 --format="
                                                    f"{','.join(sacct.DEFAULT_FIELDS)}")
            return
        try:
            self._zone(ZONE_NONE, path, first[0])
        except FieldError as error:
            yield Problem(path, first[0], "", error.message)
            return
        elapsed = "ElapsedRaw" if "elapsedraw" in column else "Elapsed"
        at = (column["jobid"], column["jobname"], column["alloctres"], column["state"], column["start"],
              column[elapsed.lower()], column.get("partition"), elapsed, column.get("comment"))
        width, header_line = len(fields), first[1].rstrip("\r\n") if header else None
        for lineno, text in _chain(first, lines, header):
            text = text.rstrip("\r\n")
            if text == header_line:      # a header repeated by `cat`
                continue
            values = text.split("|")
            if len(values) == width + 1 and values[-1] == "":  # `--parsable`: a '|' at the end
                values.pop()
            if len(values) != width:
                yield Problem(path, lineno, "", f"{len(values)} fields, expected {width} ({'|'.join(fields)})"
                                                + ("" if header else "; give the --format sacct was run with as "
                                                                     "--sacct-format"))
                continue
            try:
                job = self._sacct_job(path, lineno, values, at)
            except FieldError as error:
                yield Problem(path, lineno, error.field, error.message)
                continue
            if job is not None:
                yield job

    def _sacct_job(self, path: str, lineno: int, values: list[str], at) -> Job | None:
        i_id, i_name, i_tres, i_state, i_start, i_elapsed, i_partition, elapsed, i_comment = at
        job_id = values[i_id].strip()
        parts = sacct.job_id_parts(job_id)
        if parts is None:
            raise FieldError("JobID", f"expected JobID[.step], ArrayJobID_TaskID or HetJobID+Offset, got {job_id!r}")
        if parts[0]:
            self.steps += 1
            return None
        state, category = sacct.state_of(values[i_state])
        start = sacct.time_of(values[i_start], "Start")
        seconds = sacct.elapsed_seconds(values[i_elapsed], elapsed)
        gpus, gpu_type, nodes = sacct.gpus_of(values[i_tres])
        tokens = sacct.tokens_of(values[i_comment]) if i_comment is not None else None
        if tokens is not None:
            sacct.job_tokens(tokens, gpus, seconds, "Comment", values[i_comment].strip())
        job = Job(job_id, values[i_name], state, category or sacct.UNKNOWN, gpus, seconds, start, path, lineno,
                  gpu_type, nodes, tokens=tokens, partition=values[i_partition] if i_partition is not None else None)
        self.check(job, values[i_state].strip(), values[i_tres].strip())
        return job

    # ------------------------------------------------------------------ shared with the CSV reader

    def check(self, job: Job, state_text: str, gpus_text: str) -> None:
        """Notes for a job whose state is unknown or whose GPUs are not named (never guessed)."""
        if job.category == sacct.UNKNOWN:
            self.notes.add(UNKNOWN_STATE, Problem(
                job.path, job.line, "State",
                f"job {job.job_id}: unknown job state {state_text!r} (expected one of sacct's: "
                f"{', '.join(sacct.STATES)}): its hours are counted as used, neither completed nor lost"))
        if job.gpus is None and job.seconds > 0:
            self.notes.add(NO_GPUS, Problem(
                job.path, job.line, "AllocTRES" if self.formats.get(job.path) == "sacct" else "gpus",
                f"job {job.job_id}: no GPU count ({gpus_text or 'empty'}): its {job.seconds / 3600:,.2f} hours "
                "are not counted as GPU-hours (a CPU job, or gres/gpu not in AccountingStorageTRES)"))

    def _zone(self, zone: str, path: str, line: int) -> None:
        if self.zone is None:
            self.zone, self.zone_where = zone, f"{path}:{line}"
        elif zone != self.zone:
            raise FieldError("start", f"times in {zone} but {self.zone_where} has times {self.zone}: write "
                                      "every time of the accounting in one zone (no time is converted)")

    def zone_of(self, path: str, line: int, moment: datetime) -> datetime:
        """A CSV time checked against the run's one zone; returned without its zone, as written."""
        if moment.tzinfo is None:
            self._zone(ZONE_NONE, path, line)
            return moment
        offset = moment.utcoffset()
        total = int(offset.total_seconds()) // 60
        label = "UTC" if total == 0 else f"UTC{'+' if total > 0 else '-'}{abs(total) // 60:02d}:{abs(total) % 60:02d}"
        self._zone(label, path, line)
        return moment.replace(tzinfo=None)


def _chain(first: tuple[int, str], lines, header: bool):
    if not header:
        yield first
    yield from lines


def _bounded_lines(path: str, handle) -> Iterator[tuple[int, str]]:
    """(line number, line) of the handle's lines that hold something: blank lines and comments (`#` first:
    sacct writes none; a file may say how it was made) are skipped. Each line is read up to MAX_LINE_CHARS;
    a longer one is an error."""
    lineno = 0
    while True:
        text = handle.readline(MAX_LINE_CHARS)
        if not text:
            return
        lineno += 1
        if len(text) == MAX_LINE_CHARS and not text.endswith("\n"):
            raise InputError([Problem(path, lineno, "", f"a line longer than {MAX_LINE_CHARS:,} characters; "
                                                        "expected sacct --parsable2 output or CSV")])
        if text[0] != "#" and text.strip():
            yield lineno, text


def _digest(job_id: str) -> int:
    """An 8-byte digest of a job id (BLAKE2b): two ids of 1 million collide with probability ~3e-8."""
    return int.from_bytes(hashlib.blake2b(job_id.encode(), digest_size=8).digest(), "big")


def _holds(sorted_ids: array, key: int) -> bool:
    i = bisect_left(sorted_ids, key)
    return i < len(sorted_ids) and sorted_ids[i] == key
