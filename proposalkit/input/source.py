"""Where a value stands in an input file: its path into the document and the line it is on.

Records only, read by yamlfile.py (which fills them), messages.py and the loaders (which write
FILE:LINE: field: message).
"""

from __future__ import annotations

from dataclasses import dataclass, field

Path = tuple[str | int, ...]  # a path into the document: ("workloads", 0, "data", "seq_len")

# Said of a file (yamlfile.py) or a mapping (from_python.py) nested past Python's recursion limit.
NESTED_TOO_DEEPLY = "values nested too deeply (more than a few hundred levels)"


def field_name(path: Path) -> str:
    """("workloads", 0, "data", "seq_len") → "workloads[0].data.seq_len"."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


@dataclass
class Source:
    """The text of one input file and where each field stands in it."""

    path: str
    lines: dict[Path, int] = field(default_factory=dict)
    from_defaults: set[Path] = field(default_factory=set)

    def line(self, path: Path) -> int | None:
        """The line of `path`, or of its nearest ancestor that has one."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), None)
