"""Report context → Jinja2 → Markdown and HTML (section B of a NAIRR Pilot proposal), and writing the set.

Pipeline: `report_context(plan)` (context.py) turns the Plan into a context
made for the templates; `render_markdown` / `render_html` fill
`templates/report.md.j2` and `templates/report.html.j2`; `pdf.render_pdf`
runs the HTML through WeasyPrint; `write_reports` writes the files.

Numbers are formatted in one place, the `FILTERS` of format.py (gib, gb,
size, hours, hours_precise, days, count, si, rate, pct, factor), by type,
never by key name; the derivation lines call the same functions. The
templates may not print a bare float: both environments refuse one
(`_finalize_*`), so every number goes through a filter.

User text is escaped in every format: HTML by Jinja's autoescape; Markdown by
`md_escape`, applied automatically to every string the Markdown template
prints (the Markdown environment's `finalize`), unless a filter already made
it safe.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from pathlib import Path

from ..planning.planner import Plan
from . import TEMPLATES_DIR, pdf
from .context import ReportContext, report_context
from .format import FILTERS, Safe, md_escape


def _refuse_float(value: object) -> object:
    if isinstance(value, float):
        raise TypeError(f"template prints a bare float ({value!r}): format it with a filter "
                        f"({', '.join(sorted(FILTERS))})")
    return value


def _finalize_html(value: object) -> object:
    return _refuse_float(value)


def _finalize_md(value: object) -> object:
    value = _refuse_float(value)
    if isinstance(value, (Safe, int)) and not isinstance(value, bool):
        return value
    return md_escape(value)


def environment(kind: str):
    """The Jinja2 environment for 'md' or 'html': StrictUndefined, filters in one place.

    HTML autoescapes; Markdown escapes every printed string with md_escape
    (through `finalize`) unless it is already Safe.
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
    return env


def render_markdown(context: ReportContext) -> str:
    text = environment("md").get_template("report.md.j2").render(r=context)
    return re.sub(r"\n{3,}", "\n\n", text)


def render_html(context: ReportContext) -> str:
    from markupsafe import Markup

    charts_html = {k: Markup(c.svg) for k, c in context.charts.items()}   # built by charts.py, escaped there
    return environment("html").get_template("report.html.j2").render(r=context, svg=charts_html)


def plan_markdown_table(plan: Plan) -> str:
    """The summary table alone (`proposalkit plan --format markdown`)."""
    context = report_context(plan)
    text = environment("md").get_template("summary.md.j2").render(r=context, in_report=False)
    return text if text.endswith("\n") else text + "\n"      # a text stream ends its last line


def _file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to a temporary file beside `path`, fsync it, then os.replace it into place.

    A reader sees the old file or the new one, never a half-written one; on
    any failure the temporary file is removed and `path` is untouched.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _file_mode())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_reports(plan: Plan, out_dir: str, formats) -> list[str]:
    """Write report.md (with charts/*.svg beside it), report.html and report.pdf into `out_dir`.

    Returns the paths written. Prints a warning on stderr when the body runs
    past BODY_PAGES pages. Raises PdfUnavailableError, after writing the other
    formats, when WeasyPrint or Pango cannot be loaded.
    """
    out = Path(out_dir)
    context = report_context(plan)
    written: list[str] = []
    markdown = render_markdown(context)
    if "md" in formats:
        for chart in context.charts.values():
            write_atomic(out / chart.path, chart.svg.encode("utf-8"))
            written.append(str(out / chart.path))
        write_atomic(out / "report.md", markdown.encode("utf-8"))
        written.append(str(out / "report.md"))
    html = render_html(context) if ("html" in formats or "pdf" in formats) else None
    if "html" in formats:
        write_atomic(out / "report.html", html.encode("utf-8"))
        written.append(str(out / "report.html"))
    body_pages = None      # measured in the PDF when one is built, else estimated
    if "pdf" in formats:
        try:
            pdf._import_weasyprint()
        except (ImportError, OSError) as error:
            done = f"; wrote {', '.join(written)}" if written else ""
            raise pdf.PdfUnavailableError(
                f"proposalkit report: cannot write {out / 'report.pdf'}: WeasyPrint could not load "
                f"({type(error).__name__}: {' '.join(str(error).split())[:200]}). To build PDFs, {pdf.PANGO_HELP}; "
                f"or pass --format md,html{done}", written) from None
        pdf_bytes, body_pages = pdf.render_pdf(html)
        write_atomic(out / "report.pdf", pdf_bytes)
        written.append(str(out / "report.pdf"))
    if body_pages is None:
        body_pages = pdf.estimate_body_lines(markdown, {c.path: c.height for c in context.charts.values()}) / pdf.LINES_PER_PAGE
        how = "estimated from the Markdown"
    else:
        how = "in the PDF"
    if body_pages > pdf.BODY_PAGES + pdf.PAGE_TOLERANCE:
        print(f"proposalkit report: warning: the section B body runs to {body_pages:.1f} pages {how}; about "
              f"{pdf.BODY_PAGES} fit a NAIRR proposal of about 3 pages: shorten descriptions, or move workloads "
              "to a separate request", file=sys.stderr)
    return written
