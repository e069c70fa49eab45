"""The plan's notes in words: the one place a Note (proposalkit/notes.py) becomes a sentence.

WORDS maps each kind to the function that words it from the note's values; the plan JSON, the
terminal and the reports all print note_text(). A kind without wording is a KeyError, not a blank.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..notes import TEXT, Note

WORDS: dict[str, Callable[[Note], str]] = {
    TEXT: lambda n: n["text"],
}


def note_text(note: Note) -> str:
    """The sentence that states `note`."""
    return WORDS[note.kind](note)


def note_texts(notes: Iterable[Note]) -> tuple[str, ...]:
    return tuple(note_text(n) for n in notes)


def note_record(note: Note) -> dict:
    """A note as the plan JSON gives it: kind, values (base units, ids), sources (reference ids), text."""
    values = {key: list(value) if isinstance(value, tuple) else value for key, value in note.values}
    return {"kind": note.kind, "values": values, "sources": list(note.sources), "text": note_text(note)}
