"""The report (issue 4): golden Markdown and HTML, reproducible builds, the PDF's text, the
template environment's guards and number formatting (writing the set: test_render_atomic.py).

The PDF is rendered once for the module (`pdf_build`); PDF tests skip cleanly when WeasyPrint
(or the Pango library under it) cannot be imported.
"""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import markupsafe
import pytest

from conftest import weasyprint_available
from proposalkit.cli import main
from proposalkit.render import format as fmt
from proposalkit.render import report
from proposalkit.render import context as ctx
from proposalkit.render import pdf as pdf_mod
from proposalkit.input.loading import load_files
from proposalkit.planning.planner import plan_files

TESTS = Path(__file__).resolve().parent
GOLDEN = TESTS / "golden"


def _golden_module():
    spec = importlib.util.spec_from_file_location("golden_update", TESTS / "golden_update.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SMALL = """\
proposal:
  title: Small test plan
  pi: T. Tester
workloads:
  - name: tune-a
    kind: finetune
    method: lora
    model: llama-3.1-8b
    data: {samples: 1000, seq_len: 1024, epochs: 1}
    throughput: {tokens_per_second: 4000, gpu: a100-80gb, gpus: 1}
    gpu: a100-80gb
    gpus: 1
    variants: 3
  - name: serve-b
    kind: inference
    model: llama-3.1-8b
    context: 4k
    batch: 4
    hours: 100
    gpu: a100-40gb
    gpus: 1
"""


def plan_from(tmp_path: Path, text: str, name: str = "w.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return plan_files(load_files([str(path)]))


@pytest.fixture(scope="module")
def golden_plan():
    return plan_files(load_files([str(GOLDEN / "workloads.yaml")]))


@pytest.fixture(scope="module")
def pdf_build(tmp_path_factory, golden_plan):
    """report.pdf of the golden plan, built once for the module."""
    if not weasyprint_available():
        pytest.skip("WeasyPrint or Pango cannot be loaded")
    out = tmp_path_factory.mktemp("pdf")
    paths = report.write_reports(golden_plan, str(out), ["pdf"]).paths
    return out / "report.pdf", paths


# ----------------------------------------------------------------- golden files


@pytest.mark.parametrize("name", ["report.md", "report.html", "supplement.md", "supplement.html"])
def test_golden_report_matches_byte_for_byte(name):
    rendered = _golden_module().render_golden()[name]
    expected = (GOLDEN / name).read_text(encoding="utf-8")
    assert rendered == expected, (
        f"tests/golden/{name} differs from the rendered report: run `make golden` "
        "and review the diff (git diff tests/golden/)")


def test_two_builds_are_byte_identical(tmp_path, golden_plan):
    a = report.write_reports(golden_plan, str(tmp_path / "a"), ["md", "html"]).paths
    b = report.write_reports(golden_plan, str(tmp_path / "b"), ["md", "html"]).paths
    assert [Path(p).relative_to(tmp_path / "a") for p in a] == [Path(p).relative_to(tmp_path / "b") for p in b]
    for pa, pb in zip(a, b):
        assert Path(pa).read_bytes() == Path(pb).read_bytes(), pa


def test_markdown_references_the_charts_written_beside_it(tmp_path, golden_plan):
    paths = report.write_reports(golden_plan, str(tmp_path), ["md"]).paths
    assert sorted(Path(p).relative_to(tmp_path).as_posix() for p in paths) == [
        "charts/gpu-hours.svg", "charts/memory.svg", "report.md", "supplement.md"]
    md = (tmp_path / "supplement.md").read_text(encoding="utf-8")
    assert "](charts/gpu-hours.svg)" in md and "](charts/memory.svg)" in md
    assert (tmp_path / "charts/memory.svg").read_text(encoding="utf-8").startswith("<svg ")


def test_html_is_self_contained(golden_plan):
    context = ctx.report_context(golden_plan)
    for html, charts in ((report.render_html(context), 0), (report.render_supplement_html(context), 2)):
        assert "<script" not in html.lower()
        for needle in ("src=", "href=\"http", "@import", "url("):
            assert needle not in html, needle
        assert html.count("<svg ") == charts


def test_html_and_markdown_hold_the_same_derivation(golden_plan):
    context = ctx.report_context(golden_plan)
    md, html = report.render_supplement_markdown(context), report.render_supplement_html(context)
    for w in context.workloads:
        for step in w.steps:
            assert fmt.md_escape(step.text) in md
            assert str(markupsafe.escape(step.text)) in html     # as Jinja's autoescape writes it


# ----------------------------------------------------------------- content


def test_report_content_follows_the_plan(golden_plan):
    context = ctx.report_context(golden_plan)
    section_b, md = report.render_markdown(context), report.render_supplement_markdown(context)
    body, references = md.split("## S.6 References")
    for i, w in enumerate(golden_plan.workloads, 1):
        assert f"### S.2.{i} {w.name}:" in body
        assert f"- **{w.name}**: " in section_b
    # GPU-hours per GPU type, never added across types (134.55 + 212.68 + 600.00 is no figure of either)
    for gpu, hours in (("a100-80gb", "134.55"), ("h100-80gb", "212.68"), ("a100-40gb", "600.00")):
        assert f"| **total, {gpu}** | | | | | | | **{hours}** | |" in section_b
    assert "939.03" not in section_b and "939.03" not in md
    # every number of the derivation substituted
    assert "204,800,000 tokens ÷ 5,500 tokens/s ÷ 3,600 s/h = 10.35 h per run (rounded up to a hundredth of an hour)" in body
    assert "10.35 h × 1 GPU × 10 runs = 103.50; × (1 + 30% buffer) = 134.55 requested" in body
    assert "× (1 + 20% buffer) = 600.00 requested" in body
    assert "2025-01-15" in section_b and "2025-01-15" in md        # the date given in the file
    assert "Rules of thumb beside this estimate" in body
    assert "**Kaplan et al. 2020**" in references


def test_references_list_only_what_the_plan_uses(golden_plan, tmp_path):
    refs = [r.key for r in ctx.report_context(golden_plan).references]
    for key in ("Rajbhandari et al. 2020", "Korthikanti et al. 2022", "Kaplan et al. 2020", "Hu et al. 2021",
                "Kwon et al. 2023", "Chowdhery et al. 2022", "Narayanan et al. 2021"):
        assert key in refs
    assert "Dettmers et al. 2023" not in refs        # no QLoRA in this plan
    assert "NVIDIA A100 80GB SXM4" in refs and "Llama 3.1 8B" in refs
    lora_only = plan_from(tmp_path, SMALL.split("  - name: serve-b")[0])
    keys = [r.key for r in ctx.report_context(lora_only).references]
    assert "Kwon et al. 2023" not in keys and "Kaplan et al. 2020" not in keys
    assert "Hu et al. 2021" in keys


def test_target_resource_units_are_shown(tmp_path):
    plan = plan_from(tmp_path, """\
        proposal: {title: On Delta, resource: ncsa-delta}
        workloads:
          - name: tune
            kind: finetune
            method: lora
            model: llama-3.1-8b
            tokens: 10M
            throughput: {tokens_per_second: 3000, gpu: a100-40gb, gpus: 1}
        """)
    w = plan.workloads[0]
    assert w.charge is not None
    md = report.render_supplement_markdown(ctx.report_context(plan))
    assert "charging rule" in md
    assert fmt.md_escape(w.charge.arithmetic) in md
    assert f"{fmt.fmt_hours(w.charge.amount)} {w.charge.unit}" in md


def test_plan_markdown_table(tmp_path):
    plan = plan_from(tmp_path, SMALL)
    table = report.plan_markdown_table(plan)
    lines = table.splitlines()
    assert lines[0].startswith("**Request.** We request **")       # section B's request and table
    rows = [line for line in lines if line.startswith("| ")]
    assert rows[0].startswith("| workload | for | GPUs |")
    assert len(rows) == 2 + 2 + 2                  # header, rule, two workloads, a total per GPU type
    assert all(row.count("|") == rows[0].count("|") for row in rows)
    for gpu, hours in plan.by_gpu_type().items():
        assert f"| **total, {gpu}** |" in table and f"**{fmt.fmt_hours(hours)}**" in table


# ----------------------------------------------------------------- PDF


def test_pdf_holds_each_workload_and_the_totals(pdf_build, golden_plan):
    from pypdf import PdfReader

    path, _ = pdf_build
    text = "\n".join(page.extract_text() for page in PdfReader(str(path)).pages)
    for w in golden_plan.workloads:
        assert w.name in text
    for hours in golden_plan.by_gpu_type().values():                 # 134.55, 129.30, 600.00
        assert fmt.fmt_hours(hours) in text
    assert "page 1 of" in text


def test_pdf_is_us_letter_without_timestamps(pdf_build):
    from pypdf import PdfReader

    path, _ = pdf_build
    reader = PdfReader(str(path))
    box = reader.pages[0].mediabox
    assert (round(float(box.width)), round(float(box.height))) == (612, 792)   # 8.5 × 11 in at 72 pt/in
    info = reader.metadata or {}
    assert "/CreationDate" not in info and "/ModDate" not in info


@pytest.fixture(scope="module")
def pdf_again(pdf_build, golden_plan):
    """A second rendering of the same plan: (PDF bytes, the body's length in pages)."""
    return pdf_mod.render_pdf(report.render_html(ctx.report_context(golden_plan)))


def test_pdf_builds_are_byte_identical(pdf_build, pdf_again):
    path, _ = pdf_build
    assert pdf_again[0] == path.read_bytes()


def test_section_b_fits_its_budget_for_the_golden_plan(pdf_again):
    body_pages = pdf_again[1]
    assert body_pages is not None and 0.5 < body_pages <= pdf_mod.BODY_PAGES + pdf_mod.PAGE_TOLERANCE


# ----------------------------------------------------------------- page-length warning


def test_long_body_is_a_warning_returned_and_printed_by_the_command_line(tmp_path, capsys):
    many = "workloads:\n" + "".join(f"""\
  - name: run-{i}
    description: {"a long description of what this run is for, " * 4}
    kind: finetune
    method: lora
    model: llama-3.1-8b
    tokens: 10M
    gpu: a100-80gb
    gpus: 1
""" for i in range(12))
    plan = plan_from(tmp_path, many)
    written = report.write_reports(plan, str(tmp_path / "out"), ["md"])
    assert capsys.readouterr() == ("", "")      # the library prints nothing
    assert not written.body_pages_measured and written.body_pages > pdf_mod.BODY_PAGES + pdf_mod.PAGE_TOLERANCE
    [warning] = written.warnings
    assert warning.startswith(f"section B runs to {written.body_pages:.2f} pages estimated from the Markdown, over "
                              "the 1.5 it has")
    assert main(["report", str(tmp_path / "w.yaml"), "-o", str(tmp_path / "cli"), "--format", "md"]) == 0
    assert capsys.readouterr().err == f"proposalkit report: warning: {warning}\n"


def test_short_body_does_not_warn(tmp_path, capsys):
    plan = plan_from(tmp_path, SMALL)
    assert report.write_reports(plan, str(tmp_path / "out"), ["md", "html"]).warnings == ()
    assert capsys.readouterr().err == ""


# ----------------------------------------------------------------- template guards


def test_strict_undefined_fails_on_a_misspelt_field(golden_plan):
    from jinja2 import UndefinedError

    context = ctx.report_context(golden_plan)
    for kind in ("md", "html"):
        env = report.environment(kind)
        with pytest.raises(UndefinedError):
            env.from_string("{{ r.gpu_hourz_requested }}").render(r=context)
        with pytest.raises(UndefinedError):
            env.from_string("{% for w in r.workloads %}{{ w.nmae }}{% endfor %}").render(r=context)
        with pytest.raises(UndefinedError):
            env.from_string("{{ missing }}").render(r=context)


def test_templates_may_not_print_a_bare_float(golden_plan):
    context = ctx.report_context(golden_plan)
    for kind in ("md", "html"):
        with pytest.raises(TypeError, match="format it with a filter"):
            report.environment(kind).from_string("{{ r.gpu_hours }}").render(r=context)
        assert report.environment(kind).from_string("{{ r.gpu_hours|hours }}").render(r=context) == "767.10"


@pytest.mark.parametrize("fn, value, expected", [
    (fmt.fmt_gib, 30230822093, "28.2 GiB"),
    (fmt.fmt_gib, 2**30, "1.0 GiB"),
    (fmt.fmt_gb, 10**9, "1.0 GB"),
    (fmt.fmt_hours, 9.343434, "9.34"),
    (fmt.fmt_hours, 10.343434, "10.34"),        # hours and units: two decimals everywhere (issue 23)
    (fmt.fmt_hours, 1309.4, "1,309.40"),
    (fmt.fmt_limit, 48.0, "48"),
    (fmt.fmt_limit, 0.25, "0.25"),
    (fmt.fmt_count, 204800000, "204,800,000"),
    (fmt.fmt_si, 204800000, "204.8M"),
    (fmt.fmt_si, 20e9, "20B"),
    (fmt.fmt_si, 2.5e12, "2.5T"),
    (fmt.fmt_pct, 0.3, "30%"),
    (fmt.fmt_pct, 0.125, "12.5%"),
    (fmt.fmt_rate, 5500.0, "5,500"),
    (fmt.fmt_rate, 12.345, "12.3"),
    (fmt.fmt_size, 163577856, "156.0 MiB"),
    (fmt.fmt_size, 2**40 * 2.25, "2.25 TiB"),
    (fmt.fmt_size, 0, "0 B"),
])
def test_number_formats(fn, value, expected):
    assert fn(value) == expected
