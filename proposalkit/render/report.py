"""Report context → Jinja2 → Markdown and HTML (section B of a NAIRR Pilot proposal), and writing the set.

Pipeline: `report_context(plan)` (context.py) turns the Plan into a context
made for the templates; `render_markdown` / `render_html` fill
`templates/report.md.j2` and `templates/report.html.j2`; `pdf.render_pdf`
runs the HTML through WeasyPrint; `write_reports` writes the set of files
all at once or not at all (`swap_in`).

Numbers are formatted in one place, the `FILTERS` of format.py (gib, gb,
size, hours, days, count, si, rate, pct, factor, in_unit), by type,
never by key name; the derivation lines call the same functions. The
templates may not print a bare float: both environments refuse one
(`_finalize_*`), so every number goes through a filter.

User text is escaped in every format: HTML by Jinja's autoescape; Markdown by
`md_escape`, applied automatically to every string the Markdown template
prints (the Markdown environment's `finalize`), unless a filter already made
it safe. Control characters (ESC, BEL, NUL, ...) become visible escapes in
both (`control_escape`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from markupsafe import Markup

from ..errors import InputError, Problem
from ..planning.records import Plan
from . import TEMPLATES_DIR, folder_lock, pdf
from .context import ReportContext, report_context
from .format import FILTERS, Safe, control_escape, formula_safe, md_escape
from .section_b import NAME_BREAKS


def _refuse_float(value: object) -> object:
    if isinstance(value, float):
        raise TypeError(f"template prints a bare float ({value!r}): format it with a filter "
                        f"({', '.join(sorted(FILTERS))})")
    return value


def _finalize_html(value: object) -> object:
    """Control characters in printed text become escapes (ESC → '\\x1b'); Jinja then HTML-escapes it.

    Markup keeps its type: the escapes add no character HTML gives a meaning.
    """
    value = _refuse_float(value)
    if isinstance(value, Markup):
        return Markup(control_escape(value))
    if isinstance(value, str):
        return control_escape(value)
    return value


def _finalize_md(value: object) -> object:
    value = _refuse_float(value)
    if isinstance(value, (Safe, int)) and not isinstance(value, bool):
        return value
    return md_escape(value)


def name_cell(text: object) -> Markup:
    """A workload name for an HTML table cell: formula_safe, escaped, a <wbr> after each character it may break
    after (escaping writes none of them: &amp; &lt; &gt; &#34; &#39;)."""
    escaped = str(Markup.escape(formula_safe(text)))
    return Markup(re.sub(f"([{re.escape(NAME_BREAKS)}])", r"\1<wbr>", escaped))


def environment(kind: str):
    """The Jinja2 environment for 'md' or 'html': StrictUndefined, filters in one place.

    HTML autoescapes; Markdown escapes every printed string with md_escape
    (through `finalize`) unless it is already Safe. `cell` marks user text that
    starts a table cell: formula_safe, so a spreadsheet reads it as text;
    `name_cell` a workload name in section B's first column, which in HTML may
    break only after '-', '_' or '.' (a <wbr> after each: section_b.NAME_BREAKS).
    """
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES_DIR)),
        autoescape=(kind == "html"),
        undefined=StrictUndefined,
        finalize=_finalize_html if kind == "html" else _finalize_md,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(FILTERS)
    if kind == "md":
        env.filters["md"] = md_escape
        env.filters["cell"] = lambda text: md_escape(formula_safe(text))
        env.filters["name_cell"] = env.filters["cell"]
    else:
        env.filters["cell"] = formula_safe     # then autoescaped
        env.filters["name_cell"] = name_cell
    return env


class BrokenInstallError(RuntimeError):
    """A file that ships inside the package (a template, a stylesheet) is missing.

    Never the user's mistake, and never an output-folder error: Jinja's
    TemplateNotFound is an OSError, which the command line would otherwise
    report as "cannot write" into -o. An internal error (exit 3).
    """


def _render(kind: str, name: str, **context) -> str:
    """Template `name` of the `kind` environment filled with `context`; BrokenInstallError when one is missing."""
    from jinja2 import TemplateNotFound

    try:
        return environment(kind).get_template(name).render(**context)
    except TemplateNotFound as error:
        raise BrokenInstallError(f"report template {error.name!r} is missing from {TEMPLATES_DIR}: "
                                 "proposalkit is installed incompletely; reinstall it") from None


def render_markdown(context: ReportContext) -> str:
    """Section B as it is submitted (report.md)."""
    return re.sub(r"\n{3,}", "\n\n", _render("md", "report.md.j2", r=context))


def render_html(context: ReportContext) -> str:
    """Section B as it is submitted (report.html; report.pdf is made from it)."""
    return _render("html", "report.html.j2", r=context)


def render_supplement_markdown(context: ReportContext) -> str:
    """The supplement: the arithmetic, alternatives, assumptions, validation and references (supplement.md)."""
    return re.sub(r"\n{3,}", "\n\n", _render("md", "supplement.md.j2", r=context))


def render_supplement_html(context: ReportContext) -> str:
    charts_html = {k: Markup(c.svg) for k, c in context.charts.items()}   # built by charts.py, escaped there
    return _render("html", "supplement.html.j2", r=context, svg=charts_html)


def plan_markdown_table(plan: Plan) -> str:
    """Section B's request and table alone (`proposalkit plan --format markdown`)."""
    text = _render("md", "plan.md.j2", r=report_context(plan))
    return text if text.endswith("\n") else text + "\n"      # a text stream ends its last line


FORMATS = ("md", "html", "pdf")     # the files of a report set, in the order they are written
DOCUMENTS = ("report", "supplement")   # section B as submitted, and its supplement (CONTRACT.md)


def _file_order(name: str) -> tuple[int, int]:
    """Section B's files first (md, html, pdf), then the supplement's, its charts before its Markdown."""
    stem, _, ext = name.rpartition(".")
    if stem.startswith("charts/"):
        return 1, -1
    return DOCUMENTS.index(stem), FORMATS.index(ext)


def render_reports(context: ReportContext, formats, out: Path) -> tuple[dict[str, bytes], float, bool]:
    """Every file of the report set, in memory: path relative to the output folder → bytes.

    Section B (report.md/.html/.pdf) and its supplement (supplement.md/.html/.pdf, with charts/*.svg beside
    the Markdown). Also section B's length in pages and whether it was measured: in the PDF when one is
    built (True), else estimated from the Markdown (estimate_body_lines). Nothing is written;
    PdfUnavailableError (naming `out`) when a PDF is asked for and WeasyPrint cannot load.
    """
    if "pdf" in formats:
        pdf.require_weasyprint(out / "report.pdf")
    files: dict[str, bytes] = {}
    markdown = render_markdown(context)
    if "md" in formats:
        files["report.md"] = markdown.encode("utf-8")
        for chart in context.charts.values():
            files[chart.path] = chart.svg.encode("utf-8")
        files["supplement.md"] = render_supplement_markdown(context).encode("utf-8")
    html = supplement = None
    if "html" in formats or "pdf" in formats:
        html, supplement = render_html(context), render_supplement_html(context)
    if "html" in formats:
        files["report.html"] = html.encode("utf-8")
        files["supplement.html"] = supplement.encode("utf-8")
    measured = None
    if "pdf" in formats:
        files["report.pdf"], measured = pdf.render_pdf(html)
        files["supplement.pdf"], _ = pdf.render_pdf(supplement)
    files = dict(sorted(files.items(), key=lambda item: _file_order(item[0])))
    if measured is not None:
        return files, measured, True
    return files, pdf.estimate_body_lines(markdown, {}) / pdf.LINES_PER_PAGE, False


class OutputFolderError(InputError):
    """The output folder cannot take the report (exit 2): 'proposalkit report: -o DIR: MESSAGE'.

    One Problem, so the message is printed as every input error is (control
    characters in the folder's name escaped)."""

    def __init__(self, shown: str, message: str):
        super().__init__([Problem("proposalkit report", None, f"-o {shown}", message)])


def _file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "xb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.chmod(path, _file_mode())


def _check_folder(out: Path, shown: str) -> None:
    """OutputFolderError, before anything is made, for an -o that cannot be a folder."""
    if not shown:
        raise OutputFolderError("''", "the folder name is empty (an unset shell variable?); give a folder, "
                                      "e.g. -o build")
    if os.path.islink(out) and not os.path.exists(out):
        target = os.readlink(out)
        try:
            os.stat(out)
            why = "which does not exist"
        except OSError as error:
            why = ("which points back to itself (a loop of symbolic links)" if error.errno == errno.ELOOP
                   else "which does not exist")
        raise OutputFolderError(shown, f"cannot write {out}: it is a symbolic link to {target}, {why}; "
                                       "create that folder, or choose another with -o")
    if out.exists() and not out.is_dir():
        raise OutputFolderError(shown, f"cannot write {out} (not a folder); choose a folder you can write to")


def _remove_stale_staging(out: Path) -> None:
    """Staging folders of runs killed before they finished (SIGKILL, a power cut): under the
    folder's lock no other run is staging, so every one left is stale."""
    for stale in out.glob(f"{STAGING_PREFIX}*"):
        if stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)


STAGING_PREFIX = ".proposalkit-"


def swap_in(out: Path, files: dict[str, bytes], shown: str | None = None) -> tuple[list[str], list[str]]:
    """Write `files` (relative path → bytes) into `out` as one set, or leave `out` as it was.

    Under the folder's lock (folder_lock.py: concurrent runs never interleave, so the folder
    holds one run's complete set), the whole set is written and fsynced into a staging folder
    inside `out` (the same file system, so a rename moves a file without copying); only when
    every file is written is each renamed over its old version. A run killed before the
    renames leaves the previous set as it was (its staging folder is removed by the next run).
    On any failure the staging folder is removed, the previous files are untouched, and
    OutputFolderError names the folder (`shown`: as the user gave it). Returns the paths
    written and warnings (a folder that could not be locked).
    """
    shown = shown if shown is not None else str(out)
    _check_folder(out, shown)
    created = not out.exists()
    existed = [name for name in files if os.path.lexists(out / name)] if not created else []
    tmp: Path | None = None
    renamed: list[str] = []
    warnings: list[str] = []
    try:
        out.mkdir(parents=True, exist_ok=True)
        with folder_lock.locked(out) as held:
            if held.warning:
                warnings.append(held.warning)
            else:
                _remove_stale_staging(out)
            tmp = Path(tempfile.mkdtemp(dir=out, prefix=STAGING_PREFIX))
            for name, data in files.items():
                (tmp / name).parent.mkdir(parents=True, exist_ok=True)
                _write_synced(tmp / name, data)
            for name in files:      # everything a rename could trip on, before the first rename
                (out / name).parent.mkdir(parents=True, exist_ok=True)
                if (out / name).is_dir():
                    raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(tmp / name), None,
                                            str(out / name))
            for name in files:
                os.replace(tmp / name, out / name)
                renamed.append(str(out / name))
            shutil.rmtree(tmp, ignore_errors=True)
            tmp = None
    except folder_lock.LockTimeout as error:
        raise OutputFolderError(shown, f"{error.strerror}; nothing was written (is another run stopped? "
                                       f"remove {out / folder_lock.LOCK_NAME} if no run is left)") from None
    except OSError as error:
        staged = tmp is not None
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        if created:
            with contextlib.suppress(OSError):
                out.rmdir()       # only when empty: nothing of the user's is removed
        # Name what the user knows: the folder (or the parent that could not be made), or the
        # file a rename could not replace; never the staging folder or the lock file.
        where = (error.filename2 if error.filename2 else out) if staged else (
            out if error.filename and Path(error.filename).parent == out else (error.filename or out))
        if renamed:
            kept = f"replaced {', '.join(renamed)} before the failure"
        elif existed:
            kept = "the previous report files were left as they were"
        else:
            kept = "nothing was written"
        raise OutputFolderError(shown, f"cannot write {where} ({error.strerror or error}); choose a folder "
                                       f"you can write to; {kept}") from None
    return [str(out / name) for name in files], warnings


@dataclass(frozen=True)
class BodyLength:
    """Section B's length (report.pdf) against its page budget (pdf.BODY_PAGES, beyond PAGE_TOLERANCE)."""

    pages: float
    """US Letter pages."""
    measured: bool
    """True: measured in the PDF; False: estimated from the Markdown (pdf.estimate_body_lines)."""
    budget: float = pdf.BODY_PAGES
    tolerance: float = pdf.PAGE_TOLERANCE
    cut: str = "shorten the descriptions, or move workloads to a separate request"
    """What to cut, naming the workloads (cut_suggestion)."""

    @property
    def over(self) -> bool:
        return self.pages > self.budget + self.tolerance

    def text(self) -> str:
        how = "in the PDF" if self.measured else "estimated from the Markdown"
        return (f"section B runs to {self.pages:.2f} pages {how}, over the {self.budget:g} it has in a NAIRR "
                "proposal of about 3 pages")

    def suggestion(self) -> str:
        return self.cut


# Section B's table holds up to this many workloads in its page budget (issue 23); a description longer than
# LONG_DESCRIPTION characters wraps to a fourth line of its table cell.
MOST_WORKLOADS = 6
LONG_DESCRIPTION = 90


def cut_suggestion(plan: Plan) -> str:
    """What to cut from a section B over its budget, by name: the longest descriptions, then the smallest
    requests beyond MOST_WORKLOADS (or the smallest one) to move to a separate request."""
    parts = []
    long = sorted((w for w in plan.workloads if w.description and len(w.description) > LONG_DESCRIPTION),
                  key=lambda w: -len(w.description))[:3]
    if long:
        parts.append("shorten the descriptions of " + ", ".join(f"{w.name} ({len(w.description)} characters)"
                                                                 for w in long))
    extra = max(1, len(plan.workloads) - MOST_WORKLOADS)
    smallest = sorted(plan.workloads, key=lambda w: (w.gpu_hours_requested, w.name))[:extra]
    if len(plan.workloads) > 1:
        parts.append(f"move {', '.join(w.name for w in smallest)}, the smallest request"
                     + ("s" if len(smallest) > 1 else "") + f", to a separate request (section B holds up to "
                     f"{MOST_WORKLOADS} workloads)")
    return "; or ".join(parts) or "shorten the description"


# Within this many pages of the limit the PDF decides: the Markdown estimate came within 0.06 pages of the
# PDF on four plans (pdf.LINES_PER_PAGE), but 0.1 short on the example proposal (2.20 against 2.30 measured).
MEASURE_WITHIN_PAGES = 0.25


def body_length(plan: Plan) -> BodyLength:
    """Section B's body against its budget: what `check --review` holds to it. Estimated from the Markdown,
    and measured in the PDF's layout (no PDF written) where the estimate is near the limit and WeasyPrint
    loads; the one place that says what is counted and against what budget (`write_reports` measures the
    PDF it builds against the same BodyLength)."""
    context = report_context(plan)
    cut = cut_suggestion(plan)
    estimate = BodyLength(pdf.estimate_body_lines(render_markdown(context), {}) / pdf.LINES_PER_PAGE, False, cut=cut)
    if abs(estimate.pages - (estimate.budget + estimate.tolerance)) > MEASURE_WITHIN_PAGES:
        return estimate
    measured = pdf.measure_body_pages(render_html(context))
    return estimate if measured is None else BodyLength(measured, True, cut=cut)


@dataclass(frozen=True)
class WrittenReports:
    """What `write_reports` wrote, and what it found to warn about (it prints nothing)."""

    paths: tuple[str, ...]
    """The files written: report.md, charts/*.svg and supplement.md (md), report.html and supplement.html
    (html), report.pdf and supplement.pdf (pdf)."""
    body_pages: float
    """The length of section B (report.pdf), in US Letter pages."""
    body_pages_measured: bool
    """True when `body_pages` was measured in the PDF; False when estimated from the Markdown."""
    warnings: tuple[str, ...] = ()
    """Things a reader should fix, one sentence each (the command line prints them on stderr)."""


def write_reports(plan: Plan, out_dir: str | os.PathLike[str], formats) -> WrittenReports:
    """Write section B (report.md/.html/.pdf) and its supplement (supplement.md with charts/*.svg beside it,
    supplement.html, supplement.pdf) into `out_dir`.

    All or nothing: every file is rendered first, then the set is swapped in
    (swap_in); a failure (PDF unavailable, a template error, a full disk)
    leaves the previous files as they were. Returns the paths written and, as
    a warning, a body running past BODY_PAGES pages.
    """
    shown = os.fspath(out_dir)
    out = Path(shown)
    context = report_context(plan)
    files, body_pages, measured = render_reports(context, formats, out)
    written, warnings = swap_in(out, files, shown)
    length = BodyLength(body_pages, measured, cut=cut_suggestion(plan))
    if length.over:
        warnings.append(f"{length.text()}: {length.suggestion()}")
    return WrittenReports(tuple(written), body_pages, measured, tuple(warnings))
