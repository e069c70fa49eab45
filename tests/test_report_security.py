"""User text cannot inject markup into any format, and the PDF renderer reads nothing outside
the templates folder."""

from __future__ import annotations

import re
import textwrap

import pytest

from conftest import weasyprint_available
from proposalkit.render import charts
from proposalkit.render import format as fmt
from proposalkit.render import report
from proposalkit.render import context as ctx
from proposalkit.render import pdf as pdf_mod
import proposalkit.render as render
from proposalkit.input.loading import load_files
from proposalkit.planning.planner import plan_files

HOSTNAME_IMG = '<img src="file:///etc/hostname">'

HOSTILE = f"""\
proposal:
  title: 'Attack | <script>alert(1)</script> {HOSTNAME_IMG} *bold* $x$ @someone [link](http://x)'
  pi: 'Eve <b>PI</b> | &amp;'
  institution: "Back\\\\slash `code` _under_"
workloads:
  - name: tune
    description: 'pipes | and <script>alert(2)</script> and {HOSTNAME_IMG}'
    kind: finetune
    method: full
    model: {{name: 'evil|<i>model</i>', params: 1B}}
    tokens: 10M
    throughput: {{tokens_per_second: 3000, gpu: a100-80gb, gpus: 1}}
    gpu: a100-80gb
    gpus: 1
"""


@pytest.fixture(scope="module")
def hostile_plan(tmp_path_factory):
    path = tmp_path_factory.mktemp("hostile") / "w.yaml"
    path.write_text(textwrap.dedent(HOSTILE), encoding="utf-8")
    return plan_files(load_files([str(path)]))


needs_weasyprint = pytest.mark.skipif(not weasyprint_available(), reason="WeasyPrint or Pango cannot be loaded")


# ----------------------------------------------------------------- Markdown


def test_markdown_escapes_user_text(hostile_plan):
    md = report.render_markdown(ctx.report_context(hostile_plan))
    assert re.search(r"(?<!\\)<(script|img|b>|i>|/)", md) is None     # no '<' left unescaped before a tag
    assert r"\<script\>alert(1)\</script\>" in md
    assert r"Attack \| " in md
    assert r"\*bold\*" in md and r"\$x\$" in md
    assert "`@someone`" in md and r"\[`link](http://x`)" in md      # what GitHub would link: a code span
    assert r"Back\\slash \`code\` \_under\_" in md
    assert r"Eve \<b\>PI\</b\> \| \&amp;" in md


def test_markdown_table_rows_keep_their_columns(hostile_plan):
    md = report.render_markdown(ctx.report_context(hostile_plan))
    table = [line for line in md.splitlines() if line.startswith("|")]     # section B's one table
    unescaped = [len(re.findall(r"(?<!\\)\|", line)) for line in table]
    assert len(set(unescaped)) == 1, table          # the model name's '|' did not add a column
    assert r"pipes \| and \<script\>" in table[2]            # the description's '|' did not add a column
    assert r"evil\|\<i\>model\</i\>" in report.render_supplement_markdown(ctx.report_context(hostile_plan))


@pytest.mark.parametrize("text, expected", [
    ("a|b", r"a\|b"),
    ("<script>", r"\<script\>"),
    ("*x* _y_ `z`", r"\*x\* \_y\_ \`z\`"),
    ("line one\nline two", "line one line two"),
    ("  two  spaces ", " two spaces "),
    ("$E=mc^2$", r"\$E=mc^2\$"),
    ("#1 & @me", r"`#1` \& `@me`"),
    ("# 1 @", r"\# 1 \@"),
    ("plain-text 1.5 (ok)", "plain-text 1.5 (ok)"),
])
def test_md_escape(text, expected):
    assert fmt.md_escape(text) == expected


def test_md_escape_leaves_safe_text_alone():
    assert fmt.md_escape(fmt.fmt_hours(1234.5)) == "1,234.50"


# ----------------------------------------------------------------- HTML and SVG


def test_html_escapes_user_text(hostile_plan):
    html = report.render_html(ctx.report_context(hostile_plan))
    assert "<script" not in html.lower()
    assert "<img" not in html and "<b>PI" not in html and "<i>model" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=&#34;file:///etc/hostname&#34;&gt;" in html
    assert "evil|&lt;i&gt;model&lt;/i&gt;" in html


def test_svg_labels_are_escaped():
    svg = charts.bar_chart([("<script>x</script>", 1.0, "1 & 2")], title="t <b>", unit="u")
    assert "<script>" not in svg and "<b>" not in svg
    assert "&lt;script&gt;x&lt;/script&gt;" in svg and "1 &amp; 2" in svg
    stacked = charts.StackedBar('a"b', (("w<", 1.0),), 2.0, "<shown>")
    svg = charts.memory_chart([stacked], title="m", unit="GiB")
    assert "<shown>" not in svg and "&lt;shown&gt;" in svg and "w&lt;" in svg


# ----------------------------------------------------------------- URL fetcher


@pytest.mark.parametrize("url", [
    "file:///etc/hostname",
    "file://localhost/etc/hostname",
    "http://example.com/x.png",
    "https://example.com/font.woff2",
    "ftp://example.com/x",
    "data:text/plain,hello",
    (render.TEMPLATES_DIR / ".." / "pyproject.toml").as_uri(),
    render.TEMPLATES_DIR.as_uri() + "/../pyproject.toml",
    render.TEMPLATES_DIR.as_uri() + "/%2e%2e/pyproject.toml",
    "file://evil.example.com" + str(render.TEMPLATES_DIR / "print.css"),
])
def test_allowed_path_refuses_everything_outside_the_templates(url):
    with pytest.raises(pdf_mod.RefusedURL):
        pdf_mod.allowed_path(url)


def test_allowed_path_accepts_a_template_file():
    assert pdf_mod.allowed_path((render.TEMPLATES_DIR / "print.css").as_uri()) == \
        (render.TEMPLATES_DIR / "print.css").resolve()


def test_allowed_path_refuses_a_symlink_out_of_the_root(tmp_path):
    root = tmp_path / "templates"
    root.mkdir()
    (root / "inside.css").write_text("p {}", encoding="utf-8")
    secret = tmp_path / "secret.txt"
    secret.write_text("secret", encoding="utf-8")
    (root / "link.css").symlink_to(secret)
    assert pdf_mod.allowed_path((root / "inside.css").as_uri(), root) == (root / "inside.css").resolve()
    with pytest.raises(pdf_mod.RefusedURL):
        pdf_mod.allowed_path((root / "link.css").as_uri(), root)


@needs_weasyprint
@pytest.mark.parametrize("url", ["file:///etc/hostname", "http://example.com/x.png", "https://example.com/a.css"])
def test_weasyprint_fetcher_refuses(url):
    fetcher = pdf_mod.safe_url_fetcher()
    with pytest.raises(pdf_mod.RefusedURL):
        fetcher.fetch(url)
    with pytest.raises(pdf_mod.RefusedURL):
        fetcher(url)
    assert fetcher.refused == [url, url]


@needs_weasyprint
def test_weasyprint_fetcher_serves_template_files():
    fetcher = pdf_mod.safe_url_fetcher()
    response = fetcher.fetch((render.TEMPLATES_DIR / "print.css").as_uri())
    assert b"@page" in response.read()
    response.close()


@needs_weasyprint
def test_pdf_rendering_does_not_read_file_urls():
    """Even markup that asks for a local file (which escaping keeps out of real reports) is refused."""
    fetcher = pdf_mod.safe_url_fetcher()
    html = (f'<html><head><link rel="stylesheet" href="file:///etc/passwd"></head>'
            f'<body><p>x</p>{HOSTNAME_IMG}<img src="http://example.com/a.png"></body></html>')
    pdf, _ = pdf_mod.render_pdf(html, fetcher)
    assert pdf.startswith(b"%PDF")
    assert set(fetcher.refused) == {"file:///etc/passwd", "file:///etc/hostname", "http://example.com/a.png"}


@needs_weasyprint
def test_report_with_a_hostile_title_fetches_nothing(hostile_plan):
    fetcher = pdf_mod.safe_url_fetcher()
    html = report.render_html(ctx.report_context(hostile_plan))
    pdf, _ = pdf_mod.render_pdf(html, fetcher)
    assert pdf.startswith(b"%PDF")
    assert fetcher.refused == []        # the <img> is text, never an element
    from io import BytesIO

    from pypdf import PdfReader

    text = "".join(page.extract_text() for page in PdfReader(BytesIO(pdf)).pages).replace("\n", "")
    assert "file:///etc/hostname" in text           # shown as text, as the user wrote it
