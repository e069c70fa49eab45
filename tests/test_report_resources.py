"""The report's units table (issue 6, section B.3): for each resource the request runs on,
requested GPU-hours → the charging rule → the amount in the resource's own unit, with totals
per system and unit and second-hand catalog facts marked.

Expected amounts are worked out here from the provider's published rule (source beside each
number), never read back from the view under test.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from proposalkit.render import format as fmt
from proposalkit.render import report
from proposalkit.render import context as ctx
from proposalkit.render import pdf as pdf_mod
from proposalkit.catalog import resources as R
from proposalkit.planning import charges
from proposalkit.input.loading import load_files
from proposalkit.planning.planner import plan_files

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "workloads" / "code-models.yaml"
TABLE_HEADER = "| resource | node, partition, size | requested GPU-h | charging rule | amount | walltime per job |"


def plan_from(tmp_path: Path, text: str):
    path = tmp_path / "w.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return plan_files(load_files([str(path)]))


def service(name: str, gpu: str, gpus: int, hours: float, buffer: float = 0.0, resource: str | None = None,
            model: str = "llama-3.1-8b") -> str:
    """An inference service kept up `hours`: requested GPU-hours = gpus × hours × (1 + buffer), one job."""
    return textwrap.indent(textwrap.dedent(f"""\
        - name: {name}
          kind: inference
          model: {model}
          context: 4k
          batch: 4
          hours: {hours}
          gpu: {gpu}
          gpus: {gpus}
          buffer: {buffer}
        """) + (f"  resource: {resource}\n" if resource else ""), "  ")


def body_of(markdown: str) -> str:
    return markdown.split(pdf_mod.APPENDIX_MARKER)[0]


def table_lines(markdown: str) -> list[str]:
    """The units table's lines (header, rule, rows, totals) from the report body."""
    lines = body_of(markdown).splitlines()
    start = lines.index(TABLE_HEADER)
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return lines[start:end]


# ----------------------------------------------------------------- the rule in words


@pytest.mark.parametrize("rid, words", [
    # NCSA Delta 'Running Jobs' partition table (third-party copy): gpuH200x8 charge factor 3.0;
    # 'Job Accounting': minimum charge 1 SU per job.
    ("ncsa-delta-h200", "3 SUs per GPU-hour, 1 SU minimum"),
    # Same table: gpuA40x4 charge factor 0.5.
    ("ncsa-delta-a40", "0.5 SU per GPU-hour, 1 SU minimum"),
    # ALCF 'Running Jobs on Polaris': whole nodes of 4 A100s, charged in node-hours.
    ("alcf-polaris", "node-hours, whole nodes of 4 GPUs"),
    # TACC Vista 'Job Accounting': 1 SU per node-hour, one GH200 per node, 15-minute minimum.
    ("tacc-vista", "1 SU per node-hour, whole nodes of 1 GPU, 15-min minimum"),
    # TACC Lonestar6 'Table 5. Production Queues': gpu-a100, 3 A100s per node, 3 SUs per node-hour.
    ("tacc-lonestar6-a100", "3 SUs per node-hour, whole nodes of 3 GPUs, 15-min minimum"),
    # SDSC Expanse (ACCESS resource page): allocated in GPU-hours; Expanse 101 'Job Charging': 1 SU minimum.
    ("sdsc-expanse", "GPU-hours as used, 1 GPU-hour minimum"),
])
def test_charging_rule_in_words(rid, words):
    assert R.describe_rule(rid) == words


# ----------------------------------------------------------------- rows and totals


def test_six_gpus_for_ten_hours_on_polaris_are_twenty_node_hours(tmp_path):
    plan = plan_from(tmp_path, "proposal: {title: P, resource: alcf-polaris}\nworkloads:\n"
                     # 6-way tensor parallel needs heads divisible by 6: Llama 3.2 3B has 24
                     # (meta-llama/Llama-3.2-3B config.json num_attention_heads); Llama 3.1 8B's 32 are not.
                     + service("serve-6", "a100-40gb", 6, 10, model="llama-3.2-3b"))
    view = ctx.resources_view(plan)
    [row] = view.rows
    assert row.resource_id == "alcf-polaris" and row.gpu_type == "a100-40gb" and row.gpus_per_node == 4
    # 6 GPUs × 10 h, no buffer = 60 GPU-hours requested
    assert row.gpu_hours_requested == pytest.approx(60.0)
    # ALCF charges whole nodes: ⌈6 ÷ 4⌉ = 2 nodes × 10 h = 20 node-hours (not 60 ÷ 4 = 15)
    assert (row.amount, row.unit) == (pytest.approx(20.0), "node-hours")
    # ALCF Polaris queues: jobs of 1–4 nodes go to 'capacity', 168 h
    assert row.walltime == "168 h (1–4 nodes)"
    assert row.rule_mark == "" and row.walltime_mark == ""        # both read on the ALCF page
    assert view.summed == ()                                      # one row: no total row to repeat it
    md = report.render_supplement_markdown(ctx.report_context(plan))
    # ALCF 'Polaris': 560 nodes of 4 A100; prod takes at most 496 nodes per job.
    assert ("| alcf-polaris | 4× a100-40gb, prod / capacity / preemptable, 560 nodes (2,240 GPUs), 496 nodes per "
            "job | 60.00 | "
            "node-hours, whole nodes of 4 GPUs | 20.00 node-hours | 168 h (1–4 nodes) |") in table_lines(md)
    assert "†" not in body_of(md)
    assert "We request **20.00 node-hours on alcf-polaris** (alcf-polaris: 60.00 GPU-hours of a100-40gb)" in md


def test_delta_partitions_add_up(tmp_path):
    plan = plan_from(tmp_path, "proposal: {title: D, resource: ncsa-delta}\nworkloads:\n"
                     + service("on-h200", "h200", 2, 100) + service("on-a40", "a40", 1, 100, buffer=0.5))
    view = ctx.resources_view(plan)
    h200, a40 = view.rows
    # H200: 2 GPUs × 100 h = 200 GPU-hours × 3.0 (gpuH200x8 charge factor, Delta_doc @ 43c8f4c) = 600 SUs
    assert (h200.resource_id, h200.gpu_hours_requested, h200.amount) == (
        "ncsa-delta-h200", pytest.approx(200.0), pytest.approx(600.0))
    # A40: 1 GPU × 100 h × 1.5 (50% buffer) = 150 GPU-hours × 0.5 (gpuA40x4 charge factor) = 75 SUs
    assert (a40.resource_id, a40.gpu_hours_requested, a40.amount) == (
        "ncsa-delta-a40", pytest.approx(150.0), pytest.approx(75.0))
    assert (h200.rule_mark, h200.walltime_mark) == ("", "")        # both read in the NCSA user guide
    assert (a40.rule_mark, a40.walltime_mark) == ("", "")
    # Both partitions draw on the one Delta allocation: 600 + 75 SUs; 200 H200- and 150 A40-hours are not added.
    [total] = view.summed
    assert (total.label, total.unit, total.gpu_hours_requested, total.amount) == (
        "ncsa-delta", "SUs", None, pytest.approx(675.0))

    md = report.render_supplement_markdown(ctx.report_context(plan))
    assert table_lines(md)[2:] == [
        # Delta 'System Architecture' and 'Partitions/Queues': 8 H200 nodes, 1 per job; 100 A40 nodes.
        "| ncsa-delta-h200 | 8× h200, gpuH200x8, 8 nodes (64 GPUs), 1 node per job | 200.00 | 3 SUs per GPU-hour, "
        "1 SU minimum | 600.00 SUs | 48 h |",
        "| ncsa-delta-a40 | 4× a40, gpuA40x4, 100 nodes (400 GPUs) | 150.00 | 0.5 SU per GPU-hour, 1 SU minimum | "
        "75.00 SUs | 48 h |",
        # GPU-hours of H200 and A40 are not added (issue 23): the system's total is in its unit only.
        "| **total, ncsa-delta** | |  | | **675.00 SUs** | |",
    ]
    assert "so their amounts add" in md
    assert "**350.00" not in md
    assert "We request **675.00 SUs on ncsa-delta**: 600.00 SUs on gpuH200x8 (200.00 GPU-hours of h200), " in md
    html = report.render_supplement_html(ctx.report_context(plan))
    assert "<td>3 SUs per GPU-hour, 1 SU minimum</td>" in html
    assert '<tr class="total"><th scope="row">total, ncsa-delta</th>' in html


def test_a_second_hand_rule_is_marked(tmp_path):
    # PSC Bridges-2's H100 charge and walltime are read only in users' notes (catalog: confidence secondhand).
    plan = plan_from(tmp_path, "proposal: {title: P, resource: psc-bridges2}\nworkloads:\n"
                     + service("on-h100", "h100-80gb", 2, 100))
    [row] = ctx.resources_view(plan).rows
    assert (row.resource_id, row.rule_mark, row.walltime_mark) == ("psc-bridges2-h100", "†", "†")
    md = report.render_supplement_markdown(ctx.report_context(plan))
    assert "† Second-hand source, not the provider's own page." in md and "re-check" not in md
    assert "<td>2 SUs per GPU-hour †</td>" in report.render_supplement_html(ctx.report_context(plan))
    # Its size (nodes w001-w010, users' notes) too; and section B, which gives the rule, marks it and says why.
    assert row.size_mark == "†" and "10 nodes (80 GPUs) † |" in md
    section_b = report.render_markdown(ctx.report_context(plan))
    assert ("Units: psc-bridges2-h100: 2 SUs per GPU-hour †. † Second-hand source, not the provider's own page."
            in section_b)
    assert "verified" not in section_b + md
    # The rule is not in `plan --format markdown`'s request sentence, so neither is its note.
    assert "†" not in report.plan_markdown_table(plan)


def test_a_second_hand_cloud_price_is_marked_where_section_b_gives_it(tmp_path):
    # AWS's on-demand prices are read in a dated third-party copy of the price list (catalog: secondhand).
    plan = plan_from(tmp_path, "proposal: {title: P, resource: aws-p5}\nworkloads:\n"
                     + service("on-p5", "h100-80gb", 8, 10))
    section_b = report.render_markdown(ctx.report_context(plan))
    assert "as of p5.48xlarge \\$55.04 per instance-hour (on-demand, Linux, us-east-1, read 2026-11-09) †." in section_b
    assert "whole instances of 8 GPUs †. † Second-hand source, not the provider's own page." in section_b
    # `plan --format markdown` gives the request sentence alone: its mark and what it means, no units line.
    table = report.plan_markdown_table(plan)
    assert "read 2026-11-09) †." in table and table.count("† Second-hand source") == 1 and "Units:" not in table
    # A price the researcher gives (price_per_hour) is theirs, not the catalog's: no mark, no note.
    plan = plan_from(tmp_path, "proposal: {title: P, resource: aws-p5, price_per_hour: 50}\nworkloads:\n"
                     + service("on-p5", "h100-80gb", 8, 10))
    assert "†" not in report.render_markdown(ctx.report_context(plan))


def test_different_systems_are_not_added(tmp_path):
    plan = plan_from(tmp_path, "proposal: {title: Two}\nworkloads:\n"
                     + service("on-delta", "h200", 1, 10, resource="ncsa-delta")
                     + service("on-anvil", "a100-40gb", 1, 10, resource="purdue-anvil"))
    view = ctx.resources_view(plan)
    # Delta H200: 1 × 10 h × 3.0 = 30 SUs; Anvil 'Job Accounting': 1 SU per GPU-hour = 10 SUs.
    assert [(t.label, t.amount, t.unit) for t in view.totals] == [
        ("ncsa-delta-h200", pytest.approx(30.0), "SUs"), ("purdue-anvil", pytest.approx(10.0), "SUs")]
    assert view.summed == ()                    # SUs of two systems are not one number
    md = report.render_supplement_markdown(ctx.report_context(plan))
    assert "40.0" not in md                     # 30 + 10 appears nowhere
    assert "Amounts on different systems or in different units are not added." in md
    assert ("We request **30.00 SUs on ncsa-delta** (gpuH200x8: 10.00 GPU-hours of h200); and **10.00 SUs on "
            "purdue-anvil** (gpu: 10.00 GPU-hours of a100-40gb)") in md


def test_perlmutter_gets_a_row_per_gpu_type_and_charges_whole_nodes(tmp_path):
    plan = plan_from(tmp_path, "workloads:\n"
                     + service("small-40", "a100-40gb", 1, 10, resource="nersc-perlmutter")
                     + service("small-80", "a100-80gb", 1, 10, resource="nersc-perlmutter"))
    view = ctx.resources_view(plan)
    # NERSC 'Queues and Charges': node-hours = nodes × walltime; a 1-GPU job in the regular QOS
    # holds a whole 4-GPU node: 1 node × 10 h = 10 node-hours for 10 GPU-hours, on each GPU type.
    assert [(r.gpu_type, r.gpu_hours_requested, r.amount) for r in view.rows] == [
        ("a100-40gb", pytest.approx(10.0), pytest.approx(10.0)),
        ("a100-80gb", pytest.approx(10.0), pytest.approx(10.0))]
    [total] = view.summed
    assert (total.label, total.amount, total.unit) == ("nersc-perlmutter", pytest.approx(20.0), "node-hours")


def test_workloads_without_a_resource_get_a_row_in_gpu_hours(tmp_path):
    plan = plan_from(tmp_path, "workloads:\n"
                     + service("on-delta", "a40", 1, 10, resource="ncsa-delta")
                     + service("nowhere", "a100-80gb", 2, 10, buffer=0.2))
    rows = ctx.resources_view(plan).rows
    assert [r.resource_id for r in rows] == ["ncsa-delta-a40", None]
    # 2 GPUs × 10 h × 1.2 = 24 GPU-hours, requested as GPU-hours
    assert (rows[1].gpu_hours_requested, rows[1].amount, rows[1].unit) == (
        pytest.approx(24.0), pytest.approx(24.0), "GPU-hours")
    md = report.render_supplement_markdown(ctx.report_context(plan))
    assert "| no target resource | a100-80gb | 24.00 | GPU-hours as requested | 24.00 GPU-hours | — |" in md
    # 1 × 10 h × 0.5 = 5 SUs on Delta; the workload with no resource in GPU-hours of its type
    assert "We request **5.00 SUs on ncsa-delta** (gpuA40x4: 10.00 GPU-hours of a40); and **24.00 GPU-hours of " \
           "a100-80gb**" in md


def test_without_a_target_resource_there_is_no_units_table(tmp_path):
    plan = plan_from(tmp_path, "workloads:\n" + service("nowhere", "a100-80gb", 1, 10))
    context = ctx.report_context(plan)
    assert context.resources is None
    md = report.render_supplement_markdown(context)
    assert TABLE_HEADER not in md and "allocation units" not in md
    assert "## S.3 Storage and calendar" in md
    assert "We request **10.00 GPU-hours of a100-80gb**" in md
    assert '<table class="resources">' not in report.render_supplement_html(context)


# ----------------------------------------------------------------- the shipped example


@pytest.fixture(scope="module")
def example_plan():
    return plan_files(load_files([str(EXAMPLE)]))


def test_example_report_has_the_units_table(example_plan):
    """Issue 6, done when: the shipped example report has a resource section with the units table."""
    context = ctx.report_context(example_plan)
    md = report.render_supplement_markdown(context)
    body = body_of(md)
    assert "## S.1 Request by resource" in body
    lines = table_lines(md)
    rows = {line.split(" | ")[0].removeprefix("| "): line for line in lines[2:]}
    by_resource = example_plan.by_resource()         # the planner's charges, summed per partition
    assert set(by_resource) == {"ncsa-delta-h200", "ncsa-delta-a40"}
    for rid, (unit, amount) in by_resource.items():
        assert f"| {fmt.fmt_hours(amount)} {unit} |" in rows[rid], rid
    # Delta's rules and walltimes are all read in the NCSA user guide: no row is marked second-hand.
    assert not any("†" in rows[rid] for rid in by_resource)
    # gpuH200x8 charge factor 3.0: the H200 amount is its requested GPU-hours × 3
    h200_hours = sum(w.gpu_hours_requested for w in example_plan.workloads if w.gpu.id == "h200")
    assert by_resource["ncsa-delta-h200"][1] == pytest.approx(h200_hours * 3.0)
    assert f"| {fmt.fmt_hours(h200_hours)} | 3 SUs per GPU-hour" in rows["ncsa-delta-h200"]
    # one Delta allocation: the total is the two partitions' SUs
    total = sum(amount for _, amount in by_resource.values())
    # of H200 and A40: the GPU-hours are not added, the SUs are
    assert rows["**total, ncsa-delta**"].endswith(f"| |  | | **{fmt.fmt_hours(total)} SUs** | |")
    html = report.render_supplement_html(context)
    assert '<table class="resources">' in html


def test_example_report_is_deterministic(example_plan):
    a = ctx.report_context(example_plan)
    b = ctx.report_context(plan_files(load_files([str(EXAMPLE)])))
    assert report.render_supplement_markdown(a) == report.render_supplement_markdown(b)
    assert report.render_supplement_html(a) == report.render_supplement_html(b)
    assert report.render_markdown(a) == report.render_markdown(b) and report.render_html(a) == report.render_html(b)


def test_plan_markdown_keeps_the_units_line(example_plan):
    """`plan --format markdown` is section B's request and table: the units by partition in its first line."""
    table = report.plan_markdown_table(example_plan)
    # 377.67 GPU-hours of H200 × 3 SUs = 1,133.01 SUs; 650.00 of A40 × 0.5 = 325.00 SUs; 1,458.01 SUs in all
    assert table.startswith("**Request.** We request **1,458.01 SUs on ncsa-delta**: 1,133.01 SUs on gpuH200x8 ")
    assert "| **total, ncsa-delta** |" in table
    assert table.endswith("suffices for.\n")      # the ranges' note under the table, a line like every other


def test_catalog_text_in_the_table_is_escaped(tmp_path, monkeypatch):
    """Catalog strings reach the table through the same escaping as user text (the plan's Charge.rule
    is the catalog's describe_rule, as planning/charges.py calls it)."""
    real = R.describe_rule
    monkeypatch.setattr(charges, "describe_rule", lambda res: real(res) + " | <b>x</b> *y*")
    plan = plan_from(tmp_path, "workloads:\n" + service("on-delta", "a40", 1, 10, resource="ncsa-delta"))
    context = ctx.report_context(plan)
    row = table_lines(report.render_supplement_markdown(context))[2]
    assert "0.5 SU per GPU-hour, 1 SU minimum \\| \\<b\\>x\\</b\\> \\*y\\*" in row
    assert row.count(" | ") == TABLE_HEADER.count(" | ")
    html = report.render_supplement_html(context)
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html


def test_access_credits_sentence_when_the_proposal_names_a_project_type(tmp_path):
    plan = plan_from(tmp_path, "proposal: {title: A, access_tier: explore}\nworkloads:\n"
                     + service("on-delta", "h200", 1, 100, resource="ncsa-delta"))
    md = report.render_supplement_markdown(ctx.report_context(plan))
    # Delta H200: 100 GPU-hours × 3 SU = 300 SUs × 66.7 credits per SU (Exchange Calculator as quoted) = 20,010.
    assert ("In ACCESS Credits (the request is for Explore ACCESS, up to 400,000): ncsa-delta-h200: 300.00 SUs × "
            "66.7 = 20,010 credits; **20,010 credits** (†: some rates are second-hand, not ACCESS's own), within the "
            "Explore ACCESS limit.") in md
    html = report.render_supplement_html(ctx.report_context(plan))
    assert "<strong>20,010 credits</strong>" in html
    # Section B gives the credits with the mark of their second-hand rate and says what it means, once; Delta's
    # rule was read on NCSA's page, so the units line is not marked.
    section_b = report.render_html(ctx.report_context(plan))
    assert "In ACCESS Credits: 20,010 † (Explore ACCESS, up to 400,000)." in section_b
    assert section_b.count("† Second-hand source, not the provider&#39;s own page.") == 1
    assert "3 SUs per GPU-hour, 1 SU minimum." in section_b


def test_no_access_sentence_in_a_nairr_report(example_plan):
    assert "ACCESS Credits" not in report.render_supplement_markdown(ctx.report_context(example_plan))


def test_access_sentence_for_a_larger_tier_than_needed(tmp_path):
    """Asking for Accelerate with credits that Explore would cover is within the limit."""
    plan = plan_from(tmp_path, "proposal: {title: A, access_tier: accelerate}\nworkloads:\n"
                     + service("on-delta", "h200", 1, 100, resource="ncsa-delta"))
    md = report.render_supplement_markdown(ctx.report_context(plan))
    assert "**20,010 credits**" in md and "within the Accelerate ACCESS limit." in md
    assert not any("ACCESS" in w for w in plan.warnings)


def test_access_credits_are_not_summed_without_every_workload(tmp_path):
    """A workload with no target resource has no unit to exchange: no partial total."""
    plan = plan_from(tmp_path, "proposal: {title: A, access_tier: explore}\nworkloads:\n"
                     + service("on-anvil", "a100-40gb", 1, 10, resource="purdue-anvil")
                     + service("nowhere", "h100-80gb", 1, 10))
    assert plan.access.credits is None and plan.access.missing == ("nowhere (no target resource)",)
    assert ("No ACCESS exchange rate for nowhere (no target resource): the credits cannot be checked against "
            "the Explore ACCESS limit") in plan.warnings
    md = report.render_supplement_markdown(ctx.report_context(plan))
    assert "not computed: no exchange rate for nowhere (no target resource)." in md


def test_a_store_the_plan_does_not_use_is_said_unused_not_zero():
    # workloads/inference/evaluation.yaml: a batch job and a service keep no checkpoints (scratch 0) and archive
    # nothing (archive 0); section B said "scratch at most 0.00 GiB" and "archive 0.00 GiB".
    plan = plan_files(load_files([str(ROOT / "workloads" / "inference" / "evaluation.yaml")]))
    totals = plan.storage_totals()
    assert totals.scratch_bytes == 0 and totals.archive_bytes == 0 and totals.project_bytes > 0
    section_b = report.render_markdown(ctx.report_context(plan))
    assert "0.00 GiB" not in section_b
    assert "; no scratch; project " in section_b and "; no archive." in section_b
    # the example keeps checkpoints and archives its weights: both figures stay
    example = report.render_markdown(ctx.report_context(plan_files(load_files([str(EXAMPLE)]))))
    assert "scratch at most " in example and "; archive " in example
