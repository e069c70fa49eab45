"""Dollars for cloud partners (issue 23, item 6): AWS, Azure and Google instance types as resources, charged per
whole instance-hour at a dated on-demand price through the one charging rule (planning/charges.py), with
price_per_hour in their place; the plan, report, diff and catalog say it.

The hand-checked plan is tests/data/cloud.yaml: its measured rates make each run's hours exact (tokens ÷
tokens per second), so each charge is instances × hours × price, worked out below by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proposalkit.catalog import resources as R
from proposalkit.cli import main
from proposalkit.planning import charges as C

CLOUD_FILE = str(Path(__file__).parent / "data" / "cloud.yaml")

# The catalog's prices (resources.yaml `price:`), hard-coded so that a changed price is a reviewed change here.
P5, A3_HIGH = 55.04, 88.49      # aws-p5 us-east-1 (read 2026-11-09); gcp-a3-high us-central1 (read 2025-03-06)


def _plan(capsys, *args) -> dict:
    assert main(["plan", CLOUD_FILE, "--format", "json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_example_plan_checked_by_hand(capsys):
    plan = _plan(capsys)
    w = {x["name"]: x for x in plan["workloads"]}
    # lora-sweep-aws: 1.08B tokens ÷ 30,000 tokens/s = 36,000 s = 10 h; × 1.20 buffer = 12 h per job. 3 GPUs on
    # an 8-GPU p5.48xlarge: ⌈3 ÷ 8⌉ = 1 whole instance. 4 variants: 1 × 12 h × 4 = 48 instance-hours
    # × $55.04 = $2,641.92.
    r = w["lora-sweep-aws"]["resource"]
    assert (r["id"], r["unit"], r["instance_type"]) == ("aws-p5", "USD", "p5.48xlarge")
    assert (r["instances_per_job"], r["instance_hours"]) == (1, pytest.approx(48.0))
    assert r["amount"] == pytest.approx(48 * P5) == pytest.approx(2641.92)
    assert r["price"]["per_instance_hour"] == P5 and r["price"]["set_by"] == "catalog"
    assert (r["price"]["region"], r["price"]["read"]) == ("us-east-1", "2026-11-09")
    assert r["arithmetic"] == ("⌈3 GPUs ÷ 8 per instance⌉ = 1 instance × 10.00 h × (1 + 20% buffer) per run × "
                               "$55.04 per instance-hour × 4 runs = $2,641.92")
    # lora-gcp: 3.6B ÷ 100,000 tokens/s = 10 h; × 1.30 = 13 h. 12 GPUs on 8-GPU a3-highgpu-8g machines:
    # ⌈12 ÷ 8⌉ = 2. 2 × 13 h = 26 instance-hours × $88.49 = $2,300.74.
    r = w["lora-gcp"]["resource"]
    assert (r["id"], r["instances_per_job"], r["instance_hours"]) == ("gcp-a3-high", 2, pytest.approx(26.0))
    assert r["amount"] == pytest.approx(26 * A3_HIGH) == pytest.approx(2300.74)
    assert (r["price"]["region"], r["price"]["read"]) == ("us-central1", "2025-03-06")
    # h200-aws: 2.88B ÷ 80,000 tokens/s = 10 h; × 1.25 = 12.5 h on ⌈8 ÷ 8⌉ = 1 p5e.48xlarge at the workload's
    # price_per_hour, $70 (the catalog has no on-demand price for it): $875.00.
    r = w["h200-aws"]["resource"]
    assert (r["id"], r["instances_per_job"], r["instance_hours"]) == ("aws-p5e", 1, pytest.approx(12.5))
    assert r["amount"] == pytest.approx(875.0)
    assert r["price"]["per_instance_hour"] == 70 and r["price"]["set_by"] == "workload file"
    assert r["price"]["read"] is None
    # The GPU-hours are the GPUs' own (3 × 12 × 4 = 144, 12 × 13 = 156, 8 × 12.5 = 100), not the instances'.
    assert [x["gpu_hours_requested"] for x in plan["workloads"]] == pytest.approx([144.0, 156.0, 100.0])
    usd = plan["totals"]["usd"]
    assert usd["amount"] == pytest.approx(2641.92 + 2300.74 + 875.0)
    assert usd["period_months"] == 12 and usd["prices_read"] == ["2025-03-06", "2026-11-09"]
    assert plan["totals"]["by_resource"]["aws-p5"] == {"unit": "USD", "amount": pytest.approx(2641.92)}


def test_a_job_pays_whole_instances():
    # The one charging rule: a 3-GPU job on an 8-GPU instance pays what an 8-GPU job does; a ninth GPU a second.
    three, eight, nine = (C.charge("aws-p5", "h100-80gb", n, 10.0).amount for n in (3, 8, 9))
    assert three == eight == pytest.approx(10 * P5)
    assert nine == pytest.approx(2 * 10 * P5)
    assert C.charge("aws-p5", "h100-80gb", 3, 10.0).idle_gpus == 5
    # job_amount (the job accounting's) gives the same: (amount, instances, hours, raised)
    assert C.job_amount(R.resource("aws-p5"), 3, 10.0) == (pytest.approx(10 * P5), 1, 10.0, False)


def test_price_per_hour_replaces_the_catalog_price():
    priced = R.resource("aws-p5").priced(40.0, "proposal")
    assert priced.charge.factor == 40.0 and priced.price.set_by == "proposal"
    assert C.charge(priced, "h100-80gb", 16, 2.0).amount == pytest.approx(2 * 2 * 40.0)
    assert R.resource("aws-p5").charge.factor == P5          # the catalog's row is unchanged
    with pytest.raises(R.ResourceError, match="not at a price per instance-hour"):
        R.resource("alcf-polaris").priced(10.0, "workload file")


def test_an_unpriced_instance_type_is_never_charged_at_zero():
    with pytest.raises(R.ResourceError, match="aws-p5e has no price per instance-hour"):
        C.charge("aws-p5e", "h200", 8, 1.0)


def test_the_proposals_price_reaches_the_workloads_on_its_resource(plan_workloads):
    w = plan_workloads("""
proposal: {resource: aws-p5e, price_per_hour: 60}
workloads:
  - {name: a, kind: finetune, method: lora, model: llama-3.1-8b, tokens: 288M,
     throughput: {tokens_per_second: 8000, gpu: h200, gpus: 8}, gpus: 8, buffer: 0}
  - {name: b, kind: finetune, method: lora, model: llama-3.1-8b, tokens: 288M, resource: aws-p5,
     throughput: {tokens_per_second: 8000, gpu: h100-80gb, gpus: 8}, gpus: 8, buffer: 0}
""")
    # a: 288M ÷ 8,000 tokens/s = 10 h on one p5e at the proposal's $60: $600. b runs on aws-p5, which the
    # proposal's price is not for: the catalog's $55.04, 10 h: $550.40.
    assert w["a"]["resource"]["amount"] == pytest.approx(600.0)
    assert w["a"]["resource"]["price"]["set_by"] == "proposal"
    assert w["b"]["resource"]["amount"] == pytest.approx(10 * P5)
    assert w["b"]["resource"]["price"]["set_by"] == "catalog"


def test_a_provider_picks_its_cheapest_instance_type(plan_workloads):
    # resource: aws, an A100-40GB fit: p4d.24xlarge ($21.957642) against p4de ($27.44705) and p5 ($55.04) for
    # the same job on 8 GPUs pinned; the planner weighs each in dollars.
    w = plan_workloads("""
proposal: {resource: aws}
workloads:
  - {name: a, kind: finetune, method: lora, model: llama-3.1-8b, tokens: 200M, gpus: 8, gpu: a100-40gb}
""")
    assert w["a"]["resource"]["id"] == "aws-p4d"
    assert w["a"]["resource"]["price"]["per_instance_hour"] == 21.957642


@pytest.mark.parametrize("text, message", [
    ("proposal: {resource: aws-p5e}\nworkloads:\n  - {name: a, kind: finetune, method: lora, "
     "model: llama-3.1-8b, tokens: 200M}\n",
     "FILE:1: proposal.resource: aws-p5e (p5e.48xlarge) has no price per instance-hour in the catalog (no "
     "on-demand price found; proposalkit catalog resources); set price_per_hour, dollars per instance-hour, on "
     "the workload or in proposal:"),
    ("workloads:\n  - {name: a, kind: finetune, method: lora, model: llama-3.1-8b, tokens: 200M,\n"
     "     resource: azure-ndm-a100-v4}\n",
     "FILE:3: workloads[0].resource: azure-ndm-a100-v4 (Standard_ND96amsr_A100_v4) has no price per "
     "instance-hour in the catalog (no price found; proposalkit catalog resources); set price_per_hour, dollars "
     "per instance-hour, on the workload or in proposal:"),
    ("workloads:\n  - {name: a, kind: finetune, method: lora, model: llama-3.1-8b, tokens: 200M,\n"
     "     resource: ncsa-delta-a100, price_per_hour: 3}\n",
     "FILE:3: workloads[0].price_per_hour: ncsa-delta-a100 is charged in SUs by its own rule, not at a price per "
     "instance-hour (price_per_hour is for a cloud instance type: AWS, Azure, Google)"),
    ("workloads:\n  - {name: a, kind: finetune, method: lora, model: llama-3.1-8b, tokens: 200M,\n"
     "     resource: gcp, price_per_hour: 3}\n",
     "FILE:3: workloads[0].price_per_hour: price_per_hour is the price of one instance type, and gcp has several "
     "(gcp-a2-high, gcp-a2-ultra, gcp-a3-high); name one as the resource"),
    ("proposal: {resource: ncsa-delta, price_per_hour: 3}\nworkloads:\n  - {name: a, kind: finetune, "
     "method: lora, model: llama-3.1-8b, tokens: 200M}\n",
     "FILE:1: proposal.price_per_hour: ncsa-delta is charged in SUs by its own rule, not at a price per "
     "instance-hour (price_per_hour is for a cloud instance type: AWS, Azure, Google)"),
    ("workloads:\n  - {name: a, kind: finetune, method: lora, model: llama-3.1-8b, tokens: 200M,\n"
     "     resource: aws-p5, price_per_hour: 20000}\n",
     "FILE:3: workloads[0].price_per_hour: implausibly large (got 20000, expected more than 0 and at most "
     "$10,000 per instance-hour, 70× the dearest listed GPU instance (AWS p6-b300.48xlarge, $142.42); write "
     "dollars per hour of one whole instance, e.g. 55.04)"),
])
def test_a_price_without_a_cloud_instance_to_price_is_an_input_error(plan_error, text, message):
    assert plan_error(text).strip() == message


def test_the_report_gives_the_dollars_with_the_dates_and_the_note_once(tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["report", CLOUD_FILE, "-o", str(out), "--format", "md,html"]) == 0
    capsys.readouterr()
    md = (out / "supplement.md").read_text(encoding="utf-8")
    html = (out / "report.html").read_text(encoding="utf-8")
    for text in (md, html):
        assert text.count("Cloud prices change") == 1
        assert "over the 12-month allocation period" in text
        assert "on demand, without discounts" in text
    # The request, each price with its region and date ('$' escaped for GitHub's Markdown, which reads $…$ as
    # math), and the arithmetic a reviewer redoes.
    assert "**\\$5,817.66** in all over the 12-month allocation period" in md
    assert "p5.48xlarge \\$55.04 per instance-hour (on-demand, Linux, us-east-1, read 2026-11-09)" in md
    assert "a3-highgpu-8g \\$88.49 per instance-hour (on-demand, us-central1, read 2025-03-06)" in md
    assert "p5e.48xlarge \\$70.00 per instance-hour (price\\_per\\_hour in the workload file)" in md
    assert ("aws-p5: ⌈3 GPUs ÷ 8 per instance⌉ = 1 instance × 10.00 h × (1 + 20% buffer) per run × \\$55.04 per "
            "instance-hour × 4 runs = \\$2,641.92") in md
    assert "<strong>$3,516.92 on aws</strong>" in html and "<strong>$2,300.74 on gcp</strong>" in html
    assert "<strong>$5,817.66</strong>" in (out / "supplement.html").read_text(encoding="utf-8")
    # Appendix B cites the providers' pricing pages through the reference catalog.
    assert "**AWS EC2 pricing**" in md and "**Google Cloud VM pricing**" in md


def test_diff_shows_the_dollar_change(tmp_path, capsys):
    old = Path(CLOUD_FILE).read_text(encoding="utf-8")
    new = old.replace("  resource: aws-p5\n", "  resource: aws-p5\n  price_per_hour: 50\n", 1)
    assert new != old
    (tmp_path / "old.yaml").write_text(old, encoding="utf-8")
    (tmp_path / "new.yaml").write_text(new, encoding="utf-8")
    assert main(["diff", str(tmp_path / "old.yaml"), str(tmp_path / "new.yaml")]) == 0
    md = capsys.readouterr().out
    # 48 instance-hours at $50 instead of $55.04: -$241.92; the other workloads are on other resources.
    assert "in dollars \\$5,817.66 → \\$5,575.74 (-\\$241.92, -4.2%)" in md
    assert "price \\$55.04 per instance-hour → \\$50.00 per instance-hour" in md
    assert "| aws-p5, USD | \\$2,641.92 | \\$2,400.00 | -\\$241.92 (-9.2%) |" in md
    assert main(["diff", str(tmp_path / "old.yaml"), str(tmp_path / "new.yaml"), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["totals"]["delta"]["by_resource"]["aws-p5"] == {"unit": "USD", "amount": pytest.approx(-241.92)}


def test_catalog_resources_shows_each_cloud_price_and_its_date(capsys):
    assert main(["catalog", "resources"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert "$55.04 us-east-1 2026-11-09" in rows["aws-p5"]
    assert "$98.32 East US 2026-11-09" in rows["azure-nd-h100-v5"]
    assert "$88.49 us-central1 2025-03-06" in rows["gcp-a3-high"]
    assert "none found" in rows["aws-p5e"] and "none found" in rows["azure-ndm-a100-v4"]


def test_every_cloud_row_says_where_its_price_was_read():
    cloud = [r for r in R.resources().values() if r.is_cloud]
    assert {r.id for r in cloud} == {"aws-p4d", "aws-p4de", "aws-p5", "aws-p5e", "azure-nd-a100-v4",
                                     "azure-ndm-a100-v4", "azure-nd-h100-v5", "gcp-a2-high", "gcp-a2-ultra",
                                     "gcp-a3-high"}
    for r in cloud:
        assert r.unit == "USD" and r.gpus_per_node == 8 and r.charge.whole_nodes, r.id
        p = r.price
        # The provider's own pricing page is cited (Appendix B), and the row says whether it was read there.
        assert p.reference in {"aws-ec2-pricing", "azure-vm-pricing", "gcp-vm-pricing"}, r.id
        if p.per_hour is None:
            assert p.read is None and p.source.startswith(("proposalkit, no price found", "proposalkit, no on-demand")), r.id
        else:
            assert p.read and p.region and p.basis.startswith(("on-demand", "pay-as-you-go")), r.id
            assert "was not read" in p.source and p.confidence == "secondhand", r.id
            assert r.charge.factor == p.per_hour, r.id


def test_a_providers_instance_types_draw_on_one_allocation(tmp_path, capsys):
    # aws-p5 and aws-p5e are both AWS: the units table adds their dollars (one CloudBank allocation per
    # provider), Google's apart: 2,641.92 + 875.00 = 3,516.92 on aws.
    assert R.system_of("aws-p5e") == R.system_of("aws-p5") == "aws"
    out = tmp_path / "report"
    assert main(["report", CLOUD_FILE, "-o", str(out), "--format", "md"]) == 0
    capsys.readouterr()
    md = (out / "supplement.md").read_text(encoding="utf-8")
    # (144 H100- and 100 H200-hours: GPU-hours of two types are not added, the dollars are)
    assert ("| **total, aws** | |  | 12 months, at prices read 2026-11-09 and a given price\\_per\\_hour | "
            "**\\$3,516.92** | |") in md
    assert "(\\$3,516.92 on aws; \\$2,300.74 on gcp)" in md
    assert "**\\$3,516.92 on aws**: \\$2,641.92 on p5.48xlarge" in (out / "report.md").read_text(encoding="utf-8")


def test_a_provider_plans_an_unpriced_instance_type_only_when_named(plan_error):
    # resource: aws leaves out aws-p5e (no catalog price), so an H200 pin has no AWS instance to run on.
    message = plan_error("proposal: {resource: aws}\nworkloads:\n  - {name: a, kind: finetune, method: lora, "
                         "model: llama-3.1-8b, tokens: 200M, gpu: h200}\n")
    assert "h200 is not a GPU of aws (it has a100-40gb, a100-80gb, h100-80gb)" in message
