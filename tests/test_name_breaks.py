"""Section B's first column: a workload name breaks only after '-', '_' or '.', never inside a word (issue 23:
'benchmark-generations' was printed 'benchma / rk- / generatio / ns' in the PDF's 9% column), and the table
stays within the page.

The HTML marks each break point with <wbr> and forbids breaking elsewhere (report.css); the column is as wide as
the widest part of a name (section_b.name_column_em). The PDF test reads the text of the first column with
pypdf, each line where WeasyPrint put it, and finds every line to be whole parts of a name.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import weasyprint_available
from proposalkit.cli import main
from proposalkit.render.section_b import NAME_MAX_EM, name_column_em, name_em, name_parts

ROOT = Path(__file__).resolve().parent.parent
EVALUATION = ROOT / "workloads/inference/evaluation.yaml"
NAMES = ["benchmark-generations", "assistant-service"]


def report(tmp_path: Path, capsys, source: Path, formats: str) -> Path:
    assert main(["report", str(source), "-o", str(tmp_path), "--format", formats]) == 0
    capsys.readouterr()
    return tmp_path


def renamed(tmp_path: Path, new: str) -> Path:
    """evaluation.yaml with its batch workload renamed `new`."""
    path = tmp_path / "renamed.yaml"
    text = EVALUATION.read_text(encoding="utf-8")
    path.write_text(text.replace("name: benchmark-generations", f"name: {new}"), encoding="utf-8")
    (tmp_path / "out").mkdir()
    return path


def test_parts_and_widths():
    assert name_parts("code-1b-pretrain") == ["code-", "1b-", "pretrain"]
    assert name_parts("my_eval.v2") == ["my_", "eval.", "v2"]
    assert name_parts("'x&<b>-y") == ["'x&<b>-", "y"]
    assert name_parts("plain") == ["plain"]
    # DejaVu Sans, the widest face of the stack: 'benchmark-' is 12,299 / 2,048 = 6.006 em (b 1,300, e 1,260,
    # n 1,298, c 1,126, h 1,298, m 1,995, a 1,255, r 842, k 1,186, - 739), 'generations' 12,205 / 2,048.
    assert name_em("benchmark-") == pytest.approx(12299 / 2048) and name_em("generations") == pytest.approx(12205 / 2048)
    assert name_em("日本") == 2.0                 # a character outside the table: 1 em
    assert name_column_em(NAMES) == 6.3          # 6.006 + 0.29 padding (right only), rounded up to a tenth
    assert name_column_em(["a-b"]) == 5.5        # short names keep the column's old width
    assert name_column_em(["x" * 40]) == NAME_MAX_EM


def test_html_breaks_names_only_after_hyphens_underscores_and_dots(tmp_path, capsys):
    out = report(tmp_path, capsys, EVALUATION, "html")
    for page in ("report.html", "supplement.html"):
        html = (out / page).read_text(encoding="utf-8")
        assert '<td class="name">benchmark-<wbr>generations</td>' in html, page
        assert '<td class="name">assistant-<wbr>service</td>' in html, page
        assert '<col class="c-name" style="width: 6.3em">' in html, page
        # The stylesheet forbids breaking inside a word of a name (only a part wider than the column may).
        assert "table.request td.name { overflow-wrap: normal; word-break: normal; hyphens: manual; }" in html
        rules = re.findall(r"([^{}]*td\.name[^{}]*)\{([^}]*)\}", html)
        assert all("anywhere" not in body or ".long" in selector for selector, body in rules), rules


def test_html_marks_every_break_point(tmp_path, capsys):
    source = renamed(tmp_path, "eval_run-v2_x")
    html = (report(tmp_path / "out", capsys, source, "html") / "report.html").read_text(encoding="utf-8")
    assert '<td class="name">eval_<wbr>run-<wbr>v2_<wbr>x</td>' in html


def test_name_cell_escapes_before_it_marks():
    from proposalkit.render.report import name_cell
    assert name_cell("'x&<b>.y-z") == "&#39;x&amp;&lt;b&gt;.<wbr>y-<wbr>z"
    assert name_cell("=a-b") == "&#39;=a-<wbr>b"          # formula_safe's apostrophe, then escaped


def test_a_part_wider_than_the_column_may_break_anywhere(tmp_path, capsys):
    source = renamed(tmp_path, "a" + "b" * 30)
    html = (report(tmp_path / "out", capsys, source, "html") / "report.html").read_text(encoding="utf-8")
    assert f'<td class="name long">a{"b" * 30}</td>' in html
    assert f'<col class="c-name" style="width: {NAME_MAX_EM:g}em">' in html


def first_column(pdf: Path) -> list[str]:
    """The lines of section B's first column on page 1, from the header to the first total row, as pypdf
    places them (x of the text: the 'workload' heading's)."""
    from pypdf import PdfReader

    runs = []

    def visit(text, cm, tm, font, size):
        if text.strip():
            runs.append((round(cm[4] + tm[4] * cm[0], 1), text.strip().replace("\u200b", "")))

    PdfReader(str(pdf)).pages[0].extract_text(visitor_text=visit)
    start = next(i for i, (_, text) in enumerate(runs) if text.startswith("workload for"))
    x = runs[start][0]
    lines = []
    for left, text in runs[start + 1:]:
        if text.startswith("total,"):
            return lines
        if abs(left - x) < 0.5:
            lines.append(text)
    raise AssertionError("no total row")


@pytest.mark.skipif(not weasyprint_available(), reason="WeasyPrint cannot render here")
def test_pdf_first_column_has_no_name_split_inside_a_word(tmp_path, capsys):
    out = report(tmp_path, capsys, EVALUATION, "pdf")
    for pdf in ("report.pdf", "supplement.pdf"):
        lines = first_column(out / pdf)
        assert "".join(lines) == "".join(NAMES), (pdf, lines)
        pieces = {"".join(parts[i:j]) for parts in map(name_parts, NAMES)
                  for i in range(len(parts)) for j in range(i + 1, len(parts) + 1)}
        assert set(lines) <= pieces, (pdf, lines)
        assert lines == ["benchmark-", "generations", "assistant-", "service"], (pdf, lines)


@pytest.mark.skipif(not weasyprint_available(), reason="WeasyPrint cannot render here")
def test_pdf_table_stays_within_the_page(tmp_path, capsys):
    """Every word of page 1 starts inside the text width: US Letter's 612 pt less 0.8 in margins (print.css)."""
    from pypdf import PdfReader

    out = report(tmp_path, capsys, renamed(tmp_path, "x" * 14 + "-" + "y" * 14), "pdf")
    page = PdfReader(str(out / "report.pdf")).pages[0]
    lefts = []
    page.extract_text(visitor_text=lambda text, cm, tm, font, size: text.strip() and lefts.append(
        cm[4] + tm[4] * cm[0]))
    assert lefts and min(lefts) >= 0.8 * 72 - 1 and max(lefts) < 612 - 0.8 * 72
