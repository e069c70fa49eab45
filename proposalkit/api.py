"""The Python API: what the command line does, as functions that return records and print nothing.

Documented in docs/python-api.md. Importing this module loads no stage: each function
imports what it needs when called, so `import proposalkit` stays quick and loads
neither Jinja2 nor WeasyPrint.

Where a workload file comes from is said by the argument used, never guessed from
a string: a path (or a list of paths) is the positional argument, YAML text is
`text=`, and the file's structure as Python values is `data=` (as `json.load` and
`json.loads` are two functions, and pydantic's `model_validate` and
`model_validate_json` two methods).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .input.loading import LoadedFile
    from .planning.records import Plan
    from .planning.usage_records import Usage
    from .render.report import WrittenReports

PathLike = str | os.PathLike[str]


def plan(source: PathLike | Sequence[PathLike] | None = None, /, *, text: str | None = None,
         data: Mapping[str, Any] | None = None, name: str | None = None,
         base_dir: PathLike | None = None) -> Plan:
    """Validate and plan workloads → Plan, as `proposalkit plan` does.

    Give exactly one of:
      source  a workload file's path, or a list of paths planned together (workload
              names unique across them; the first file's `proposal` speaks for the plan);
      text    a workload file's YAML text;
      data    a workload file's structure as Python values: a mapping with `workloads`
              (and optionally `proposal` and `defaults`), as yaml.safe_load gives it.
    With text or data, `name` is what messages and WorkloadPlan.path call it (default
    "<string>", "<dict>"), and relative `config:` and pilot `log:` paths resolve against
    `base_dir` (default: the current directory); a file's resolve next to the file.

    Raises InputError with every problem found (each a Problem: path, line, field, message;
    no line for data) — the command line's exit 2 — and InfeasibleError when a workload
    fits no GPU configuration tried (exit 1). Prints nothing.
    """
    files = _load(source, text, data, name, base_dir)
    from .planning.planner import plan_files

    return plan_files(files)


def _load(source, text, data, name, base_dir, function: str = "plan") -> list[LoadedFile]:
    given = [what for what, value in (("a path", source), ("text=", text), ("data=", data)) if value is not None]
    if len(given) != 1:
        raise TypeError(f"{function}() takes one of a path (or a list of paths), text= or data= "
                        f"(got {' and '.join(given) if given else 'none'})")
    if source is not None:
        if name is not None or base_dir is not None:
            raise TypeError(f"{function}(): name= and base_dir= go with text= or data=; a file is named by its path "
                            "and its relative paths resolve next to it")
        from .input.loading import load_files

        return load_files(_paths(source, function))
    folder = os.path.abspath(base_dir if base_dir is not None else os.curdir)
    if text is not None:
        if not isinstance(text, str):
            raise TypeError(f"{function}(text=...) takes the YAML as str (got {type(text).__name__})")
        from .input.loading import load_file

        return [load_file(name or "<string>", raw=text.encode("utf-8", "surrogatepass"), base_dir=folder)]
    if not isinstance(data, Mapping):
        raise TypeError(f"{function}(data=...) takes a mapping, as a workload file holds (got {type(data).__name__})")
    from .input.loading import load_data

    return [load_data(data, name or "<dict>", base_dir=folder)]


def _paths(source, function: str = "plan", jobs: bool = False) -> list[str]:
    """The paths of `source` (a path or a list of them); `jobs`: accounting files, which have no text= or data=."""
    if isinstance(source, Mapping):
        raise TypeError(f"{function}() takes a mapping as {function}(data=...); the positional argument is a path"
                        if not jobs else f"{function}(jobs=...) takes the accounting files' paths, not a mapping")
    paths = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    out = []
    for path in paths:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"{function}() takes a path, or a list of paths, as str or os.PathLike (got "
                            f"{type(path).__name__}; " + ("for YAML text use text=, for a mapping data=)" if not jobs
                                                           else "jobs= are the accounting files' paths)"))
        path = os.fspath(path)
        if "\n" in path:
            raise TypeError(f"{function}(): a path holds no line break; " +
                            (f"for YAML text use {function}(text=...)" if not jobs else
                             "jobs= are the accounting files' paths, not their text"))
        out.append(path)
    return out


def plan_dict(plan: Plan) -> dict[str, Any]:
    """Plan → the plan JSON's structure (schema_version 1) as Python values (docs/json-output.md)."""
    from .render.output import plan_dict as _plan_dict

    return _plan_dict(plan)


def plan_json(plan: Plan) -> str:
    """Plan → the text `proposalkit plan --format json` prints."""
    from .render.output import plan_json as _plan_json

    return _plan_json(plan)


def plan_text(plan: Plan) -> str:
    """Plan → the table `proposalkit plan` prints."""
    from .render.output import plan_text as _plan_text

    return _plan_text(plan)


def plan_markdown(plan: Plan) -> str:
    """Plan → the Markdown summary table `proposalkit plan --format markdown` prints."""
    from .render.report import plan_markdown_table

    return plan_markdown_table(plan)


def write_reports(plan: Plan, output_dir: PathLike, formats: Iterable[str] | None = None) -> WrittenReports:
    """Write the report (section B of a proposal) into `output_dir`, as `proposalkit report` does.

    `formats` (default: all three): "md" (report.md with charts/*.svg beside it), "html"
    (report.html), "pdf" (report.pdf; needs Pango, see the README). All files or none: on
    any failure the folder is left as it was. Returns WrittenReports: the paths written,
    the body's length in pages, and warnings (a body past about two pages) that the
    command line prints on stderr; this function prints nothing. Raises InputError when
    the folder cannot be written or a PDF cannot be made, ValueError for another format.
    """
    from .render.report import FORMATS, write_reports as _write_reports

    chosen = list(FORMATS if formats is None else formats)
    unknown = [f for f in chosen if f not in FORMATS]
    if unknown or not chosen:
        raise ValueError(f"write_reports(): unknown format {', '.join(map(repr, unknown)) or '(none)'} "
                         f"(expected some of {', '.join(FORMATS)})")
    return _write_reports(plan, output_dir, chosen)


def diff(old: str, new: str, *, format: Literal["markdown", "json"] = "markdown") -> str:
    """The budget change between two versions of a workload file, as `proposalkit diff OLD NEW` prints it.

    Each side is a path, REV:PATH (the file at a git revision, read with git) or
    "/dev/null" (no file: every workload added or removed). Raises InputError as plan() does.
    """
    if format not in ("markdown", "json"):
        raise ValueError(f"diff(): unknown format {format!r} (expected 'markdown' or 'json')")
    from .review.diff_output import run_diff

    return run_diff(old, new, format)


def usage(source: PathLike | Sequence[PathLike] | None = None, /, *, jobs: PathLike | Sequence[PathLike],
          text: str | None = None, data: Mapping[str, Any] | None = None, name: str | None = None,
          base_dir: PathLike | None = None, as_of: date | str | None = None, start: date | str | None = None,
          sacct_format: str | None = None) -> Usage:
    """The plan beside the job accounting → Usage, as `proposalkit usage PLAN_FILE... --jobs ACCOUNTING...` does.

    The workload files are given as to plan() (a path or a list of paths, text= or data=, with name= and
    base_dir=); their `jobs:` globs attribute the jobs. `jobs` is an accounting file's path or a list of
    them: sacct --parsable2 output or CSV (docs/usage.md), read a line at a time; a job in two files is
    counted once, from the file named last. `as_of` and `start` are --as-of and --start (a date, or
    "YYYY-MM-DD"); `sacct_format` is --sacct-format, the --format sacct was run with for output written
    without its header ("JobID,JobName,…").

    Raises InputError with every problem found (FILE:LINE: field: message) — the command line's exit 2 —
    and InfeasibleError as plan() does. Notes on what was read (an unknown state, a job without GPUs) are
    in Usage.notes; nothing is printed.
    """
    day_as_of, day_start = _day("as_of", as_of), _day("start", start)
    if sacct_format is not None and not isinstance(sacct_format, str):
        raise TypeError(f"usage(sacct_format=...) takes the fields as sacct's --format writes them, one str "
                        f"(\"JobID,JobName,…\"; got {type(sacct_format).__name__})")
    accounting = _paths(jobs, "usage", jobs=True)
    if not accounting:
        raise TypeError("usage(jobs=...) takes at least one accounting file")
    files = _load(source, text, data, name, base_dir, "usage")
    from .input.accounting import AccountingReader
    from .planning.planner import plan_files
    from .planning.usage import job_patterns, usage as _usage

    reader = AccountingReader(accounting, sacct_format)
    return _usage(plan_files(files), reader, patterns=job_patterns(files), as_of=day_as_of, start=day_start,
                  reader=reader)


def _day(what: str, value) -> date | None:
    if value is None or (isinstance(value, date) and not isinstance(value, datetime)):
        return value
    if not isinstance(value, str):
        raise TypeError(f"usage({what}=...) takes a datetime.date or 'YYYY-MM-DD' (got {type(value).__name__})")
    from .planning.usage import as_of_date

    try:
        return as_of_date(value)
    except ValueError:
        raise ValueError(f"usage({what}=...): {value!r} is not a date YYYY-MM-DD") from None


def usage_dict(usage: Usage) -> dict[str, Any]:
    """Usage → the usage JSON's structure (schema_version 1) as Python values (docs/json-output.md)."""
    from .render.usage import usage_dict as _usage_dict

    return _usage_dict(usage)


def usage_json(usage: Usage) -> str:
    """Usage → the text `proposalkit usage FILE --jobs ACCOUNTING --format json` prints."""
    from .render.usage import usage_json as _usage_json

    return _usage_json(usage)


def usage_text(usage: Usage) -> str:
    """Usage → the tables `proposalkit usage FILE --jobs ACCOUNTING` prints."""
    from .render.usage import usage_text as _usage_text

    return _usage_text(usage)
