"""The errors a user can cause, each carrying what a message needs.

Every user-caused condition derives from ProposalkitError (never from a plain
ValueError, which the command line treats as a bug: exit 3). Messages are
made safe to print here, once: control characters in user text (a model id
holding a terminal escape sequence) are shown as escapes, never sent raw.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .text import one_line_escape


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input file, in compiler style."""

    path: str
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        text = f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        return one_line_escape(text)


class ProposalkitError(Exception):
    """Base class of every user-caused error; the command line turns each into a message and an exit code."""


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
        return "\n".join(one_line_escape(m) for m in self.messages)
