"""The job record the accounting readers make (accounting.py, jobs_csv.py) and `usage` reads."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Job:
    """One job allocation as the accounting states it."""

    job_id: str
    """The job id as written (`123`, `123_4`, `123+0`; a CSV's `job`)."""
    name: str
    """The job name (sacct JobName; a CSV's `name`, else its `job`): what `jobs:` patterns match."""
    state: str
    """The state's long name (CANCELLED for `CANCELLED by 1234`), or the text written when unknown."""
    category: str
    """completed, running, pending, a lost cause (sacct.LOST) or unknown."""
    gpus: int | None
    """GPUs allocated (None: the accounting names none)."""
    seconds: int | float
    """Elapsed seconds: the time charged (a running job: so far)."""
    start: datetime | None
    """When it started, as written (None: never started)."""
    path: str
    line: int
    gpu_type: str | None = None
    """The GPU type the accounting names (sacct `gres/gpu:TYPE`; a CSV's `gpu`)."""
    nodes: int | None = None
    """Nodes allocated (sacct `node=N`; a CSV's `nodes`)."""
    workload: str | None = None
    """The workload a CSV row names (None: attributed by name)."""
    tokens: float | None = None
    """Tokens the job processed (sacct's Comment `tokens=N`, a CSV's `tokens`, or its `log`'s rate × the elapsed
    time)."""
    partition: str | None = None

    @property
    def end(self) -> datetime | None:
        """start + elapsed: a running job's time so far (its End is Unknown)."""
        return None if self.start is None else self.start + timedelta(seconds=self.seconds)

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


class Reading(Protocol):
    """What a format's reader asks of the reading it is part of (accounting.AccountingReader)."""

    def check(self, job: Job, state_text: str, gpus_text: str) -> None:
        """Note a job whose state is unknown or whose GPUs are not named."""

    def zone_of(self, path: str, line: int, moment: datetime) -> datetime:
        """A time checked against the run's one zone, returned as written without it."""
