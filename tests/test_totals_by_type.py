"""Totals per GPU type and in each resource's units, never GPU-hours summed across GPU types as one request
(issue 23, item 2), through the CLI: `plan`'s text table, `check`'s line, section B's table, the
supplement's units table, `diff`, and `usage`'s tables, JSON and Python API.

The example (workloads/code-models.yaml) asks for H200 and A40 hours on NCSA Delta: 377.67 (114.40 + 47.43 +
215.84) + 650.00 = 1,027.67 GPU-hours of two types, which no one can be allocated as one figure; Delta charges
them as 377.67 × 3 + 650.00 × 0.5 = 1,133.01 + 325.00 = 1,458.01 SUs (section B's request). tests/data/cloud.yaml asks AWS for two
instance types and Google for one: dollars per provider.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import proposalkit
from proposalkit.cli import main
from proposalkit.render.format import fmt_hours, fmt_in_unit
from proposalkit.render.usage import _h, runs_out_text, usage_dict

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "workloads/code-models.yaml"
CLOUD = ROOT / "tests/data/cloud.yaml"


def cli(capsys, *argv) -> str:
    code = main([*map(str, argv)])
    out = capsys.readouterr().out
    assert code == 0
    return out


def totals(text: str) -> dict[str, list[str]]:
    """`plan`'s text table: each 'total, …' row → its figures (planned GPU-h, +buffer, units, as present)."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"total, (\S+)\s+(.*)$", line)
        if m:
            out[m.group(1)] = m.group(2).split()
    return out


def test_plan_text_totals_per_gpu_type_and_in_sus(capsys):
    example_json = json.loads(cli(capsys, "plan", EXAMPLE, "--format", "json"))
    out = cli(capsys, "plan", EXAMPLE)
    t = example_json["totals"]
    rows = totals(out)
    assert list(rows) == ["h200", "a40", "ncsa-delta"]
    for gpu, hours in t["by_gpu_type"].items():
        planned = sum(w["gpu_hours"] for w in example_json["workloads"] if w["gpu"]["type"] == gpu)
        sus = sum(w["resource"]["amount"] for w in example_json["workloads"] if w["gpu"]["type"] == gpu)
        assert rows[gpu] == [fmt_hours(planned), fmt_hours(hours), fmt_hours(sus)], gpu
    assert rows["ncsa-delta"] == [fmt_hours(t["by_system"]["ncsa-delta"]["amount"])] == ["1,458.01"]
    # The sums across GPU types, before and after the buffer, are nowhere in the output.
    assert fmt_hours(t["gpu_hours_requested"]) == "1,027.67" and "1,027.67" not in out
    assert fmt_hours(t["gpu_hours"]) == "790.51" and "790.51" not in out
    assert "SUs" in out.splitlines()[0].split()     # the units column, as section B's


def test_plan_text_totals_are_section_bs(capsys):
    """The text table's total rows give the figures of section B's (plan --format markdown) total rows."""
    text = totals(cli(capsys, "plan", EXAMPLE))
    markdown = cli(capsys, "plan", EXAMPLE, "--format", "markdown")
    assert len(text) == 3
    for label, figures in text.items():
        row = next(r for r in markdown.splitlines() if r.startswith(f"| **total, {label}** |"))
        assert re.findall(r"\*\*([\d,.]+)\*\*", row) == figures[-len(re.findall(r"\*\*([\d,.]+)\*\*", row)):]


def test_plan_text_cloud_totals_in_dollars_per_provider(capsys):
    rows = totals(cli(capsys, "plan", CLOUD))
    # 144.00 + 156.00 GPU-hours of h100-80gb on two providers: its dollars do not add into one figure.
    assert rows["h100-80gb"] == ["240.00", "300.00"]
    assert rows["h200"] == ["80.00", "100.00", "$875.00"]
    assert rows["aws"] == ["$3,516.92"] and rows["gcp"] == ["$2,300.74"]     # 2,641.92 + 875.00; 2,300.74


def test_check_says_the_request_per_gpu_type_and_in_sus(capsys):
    out = cli(capsys, "check", EXAMPLE)
    assert out == ("OK: 4 workloads in 1 file feasible; requested 377.67 GPU-hours of h200, 650.00 of a40 "
                   "(1,458.01 SUs on ncsa-delta).\n")


def test_check_cloud_in_dollars_per_provider(capsys):
    out = cli(capsys, "check", CLOUD)
    assert out.endswith("requested 300.00 GPU-hours of h100-80gb, 100.00 of h200 ($3,516.92 on aws; "
                        "$2,300.74 on gcp).\n")


def test_check_names_the_all_types_sum_only_as_the_caps_figure(capsys):
    out = cli(capsys, "check", EXAMPLE, "--max-gpu-hours", "2000")
    assert out.endswith("; 1,027.67 GPU-hours of all types within --max-gpu-hours 2,000.\n")


def test_section_b_gives_every_providers_dollars(capsys):
    """gcp's one instance type shares its GPU type with aws's p5: the h100-80gb row has no single amount, so
    gcp's dollars need a total row of their own (they were in no total before)."""
    markdown = cli(capsys, "plan", CLOUD, "--format", "markdown")
    assert f"| **total, gcp** | | | | | | |  | | | **{fmt_in_unit(2300.74, 'USD').replace('$', chr(92) + '$')}** |" \
        in markdown


def test_supplement_units_table_totals_every_cloud_provider(tmp_path, capsys):
    """The supplement's units table gives each provider's dollars (gcp's one instance type too), with the period
    and the dates of the prices as the rows state them; a price given in the file has no date."""
    assert main(["report", str(CLOUD), "-o", str(tmp_path), "--format", "md,html"]) == 0
    capsys.readouterr()
    md = (tmp_path / "supplement.md").read_text(encoding="utf-8")
    assert ("| **total, aws** | |  | 12 months, at prices read 2026-11-09 and a given price\\_per\\_hour | "
            "**\\$3,516.92** | |") in md
    assert "| **total, gcp** | | **156.00** | 12 months, at prices read 2025-03-06 | **\\$2,300.74** | |" in md
    html = (tmp_path / "supplement.html").read_text(encoding="utf-8")
    assert ('<tr class="total"><th scope="row">total, gcp</th><td></td><td class="num">156.00</td><td class="basis">'
            '12 months, at prices read 2025-03-06</td><td class="num">$2,300.74</td>') in html


PR = ROOT / "docs/examples/pr"     # before: a100-40gb, h200 and a40 on Delta; after: code-1b-pretrain dropped, more


def test_diff_gives_the_request_per_gpu_type_and_in_sus(capsys):
    """before.yaml requests 238.68 + 251.21 + 650.00 GPU-hours of three types (1,139.89 summed), after.yaml
    431.8 + 90.6 + 650.0 (1,172.4): the change is given per type and in Delta's SUs, never as the sums."""
    out = cli(capsys, "diff", PR / "before.yaml", PR / "after.yaml")
    first = out.splitlines()[0]
    assert first.startswith("Requested GPU-hours: a100-40gb 238.7 → 431.8 (+193.1, +80.9%), a40 650.0 → 650.0 "
                            "(+0.0), h200 251.2 → 90.6 (-160.6, -63.9%); ncsa-delta 1,317.3 → 1,028.6 SUs "
                            "(-288.7, -21.9%); needed p10–p90 ")
    assert "GPU-h of all GPU types together" in first
    for total in ("1,139.9", "1,172.4", "876.8", "901.8"):      # requested and before the buffer, summed
        assert total not in out, total
    assert "| **requested GPU-hours, h200** | 251.2 | 90.6 | -160.6 (-63.9%) |" in out
    assert "| **ncsa-delta, SUs** | 1,317.3 | 1,028.6 | -288.7 (-21.9%) |" in out
    assert "| GPU-hours needed, p10 (all GPU types together) |" in out


def test_diff_json_keeps_its_fields_and_adds_each_systems_change(capsys):
    data = json.loads(cli(capsys, "diff", PR / "before.yaml", PR / "after.yaml", "--format", "json"))
    delta = data["totals"]["delta"]
    assert {"gpu_hours", "gpu_hours_requested", "by_gpu_type", "by_resource"} <= set(delta)   # CONTRACT.md's
    assert delta["by_system"] == {"ncsa-delta": {"unit": "SUs", "amount": pytest.approx(1028.58 - 1317.31)}}
    assert data["summary"] == cli(capsys, "diff", PR / "before.yaml", PR / "after.yaml").splitlines()[0]


def test_diff_with_one_gpu_type_keeps_its_total(tmp_path, capsys):
    """One GPU type on both sides: its GPU-hours are the request, as before."""
    out = cli(capsys, "diff", ROOT / "workloads/inference/evaluation.yaml", ROOT / "workloads/inference/evaluation.yaml")
    assert out.startswith("Requested GPU-hours: 5,647.8 → 5,647.8 (+0.0); no workload changed.")
    assert "| **requested GPU-hours** | 5,647.8 | 5,647.8 | +0.0 |" in out

# ------------------------------------------------------------------ usage (the after-award report)
# The example's accounting (workloads/accounting/2026-10.sacct) runs lora-sweep, full-finetune and code-1b-pretrain
# on H200s and eval-service on A40s: h200 used 79.53 + 38.57 + 124.50 = 242.60 of 114.40 + 47.43 + 215.84 = 377.67
# GPU-hours at 2.06 + 1.29 + 4.15 = 7.50 a day (runs out 2026-11-19); a40 277.67 of 650.00 at 9.26 a day (runs out
# 2026-12-11). The row these replace added them (and 6.05 unattributed A100 hours): 526.3 of 1,028 at 17.0 a day,
# running out 2026-11-30, a day on which neither type runs out.

USAGE_JOBS = ROOT / "workloads/accounting/2026-10.sacct"


def usage_by_type(capsys) -> dict[str, list[dict]]:
    """GPU type → the usage JSON's workload entries on it (the plan's JSON says which type each runs on)."""
    plan = json.loads(cli(capsys, "plan", EXAMPLE, "--format", "json"))
    usage = json.loads(cli(capsys, "usage", EXAMPLE, "--jobs", USAGE_JOBS, "--format", "json"))
    gpu = {w["name"]: w["gpu"]["type"] for w in plan["workloads"]}
    out: dict[str, list[dict]] = {}
    for w in usage["workloads"]:
        out.setdefault(gpu[w["name"]], []).append(w)
    return out


def test_text_table_has_one_total_row_per_gpu_type_summing_its_workloads(capsys):
    groups = usage_by_type(capsys)
    assert {g: [w["name"] for w in ws] for g, ws in groups.items()} == {
        "h200": ["lora-sweep", "full-finetune", "code-1b-pretrain"], "a40": ["eval-service"]}
    out = cli(capsys, "usage", EXAMPLE, "--jobs", USAGE_JOBS)
    table = out.split("\n\n")[1].splitlines()
    totals = {m.group(1): line.split()[2:] for line in table if (m := re.match(r"total, (\S+)\s", line))}
    assert list(totals) == ["h200", "a40"]
    assert not any(re.match(r"total\s", line) for line in table)       # no row adds the types
    for gpu, ws in groups.items():
        jobs = sum(w["jobs"] for w in ws)
        used = sum(w["gpu_hours_used"] for w in ws)
        planned = sum(w["gpu_hours_planned"] for w in ws)
        lost = sum(sum(w["gpu_hours_lost"].values()) for w in ws)
        rate = sum(w["burn_rate_gpu_hours_per_day"] for w in ws)
        figures = totals[gpu]
        assert figures[0] == str(jobs)
        assert figures[1:4] == [_h(used), _h(planned), _h(planned - used)], gpu
        assert figures[5] == _h(lost) and figures[7] == _h(rate), gpu
    assert totals["h200"][1:4] == ["242.6", "377.7", "135.1"] and totals["h200"][-1] == "2026-11-19"
    assert totals["a40"][1:4] == ["277.7", "650.0", "372.3"] and totals["a40"][-1] == "2026-12-11"
    # The all-types figures of the old total row are nowhere in the table.
    for old in ("526.3", "1,028", "501.4", "17.0", "2026-11-30"):
        assert old not in "\n".join(table), old


def test_json_by_gpu_type_totals_are_the_sums_of_its_workloads(capsys):
    groups = usage_by_type(capsys)
    usage = json.loads(cli(capsys, "usage", EXAMPLE, "--jobs", USAGE_JOBS, "--format", "json"))
    t = usage["totals"]
    assert list(t["by_gpu_type"]) == ["h200", "a40"]
    for gpu, ws in groups.items():
        g = t["by_gpu_type"][gpu]
        assert g["workloads"] == [w["name"] for w in ws]
        assert g["jobs"] == sum(w["jobs"] for w in ws)
        for field in ("gpu_hours_used", "gpu_hours_planned", "gpu_hours_remaining", "gpu_hours_last_30_days",
                      "burn_rate_gpu_hours_per_day"):
            assert abs(g[field] - sum(w[field] for w in ws)) < 1e-5, (gpu, field)
        for cause, hours in g["gpu_hours_lost"].items():
            assert abs(hours - sum(w["gpu_hours_lost"][cause] for w in ws)) < 1e-5, (gpu, cause)
    assert t["by_gpu_type"]["h200"]["runs_out_on"] == "2026-11-19"
    assert t["by_gpu_type"]["a40"]["runs_out_on"] == usage["workloads"][3]["runs_out_on"] == "2026-12-11"
    # The contract's all-types fields stay: only a sum, unattributed jobs included.
    assert abs(t["gpu_hours_used"] - sum(g["gpu_hours_used"] for g in t["by_gpu_type"].values())
               - t["gpu_hours_unattributed"]) < 1e-5
    assert t["runs_out_on"] == "2026-11-30"


def test_markdown_totals_per_gpu_type(capsys):
    out = cli(capsys, "usage", EXAMPLE, "--jobs", USAGE_JOBS, "--format", "markdown")
    rows = [r for r in out.splitlines() if r.startswith("| **total")]
    assert [r.split("**")[1] for r in rows] == ["total, h200", "total, a40"]
    assert "| **242.60** | **377.67** | **135.07** |" in rows[0] and "**2026-11-19**" in rows[0]
    assert "| **277.67** | **650.00** | **372.33** |" in rows[1] and "**2026-12-11**" in rows[1]


def test_api_agrees_with_the_cli(capsys):
    u = proposalkit.usage(EXAMPLE, jobs=USAGE_JOBS)
    cli_json = json.loads(cli(capsys, "usage", EXAMPLE, "--jobs", USAGE_JOBS, "--format", "json"))
    assert usage_dict(u)["totals"]["by_gpu_type"] == cli_json["totals"]["by_gpu_type"]
    assert [(g.gpu_type, round(g.gpu_hours.used, 2), runs_out_text(g.gpu_hours)) for g in u.by_gpu_type] == [
        ("h200", 242.60, "2026-11-19"), ("a40", 277.67, "2026-12-11")]
