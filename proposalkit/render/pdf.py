"""PDF: WeasyPrint with a URL fetcher that reads nothing outside the templates folder, and page length.

`render_pdf` runs the report HTML through WeasyPrint (a fetcher that refuses
every URL outside the templates folder) and measures the body's length in
pages. Without a PDF, `estimate_body_lines` estimates the length from the
Markdown.

Page length: the body (everything before Appendix A) should fit about
BODY_PAGES pages; beyond BODY_PAGES + PAGE_TOLERANCE the report warns.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..errors import InputError, Problem
from . import TEMPLATES_DIR

# The body (everything before the appendix) should fit about two US Letter
# pages: NAIRR Pilot proposals run about three pages in all (CloudBank's
# best-practices page), and section B shares them with A, C and D.
BODY_PAGES = 2
PAGE_TOLERANCE = 0.2        # "about two pages": warn from 2.2 on
# Lines of 10-pt body text on a US Letter page with the print stylesheet's
# margins (11 in - 1.45 in = 9.55 in ≈ 688 pt at 13.5 pt per line ≈ 51, less
# headings' spacing). Calibrated: on four plans of 2-4 workloads the estimate
# came within 0.06 pages of the PDF's measured body length.
LINES_PER_PAGE = 49
CHARS_PER_LINE = 100        # 10-pt text on a 6.9 in column
PX_PER_LINE = 18            # a chart's height in CSS px per text line (13.5 pt = 18 px)

APPENDIX_MARKER = "<!-- appendix -->"

PANGO_HELP = ("install Pango, which WeasyPrint needs: Debian/Ubuntu `apt-get install libpango-1.0-0 "
              "libpangoft2-1.0-0 libharfbuzz-subset0`; macOS `brew install pango`")


class PdfUnavailableError(InputError):
    """WeasyPrint (or the Pango library under it) cannot be loaded; nothing is written.

    A subclass of InputError so the command line exits 2 with the message, as
    it does for any input it cannot turn into a report: 'proposalkit report: MESSAGE'.
    """

    def __init__(self, message: str):
        super().__init__([Problem("proposalkit report", None, "", message)])


def require_weasyprint(target: Path) -> None:
    """PdfUnavailableError, naming `target`, unless WeasyPrint and Pango load."""
    try:
        _import_weasyprint()
    except (ImportError, OSError) as error:
        raise PdfUnavailableError(
            f"cannot write {target}: WeasyPrint could not load "
            f"({type(error).__name__}: {' '.join(str(error).split())[:200]}). To build PDFs, {PANGO_HELP}; "
            "or pass --format md,html. Nothing was written") from None


class RefusedURL(ValueError):
    """A URL the report's PDF renderer will not fetch."""


def allowed_path(url: str, root: Path = TEMPLATES_DIR) -> Path:
    """The file inside `root` that a file: URL names; RefusedURL for anything else.

    Only file: URLs are considered (no http, https, ftp, data); the path is
    resolved (symlinks, '..') before it is compared with the resolved root.
    """
    parts = urlsplit(url)
    if parts.scheme.lower() != "file" or parts.netloc not in ("", "localhost"):
        raise RefusedURL(f"refused to fetch {url!r}: only files in {root} may be read")
    path = Path(unquote(parts.path)).resolve()
    base = root.resolve()
    if path != base and base not in path.parents:
        raise RefusedURL(f"refused to fetch {url!r}: outside {root}")
    if not path.is_file():
        raise RefusedURL(f"refused to fetch {url!r}: not a file")
    return path


def _import_weasyprint():
    import weasyprint
    return weasyprint


def safe_url_fetcher(root: Path = TEMPLATES_DIR):
    """A WeasyPrint URL fetcher that serves files under `root` and refuses every other URL.

    Refused URLs are recorded in `.refused` (WeasyPrint logs the error and
    renders without the resource).
    """
    weasyprint = _import_weasyprint()
    from weasyprint.urls import URLFetcher, URLFetcherResponse

    class TemplatesOnlyFetcher(URLFetcher):
        def __init__(self):
            super().__init__(allowed_protocols=("file",))
            self.refused: list[str] = []

        def fetch(self, url, headers=None):
            try:
                path = allowed_path(url, root)
            except RefusedURL:
                self.refused.append(url)
                raise
            mime = {".css": "text/css", ".svg": "image/svg+xml", ".png": "image/png"}.get(path.suffix, "")
            return URLFetcherResponse(path.as_uri(), path.read_bytes(), {"Content-Type": mime} if mime else {})

    del weasyprint
    return TemplatesOnlyFetcher()


# Font subsets carry a 'modified' timestamp (the TrueType head table), which
# fontTools takes from SOURCE_DATE_EPOCH when it is set
# (https://reproducible-builds.org/specs/source-date-epoch/). A fixed default
# (1980-01-01, the ZIP epoch) makes two builds of the same plan byte-identical;
# a SOURCE_DATE_EPOCH the user set is kept.
DEFAULT_SOURCE_DATE_EPOCH = "315532800"


@contextlib.contextmanager
def _fixed_source_date():
    if "SOURCE_DATE_EPOCH" in os.environ:
        yield
        return
    os.environ["SOURCE_DATE_EPOCH"] = DEFAULT_SOURCE_DATE_EPOCH
    try:
        yield
    finally:
        os.environ.pop("SOURCE_DATE_EPOCH", None)


def render_pdf(html: str, fetcher=None) -> tuple[bytes, float | None]:
    """PDF bytes from the report HTML, and the body's length in pages (None without a body-end mark).

    The body's length is the page holding the `body-end` anchor (the last
    element before the appendix) plus the fraction of that page above it:
    2.25 is two full pages and a quarter of the third.

    No creation or modification date is written (the HTML has no dcterms
    meta), no file identifier, and font subsets get a fixed timestamp, so the
    same HTML gives the same bytes.
    """
    weasyprint = _import_weasyprint()
    fetcher = fetcher if fetcher is not None else safe_url_fetcher()
    with _fixed_source_date():
        document = weasyprint.HTML(string=html, base_url=TEMPLATES_DIR.as_uri() + "/",
                                   url_fetcher=fetcher).render()
        return document.write_pdf(), _body_pages(document)


def _body_pages(document) -> float | None:
    body_pages = None
    for index, page in enumerate(document.pages):
        if "body-end" in page.anchors:
            body_pages = index + page.anchors["body-end"][1] / page.height
    return body_pages


def measure_body_pages(html: str) -> float | None:
    """The body's length in pages as render_pdf measures it, laid out without writing a PDF; None when
    WeasyPrint (or Pango) cannot load, or the HTML has no body-end mark."""
    try:
        weasyprint = _import_weasyprint()
    except (ImportError, OSError):
        return None
    document = weasyprint.HTML(string=html, base_url=TEMPLATES_DIR.as_uri() + "/",
                               url_fetcher=safe_url_fetcher()).render()
    return _body_pages(document)


def estimate_body_lines(markdown: str, chart_heights: dict[str, float]) -> float:
    """Printed lines of the body (the Markdown before the appendix marker), when no PDF is built.

    Rule: a heading counts 2 lines; a table row 1.3 (cell padding, 9-pt
    text), its |---| rule 0; a chart its SVG height ÷ 18 px; any other line
    ⌈characters ÷ 100⌉; a blank line 0.4. LINES_PER_PAGE of them make a
    page. When a PDF is built, its measured body length (render_pdf) is used
    instead.
    """
    body = markdown.split(APPENDIX_MARKER)[0]
    lines = 0.0
    for line in body.splitlines():
        stripped = line.strip()
        if not stripped:
            lines += 0.4
        elif stripped.startswith("#"):
            lines += 2
        elif re.fullmatch(r"\|[\s:|-]+\|", stripped):
            continue
        elif stripped.startswith("|"):
            lines += 1.3
        elif stripped.startswith("!["):
            path = re.search(r"\]\(([^)]+)\)", stripped)
            lines += chart_heights.get(path.group(1) if path else "", 200) / PX_PER_LINE
        else:
            lines += math.ceil(len(stripped) / CHARS_PER_LINE)
    return lines

