"""Resource catalog, charging rules, walltime segments, caps and calendar.

Expected values are computed here from the provider's published rule (source
beside each number), never read back from the catalog row under test.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from proposalkit.planning import charges as C
from proposalkit.catalog import resources as R

# The GPU catalog's ids (gpus.yaml), hard-coded so this test does not depend on it.
KNOWN_GPU_IDS = {
    "a100-40gb", "a100-40gb-pcie", "a100-80gb", "h100-80gb", "h100-pcie", "h200", "gh200",
    "l40s", "a40", "v100-32gb", "mi250x", "mi300x", "max-1550",
}


# Every row the catalog can charge as it stands (a cloud row without a price needs price_per_hour).
CHARGED = sorted(rid for rid, r in R.resources().items() if r.price is None or r.price.per_hour is not None)

# ----------------------------------------------------------------- catalog rows


def test_every_row_has_a_source_a_confidence_and_known_gpus():
    rows = R.resources()
    assert len(rows) >= 12
    for res in rows.values():
        assert res.source.strip(), res.id
        assert res.confidence in {"verified", "secondhand", "inferred"}, res.id
        assert res.gpus and set(res.gpus) <= KNOWN_GPU_IDS, (res.id, res.gpus)
        assert res.gpus_per_node >= 1, res.id
        assert res.unit in {"SUs", "GPU-hours", "node-hours", "USD"}, res.id
        assert res.charge.per in {"gpu-hour", "node-hour", "instance-hour"}, res.id
        assert (res.unit == "USD") == (res.charge.per == "instance-hour") == (res.price is not None), res.id
        # A cloud row without a catalog price charges nothing until price_per_hour is given (test_cloud.py).
        assert res.charge.factor > 0 or res.price.per_hour is None, res.id
        if res.max_walltime_hours is not None or res.walltime_by_nodes:
            assert res.walltime_source.strip(), res.id
            assert res.walltime_confidence in {"verified", "secondhand", "inferred"}, res.id


def test_the_issue_lists_every_system():
    # Issue 6: Delta (A100, A40, H200), DeltaAI, Vista, Lonestar6, Bridges-2, Expanse,
    # Anvil, Polaris, Aurora, Frontier, Perlmutter, Jetstream2.
    expected = {"ncsa-delta", "ncsa-deltaai", "tacc-vista", "tacc-lonestar6", "psc-bridges2",
                "sdsc-expanse", "purdue-anvil", "alcf-polaris", "alcf-aurora", "olcf-frontier",
                "nersc-perlmutter", "jetstream2"}
    assert expected <= set(R.systems())
    delta_gpus = {g for r in R.resolve("ncsa-delta") for g in r.gpus}
    assert {"a100-40gb", "a40", "h200"} <= delta_gpus
    assert set(R.resource("nersc-perlmutter").gpus) == {"a100-40gb", "a100-80gb"}


def test_node_hour_sites_charge_whole_nodes():
    for rid in ("tacc-vista", "tacc-lonestar6-a100", "alcf-polaris", "alcf-aurora",
                "olcf-frontier", "nersc-perlmutter"):
        res = R.resources()[rid]
        assert res.charge.per == "node-hour" and res.charge.whole_nodes, rid


@pytest.mark.parametrize("name, near", [
    ("ncsa-detla", "ncsa-delta"),
    ("alcf-polars", "alcf-polaris"),
    ("tacc-vist", "tacc-vista"),
])
def test_unknown_resource_suggests_the_near_id(name, near):
    with pytest.raises(R.ResourceError) as err:
        R.resolve(name)
    assert str(err.value) == f"unknown resource '{name}'; did you mean '{near}'?"


def test_a_system_with_partitions_needs_one_named_or_chosen():
    with pytest.raises(R.ResourceError, match="several partitions"):
        R.resource("ncsa-delta")
    assert R.resource("tacc-vista").id == "tacc-vista"


def test_wrong_gpu_type_for_a_resource_is_an_error():
    with pytest.raises(R.ResourceError, match="has no 'h100-80gb' GPUs"):
        C.charge("alcf-polaris", "h100-80gb", 4, 1.0)


# ------------------------------------------------------------ charging rules


def test_six_gpus_on_a_four_gpu_node_hour_site_are_charged_two_nodes():
    # ALCF Polaris: 4 A100 per node, node-hours, whole nodes ("Running Jobs on Polaris").
    c = C.charge("alcf-polaris", "a100-40gb", gpus_per_job=6, hours_per_job=10.0)
    nodes = math.ceil(6 / 4)                      # 2
    assert c.nodes_per_job == nodes == 2
    assert c.amount == nodes * 10.0 * 1           # 20 node-hours
    assert c.unit == "node-hours"
    assert c.arithmetic == "⌈6 GPUs ÷ 4 per node⌉ = 2 nodes × 10.00 h per run = 20.00 node-hours"
    assert c.gpu_hours == 60.0


def test_whole_node_rounding_applies_per_job():
    c = C.charge("alcf-polaris", "a100-40gb", gpus_per_job=6, hours_per_job=10.0, jobs=3)
    assert c.amount == 3 * 2 * 10.0               # 60, not ⌈18 ÷ 4⌉ × 10 = 50
    assert c.arithmetic.endswith("× 10.00 h per run × 3 runs = 60.00 node-hours")


def test_frontier_charges_nodes_of_eight_gcds():
    # OLCF Frontier: 4 MI250X = 8 GCDs per node; node-hours = nodes requested × hours.
    assert C.charge("olcf-frontier", "mi250x", 8, 1.0).amount == 1.0
    assert C.charge("olcf-frontier", "mi250x", 9, 1.0).amount == 2.0


def test_delta_a100_su_equals_gpu_hours():
    # NCSA Delta Job Accounting: "A node-exclusive job that runs on a 4-way GPU node for
    # one hour will be charged 4 SUs (4 GPU x 1 hour)"; gpuA100x4 charge factor 1.0.
    assert C.charge("ncsa-delta-a100", "a100-40gb", 4, 1.0).amount == 4 * 1.0
    c = C.charge("ncsa-delta-a100", "a100-40gb", 6, 10.0)
    assert c.amount == c.gpu_hours == 60.0
    assert c.arithmetic == "6 GPUs × 10.00 h per run = 60.00 GPU-hours × 1 SU per GPU-hour = 60.00 SUs"


def test_delta_a40_is_discounted_by_half():
    # NCSA Delta Running Jobs, partition table: gpuA40x4 charge factor 0.5.
    c = C.charge("ncsa-delta-a40", "a40", 4, 10.0)
    assert c.amount == 4 * 10.0 * 0.5
    assert c.arithmetic == "4 GPUs × 10.00 h per run = 40.00 GPU-hours × 0.5 SU per GPU-hour = 20.00 SUs"


def test_delta_minimum_charge_is_one_su_per_job():
    # NCSA Delta Job Accounting: "The minimum charge for any job is 1 SU."
    c = C.charge("ncsa-delta-a40", "a40", 1, 0.5, jobs=3)
    assert c.amount == 3 * 1.0                    # 1 × 0.5 × 0.5 = 0.25 → 1 per job
    assert "raised to the per-job minimum of 1 SUs" in c.arithmetic


def test_vista_charges_at_least_fifteen_minutes():
    # TACC Vista Job Accounting: SUs = nodes × max(hours, .25) × rate; gh queue 1 SU.
    c = C.charge("tacc-vista", "gh200", gpus_per_job=4, hours_per_job=5 / 60)
    assert c.hours_charged_per_job == 0.25
    assert c.amount == 4 * 0.25 * 1               # 4 nodes (1 GH200 each) = 1.0 SU
    assert "15-minute minimum" in c.arithmetic
    assert C.charge("tacc-vista", "gh200", 4, 2.0).amount == 4 * 2.0 * 1


def test_lonestar6_a100_is_three_sus_per_node_hour():
    # TACC Lonestar6 Table 5 (Oct 2025): gpu-a100 3 SUs per node-hour, 3 A100 per node.
    assert C.charge("tacc-lonestar6-a100", "a100-40gb-pcie", 3, 10.0).amount == 1 * 10.0 * 3
    assert C.charge("tacc-lonestar6-a100", "a100-40gb-pcie", 4, 10.0).amount == 2 * 10.0 * 3


def test_tacc_published_minimum_charge_example():
    # TACC charging policy notice: "a 2-node job in Frontera's rtx queue which runs for
    # one minute would be charged 2 nodes * 0.25 hrs * 3 SUs = 1.5 SUs"; the same rule
    # and rate on Lonestar6 gpu-a100 (2 nodes = 6 A100).
    c = C.charge("tacc-lonestar6-a100", "a100-40gb-pcie", 6, 1 / 60)
    assert c.amount == pytest.approx(2 * 0.25 * 3)


def test_jetstream2_full_gpu_is_64_sus_per_hour():
    # Jetstream2 docs, 'Instance Flavors' and 'ACCESS Credits and Jetstream2': "Jetstream2
    # GPU instances cost 2 SUs per vCPU hour"; g3.xl = 32 vCPUs + one full A100 40 GB.
    # 32 × 2 = 64 SUs per hour; 10 h = 640 SUs. (An older revision said 4 per vCPU-hour.)
    assert C.charge("jetstream2-gpu", "a100-40gb", 1, 10.0).amount == 32 * 2 * 10.0


def test_startup_caps_agree_on_jetstream2():
    # NAIRR community guide: "NAIRR pilot can request 128,000 SUs (2000 GPU-hours)" on
    # Jetstream2: the two Start-Up caps must describe the same request at the catalog's rate.
    startup = R.track("startup")
    sus_for_cap = C.charge("jetstream2-gpu", "a100-40gb", 1, startup.gpu_hours_cap).amount
    assert sus_for_cap == startup.jetstream2_su_cap == 128_000


def test_convert_gpu_hours_rounds_up_to_whole_nodes():
    # 1,300 GPU-hours as 6-GPU jobs on Polaris: 1,300 ÷ 6 h on ⌈6 ÷ 4⌉ = 2 nodes.
    c = C.convert_gpu_hours("alcf-polaris", 1300.0, gpus_per_job=6)
    assert c.amount == 433.34        # 2 × 216.667 h = 433.333, rounded up to 0.01
    # on a GPU-hour site the conversion is the factor alone
    assert C.convert_gpu_hours("ncsa-delta-a40", 1300.0, 6).amount == pytest.approx(1300 * 0.5)


def test_choose_partition_picks_the_cheapest_that_takes_the_job():
    # Lonestar6: gpu-a100-small (1 A100, 1.5 SU/h) vs gpu-a100 (3 A100, 3 SU/h).
    assert C.choose_partition("tacc-lonestar6", "a100-40gb-pcie", 1, 10.0).id == "tacc-lonestar6-a100-small"
    assert C.choose_partition("tacc-lonestar6", "a100-40gb-pcie", 3, 10.0).id == "tacc-lonestar6-a100"
    assert C.choose_partition("ncsa-delta", "a40", 2, 10.0).id == "ncsa-delta-a40"
    with pytest.raises(R.ResourceError, match="no tacc-lonestar6 partition takes a 4-GPU job"):
        C.choose_partition("tacc-lonestar6", "h100-pcie", 4, 10.0)


@given(gpus=st.integers(1, 64), hours=st.floats(0, 500, allow_nan=False), jobs=st.integers(1, 20),
       rid=st.sampled_from(CHARGED))
def test_charge_is_linear_in_jobs(gpus, hours, jobs, rid):
    res = R.resources()[rid]
    one = C.charge(res, res.gpus[0], gpus, hours)
    many = C.charge(res, res.gpus[0], gpus, hours, jobs=jobs)
    # each amount is rounded half up to 0.01 as printed, so the two agree to that rounding
    # each rounding up to 0.01 (the GPU-hours, then × the factor) is carried `jobs` times, × the factor
    assert many.amount == pytest.approx(jobs * one.amount, abs=0.01 * (jobs * (1 + res.charge.factor) + 1))


@given(gpus=st.integers(1, 63), hours=st.floats(0.5, 500, allow_nan=False),
       rid=st.sampled_from(CHARGED))
def test_charge_never_falls_as_gpus_grow(gpus, hours, rid):
    res = R.resources()[rid]
    assert C.charge(res, res.gpus[0], gpus + 1, hours).amount >= C.charge(res, res.gpus[0], gpus, hours).amount


@given(gpus=st.integers(1, 64), hours=st.floats(0.25, 500, allow_nan=False))
def test_whole_nodes_cost_at_least_the_gpu_fraction(gpus, hours):
    res = R.resources()["alcf-polaris"]
    whole = C.charge(res, "a100-40gb", gpus, hours).amount
    assert whole >= gpus / res.gpus_per_node * hours * res.charge.factor - 1e-9     # rounded up, never below


# ------------------------------------------------------------------- walltime


@pytest.mark.parametrize("hours, limit, segments", [
    (100, 48, 3),      # ⌈100 ÷ 48⌉ = 3
    (48, 48, 1),
    (48.01, 48, 2),
    (0, 48, 1),
    (100, None, 1),    # no limit documented
])
def test_walltime_segments(hours, limit, segments):
    assert C.walltime_segments(hours, limit) == segments


def test_walltime_limits_depend_on_node_count_where_documented():
    # OLCF Frontier bin table: 1–91 nodes 2 h, 92–183 nodes 6 h, 184–1,881 nodes 12 h.
    frontier = R.resources()["olcf-frontier"]
    assert frontier.walltime_limit_hours(8) == 2          # 1 node
    assert frontier.walltime_limit_hours(92 * 8) == 6
    assert frontier.walltime_limit_hours(184 * 8) == 12
    # ALCF Polaris: prod small 10–24 nodes 3 h; Aurora prod tiny 1–512 nodes 6 h.
    assert R.resources()["alcf-polaris"].walltime_limit_hours(40) == 3
    assert R.resources()["alcf-aurora"].walltime_limit_hours(6) == 6
    # TACC and Delta: one 48 h limit.
    assert R.resources()["tacc-vista"].walltime_limit_hours(1) == 48
    assert R.resources()["ncsa-delta-a100"].walltime_limit_hours(4) == 48


def test_job_limit_warnings_name_segments_and_node_limits():
    warnings = C.job_limit_warnings("tacc-lonestar6-h100", gpus_per_job=4, hours_per_run=100)
    assert warnings == [
        "tacc-lonestar6-h100: a 4-GPU job needs 2 nodes; gpu-h100 allows 1 per job (2 GPUs)",
        "a run of 100.00 h exceeds tacc-lonestar6-h100's 48 h job limit: "
        "⌈100.00 ÷ 48⌉ = 3 jobs, each resuming from the last checkpoint",
    ]
    assert C.job_limit_warnings("ncsa-delta-a100", 4, 40) == []


# ------------------------------------------------------------ caps and tiers


def test_startup_cap_warns_above_two_thousand_gpu_hours():
    # NAIRR.md [S]: Start-Up track capped near 2,000 GPU-hours on one resource, 3 months.
    over = C.cap_warnings("startup", 2500, ["ncsa-delta-a100"], calendar_days=30)
    assert len(over) == 1 and "2,500 GPU-hours" in over[0] and "2,000" in over[0]
    assert C.cap_warnings("startup", 1500, ["ncsa-delta-a100"], calendar_days=30) == []
    assert C.cap_warnings("standard", 2500, ["ncsa-delta-a100"], calendar_days=30) == []


def test_startup_is_one_resource_but_partitions_of_a_system_count_once():
    assert C.cap_warnings("startup", 1000, ["ncsa-delta-a100", "ncsa-delta-a40"], 30) == []
    two = C.cap_warnings("startup", 1000, ["ncsa-delta-a100", "tacc-vista"], 30)
    assert len(two) == 1 and "uses 2 (ncsa-delta, tacc-vista)" in two[0]


def test_campaign_longer_than_the_allocation_period_warns():
    days_3_months = 3 * 365.25 / 12                      # 91.3125
    assert R.allocation_period_days("startup") == pytest.approx(days_3_months)
    assert R.allocation_period_days("standard") == pytest.approx(365.25)
    assert C.cap_warnings("startup", 100, ["tacc-vista"], calendar_days=days_3_months) == []
    late = C.cap_warnings("startup", 100, ["tacc-vista"], calendar_days=100)
    assert len(late) == 1 and "100.0 calendar days" in late[0] and "91.3 days" in late[0]
    assert C.cap_warnings("standard", 100, ["tacc-vista"], calendar_days=400)


def test_access_credit_tiers():
    # ACCESS project types: Explore 400,000; Discover 1,500,000; Accelerate 3,000,000.
    assert [(t.id, t.credits) for t in R.credit_tiers()] == [
        ("explore", 400_000), ("discover", 1_500_000), ("accelerate", 3_000_000)]
    assert R.access_tier(400_000).id == "explore"
    assert R.access_tier(400_001).id == "discover"
    assert R.access_tier(3_000_001) is None
    over = C.AccessCredits(3_500_000.0, "", (), False, None)
    assert "it needs Maximize ACCESS" in C.access_warnings(over, "accelerate")[0]
    assert C.access_warnings(over, None) == []          # a NAIRR request: credits are information only


def test_unknown_track_suggests():
    with pytest.raises(R.ResourceError, match="did you mean 'startup'"):
        C.cap_warnings("start-up", 0, [], 0)


# ------------------------------------------------------------------- calendar


def test_calendar_days_from_waves_of_concurrent_runs():
    # 10 variants, 4 at a time → ⌈10 ÷ 4⌉ = 3 waves × 48 h = 144 h = 6 days.
    assert C.calendar_days(48, variants=10, concurrency=4) == 3 * 48 / 24
    assert C.calendar_days(48, variants=10, concurrency=10) == 2.0
    assert C.calendar_days(48, variants=1, concurrency=4) == 2.0


@given(hours=st.floats(0, 1e4, allow_nan=False), variants=st.integers(1, 200), c=st.integers(1, 199))
def test_more_concurrency_never_lengthens_the_campaign(hours, variants, c):
    assert C.calendar_days(hours, variants, c + 1) <= C.calendar_days(hours, variants, c)


def test_startup_jetstream2_su_cap_reaches_plan_and_check(tmp_path, capsys):
    from proposalkit.cli import main

    path = tmp_path / "js.yaml"
    path.write_text("proposal: {resource: jetstream2, track: startup}\n"
                    "workloads:\n  - {name: serve, kind: inference, model: llama-3.1-8b, context: 4k, hours: 1900}\n")
    # 1,900 h × 1 A100 × 1.30 buffer = 2,470 GPU-hours × 64 SUs (g3.xl: 32 vCPUs × 2) = 158,080 SUs,
    # above the Start-Up track's 128,000 SUs on Jetstream2 (NAIRR community guide).
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out
    assert "warning: The plan requests 158,080 Jetstream2 SUs; the NAIRR Pilot Start-Up track is capped near " \
           "128,000 SUs" in out
    assert main(["check", str(path)]) == 1
    assert "158,080 Jetstream2 SUs" in capsys.readouterr().err
    assert C.jetstream2_sus([]) is None


def test_access_tiers_in_the_format_are_the_catalog_tiers():
    from proposalkit.input.schema import ACCESS_TIERS

    assert ACCESS_TIERS == tuple(t.id for t in R.credit_tiers())


def test_access_credits_of_a_plan(tmp_path, capsys):
    from proposalkit.cli import main
    from proposalkit.input.loading import load_files
    from proposalkit.planning.planner import plan_files

    path = tmp_path / "acc.yaml"
    path.write_text("proposal: {resource: ncsa-delta, access_tier: explore}\n"
                    "workloads:\n  - {name: serve, kind: inference, model: llama-3.1-8b, context: 4k, hours: 1000,"
                    " gpu: h200, gpus: 1, buffer: 0}\n"
                    "  - {name: pilot, kind: inference, model: llama-3.1-8b, context: 4k, hours: 1000,"
                    " gpu: a40, gpus: 1, buffer: 0, resource: jetstream2}\n")
    # NCSA Delta H200: 1,000 GPU-hours × 3 SU = 3,000 SUs × 66.7 credits per Delta SU (ACCESS Exchange
    # Calculator as quoted, April 2026) = 200,100 credits. The a40 pin is not on Jetstream2 (a100-40gb only):
    # an input error, not a plan that silently charges nothing.
    from proposalkit.errors import InputError
    with pytest.raises(InputError, match="a40 is not a GPU of jetstream2 \\(it has a100-40gb\\)"):
        plan_files(load_files([str(path)]))
    path.write_text(path.read_text().replace("gpu: a40, gpus: 1, buffer: 0, resource: jetstream2",
                                             "gpu: a100-40gb, gpus: 1, buffer: 0, resource: jetstream2"))
    plan = plan_files(load_files([str(path)]))
    # + Jetstream2 g3.xl: 1,000 h × 64 SUs = 64,000 SUs × 1 credit per SU (Jetstream2 docs) = 64,000.
    assert plan.access.credits == pytest.approx(3000 * 66.7 + 64_000)
    assert plan.access.tier.id == "explore" and plan.access.secondhand
    assert plan.access.arithmetic == ("ncsa-delta-h200: 3,000.00 SUs × 66.7 = 200,100 credits; "
                                      "jetstream2-gpu: 64,000.00 SUs × 1 = 64,000 credits")
    assert main(["check", str(path)]) == 0
    capsys.readouterr()
    path.write_text(path.read_text().replace("hours: 1000,", "hours: 2000,", 1))   # Delta: 400,200 + 64,000
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert "The plan comes to 464,200 ACCESS credits" in err and "the Explore ACCESS limit is 400,000" in err
    assert "it fits Discover ACCESS" in err and "second-hand" in err


def test_a_resource_without_an_exchange_rate_is_named():
    charges = [C.charge("alcf-polaris", "a100-40gb", 4, 10.0)]
    credits = C.access_credits(charges)
    assert credits.credits is None and credits.missing == ("alcf-polaris",)
    assert C.access_warnings(credits, "discover") == [
        "No ACCESS exchange rate for alcf-polaris: the credits cannot be checked against the Discover ACCESS limit"]
    assert "charges no resource" in C.access_warnings(None, "discover")[0]
