"""Section B as submitted and its supplement (issue 23, items 1-3): one number, one value; the page budget;
no half-empty page; no instruction to the author; assumptions shared by several workloads listed once.

The number test reads section B's Markdown, takes every figure with the unit it is written in (hours, GiB,
tokens/s, days, a percentage, an SI count, ...) and finds it in the plan JSON formatted by that unit's one
rule (render/format.py): a figure rounded another way, or in another unit, is not found. It then finds the
same figure, written the same way, in the supplement.
"""

from __future__ import annotations

import json
import re
import shutil
from decimal import ROUND_CEILING, ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from conftest import weasyprint_available
from proposalkit.cli import main
from proposalkit.input.loading import load_files
from proposalkit.planning.planner import plan_files
from proposalkit.render import report
from proposalkit.render.context import report_context
from proposalkit.render.format import md_escape, fmt_count, fmt_days, fmt_gib, fmt_hours, fmt_pct, fmt_rate, fmt_si
from proposalkit.render.output import plan_dict
from proposalkit.units import ms_text

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
# The example proposal, the other example file, the golden plan and three proposals of tests/data.
FILES = [ROOT / "workloads/code-models.yaml", ROOT / "workloads/inference/evaluation.yaml",
         TESTS / "golden/workloads.yaml", TESTS / "data/cloud.yaml", TESTS / "data/proposals/six-workloads.yaml",
         TESTS / "data/proposals/no-resource.yaml"]
IDS = [p.stem for p in FILES]


@pytest.fixture(scope="module", params=FILES, ids=IDS)
def built(request):
    plan = plan_files(load_files([str(request.param)]))
    context = report_context(plan)
    return plan, plan_dict(plan), report.render_markdown(context), report.render_supplement_markdown(context)


# ------------------------------------------------------------------ the figures of a text, with their units

# A figure: digits with thousands separators and decimals, an SI suffix, or a percentage; never a piece of a
# name (llama-3.1-8b, a100-40gb, p99, S.2) or of a formula (6·N).
FIGURE = re.compile(r"(?<![\w.·/⌈-])(\$?\d(?:[\d,]*\d)?(?:\.\d+)?)([kMBT]|%)?(?![\w·-]|\.\d)")
# The unit a figure is written in, read from the words after it; bare figures are counts, hours or amounts.
UNITS = (("GiB", r"\s*GiB"), ("rate", r"\s*(?:output )?tokens/s"), ("days", r"\s*days"),
         ("tflops", r"\s*TFLOP/s"), ("gflop", r"\s*GFLOP"), ("per_s", r"\s*requests?/s"), ("ms", r"\s*ms"))


def figures(text: str) -> list[tuple[str, str]]:
    """(figure as written, its unit) for every figure in `text`."""
    out = []
    for m in FIGURE.finditer(text):
        number, suffix = m.group(1), m.group(2) or ""
        after = text[m.end():m.end() + 16]
        unit = next((name for name, pattern in UNITS if re.match(pattern, after)), "bare")
        unit = {"%": "pct"}.get(suffix, "si" if suffix else unit)
        out.append((number + suffix, unit))
    return out


def _leaves(value):
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)


def _mfu(x: float) -> str:
    return f"{x:.3f}".removesuffix("0")


def _plain(x: float) -> str:
    return f"{x:,.4f}".rstrip("0").rstrip(".")


# Each unit's one rule (render/format.py), applied to every number of the plan JSON.
RULES = {
    "GiB": lambda v: {fmt_gib(v, 2, unit=False)} if isinstance(v, int) else set(),
    "rate": lambda v: {fmt_rate(v)},
    "days": lambda v: {fmt_days(v)},
    "tflops": lambda v: {f"{v / 1e12:,.0f}"},
    "gflop": lambda v: {f"{v / 1e9:,.2f}"},
    "per_s": lambda v: {f"{v:,.3g}", f"{v:g}"},
    "ms": lambda v: {fmt_count(v), f"{v:g}", ms_text(v).removesuffix(" ms")},   # and seconds as a step's ms
    "pct": lambda v: {fmt_pct(v)} if v <= 1 else set(),
    "si": lambda v: {fmt_si(v)} if v >= 1000 else set(),
    # Hours and amounts (fmt_hours), US dollars, counts, factors and MFUs as the documents write them.
    "bare": lambda v: {fmt_hours(v), f"${v:,.2f}", _plain(v), _mfu(v)} | ({fmt_count(v)} if v == int(v) else set()),
}


def plan_figures(plan_json: dict) -> dict[str, set[str]]:
    """Every number of the plan JSON, as each unit's rule writes it; the workloads' count too."""
    values = list(_leaves(plan_json)) + [len(plan_json["workloads"])]
    return {unit: set().union(*(rule(v) for v in values)) for unit, rule in RULES.items()}


def without_citations(text: str, plan, plan_json: dict) -> str:
    """The text without its citations' keys ("Kaplan et al. 2020": a year is no figure of the plan) and
    without the researcher's own words (the title, the descriptions: "5 ranks × 2 learning rates")."""
    for ref in plan_json["references"]:
        text = text.replace(ref["key"], "")
    own = [w.description for w in plan.workloads if w.description]
    if plan.proposal is not None:
        own += [x for x in (plan.proposal.title, plan.proposal.institution) if x]
    for words in own:
        text = text.replace(md_escape(words), "")
    return re.sub(r"(?:et al\.|App\.|Table|§)\s*[\w.]+", "", text)


# ------------------------------------------------------------------ one number, one value


def test_every_figure_of_section_b_is_a_figure_of_the_plan(built):
    plan, plan_json, section_b, _ = built
    known = plan_figures(plan_json)
    text = without_citations(section_b, plan, plan_json)
    missing = [(number, unit) for number, unit in figures(text) if number.lstrip("$") not in known[unit]
               and number not in known[unit]]
    assert not missing, f"section B figures not in the plan JSON by their unit's rule: {missing}"


def test_every_figure_of_section_b_reads_the_same_in_the_supplement(built):
    plan, plan_json, section_b, supplement = built
    written = {number for number, _ in figures(supplement)}
    missing = sorted({number for number, _ in figures(without_citations(section_b, plan, plan_json))} - written)
    assert not missing, f"section B figures the supplement does not write the same way: {missing}"


def test_a_figure_rounded_another_way_is_not_found():
    """The test can fail: 18.4 h is not the plan's 18.35 h, nor 35.8 GiB its 35.76 GiB."""
    plan_json = {"workloads": [{"runtime_hours": 18.351, "memory": {"per_gpu_bytes": int(35.76 * 2**30)}}],
                 "references": []}
    known = plan_figures(plan_json)
    assert "18.35" in known["bare"] and "18.4" not in known["bare"]
    assert "35.76" in known["GiB"] and "35.8" not in known["GiB"]
    assert figures("18.4 h per run, 35.8 GiB, 204.8M tokens, 30%, llama-3.1-8b on 1× a100-40gb") == [
        ("18.4", "bare"), ("35.8", "GiB"), ("204.8M", "si"), ("30%", "pct"), ("1", "bare")]


def test_hours_and_units_read_the_same_in_plan_text_and_section_b(tmp_path, capsys):
    path = FILES[0]
    plan = plan_files(load_files([str(path)]))
    section_b = report.render_markdown(report_context(plan))
    assert main(["plan", str(path)]) == 0
    text = capsys.readouterr().out
    for w in plan.workloads:
        for hours in (w.runtime_hours, w.gpu_hours_requested):
            assert fmt_hours(hours) in text and fmt_hours(hours) in section_b, (w.name, hours)


def test_memory_and_tokens_read_the_same_in_plan_text_the_supplement_and_its_chart(capsys):
    """`plan`'s table printed 20.2 GiB and 205M tokens where the supplement gives 20.16 GiB and 204.8M tokens,
    and the memory chart's labels 20.2 of 39.5 GiB: one rule (fmt_gib to 0.01, fmt_si) for all three."""
    path = FILES[0]
    plan = plan_files(load_files([str(path)]))
    context = report_context(plan)
    supplement = report.render_supplement_markdown(context)
    assert main(["plan", str(path)]) == 0
    text = capsys.readouterr().out
    rows = {line.split()[0]: line for line in text.splitlines() if line.strip()}
    chart = context.charts["memory"].svg
    for w in plan.workloads:
        memory = fmt_gib(w.memory.total, 2)
        assert memory in rows[w.name] and memory in supplement, (w.name, memory)
        label = f"{fmt_gib(w.memory.total, 2, unit=False)} of {fmt_gib(w.gpu.usable_memory_bytes, 2)} ({w.gpu.id})"
        assert label in chart, label
        if w.tokens:
            assert f" {fmt_si(w.tokens)} " in rows[w.name] and f"{fmt_si(w.tokens)} tokens" in supplement


def test_no_sum_across_gpu_types_is_presented_as_the_request(built):
    """GPU-hours are totalled per GPU type; only a resource's own unit adds across its partitions."""
    plan, plan_json, section_b, _ = built
    types = plan.by_gpu_type()
    if len(types) > 1:
        assert fmt_hours(plan.gpu_hours_requested) not in section_b
    for gpu, hours in types.items():
        assert f"**total, {gpu}**" in section_b and fmt_hours(hours) in section_b


def test_a_byte_count_quoted_in_the_references_converts_to_the_gib_beside_it(built):
    """The A40's reference quoted deviceQuery's '(47608692736 bytes)' as 44.28 GiB while the supplement used
    44.34 GiB, which the bytes are: a size a source gives in bytes reads in GiB as the documents compute it."""
    _, _, _, supplement = built
    quoted = re.findall(r"\(([\d,]+) bytes\)\W{0,3}\(([\d.,]+) GiB\)", supplement)
    for n_bytes, gib in quoted:
        assert gib == fmt_gib(int(n_bytes.replace(",", "")), 2, unit=False), (n_bytes, gib)


def _decimal(figure: str) -> Decimal:
    return Decimal(figure.replace(",", ""))


def test_runtime_lines_work_from_the_printed_rate(built):
    """qlora-70b's line read '245,760,000 tokens ÷ 1,233 tokens/s ÷ 3,600 s/h = 55.35 h per run': the hours came
    from the unrounded 1,233.4 tokens/s, and the printed figures give 55.3656, 55.37 rounded up. Each runtime
    line's hours are its printed tokens ÷ printed rate ÷ 3,600, rounded up to 0.01 h."""
    _, _, _, supplement = built
    for line in re.findall(r"- \*\*Runtime:\*\* ([\d,]+ tokens ÷ .*)", supplement):
        m = re.match(r"([\d,]+) tokens ÷ ([\d,.]+) tokens/s ÷ 3,600 s/h = ([\d,.]+) h per run", line)
        assert m, line
        worked = (_decimal(m.group(1)) / _decimal(m.group(2)) / 3600).quantize(Decimal("0.01"), ROUND_CEILING)
        assert worked == _decimal(m.group(3)), line


def test_storage_sums_work_from_the_printed_sizes(built):
    """The supplement's storage table gave full-finetune 99.30 GiB × 3 × 1 + 0.76 GiB = 298.65 GiB (298.66 by
    hand), and section B's project and archive could not be summed from it (no raw-text column; 131.42 GiB of
    weights twice made 262.83): each peak is its row's product and sum, project and archive add the rows, a row
    whose model is "shared with" an earlier workload adding no weights, "—" nothing; the note under the table
    gives the same totals as section B."""
    plan, _, section_b, supplement = built
    s3 = supplement.split("## S.3")[1].split("## S.4")[0]
    lines = s3.splitlines()
    head = next(i for i, r in enumerate(lines) if r.startswith("| workload |"))
    rows = [r for r in lines[head + 2:] if r.startswith("| ")]
    assert len(rows) == sum(w.storage is not None for w in plan.workloads)

    def gib(cell: str) -> Decimal:
        return Decimal(0) if cell == "—" else _decimal(cell.strip().removesuffix(" GiB"))

    peaks, project, archive, named = [Decimal(0)], Decimal(0), Decimal(0), []
    for row in rows:
        name, checkpoint, kept, peak, data, raw, weights, final = row.strip("| ").split(" | ")
        retained, at_once = (int(x) for x in kept.split(" × ")) if kept != "—" else (0, 0)
        final_size, runs = final.split(" × ") if final != "—" else ("—", "0")
        assert gib(checkpoint) * retained * at_once + gib(data) == gib(peak), row
        peaks.append(gib(peak))
        if weights.startswith("shared with "):
            assert weights.removeprefix("shared with ") in named, row      # an earlier row's copy
            weights = "—"
        named.append(name)
        project += gib(data) + gib(raw) + gib(weights) + gib(final_size) * int(runs)
        archive += gib(final_size) * int(runs) + gib(raw)
    # a store the plan does not use reads "no scratch" / "no archive" (words.storage_sentence): zero
    m = re.search(r"(?:scratch at most ([\d,.]+) GiB at once|no scratch).*?; project ([\d,.]+) GiB.*?; "
                  r"(?:archive ([\d,.]+) GiB|no archive)", section_b)
    assert tuple(_decimal(g) if g else Decimal(0) for g in m.groups()) == (max(peaks), project, archive), m.group(0)
    note = re.search(r"Project space holds [^:]*: ([\d,.]+) GiB in all.*?; (?:the archive keeps [^:]*: ([\d,.]+) GiB"
                     r"|nothing is archived)\.", s3)
    assert (_decimal(note.group(1)), _decimal(note.group(2)) if note.group(2) else Decimal(0)) == (project, archive)


def test_a_step_timed_rate_is_its_printed_tokens_per_step_over_the_printed_step(built):
    """full-finetune's rate read '8,192 tokens per step ÷ 443.0 ms = 18,493 tokens/s' (18,492 by hand: the rate
    came from the unprinted 442.97 ms), and section B wrote it as '2 × 989 TFLOP/s × MFU 0.443 ÷ 47.36 GFLOP',
    which gives 18,502. The rate is tokens per step ÷ the printed step in both, and section B gives that division."""
    _, _, section_b, supplement = built
    pattern = r"([\d,]+) tokens per step ÷ ([\d,.]+) ms(?: = ([\d,]+) tokens/s)?"
    for text in (section_b, supplement):
        for line in text.splitlines():
            for m in re.finditer(pattern, line):
                rate = m.group(3) or re.search(r"at ([\d,]+) tokens/s \(" + re.escape(m.group(0)), line).group(1)
                worked = (_decimal(m.group(1)) * 1000 / _decimal(m.group(2))).quantize(Decimal(1), ROUND_HALF_UP)
                assert worked == _decimal(rate), line


def test_calendar_lines_and_their_total_work_from_the_printed_figures(built):
    """lora-sweep's line read '⌈10 runs ÷ 1 at once⌉ = 10 × 18.36 h ÷ 24 = 7.6 days' (183.6 ÷ 24 is 7.65, a
    reader's 7.7), and section B's 35.9 days were not the sum of the printed lines (7.6 + 0.8 + 6.6 + 20.8 =
    35.8): each line's days are its printed factors' product rounded half up, and the total adds the lines."""
    plan, _, section_b, supplement = built
    days = []
    for line in re.findall(r"- \*\*Calendar:\*\* (.*)", supplement):
        m = re.search(r"(?:= (\d[\d,]*) × )?([\d,.]+) h ÷ 24 = ([\d,.]+) days", line)
        assert m, line
        worked = (_decimal(m.group(1) or "1") * _decimal(m.group(2)) / 24).quantize(Decimal("0.1"), ROUND_HALF_UP)
        assert worked == _decimal(m.group(3)), line
        days.append(worked)
    assert len(days) == len(plan.workloads)
    total = re.search(r"([\d,.]+) days of calendar time", section_b).group(1)
    assert _decimal(total) == sum(days), (total, days)


def test_memory_is_in_gib_throughout(built):
    """Every size the documents compute is in GiB; the references, and the rules of thumb's formulas, quote
    their sources as written ('16 GB per billion parameters'), and a GPU's name is its name ('A100 40GB')."""
    _, _, section_b, supplement = built
    supplement = re.sub(r"\| [^|\n]* \| [^|\n]*GB[^|\n]* \|", "|", supplement.split("## S.6")[0])
    for text in (section_b, supplement):
        found = re.search(r".{40}\d\s+(?:GB|MiB|KiB|TiB)\b(?!/).{10}", text)
        assert found is None, found.group(0)


# ------------------------------------------------------------------ assumptions once, statements only

AUTHOR_TEXT = re.compile(r"re-check|set it to|\bwrite mlp\b|set storage|set loss|set compile|set lora|"
                         r"mlp: (?:plain|gated) would|will be replaced|@ ?[0-9a-f]{7,40}\b|replace it with|drop the flag", re.IGNORECASE)


def test_no_instruction_to_the_author_in_either_document(built):
    _, _, section_b, supplement = built
    for name, text in (("section B", section_b), ("supplement", supplement.split("## S.6")[0])):
        found = AUTHOR_TEXT.search(text)
        assert found is None, f"{name}: {text[max(0, found.start() - 80):found.end() + 40]}"


def test_a_framework_recipe_note_is_said_only_of_the_methods_whose_recipes_do_it(built):
    """The example's lora-sweep (torchtune LoRA) listed among its own assumptions that torchtune's single-device
    *full fine-tune* recipes fuse the optimizer step into the backward: a recipe it does not run."""
    plan, _, _, supplement = built
    sections = re.split(r"\n### S\.2\.\d+ ", supplement.split("## S.3")[0])[1:]
    for w, section in zip(plan.workloads, sections):
        assert section.startswith(w.name + ":"), section[:40]
        if w.settings.framework == "torchtune" and w.method != "full":
            assert "full fine-tune recipes also fuse" not in section, w.name


def test_check_defaults_prints_the_defaults_the_author_may_set_on_stderr(capsys):
    """The documents state the defaults taken; `check --defaults` says what to set instead, `plan` stays quiet."""
    assert main(["plan", str(FILES[0])]) == 0
    assert "takes the planner's defaults" not in capsys.readouterr().err
    main(["check", "--defaults", str(FILES[0])])
    err = capsys.readouterr().err
    assert "full-finetune takes the planner's defaults for storage, loss, compile" in err
    assert "storage: {checkpoints_retained: N}" in err


def test_assumptions_shared_by_several_workloads_are_listed_once(built):
    """An assumption (and an MFU or engine basis) alike in several workloads is one bullet of S.4, naming them;
    each workload's own list has only what differs. Derivation lines (bold labels) are each workload's."""
    plan, _, _, supplement = built
    bullets = [line for line in supplement.splitlines()
               if line.startswith("- ") and not line.startswith("- **") or line.startswith(("- **MFU", "- **Engine"))]
    assert len(bullets) == len(set(bullets)), [b for b in bullets if bullets.count(b) > 1][:3]


def test_caveats_are_statements(built):
    plan, _, _, _ = built
    for caveat in report_context(plan).section_b.caveats:
        assert caveat.endswith("."), caveat
        assert not re.search(r"will be|we will|should|check the", caveat), caveat


# ------------------------------------------------------------------ the page budget and the pages

@pytest.mark.skipif(not weasyprint_available(), reason="WeasyPrint or Pango cannot be loaded")
@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_section_b_fits_one_and_a_half_pages_and_no_page_is_half_empty(path):
    from proposalkit.render import pdf

    plan = plan_files(load_files([str(path)]))
    context = report_context(plan)
    assert len(plan.workloads) <= 6
    for name, html in (("report", report.render_html(context)), ("supplement", report.render_supplement_html(context))):
        fills = pdf.page_fills(html)
        assert all(f >= 0.5 for f in fills[:-1]), f"{path.name} {name}: a page before the last is half empty: {fills}"
        if name == "report":
            assert pdf.measure_body_pages(html) <= pdf.BODY_PAGES, (path.name, fills)


def test_the_warning_names_what_to_cut(tmp_path, capsys):
    """Past the budget, `report` says by how much and names the longest descriptions and the smallest
    workloads to cut; measured in the Markdown estimate when no PDF is asked for."""
    long = "; ".join(f"sweep part {i} with a description that runs on for many words" for i in range(4))
    workloads = "\n".join(f"""  - name: w{i}
    description: {long}
    kind: finetune
    method: lora
    model: llama-3.1-8b
    tokens: {i + 1}00M
    throughput: {{tokens_per_second: 3000, gpu: a100-80gb, gpus: 1}}
    gpu: a100-80gb""" for i in range(8))
    path = tmp_path / "long.yaml"
    path.write_text("workloads:\n" + workloads + "\n", encoding="utf-8")
    assert main(["report", str(path), "-o", str(tmp_path / "out"), "--format", "md"]) == 0
    err = capsys.readouterr().err
    assert "section B runs to" in err and "1.5" in err
    assert "shorten the descriptions of w" in err
    assert "move w0" in err      # the smallest request first


def test_an_illustrative_pilot_is_labelled_so_wherever_it_appears(capsys, tmp_path):
    """Issue 23, item 5: a pilot log marked `illustrative: true` (written for an example, not measured): every
    sentence and row of either document that uses it says so, and so does `plan`."""
    shutil.copy(ROOT / "tests" / "data" / "pilot" / "lora-sweep_log_1763900000.txt", tmp_path)
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n  - {name: lora-sweep, kind: finetune, method: lora, model: llama-3.1-8b, "
                    "data: {samples: 50k, seq_len: 2048, epochs: 2}, lora: {rank: 16, targets: [all-linear]}, "
                    "framework: torchtune, pilot: {log: lora-sweep_log_1763900000.txt, gpu: a100-40gb, gpus: 1, "
                    "illustrative: true}}\n", encoding="utf-8")
    plan = plan_files(load_files([str(path)]))
    context = report_context(plan)
    for text in (report.render_markdown(context), report.render_supplement_markdown(context)):
        # The lines that name the log, give its rate or count its steps (the runtime's arithmetic restates the
        # rate of the line above it, which says so).
        uses = [line for line in text.splitlines() if "lora-sweep\\_log" in line or "pilot log" in line
                or "3,100 tokens/s" in line and "**Runtime:**" not in line]
        assert uses and all("illustrative" in line for line in uses), uses
    assert main(["plan", str(path)]) == 0
    captured = capsys.readouterr()
    assert "is marked illustrative" in captured.err
    assert all("illustrative" in line for line in captured.out.splitlines() if "lora-sweep_log" in line)


def test_the_example_pilots_are_measured_and_cited_as_such(capsys, tmp_path):
    """Issue 23, item 5: the example's pilots are real runs (benchmarks/device/example_pilot.py on one H200), so
    nothing calls them illustrative, and each throughput line says what the log measured."""
    assert main(["report", str(FILES[0]), "-o", str(tmp_path), "--format", "md"]) == 0
    assert "illustrative" not in capsys.readouterr().err
    body, supplement = ((tmp_path / f"{doc}.md").read_text() for doc in ("report", "supplement"))
    for text in (body, supplement):
        assert "illustrative" not in text
    for name in ("lora-sweep", "code-1b-pretrain"):
        (line,) = [line for line in body.splitlines() if line.startswith(f"- **{name}**")]
        assert "measured in a pilot on 1× h200 (hf-trainer log, a whole-run average)" in line


def test_a_shared_mfu_basis_is_pointed_at_where_it_stands(tmp_path):
    """Two workloads at a given MFU share its basis: it is one bullet of S.4, and their throughput lines point
    there, not at their own sections (which no longer hold it). Two workloads timed by the step's parts share their matmul rate's basis in S.4 instead, and their throughput lines point
    at their own sections, which hold each one's step time."""
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n" + "".join(
        f"  - {{name: ft{i}, kind: finetune, method: full, model: llama-3.2-1b, tokens: 1B, mfu: 0.4, gpu: h100-80gb, gpus: 1}}\n"
        for i in (1, 2)), encoding="utf-8")
    supplement = report.render_supplement_markdown(report_context(plan_files(load_files([str(path)]))))
    shared = supplement.split("## S.4")[1].split("## S.5")[0]
    assert "- MFU: 0.40 given in the workload file" in shared
    for section in ("S.2.1", "S.2.2"):
        body = supplement.split(f"### {section} ")[1].split("### ")[0]
        assert "MFU 0.40 (S.4)" in body and f"({section})" not in body
    path.write_text("workloads:\n" + "".join(
        f"  - {{name: st{i}, kind: finetune, method: full, model: llama-3.2-1b, tokens: 1B, gpu: h100-80gb, gpus: 1}}\n"
        for i in (1, 2)), encoding="utf-8")
    supplement = report.render_supplement_markdown(report_context(plan_files(load_files([str(path)]))))
    shared = supplement.split("## S.4")[1].split("## S.5")[0]
    assert "- Matmul rate: matmuls at 0.76 of the GPU's maximum achievable matmul rate (Bekman's MAMF table" in shared
    for section in ("S.2.1", "S.2.2"):
        body = supplement.split(f"### {section} ")[1].split("### ")[0]
        assert f"({section})" in body and "**Step time:**" in body and "**Matmul rate:**" not in body
