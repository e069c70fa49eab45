"""An explanation as a record: what the planner assumed or derived, its numbers and its sources.

A Note names what it says by `kind` (a fixed id; render/notes.py words each kind, in one place),
carries its numbers in base units and ids as `values`, and the ids of the references it rests on
(catalog/references.py) as `sources`. Code selects notes by kind, never by reading a sentence, and
the report's references are the sources its notes and derivations cite (STYLE.md: explanations as
records). Imports nothing of the package.
"""

from __future__ import annotations

from dataclasses import dataclass

Value = str | int | float | bool | None | tuple


@dataclass(frozen=True)
class Note:
    """One assumption or derivation step: `kind` says what it states, `values` its numbers (base
    units: bytes, tokens, seconds, fractions) and ids, `sources` the reference ids it cites."""

    kind: str
    """What it states: a fixed id (render/notes.py WORDS words each), e.g. "buffer-default"."""
    values: tuple[tuple[str, Value], ...] = ()
    """Its numbers (base units) and ids, by name, in order; note["name"] reads one."""
    sources: tuple[str, ...] = ()
    """The ids of the works it cites (catalog/references.py); the supplement's S.6 lists them."""

    def __getitem__(self, name: str) -> Value:
        for key, value in self.values:
            if key == name:
                return value
        raise KeyError(f"{self.kind} note has no value {name!r}")

    def __contains__(self, name: object) -> bool:
        """Whether the note has a value named `name` (never a search of its words)."""
        return any(key == name for key, _ in self.values)

    def get(self, name: str, default: Value = None) -> Value:
        for key, value in self.values:
            if key == name:
                return value
        return default

    def as_dict(self) -> dict[str, Value]:
        return dict(self.values)


def note(kind: str, sources: tuple[str, ...] = (), **values: Value) -> Note:
    """A Note of `kind` with its values by name (in the order given) and the reference ids it cites."""
    return Note(kind, tuple(values.items()), tuple(sources))


def of_kind(notes, *kinds: str) -> list[Note]:
    """The notes of the given kinds, in order."""
    return [n for n in notes if n.kind in kinds]


@dataclass(frozen=True)
class Reference:
    """A work the plan cites: its id (what notes name), its in-text citation and the full citation."""

    id: str
    """What notes cite it by, e.g. "rajbhandari-2020"."""
    key: str
    """The in-text citation, e.g. "Rajbhandari et al. 2020"."""
    text: str
    """The full citation."""
