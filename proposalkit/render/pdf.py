"""PDF: WeasyPrint with a URL fetcher that reads nothing outside the templates folder, and page length.

`render_pdf` runs the report HTML through WeasyPrint (a fetcher that refuses
every URL outside the templates folder) and measures the body's length in
pages. Without a PDF, `estimate_body_lines` estimates the length from the
Markdown.

Page length: section B (report.pdf, up to its body-end mark) fits BODY_PAGES pages; beyond
BODY_PAGES + PAGE_TOLERANCE the report warns. `page_fills` measures how full each page is (issue 23:
no page but the last more than half empty).
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

# Section B (report.pdf) fits 1.5 US Letter pages at 11 pt: NAIRR Pilot proposals run about three pages
# in all, four sections (CloudBank's best-practices page; ../shared/NAIRR.md), and section B for up to six
# workloads takes half of them (issue 23).
BODY_PAGES = 1.5
PAGE_TOLERANCE = 0.0        # measured in the PDF: past 1.5 pages the report warns
# Lines of 11-pt body text (DejaVu Serif, line-height 1.3: 14.3 pt) on a US Letter page with the print
# stylesheet's margins (11 in - 1.45 in = 9.55 in ≈ 688 pt ≈ 48 lines). Calibrated on the examples, the
# golden and three tests/data proposals (0.7-1.4 pages measured): the estimate came 0.0-0.12 pages over the
# PDF's measured length, never under.
LINES_PER_PAGE = 48
CHARS_PER_LINE = 85         # 11-pt DejaVu Serif on a 6.9 in column
PX_PER_LINE = 19            # a chart's height in CSS px per text line
TABLE_CELL_CHARS = 36       # characters per line of section B's widest table column (8 pt, 27% of 6.9 in)

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


def _lowest(box) -> float:
    """The bottom of the lowest line, image or table row inside `box` (CSS px from the page's top)."""
    from weasyprint.formatting_structure import boxes

    if isinstance(box, (boxes.LineBox, boxes.ReplacedBox, boxes.TableRowBox)):
        return box.position_y + box.margin_height()
    children = box.children if isinstance(box, boxes.ParentBox) else ()
    return max((_lowest(child) for child in children), default=0.0)


def page_fills(html: str) -> list[float]:
    """Each page's share of its text area that holds content: the lowest line, image or table row, from the
    top margin, ÷ the text area's height (issue 23: no page but the last more than half empty). [] when
    WeasyPrint cannot load."""
    try:
        weasyprint = _import_weasyprint()
    except (ImportError, OSError):
        return []
    document = weasyprint.HTML(string=html, base_url=TEMPLATES_DIR.as_uri() + "/",
                               url_fetcher=safe_url_fetcher()).render()
    from weasyprint.formatting_structure import boxes

    fills = []
    for page in document.pages:
        box = page._page_box
        top, height = box.content_box_y(), box.height
        # The page's content, not its margin boxes (the running title and the page number in the footer).
        lowest = max((_lowest(child) for child in box.children if not isinstance(child, boxes.MarginBox)),
                     default=top)
        fills.append(round(max(0.0, lowest - top) / height, 3))
    return fills


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
            # A table row in 8.5-pt type: its longest cell wraps in a column of about TABLE_CELL_CHARS.
            longest = max((len(cell.strip()) for cell in stripped.strip("|").split("|")), default=0)
            lines += 0.3 + 0.8 * max(1, math.ceil(longest / TABLE_CELL_CHARS))
        elif stripped.startswith("!["):
            path = re.search(r"\]\(([^)]+)\)", stripped)
            lines += chart_heights.get(path.group(1) if path else "", 200) / PX_PER_LINE
        else:
            lines += math.ceil(len(stripped) / CHARS_PER_LINE)
    return lines

