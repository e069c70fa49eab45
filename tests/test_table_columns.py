"""Section B's table (and the supplement's copy) keeps every figure inside its column and the page (issue 23:
a bold '16,943.25' in the units column ran 13 pt into the right margin, and with a buffer column the headings
read 'bufferrequested').

Each column but the purpose's is as wide as its widest cell (section_b.column_widths); the PDF test reads where
WeasyPrint put every piece of text, with its width from the PDF's own font widths (/W), and finds each inside
the text block and apart from its neighbours on the line.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import weasyprint_available
from proposalkit.cli import main
from proposalkit.input.loading import load_files
from proposalkit.planning.planner import plan_files
from proposalkit.render import report
from proposalkit.render.context import report_context
from proposalkit.render.section_b import CELL_PAD_EM, TEXT_EM, column_em, text_em

ROOT = Path(__file__).resolve().parent.parent
# Every variant of the table: units in SUs with bold five-digit totals (evaluation), node-hours with wrapped
# ranges (six-workloads), a buffer column with US dollars (cloud), a buffer column without units (no-resource),
# and the examples.
FILES = [ROOT / "workloads/code-models.yaml", ROOT / "workloads/inference/evaluation.yaml",
         ROOT / "tests/data/cloud.yaml", ROOT / "tests/data/proposals/six-workloads.yaml",
         ROOT / "tests/data/proposals/no-resource.yaml", ROOT / "tests/data/memory-breakdowns.yaml",
         ROOT / "docs/examples/quickstart.yaml"]
IDS = [p.stem for p in FILES]
LEFT, RIGHT = 0.8 * 72, 612 - 0.8 * 72        # US Letter's text block between print.css's 0.8-in margins, in pt
TABLE_PT = 8.0                                 # section B's table in print (print.css)


def html_of(path: Path) -> str:
    return report.render_html(report_context(plan_files(load_files([str(path)]))))


def col_widths(html: str) -> dict[str, float]:
    """Each <col>'s width in em of the table's font, from its style (the purpose's, 'auto', left out)."""
    group = re.search(r"<table class=\"request\">\s*<colgroup>(.*?)</colgroup>", html, re.S).group(1)
    cols = re.findall(r'<col class="c-(\w+)"(?: style="width: ([\d.]+)em")?>', group)
    assert all(width for name, width in cols if name != "purpose"), cols
    return {name: float(width) for name, width in cols if width}


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_column_widths_add_up_to_at_most_the_text_width(path):
    """Every variant: the sized columns add up to at most 100% of the text width, and leave the purpose 10 em
    (a sixth of it: 'instruction' and the like whole on a line)."""
    widths = col_widths(html_of(path))
    assert {"name", "gpus", "work", "hours", "runs", "requested"} <= widths.keys()
    total = sum(widths.values()) * TABLE_PT / (RIGHT - LEFT)
    assert total <= 1.0 and sum(widths.values()) + 10 <= TEXT_EM, (path.name, widths, f"{total:.1%}")


def test_a_column_holds_its_widest_cell_bold_totals_and_headings_included():
    html = html_of(ROOT / "workloads/inference/evaluation.yaml")
    widths = col_widths(html)
    # DejaVu Sans Bold: '16,943.25' is 7 digits × 1,425 + 778 (,) + 778 (.) = 11,531 / 2,048 em.
    assert text_em("16,943.25", bold=True) == pytest.approx(11531 / 2048)
    assert widths["units"] >= text_em("16,943.25", bold=True) + CELL_PAD_EM
    assert widths["requested"] >= text_em("requested", bold=True) + CELL_PAD_EM
    assert column_em(["8,760.00"]) == 5.1                  # 4.453 em + 0.57 padding, rounded up to a tenth
    assert column_em(["485.39–516.72"], wraps=True) == column_em(["485.39–"])
    assert column_em(["2× a100-40gb"], wraps=True) == column_em(["a100-40gb"])
    six = col_widths(html_of(ROOT / "tests/data/proposals/six-workloads.yaml"))
    # 'node-hours' breaks after its hyphen (name_cell's <wbr>): the column is the bold total's, not the heading's.
    assert six["units"] < text_em("node-hours", bold=True) + CELL_PAD_EM
    assert TEXT_EM == pytest.approx(62.1)


# ------------------------------------------------------------------ where the PDF puts each piece of text

def _widths(font) -> tuple[dict[int, float], float]:
    """A Type 0 font's glyph widths (its descendant's /W, 1/1000 em) by CID, and its default width."""
    cid = font["/DescendantFonts"][0].get_object()
    table, w = {}, list(cid.get("/W", []))
    i = 0
    while i < len(w):
        first = int(w[i])
        if isinstance(w[i + 1], list) or hasattr(w[i + 1], "__iter__"):
            for k, width in enumerate(w[i + 1]):
                table[first + k] = float(width)
            i += 2
        else:
            for c in range(first, int(w[i + 1]) + 1):
                table[c] = float(w[i + 2])
            i += 3
    return table, float(cid.get("/DW", 1000))


def _mul(m, n):
    a, b, c, d, e, f = m
    A, B, C, D, E, F = n
    return [a * A + b * C, a * B + b * D, c * A + d * C, c * B + d * D, e * A + f * C + E, e * B + f * D + F]


def text_runs(pdf: Path) -> list[tuple[int, float, float, float, float, str]]:
    """(page, x0, x1, y, size, font) of every shown string, in pt on the page (a run's glyphs are 2-byte
    CIDs, Identity-H, as WeasyPrint writes them)."""
    from pypdf import PdfReader
    from pypdf.generic import ContentStream

    reader = PdfReader(str(pdf))
    runs = []
    for number, page in enumerate(reader.pages):
        fonts = {name: (f.get_object(), _widths(f.get_object())) for name, f in page["/Resources"]["/Font"].items()}
        ctm, stack, tm, font, size = [1, 0, 0, 1, 0, 0], [], [1, 0, 0, 1, 0, 0], None, 0.0
        for operands, op in ContentStream(page.get_contents(), reader).operations:
            if op == b"q":
                stack.append(ctm)
            elif op == b"Q":
                ctm = stack.pop()
            elif op == b"cm":
                ctm = _mul([float(x) for x in operands], ctm)
            elif op == b"BT":
                tm = [1, 0, 0, 1, 0, 0]
            elif op == b"Tm":
                tm = [float(x) for x in operands]
            elif op == b"Td":
                tm = _mul([1, 0, 0, 1, float(operands[0]), float(operands[1])], tm)
            elif op == b"Tf":
                font, size = fonts[operands[0]], float(operands[1])
            elif op in (b"TJ", b"Tj"):
                items = operands[0] if op == b"TJ" else [operands[0]]
                table, default = font[1]
                advance = 0.0
                for item in items:
                    if isinstance(item, (int, float)) or type(item).__name__ in ("FloatObject", "NumberObject"):
                        advance -= float(item) / 1000 * size
                        continue
                    raw = item.original_bytes if hasattr(item, "original_bytes") else bytes(item)
                    cids = [int.from_bytes(raw[k:k + 2], "big") for k in range(0, len(raw), 2)]
                    advance += sum(table.get(c, default) for c in cids) / 1000 * size
                start = _mul(tm, ctm)
                end = _mul(_mul([1, 0, 0, 1, advance, 0], tm), ctm)
                x0, x1 = sorted((start[4], end[4]))
                runs.append((number, x0, x1, start[5], abs(size * start[0]), str(font[0]["/BaseFont"])))
                tm = _mul([1, 0, 0, 1, advance, 0], tm)
    return runs


def table_runs(pdf: Path) -> list[list[tuple[int, float, float, float, float, str]]]:
    """Section B's table, as lines of runs: the sans-serif text at the table's size, on the page of the
    'workload' heading, from that heading to the last total."""
    runs = text_runs(pdf)
    start = next(i for i, r in enumerate(runs) if "Sans-Bold" in r[5] and abs(r[4] - TABLE_PT) < 0.01
                 and r[1] == pytest.approx(LEFT, abs=0.5) and runs[i + 1][5] == r[5])
    page = runs[start][0]
    body = [r for r in runs[start:] if r[0] == page and abs(r[4] - TABLE_PT) < 0.01 and "Serif" not in r[5]]
    top = body[0][3]
    body = [r for r in body if r[3] <= top + 0.1 and r[3] > 0.8 * 72]    # above the page's footer
    lines: dict[float, list] = {}
    for r in body:
        lines.setdefault(round(r[3], 1), []).append(r)
    return [_joined(sorted(line, key=lambda r: r[1])) for _, line in sorted(lines.items(), reverse=True)]


def _joined(line):
    """The line's pieces, the two sides of a <wbr> (a zero-width run between them) joined into one."""
    out, join = [], False
    for r in line:
        if r[2] - r[1] < 0.01:
            join = bool(out)
        elif join:
            out[-1], join = out[-1][:2] + (r[2],) + out[-1][3:], False
        else:
            out.append(r)
    return out


@pytest.fixture(scope="module")
def pdfs(tmp_path_factory):
    out = {}
    for path in FILES:
        target = tmp_path_factory.mktemp(path.stem)
        assert main(["report", str(path), "-o", str(target), "--format", "pdf"]) == 0
        out[path.stem] = target
    return out


@pytest.mark.skipif(not weasyprint_available(), reason="WeasyPrint cannot render here")
@pytest.mark.parametrize("stem", IDS)
@pytest.mark.parametrize("document", ["report.pdf", "supplement.pdf"])
def test_pdf_table_text_lies_inside_the_text_block_and_apart(pdfs, capsys, stem, document):
    capsys.readouterr()
    lines = table_runs(pdfs[stem] / document)
    assert len(lines) >= 4, lines
    for line in lines:
        for r in line:
            assert LEFT - 0.5 <= r[1] and r[2] <= RIGHT + 0.5, (stem, document, f"runs {r[2] - RIGHT:.1f} pt past "
                                                                 "the right margin", r)
        # Two pieces of one line are in different cells: 6 px of padding (4.5 pt) lie between them at least
        # when each fits its column; 'bufferrequested' had none.
        for a, b in zip(line, line[1:]):
            assert b[1] - a[2] >= 3.0, (stem, document, "two cells touch", a, b)
