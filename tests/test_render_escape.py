"""Control characters in user text (issue 10): never sent raw to a terminal or into a report.

A title, PI, institution, workload description or model name holding terminal escape
sequences (ESC ] 0 ; … BEL sets the terminal title, ESC [ 2 J clears the screen), BEL or NUL
is printed with each control character as a visible escape ('\\x1b'), in `plan` text, `plan
--format markdown`, report.md, report.html and the charts.
"""

from __future__ import annotations

import re

import pytest

from proposalkit.cli import main
from proposalkit.render.charts import xml_escape
from proposalkit.render.format import control_escape, md_escape

# YAML double-quoted escapes (YAML 1.1 §5.7): \e ESC, \a BEL, \0 NUL, \x9b the C1 CSI.
HOSTILE = r'''proposal:
  title: "Title \e]0;pwned\a here"
  pi: "A. \e[31mRed\e[0m"
  institution: "Uni\0versity"
workloads:
  - name: tune-a
    description: "clears \e[2J the screen \a bell \0 nul \x9b csi"
    kind: finetune
    method: lora
    model: {name: "m\e]0;t\a\0", layers: 32, hidden: 4096, heads: 32, kv_heads: 8, ffn_hidden: 14336,
            vocab: 128256}
    tokens: 10M
    gpu: a100-80gb
    gpus: 1
'''

# Every C0 control but newline and tab, DEL and every C1 control.
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@pytest.fixture
def hostile(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(HOSTILE, encoding="utf-8")
    return path


@pytest.mark.parametrize("text, expected", [
    ("a\x1b[2Jb", "a\\x1b[2Jb"),
    ("bell\x07", "bell\\x07"),
    ("nul\x00", "nul\\x00"),
    ("del\x7f c1\x9b", "del\\x7f c1\\x9b"),
    ("tab\tand\nnewline", "tab\tand\nnewline"),     # left to the caller (md_escape makes them spaces)
    ("é ü 日本", "é ü 日本"),
])
def test_control_escape(text, expected):
    assert control_escape(text) == expected


def test_md_escape_escapes_control_characters_and_then_the_backslash():
    # control_escape gives 'a\x1b[2J' ('\' 'x' '1' 'b'); Markdown then escapes '\' and '['.
    assert md_escape("a\x1b[2J\x07") == "a\\\\x1b\\[2J\\\\x07"


def test_svg_text_has_no_control_characters():
    assert xml_escape("x\x1b[2J\x00<") == "x\\x1b[2J\\x00&lt;"


def test_plan_text_escapes_the_model_name(hostile, capsys):
    assert main(["plan", str(hostile)]) == 0
    out = capsys.readouterr().out
    assert not RAW_CONTROL.search(out)
    row = next(line for line in out.splitlines() if line.startswith("tune-a"))
    assert row.split()[2] == "m\\x1b]0;t\\x07\\x00"


def test_plan_markdown_escapes_the_model_name(hostile, capsys):
    assert main(["plan", str(hostile), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert not RAW_CONTROL.search(out)
    # control_escape, then Markdown's backslash escapes: '\' → '\\', '[' → '\['. Section B's table names
    # no model: the description is the user text in it.
    assert "| tune-a | clears \\\\x1b\\[2J the screen \\\\x07 bell \\\\x00 nul \\\\x9b csi |" in out


def test_reports_escape_title_pi_institution_description_and_model(hostile, tmp_path, capsys):
    out_dir = tmp_path / "out"
    assert main(["report", str(hostile), "-o", str(out_dir), "--format", "md,html"]) == 0
    capsys.readouterr()
    for path in [out_dir / "report.md", out_dir / "report.html", out_dir / "supplement.md",
                 out_dir / "supplement.html", *sorted((out_dir / "charts").iterdir())]:
        assert not RAW_CONTROL.search(path.read_text(encoding="utf-8")), path.name
    md = (out_dir / "report.md").read_text(encoding="utf-8")
    assert "**Title \\\\x1b\\]0;pwned\\\\x07 here**" in md
    assert "PI: A. \\\\x1b\\[31mRed\\\\x1b\\[0m · Uni\\\\x00versity" in md
    assert "| clears \\\\x1b\\[2J the screen \\\\x07 bell \\\\x00 nul \\\\x9b csi |" in md
    supplement = (out_dir / "supplement.md").read_text(encoding="utf-8")
    assert "*clears \\\\x1b\\[2J the screen \\\\x07 bell \\\\x00 nul \\\\x9b csi*" in supplement
    assert "m\\\\x1b\\]0;t\\\\x07\\\\x00" in supplement
    html = (out_dir / "supplement.html").read_text(encoding="utf-8")
    assert '<meta name="author" content="A. \\x1b[31mRed\\x1b[0m">' in html
    assert '<strong class="doc-title">Title \\x1b]0;pwned\\x07 here</strong>' in html
    assert '<p class="description">clears \\x1b[2J the screen \\x07 bell \\x00 nul \\x9b csi</p>' in html
