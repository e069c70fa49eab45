"""Slurm accounting as `sacct --parsable2` prints it: one field at a time, as its documentation states.

Source for every rule here: sacct(1), Slurm 25.11 (SchedMD/slurm doc/man/man1/sacct.1, the page at
https://slurm.schedmd.com/sacct.html), its job state page (https://slurm.schedmd.com/job_state_codes.html)
and the TRES page (https://slurm.schedmd.com/tres.html):

- `-P, --parsable2`: "Output will be '|' delimited without a '|' at the end" (`-p` adds one at the end);
  `-n, --noheader`: no header line; `-X, --allocations`: the allocations alone, no job steps.
- JobID: `JobID[.JobStep]` for a regular or heterogeneous job, `ArrayJobID_ArrayTaskID` for an array
  task, `HetJobID+HetJobOffset` for a heterogeneous job's component; a pending array prints its tasks
  as one range (`123_[5-10]`).
- ElapsedRaw: "the job's elapsed time in seconds"; Elapsed: `[DD-[HH:]]MM:SS`.
- Start, End: `YYYY-MM-DDTHH:MM:SS` unless SLURM_TIME_FORMAT changes it; a running job's End is
  `Unknown` (the man page's --truncate example), a job not started has Start `Unknown` (`None` in
  some versions). No time zone is printed: the times are the cluster's local time.
- AllocTRES: `name=count` pairs, comma-separated; GPUs as `gres/gpu=N` and, where a GPU type is
  tracked too, `gres/gpu:TYPE=N` beside it ("When including a specific GRES with a subtype, it is
  also recommended to include its generic type"), so the generic count is the job's GPUs and the
  typed counts are summed only when it is missing. Blank for a pending job.
- State: the long names of "JOB STATE CODES"; a cancelled job prints `CANCELLED by UID`.
- Comment: "The job's comment string when the AccountingStoreFlags parameter in the slurm.conf file contains
  'job_comment'"; set at submission (sbatch --comment) or after the job ended (sacctmgr(1), SPECIFICATIONS
  FOR JOB: "The user can only modify the comment string of their own job"; Comment is one of the few fields
  "that can be modified after job completion"). Slurm counts no tokens, so the Comment is where a job's
  tokens are recorded, as `tokens=N` (tokens_of); AdminComment is for administrators only, WCKey a
  workload key, neither a user's count.
"""

from __future__ import annotations

import functools
import re
from datetime import datetime

from ..bounds import BOUNDS
from ..units import parse_count

# What a job's state says about its GPU-hours. Used hours include every state (the hours are
# charged); the categories say which were lost, and why.
COMPLETED, RUNNING, PENDING = "completed", "running", "pending"
FAILED, TIMEOUT, OUT_OF_MEMORY, PREEMPTED, CANCELLED, NODE_FAIL, REQUEUED = (
    "failed", "timeout", "out_of_memory", "preempted", "cancelled", "node_fail", "requeued")
LOST = (FAILED, TIMEOUT, OUT_OF_MEMORY, PREEMPTED, CANCELLED, NODE_FAIL, REQUEUED)
UNKNOWN = "unknown"

# Every job state sacct prints, long name → category: the base states of sacct(1) "JOB STATE CODES"
# and job_state_codes.html, and the flags sacct shows in a base state's place (same page, "Job flags").
STATES: dict[str, str] = {
    "COMPLETED": COMPLETED,                 # exit code zero on all nodes
    "RUNNING": RUNNING, "SUSPENDED": RUNNING, "COMPLETING": RUNNING, "CONFIGURING": RUNNING,
    "RESIZING": RUNNING, "SIGNALING": RUNNING, "STAGE_OUT": RUNNING, "STOPPED": RUNNING,
    "POWER_UP_NODE": RUNNING, "UPDATE_DB": RUNNING,      # still holding its allocation: not finished
    "PENDING": PENDING, "RESV_DEL_HOLD": PENDING,        # never started
    "REVOKED": PENDING,                     # a federated sibling removed because another cluster started it
    "FAILED": FAILED, "LAUNCH_FAILED": FAILED, "RECONFIG_FAIL": FAILED,
    "TIMEOUT": TIMEOUT,
    "DEADLINE": TIMEOUT,                    # ended at its deadline: a time limit, as TIMEOUT
    "OUT_OF_MEMORY": OUT_OF_MEMORY,
    "NODE_FAIL": NODE_FAIL,
    "BOOT_FAIL": NODE_FAIL,                 # "launch failure, typically due to a hardware failure"
    "PREEMPTED": PREEMPTED,
    "CANCELLED": CANCELLED,
    "REQUEUED": REQUEUED, "REQUEUE_FED": REQUEUED, "REQUEUE_HOLD": REQUEUED,
    "SPECIAL_EXIT": REQUEUED,               # the run ended and was put back in the queue
}
# The short codes of the same table (`sacct --state` takes either), for hand-written CSV.
SHORT_STATES = {"BF": "BOOT_FAIL", "CA": "CANCELLED", "CD": "COMPLETED", "DL": "DEADLINE", "F": "FAILED",
                "NF": "NODE_FAIL", "OOM": "OUT_OF_MEMORY", "PD": "PENDING", "PR": "PREEMPTED", "R": "RUNNING",
                "RQ": "REQUEUED", "RS": "RESIZING", "RV": "REVOKED", "S": "SUSPENDED", "TO": "TIMEOUT"}

# The --format of the documented command (CONTRACT.md, `usage`), the field order of a file written
# with --noheader unless --sacct-format says otherwise.
DEFAULT_FIELDS = ("JobID", "JobName", "Account", "Partition", "AllocTRES", "ElapsedRaw", "State", "Start", "End")
REQUIRED = ("jobid", "jobname", "alloctres", "state", "start")     # and elapsedraw or elapsed
NOT_A_TIME = ("Unknown", "None", "")

_STATE = re.compile(r"([A-Z_]+)(?: by (\d+))?\+?")
_JOB_ID = re.compile(r"(\d+)(?:_(\d+|\[[^\]]*\]))?(?:\+(\d+))?(?:\.([A-Za-z0-9_-]+))?")
_ELAPSED = re.compile(r"(?:(?:(\d+)-)?(\d+):)?(\d+):(\d+)(?:\.\d+)?")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")


class FieldError(ValueError):
    """One field that does not read as sacct writes it: (field, message)."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


def state_of(text: str) -> tuple[str, str | None]:
    """(the long state name, its category): 'CANCELLED by 1234' → ('CANCELLED', 'cancelled'); an
    unknown name → (name, None), reported by the caller and not guessed."""
    category = STATES.get(text)
    if category is not None:        # the long name as sacct prints it: most lines
        return text, category
    text = text.strip()
    name = SHORT_STATES.get(text.upper(), text)
    m = _STATE.fullmatch(name)
    if m is None:
        return name, None
    return m.group(1), STATES.get(m.group(1))


def job_id_parts(text: str) -> tuple[bool, bool] | None:
    """(is a job step, is a pending array's range) for a JobID as sacct writes it; None when it is
    not a job id. `123`, `123_4`, `123+0` are allocations; `123.batch`, `123_4.0`, `123+1.extern` steps."""
    m = _JOB_ID.fullmatch(text)
    if m is None:
        return None
    return m.group(4) is not None, (m.group(2) or "").startswith("[")


def bounded(value: float, bound: str, field: str, text: str) -> float:
    """A job's elapsed seconds (bound "hours"), GPUs (bound "gpus") or tokens (bound "tokens") within BOUNDS: beyond
    them it is a typo (and a start + elapsed past the calendar's end)."""
    high = BOUNDS[bound].high * (3600 if bound == "hours" else 1)
    if value > high:
        raise FieldError(field, f"implausibly large: {text!r} ({BOUNDS[bound].expected})")
    return value


def elapsed_seconds(text: str, field: str) -> int:
    """Seconds from ElapsedRaw (`3600`) or Elapsed (`[DD-[HH:]]MM:SS`, as `1-02:03:04`)."""
    text = text.strip()
    if text.isdigit():
        return bounded(int(text), "hours", field, text)
    m = _ELAPSED.fullmatch(text)
    if m is None:
        raise FieldError(field, f"expected seconds or [D-]HH:MM:SS, got {text!r}")
    days, hours, minutes, seconds = (int(g) if g else 0 for g in m.groups())
    if minutes >= 60 or seconds >= 60 or (m.group(1) and hours >= 24):
        raise FieldError(field, f"expected [D-]HH:MM:SS with minutes and seconds under 60, got {text!r}")
    return bounded(((days * 24 + hours) * 60 + minutes) * 60 + seconds, "hours", field, text)


def time_of(text: str, field: str) -> datetime | None:
    """A Start or End time as written (no zone: the cluster's local time); None for Unknown/None."""
    text = text.strip()
    if text in NOT_A_TIME:
        return None
    if _TIME.fullmatch(text) is None:
        raise FieldError(field, f"expected YYYY-MM-DDTHH:MM:SS (sacct's standard time format; unset "
                                f"SLURM_TIME_FORMAT) or Unknown, got {text!r}")
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise FieldError(field, f"not a date and time: {text!r}") from None


_GPUS = re.compile(r"(?:^|,)\s*gres/gpu(?::([^=,]*))?=([^,]*)")
_NODES = re.compile(r"(?:^|,)\s*node=([^,]*)")


def _count(value: str, key: str) -> int:
    value = value.strip()
    if not value.isdigit():
        raise FieldError("AllocTRES", f"{key}: expected a count, got {value!r}")
    return bounded(int(value), "gpus", "AllocTRES", f"{key}={value}")


@functools.lru_cache(maxsize=4096)     # a month's jobs share a few TRES strings; bounded
def gpus_of(tres: str) -> tuple[int | None, str | None, int | None]:
    """(GPUs, GPU type, nodes) from AllocTRES: `gres/gpu=N`, else the sum of `gres/gpu:TYPE=N`;
    GPUs None when it names none (the caller reports it); the type when exactly one is named."""
    node = _NODES.search(tres)
    nodes = _count(node.group(1), "node") if node else None
    total, typed, types = None, 0, set()
    for kind, value in _GPUS.findall(tres):
        if kind:
            typed += _count(value, f"gres/gpu:{kind}")
            types.add(kind)
        else:
            total = _count(value, "gres/gpu")
    gpus = total if total is not None else (typed if types else None)
    return (gpus or None), (next(iter(types)) if len(types) == 1 else None), nodes


# `tokens=N` in a Comment: the key on its own (not `max_tokens=`), any case; `tokens:` too, so that it is
# reported with the form to write rather than ignored. The value runs to the next space, comma or semicolon.
_TOKENS = re.compile(r"(?<![\w.-])tokens\s*([=:])\s*([^\s,;]*)", re.IGNORECASE)
TOKENS_FORM = "tokens=N, e.g. tokens=195000000 or tokens=195M (suffixes k, M, B, T)"


def tokens_of(comment: str, field: str = "Comment") -> float | None:
    """The tokens a Comment records as `tokens=N` (None: it records none; the rest is free text)."""
    found = _TOKENS.findall(comment)
    if not found:
        return None
    if len(found) > 1:
        raise FieldError(field, f"tokens given {len(found)} times in {comment.strip()!r}: write one {TOKENS_FORM}")
    separator, text = found[0]
    if separator != "=" or not text:
        raise FieldError(field, f"expected {TOKENS_FORM}, got {comment.strip()!r}")
    try:
        value = parse_count(text)
    except ValueError:
        value = -1.0
    if value < 0:
        raise FieldError(field, f"tokens: expected a non-negative count, {TOKENS_FORM}; got {text!r}")
    return bounded(value, "tokens", field, f"tokens={text}")


def job_tokens(tokens: float, gpus: int | None, seconds: float, field: str, text: str) -> float:
    """A job's tokens (`text` as written) checked against its GPU-seconds: more than BOUNDS' tokens per second per
    GPU is a slip of the count (a suffix, or another job's total)."""
    bound = BOUNDS["tokens_per_second_per_gpu"]
    if gpus and seconds > 0 and tokens / (gpus * seconds) > bound.high:
        raise FieldError(field, f"{text!r}: {tokens / (gpus * seconds):,.0f} tokens per second per GPU ({tokens:,.0f} "
                                f"tokens in {gpus} GPU{'s' if gpus > 1 else ''} × {seconds:,.0f} s); expected "
                                f"{bound.expected}")
    return tokens
