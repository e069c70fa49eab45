"""A workload file's structure given as Python values (the Python API's `data=`) → checked plain values.

What yaml.safe_load of a workload file gives is what is accepted: mappings with text keys,
lists (tuples too), text, numbers, true/false and None. Anything else is a problem at its
field, reported with the rest as a file's are; no line numbers (there is no text). The
values are copied, so loading never changes the caller's mapping.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import InputError, Problem
from .values import describe
from .source import NESTED_TOO_DEEPLY, Path, Source, field_name

_SCALARS = (str, bool, int, float, type(None))


class _Copier:
    def __init__(self, source: Source):
        self.source = source
        self.problems: list[Problem] = []
        self.active: set[int] = set()   # containers on the current path: one holding itself is refused

    def problem(self, path: Path, message: str) -> None:
        self.problems.append(Problem(self.source.path, None, field_name(path), message))

    def value(self, value: object, path: Path) -> object:
        if isinstance(value, _SCALARS):
            return value
        if not isinstance(value, (Mapping, list, tuple)):
            self.problem(path, f"not a value a workload file can hold (got {type(value).__name__} "
                               f"{describe(value)}; expected text, a number, true or false, None, a list or a "
                               "mapping)")
            return None
        if id(value) in self.active:
            self.problem(path, "a value that contains itself")
            return None
        self.active.add(id(value))
        try:
            if isinstance(value, Mapping):
                return self._mapping(value, path)
            return [self.value(item, path + (index,)) for index, item in enumerate(value)]
        finally:
            self.active.discard(id(value))

    def _mapping(self, value: Mapping, path: Path) -> dict:
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                self.problem(path, f"a key must be a field name (got {describe(key)}; expected text)")
                continue
            out[key] = self.value(item, path + (key,))
        return out


def plain_values(path: str, data: object) -> tuple[object, Source]:
    """`data` copied as the values a YAML file would give, and an empty line map naming `path`.

    InputError with every value that is not one, at its field.
    """
    source = Source(path)
    copier = _Copier(source)
    try:
        value = copier.value(data, ())
    except RecursionError:
        raise InputError([Problem(path, None, "", NESTED_TOO_DEEPLY)]) from None
    if copier.problems:
        raise InputError(copier.problems)
    return value, source
