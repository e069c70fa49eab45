"""The report prints what the plan holds (issue 10): no FLOPs rule, wave count or total redone in render.

Each test changes one figure in the planner's records to a value no rule would give, and checks
the report prints that value: a view that recomputed the figure would print the rule's instead.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from proposalkit.input.loading import load_files
from proposalkit.planning.planner import plan_files
from proposalkit.render.context import report_context
from proposalkit.render.report import render_supplement_markdown as render_markdown

RENDER = Path(__file__).resolve().parent.parent / "proposalkit" / "render"

WORKLOAD = """\
workloads:
  - name: tune-a
    kind: finetune
    method: lora
    model: llama-3.1-8b
    tokens: 100M
    variants: 10
    concurrency: 3
    gpu: a100-80gb
    gpus: 1
"""


def _plan(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(WORKLOAD, encoding="utf-8")
    return plan_files(load_files([str(path)]))


def _with_workload(plan, **changes):
    return dataclasses.replace(plan, workloads=(dataclasses.replace(plan.workloads[0], **changes),))


def _step(markdown: str, label: str) -> str:
    return re.search(rf"\*\*{label}:\*\* (.*)", markdown).group(1)


def test_the_flops_line_prints_the_records_figures(tmp_path):
    plan = _plan(tmp_path)
    w = plan.workloads[0]
    fpt = dataclasses.replace(w.throughput.flops_per_token, dense_factor=7, matmul_params=1234,
                              dense_source="Test et al. 1999", attention_shape=(2, 3, 5, 11),
                              model_formula="7·N + 12·L·H·Q·T")
    changed = _with_workload(plan, throughput=dataclasses.replace(w.throughput, flops_per_token=fpt))
    line = _step(render_markdown(report_context(changed)), "FLOPs per token")
    assert line.startswith("7·N + 12·L·H·Q·T = 7 × 1,234 + 12 × 2 × 3 × 5 × 11 = ")
    assert "(Test et al. 1999; attention: Chowdhery et al. 2022, App. B); N = 1,234, " in line


def test_the_calendar_line_prints_the_planners_wave_count(tmp_path):
    plan = _plan(tmp_path)
    assert plan.workloads[0].calendar_waves == 4          # ⌈10 runs ÷ 3 at once⌉
    markdown = render_markdown(report_context(_with_workload(plan, calendar_waves=99)))
    assert _step(markdown, "Calendar").startswith("⌈10 runs ÷ 3 at once⌉ = 99 × ")


def test_render_has_no_getattr_defaults_and_no_compute_imports():
    for path in sorted(RENDER.glob("*.py")):
        source = path.read_text(encoding="utf-8")
        assert "getattr(" not in source and "hasattr(" not in source, path.name
        assert "estimate.flops" not in source and "estimate.memory" not in source, path.name


def test_the_units_table_prints_the_plans_group_sums(tmp_path, monkeypatch):
    from proposalkit.planning.records import Plan
    from proposalkit.render.context import resources_view

    path = tmp_path / "w.yaml"
    text = WORKLOAD.replace("workloads:", "proposal: {resource: ncsa-delta-a100}\nworkloads:")
    path.write_text(text.replace("a100-80gb", "a100-40gb"), encoding="utf-8")
    plan = plan_files(load_files([str(path)]))
    groups = plan.charge_groups()
    assert [g.workloads for g in groups] == [("tune-a",)]
    odd = (dataclasses.replace(groups[0], amount=12345.6),)
    monkeypatch.setattr(Plan, "charge_groups", lambda self: odd)
    view = resources_view(plan)
    assert view.rows[0].amount == 12345.6 and view.totals[0].amount == 12345.6
