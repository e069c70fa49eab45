"""The package's layering, held by its import graph (read statically: every `import` and
`from … import` in every module, at module level, inside functions and under TYPE_CHECKING
alike, relative imports resolved; a lazy import is still an arrow).

- No import cycle between modules.
- Stages, lowest first; a module imports only from its own stage or lower ones (STAGES).
- The report is made from the plan alone: render/ reads the plan's records, not the catalogs,
  the estimates or the input (RENDER_READS).
- Every module imports alone in a fresh interpreter (no module works only because another one
  happened to be imported first).
- No module is over MAX_LINES lines.

The checks are functions of a package directory and a stage table, so the tests at the end feed
them a small package built in a temporary directory and show each one failing, naming the arrow.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "proposalkit"

# The stages, lowest first: (name, module prefixes). Every module of the package is in exactly one
# (its longest matching prefix wins). The lowest stage holds what every stage may name: the
# catalogs (GPUs, models and their shapes, engines, resources), units, bytes per value, the option
# lists a workload may name, the planning knobs and their defaults (knobs.py), bounded file reading,
# the plausibility bounds (input/ and pilot/ check by them), the user errors, text escaping and the note
# record. The pilot-log readers sit with input/ (a workload cites its pilot logs); the package's public
# API (proposalkit/__init__.py) and the CLI are the top.
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("catalog/units", ("proposalkit.catalog", "proposalkit.units", "proposalkit.precision", "proposalkit.options",
                       "proposalkit.knobs", "proposalkit.files", "proposalkit.errors", "proposalkit.text",
                       "proposalkit.notes", "proposalkit.bounds")),
    ("input", ("proposalkit.input", "proposalkit.pilot")),
    ("estimate", ("proposalkit.estimate",)),
    ("planning", ("proposalkit.planning",)),
    ("render", ("proposalkit.render",)),
    ("review", ("proposalkit.review",)),
    ("cli", ("proposalkit.cli", "proposalkit.__main__", "proposalkit")),
)
# What render/ may import besides itself: the plan's records (its notes among them), the records of the plan
# beside the job accounting (`usage`), and the text helpers below them.
RENDER_READS: tuple[str, ...] = ("proposalkit.planning.records", "proposalkit.planning.intervals",
                                 "proposalkit.planning.pilots",
                                 "proposalkit.planning.usage_records",
                                 "proposalkit.notes", "proposalkit.units", "proposalkit.text", "proposalkit.errors")
MAX_LINES = 500


@dataclass(frozen=True)
class Arrow:
    source: str     # the importing module
    target: str     # the module imported (a package: its __init__)
    path: Path      # the importing file
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.source} → {self.target}"


def modules(package_dir: Path) -> dict[str, Path]:
    """Dotted module name → file, for every .py under the package directory."""
    out = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


@functools.lru_cache(maxsize=None)
def import_graph(package_dir: Path) -> dict[str, list[Arrow]]:
    """Module → its arrows to other modules of the package (outside imports are left out)."""
    mods = modules(package_dir)

    def owner(name: str | None) -> str | None:
        # `a.b.c` where c is a function or class of module a.b: the arrow goes to a.b
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, list[Arrow]] = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        arrows = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [owner(a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in mods else owner(module)
                           for a in node.names]
            else:
                continue
            arrows += [Arrow(name, t, path, node.lineno) for t in dict.fromkeys(targets) if t and t != name]
        graph[name] = arrows
    return graph


def cycles(graph: dict[str, list[Arrow]]) -> list[list[Arrow]]:
    """One cycle through each strongly connected group of modules (Tarjan), as its arrows."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for arrow in graph.get(v, ()):
            w = arrow.target
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    out = []
    for group in groups:
        # the shortest way back to the group's first module, by breadth-first search inside it
        start = min(group)
        came: dict[str, Arrow] = {}
        frontier = [start]
        while frontier and start not in came:
            nxt = []
            for v in frontier:
                for arrow in graph[v]:
                    if arrow.target in group and arrow.target not in came:
                        came[arrow.target] = arrow
                        nxt.append(arrow.target)
            frontier = nxt
        path, v = [], start
        while True:
            arrow = came[v]
            path.append(arrow)
            v = arrow.source
            if v == start:
                break
        out.append(path[::-1])
    return out


def folders(graph: dict[str, list[Arrow]]) -> dict[str, list[Arrow]]:
    """The same graph one level up: each module stands for its folder (proposalkit.input.configs.read →
    proposalkit.input; a top-level module stands for itself), arrows within a folder left out."""
    def folder(m: str) -> str:
        return ".".join(m.split(".")[:2])

    out: dict[str, list[Arrow]] = {}
    for m, arrows in graph.items():
        out.setdefault(folder(m), []).extend(
            Arrow(folder(a.source), folder(a.target), a.path, a.line) for a in arrows if folder(a.target) != folder(m))
    return out


def stage_of(module: str, stages=STAGES) -> int | None:
    best, found = -1, None
    for i, (_, prefixes) in enumerate(stages):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, found = len(p), i
    return found


def stage_problems(graph: dict[str, list[Arrow]], stages=STAGES) -> list[str]:
    """A module in no stage, and every arrow from a lower stage to a higher one."""
    out = [f"{m}: in no stage (add it to STAGES in tests/test_import_graph.py)"
           for m in graph if stage_of(m, stages) is None]
    for arrows in graph.values():
        for a in arrows:
            s, t = stage_of(a.source, stages), stage_of(a.target, stages)
            if None not in (s, t) and t > s:
                out.append(f"{a}: {stages[s][0]} imports from {stages[t][0]}, a higher stage")
    return out


def reads_only(graph: dict[str, list[Arrow]], package: str, allowed: tuple[str, ...]) -> list[str]:
    """Arrows out of `package` to anything but itself and `allowed`."""
    def within(m: str, p: str) -> bool:
        return m == p or m.startswith(p + ".")

    return [f"{a}: {package} reads only {', '.join(allowed)}"
            for m, arrows in graph.items() if within(m, package)
            for a in arrows if not within(a.target, package) and not any(within(a.target, p) for p in allowed)]


# Imports each module named on stdin as if in a fresh interpreter: the package's modules are
# dropped from sys.modules before each one (third-party ones stay loaded: they are not the subject).
_IMPORT_EACH = """
import importlib, sys, traceback
root = sys.argv[1]
sys.path.insert(0, sys.argv[2])
for name in sys.stdin.read().split():
    for loaded in [m for m in sys.modules if m == root or m.startswith(root + ".")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except BaseException as e:
        print(f"{name}: {type(e).__name__}: {e}")
"""


def import_alone_failures(package_dir: Path) -> list[str]:
    names = sorted(modules(package_dir))
    result = subprocess.run([sys.executable, "-c", _IMPORT_EACH, package_dir.name, str(package_dir.parent)],
                            input="\n".join(names), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def long_modules(package_dir: Path, most: int = MAX_LINES) -> list[str]:
    out = []
    for name, path in modules(package_dir).items():
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > most:
            out.append(f"{path}: {n} lines (at most {most}: split it along its meaning)")
    return out


# ---------------------------------------------------------------- the package


def test_no_import_cycles():
    found = cycles(import_graph(PACKAGE_DIR))
    assert not found, "import cycles:\n" + "\n".join("  " + "; ".join(map(str, c)) for c in found)


def test_no_import_cycles_between_folders():
    """input/ and pilot/ share a stage; neither may reach back into the other (nor any two folders)."""
    found = cycles(folders(import_graph(PACKAGE_DIR)))
    assert not found, "folder cycles:\n" + "\n".join("  " + "; ".join(map(str, c)) for c in found)


def test_each_module_imports_only_its_own_stage_or_lower():
    problems = stage_problems(import_graph(PACKAGE_DIR))
    assert not problems, "\n".join(problems)


def test_the_report_reads_only_the_plan():
    problems = reads_only(import_graph(PACKAGE_DIR), "proposalkit.render", RENDER_READS)
    assert not problems, "\n".join(problems)


def test_every_module_imports_alone():
    failures = import_alone_failures(PACKAGE_DIR)
    assert not failures, "\n".join(failures)


def test_no_module_is_over_the_line_limit():
    assert not long_modules(PACKAGE_DIR), "\n".join(long_modules(PACKAGE_DIR))


def test_the_graph_sees_the_package():
    """The checks above read what they claim to: every module, lazy imports included."""
    graph = import_graph(PACKAGE_DIR)
    assert len(graph) == len(list(PACKAGE_DIR.rglob("*.py")))
    # a lazy import inside a function (input/pilots.py reads the logs on first use)
    assert "proposalkit.pilot" in {a.target for a in graph["proposalkit.input.pilots"]}
    # `from .. import catalog` is an arrow to the package; `from ..catalog import resources` to the module
    assert "proposalkit.catalog.resources" in {a.target for a in graph["proposalkit.planning.search"]}


# ---------------------------------------------------------------- the checks fail when they should


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root / "pkg"


SYNTHETIC_STAGES = (("low", ("pkg.low",)), ("high", ("pkg.high", "pkg")))


def test_a_cycle_is_found_and_named(tmp_path):
    pkg = _package(tmp_path, {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/records.py": "from .maths import area\n",
        "low/maths.py": "def area():\n    from .records import Box   # lazy: still an arrow\n",
    })
    found = cycles(import_graph(pkg))
    assert len(found) == 1
    text = "; ".join(map(str, found[0]))
    assert "pkg.low.maths → pkg.low.records" in text and "pkg.low.records → pkg.low.maths" in text
    assert "maths.py:2:" in text and "records.py:1:" in text


def test_a_cycle_between_folders_is_found(tmp_path):
    pkg = _package(tmp_path, {
        "__init__.py": "",
        "reader/__init__.py": "from ..logs import parse\n",
        "logs/__init__.py": "",
        "logs/parse.py": "from ..reader import files\n",
        "reader/files.py": "",
    })
    assert not cycles(import_graph(pkg))        # no module cycle: reader → logs.parse → reader.files
    found = cycles(folders(import_graph(pkg)))
    assert ["; ".join(f"{a.source} → {a.target}" for a in c) for c in found] == ["pkg.logs → pkg.reader; pkg.reader → pkg.logs"]


def test_an_upward_import_is_found_and_named(tmp_path):
    pkg = _package(tmp_path, {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/reader.py": "import os\n\n\ndef read():\n    from ..high.report import render\n",
        "high/__init__.py": "",
        "high/report.py": "from ..low.reader import read\n",
        "stray.py": "",
    })
    graph = import_graph(pkg)
    upward = f"{pkg / 'low' / 'reader.py'}:5: pkg.low.reader → pkg.high.report: low imports from high, a higher stage"
    assert stage_problems(graph, SYNTHETIC_STAGES) == [upward]     # high → low, downward, is allowed
    unplaced = stage_problems(graph, (("low", ("pkg.low",)), ("high", ("pkg.high",))))
    assert "pkg.stray: in no stage (add it to STAGES in tests/test_import_graph.py)" in unplaced
    assert upward in unplaced


def test_a_report_reaching_past_the_plan_is_found(tmp_path):
    pkg = _package(tmp_path, {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/catalog.py": "",
        "low/records.py": "",
        "high/__init__.py": "",
        "high/view.py": "from ..low.records import Plan\nfrom ..low import catalog\n",
    })
    assert reads_only(import_graph(pkg), "pkg.high", ("pkg.low.records",)) == [
        f"{pkg / 'high' / 'view.py'}:2: pkg.high.view → pkg.low.catalog: pkg.high reads only pkg.low.records"]


def test_a_module_that_imports_only_after_another_is_found(tmp_path):
    """b works when a was imported first, not alone: the check imports each as if in a fresh interpreter."""
    pkg = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "X = 1\nfrom .b import Y\n",
        "b.py": "from .a import X\nY = 2\n",
    })
    failures = import_alone_failures(pkg)
    assert [f.split(":")[0] for f in failures] == ["pkg.b"]
    assert "ImportError" in failures[0] and "partially initialized" in failures[0]


def test_a_long_module_is_found(tmp_path):
    pkg = _package(tmp_path, {"__init__.py": "", "big.py": "x = 1\n" * 501, "fine.py": "x = 1\n" * 500})
    assert long_modules(pkg) == [f"{pkg / 'big.py'}: 501 lines (at most 500: split it along its meaning)"]
