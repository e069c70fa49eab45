"""A workload file's YAML → Python values, with the line of every field.

Safe loading only; aliases cannot blow a small file up, merge keys follow
safe_load, and every problem is reported as FILE:LINE: field: message.
"""

from __future__ import annotations

import yaml

from ..errors import InputError, Problem
from .source import NESTED_TOO_DEEPLY, Path, Source, field_name
from .values import describe


# libyaml's parser when PyYAML was built with it (about 10× faster), else the pure-Python one.
_Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Loader(_Base):
    """Safe loading; dates stay text (a title or date is not a datetime).

    libyaml calls back into Python to resolve every plain scalar's tag, which
    is a third of composing a file; the tag depends on the text alone, and a
    workload file repeats the same keys and values, so resolved tags are
    remembered. No path resolvers are registered, so descending and ascending
    the document need not be tracked.
    """

    _tags: dict[str, str] = {}
    _TAGS_KEPT = 4096

    def resolve(self, kind, value, implicit):
        if kind is yaml.ScalarNode and implicit[0]:
            tag = self._tags.get(value)
            if tag is None:
                tag = super().resolve(kind, value, implicit)
                if len(self._tags) < self._TAGS_KEPT:
                    self._tags[value] = tag
            return tag
        return super().resolve(kind, value, implicit)

    def descend_resolver(self, current_node, current_index):
        pass

    def ascend_resolver(self):
        pass


Loader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_UNREADABLE = object()   # a scalar that could not be constructed (reported as a problem)


class Builder:
    """Builds the Python value of a composed YAML document and the line of every field.

    One pass over the node tree instead of PyYAML's constructor plus a second
    walk for line numbers: scalars tagged as text (nearly all of them) are
    taken as they are, others (numbers, booleans, null) go through the safe
    constructor, so values follow YAML exactly as yaml.safe_load would. An
    alias yields the value already built for its anchor (as safe_load does),
    so aliases nested in aliases cannot blow a small file up ("billion laughs");
    fields reached through an alias keep the line of the anchor's text.
    Merge keys ('<<: *base', '<<: [*a, *b]') are applied as safe_load applies
    them, without changing the nodes (an anchor may sit inside a merge).
    """

    def __init__(self, loader, source: Source, problems: list[Problem]):
        self.loader, self.source, self.problems = loader, source, problems
        self.active: set[int] = set()   # collection nodes on the current path (recursive aliases)
        self.built: dict[int, object] = {}   # collection node → its value (aliases reuse it)

    def value(self, node, path: Path):
        if isinstance(node, yaml.ScalarNode):
            return node.value if node.tag == _STR_TAG else self._scalar(node, path)
        if id(node) in self.built:
            return self.built[id(node)]
        if id(node) in self.active:
            self.problems.append(Problem(self.source.path, node.start_mark.line + 1, field_name(path),
                                         "an alias refers to a value that contains it (recursive alias)"))
            return None
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                value = self._sequence(node, path)
            elif isinstance(node, yaml.MappingNode):
                value = self._mapping(node, path)
            else:
                value = self.loader.construct_object(node, deep=True)
            self.built[id(node)] = value
            return value
        finally:
            self.active.discard(id(node))

    def _scalar(self, node, path: Path):
        try:
            return self.loader.construct_object(node, deep=True)
        except ValueError:   # Python reads integers of at most 4,300 digits (sys.get_int_max_str_digits)
            self.problems.append(Problem(self.source.path, node.start_mark.line + 1, field_name(path),
                                         "not a number Python can read (more than 4,300 digits)"))
            return _UNREADABLE

    def _sequence(self, node, path: Path) -> list:
        items = []
        lines = self.source.lines
        for index, item in enumerate(node.value):
            at = path + (index,)
            lines[at] = item.start_mark.line + 1
            items.append(self.value(item, at))
        return items

    def _mapping(self, node, path: Path) -> dict:
        mapping: dict = {}
        explicit = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                # The first mapping named in '<<: [*a, *b]' wins over the later ones;
                # explicit keys win over all of them (YAML merge key, as safe_load).
                sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                merged: dict = {}
                for source_node in reversed(sources):
                    if not isinstance(source_node, yaml.MappingNode):
                        raise InputError([Problem(self.source.path, source_node.start_mark.line + 1,
                                                  field_name(path), "'<<' merges a mapping or a list of mappings "
                                                  f"(got {source_node.id})")])
                    source_value = self.value(source_node, path)
                    if isinstance(source_value, dict):      # None: a recursive alias, reported
                        merged.update(source_value)
                for key in merged:
                    self.source.lines.setdefault(path + (key,), key_node.start_mark.line + 1)
                mapping.update(merged)
            else:
                explicit.append((key_node, value_node))
        seen: dict[object, int] = {}
        lines = self.source.lines
        for key_node, value_node in explicit:
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode):
                self.problems.append(Problem(self.source.path, line, field_name(path),
                                             "a key must be a plain name, not a list or mapping"))
                continue
            key = key_node.value if key_node.tag == _STR_TAG else self._scalar(key_node, path)
            if key is _UNREADABLE:     # reported
                continue
            if not isinstance(key, str):
                # YAML reads `1:`, `null:` or `yes:` as a number, null or boolean; no field is named so.
                self.problems.append(Problem(self.source.path, line, field_name(path),
                                             f"a key must be a field name (got {describe(key)}; quote it if "
                                             "it is meant as text)"))
                continue
            if key in seen:
                self.problems.append(Problem(self.source.path, line, field_name(path + (key,)),
                                             f"duplicate key (first given on line {seen[key]})"))
                continue
            seen[key] = line
            at = path + (key,)
            lines[at] = line
            mapping[key] = self.value(value_node, at)
        return mapping


def parse_yaml(path: str, raw: bytes) -> tuple[object, Source]:
    source = Source(path)
    if b"\0" in raw:
        raise InputError([Problem(path, None, "", "this is a binary file, not YAML text")])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise InputError([Problem(path, line, "", f"not UTF-8 text (byte 0x{raw[error.start]:02x} at offset "
                                                 f"{error.start}); save the file as UTF-8")]) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    loader = Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise InputError([Problem(path, None, "", "the file is empty (expected a mapping with a "
                                                      "'workloads' list)")])
        problems: list[Problem] = []
        source.lines[()] = node.start_mark.line + 1
        data = Builder(loader, source, problems).value(node, ())
        if problems:
            raise InputError(problems)
    except RecursionError:
        raise InputError([Problem(path, None, "", NESTED_TOO_DEEPLY)]) from None
    except yaml.MarkedYAMLError as error:
        if error.problem and "nesting depth" in error.problem:   # libyaml's own limit (PyYAML ≥ 6.0.3 builds)
            mark = error.problem_mark or error.context_mark
            raise InputError([Problem(path, mark.line + 1 if mark else None, "", NESTED_TOO_DEEPLY)]) from None
        raise InputError([syntax_problem(path, text, error)]) from None
    except yaml.YAMLError as error:
        raise InputError([Problem(path, None, "", f"malformed YAML: {error}")]) from None
    finally:
        loader.dispose()
    return data, source


TAB_IN_INDENTATION = "tab characters are not allowed in YAML indentation; use spaces"

# Parser states that begin where something was opened and is reported only where the parser gave up,
# often a line or more later: (words in PyYAML's context, and in its problem, → what to tell the user).
# PyYAML's context_mark is where the thing was opened, its problem_mark where the parser gave up.
_UNFINISHED = (
    ("simple key", "", "a key without ':' after it (expected 'key: value')"),
    ("quoted scalar", "end of stream", "a quote that is not closed (expected the closing quote)"),
    ("quoted scalar", "document", "a quote that is not closed (expected the closing quote)"),
    ("flow sequence", "", "a '[' that is not closed (expected ',' between items and ']' at the end)"),
    ("flow mapping", "", "a '{' that is not closed (expected ',' between fields and '}' at the end)"),
)


def syntax_problem(path: str, text: str, error: yaml.MarkedYAMLError) -> Problem:
    """PyYAML's syntax error as a Problem at the line a user has to change.

    That is the problem mark (where the parser gave up), except for something opened and never
    finished (a key without ':', a quote or bracket not closed), which is reported at the context
    mark (where it was opened), naming the line where the parser gave up. A mark at the start of a
    line past the end of the text or on a blank line (the parser had read the line break before it
    gave up) stands for the end of the last line before it.
    """
    lines = text.splitlines()
    problem, context = error.problem_mark, error.context_mark
    what = error.problem or "malformed YAML"
    if problem is not None and _tab_at(lines, problem.line, problem.column):
        return Problem(path, problem.line + 1, "", TAB_IN_INDENTATION)
    if problem is not None and context is not None and context.line < problem.line:
        for where, found, meaning in _UNFINISHED:
            if where in (error.context or "") and found in what:
                stopped = _line(lines, problem)
                if stopped != context.line:
                    meaning += f"; the parser stopped on line {stopped + 1} ({what})"
                return Problem(path, context.line + 1, "", f"malformed YAML: {meaning}")
    mark = problem or context
    message = f"malformed YAML: {error.context}, {what}" if error.context else f"malformed YAML: {what}"
    return Problem(path, _line(lines, mark) + 1 if mark else None, "", message)


def _line(lines: list[str], mark) -> int:
    """The 0-based line of `mark`, moved back from the start of a blank line or the end of the text."""
    line = mark.line
    if mark.column == 0:
        while line > 0 and (line >= len(lines) or not lines[line].strip()):
            line -= 1
    return line


def _tab_at(lines: list[str], line: int, column: int) -> bool:
    """Whether the parser stopped at a tab: in the indentation of `line`, or at `column` of it."""
    if line >= len(lines):
        return False
    text = lines[line]
    indentation = text[: len(text) - len(text.lstrip(" \t-"))]
    return "\t" in indentation or text[column: column + 1] == "\t"
