"""The two errors a user can cause, each carrying what a message needs."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input file, in compiler style."""

    path: str
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


class ProposalkitError(Exception):
    """Base class of the errors the command line turns into messages."""


@dataclass
class InputError(ProposalkitError):
    """Invalid input: every problem found in the file(s); exit code 2."""

    problems: list[Problem] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.problems)


@dataclass
class InfeasibleError(ProposalkitError):
    """A pinned GPU type or count cannot hold a workload; exit code 1."""

    messages: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(self.messages)
