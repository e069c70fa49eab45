"""Resources have sizes: every partition's nodes and largest job, and plans that stay within them (issue 21,
part 2). Sizes are read on each site's own user guide (catalog/resources.yaml size_source); the plans go
through the command line, as a user's workload file does."""

from __future__ import annotations

import pytest

from proposalkit.catalog import resources
from proposalkit.cli import main

# id: (GPU, nodes, GPUs per node, most nodes per job or None), each from the page resources.yaml names.
SIZES = {
    # NCSA Delta 'System Architecture' node tables; 'Delta Partitions/Queues' (max nodes per job TBD but H200: 1)
    "ncsa-delta-a100": ("a100-40gb", 100, 4, None),
    "ncsa-delta-a100x8": ("a100-40gb", 6, 8, None),
    "ncsa-delta-a40": ("a40", 100, 4, None),
    "ncsa-delta-h200": ("h200", 8, 8, 1),
    # NCSA DeltaAI 'System Architecture': 114 nodes of 4 GH200
    "ncsa-deltaai": ("gh200", 114, 4, None),
    # TACC Vista: 600 GH nodes; Table 4: gh 64 nodes per job
    "tacc-vista": ("gh200", 600, 1, 64),
    # TACC Lonestar6: sinfo gpu-a100 73 nodes, gpu-a100-small 24, gpu-h100 4; Table 5: 8, 1, 1 nodes per job
    "tacc-lonestar6-a100": ("a100-40gb-pcie", 73, 3, 8),
    "tacc-lonestar6-a100-small": ("a100-40gb-pcie", 24, 1, 1),
    "tacc-lonestar6-h100": ("h100-pcie", 4, 2, 1),
    # PSC Bridges-2: 24 V100-32GB nodes (PSC system configuration); H100 nodes w001-w010 (user notes)
    "psc-bridges2-v100": ("v100-32gb", 24, 8, None),
    "psc-bridges2-h100": ("h100-80gb", 10, 8, None),
    # SDSC Expanse: 52 GPU nodes of 4 V100 (Expanse 101's System Summary; ACCESS says 54, the lower kept);
    # its Slurm Partitions table: gpu 4 nodes per job
    "sdsc-expanse": ("v100-32gb", 52, 4, 4),
    # Purdue Anvil: sub-cluster G, 16 nodes of 4 A100; at most 12 GPUs per user (3 nodes)
    "purdue-anvil": ("a100-40gb", 16, 4, 3),
    # ALCF Polaris: 560 nodes, prod up to 496; Aurora: 10,624 nodes, prod up to 10,624
    "alcf-polaris": ("a100-40gb", 560, 4, 496),
    "alcf-aurora": ("max-1550", 10_624, 6, 10_624),
    # OLCF Frontier: 9,856 nodes of 8 GCDs, bin 1 up to 9,472 nodes
    "olcf-frontier": ("mi250x", 9_856, 8, 9_472),
    # NERSC Perlmutter 'Architecture': 1,536 nodes of 4 A100 40GB and 256 of 4 A100 80GB
    "nersc-perlmutter": ("a100-40gb", 1_536, 4, None),
    # Jetstream2 'Configuration': 90 GPU nodes, 360 A100, one per g3.xl instance
    "jetstream2-gpu": ("a100-40gb", 360, 1, None),
    # Cloud instance types: 8 GPUs each (AWS's Capacity Blocks table, Azure's size pages, Google's machine
    # types); no partition, so the planner's bound of 64 instances per job (size_confidence inferred)
    "aws-p4d": ("a100-40gb", 64, 8, None),
    "aws-p4de": ("a100-80gb", 64, 8, None),
    "aws-p5": ("h100-80gb", 64, 8, None),
    "aws-p5e": ("h200", 64, 8, None),
    "azure-nd-a100-v4": ("a100-40gb", 64, 8, None),
    "azure-ndm-a100-v4": ("a100-80gb", 64, 8, None),
    "azure-nd-h100-v5": ("h100-80gb", 64, 8, None),
    "gcp-a2-high": ("a100-40gb", 64, 8, None),
    "gcp-a2-ultra": ("a100-80gb", 64, 8, None),
    "gcp-a3-high": ("h100-80gb", 64, 8, None),
}


def test_every_partition_has_its_size_here():
    assert set(SIZES) == set(resources.resources())


@pytest.mark.parametrize("rid", sorted(SIZES))
def test_partition_size(rid):
    gpu, nodes, per_node, per_job = SIZES[rid]
    r = resources.resources()[rid]
    assert (r.node_count(gpu), r.gpus_per_node, r.max_nodes_per_job) == (nodes, per_node, per_job)
    assert r.gpu_count(gpu) == nodes * per_node
    assert r.largest_job_gpus(gpu) == min(per_job or nodes, nodes) * per_node
    assert r.size_source and r.size_confidence in resources.CONFIDENCE_LEVELS


def test_perlmutter_counts_each_gpu_type_apart():
    r = resources.resources()["nersc-perlmutter"]
    assert (r.gpu_count("a100-40gb"), r.gpu_count("a100-80gb"), r.gpu_count()) == (6_144, 1_024, 7_168)
    assert not resources.fits(r, 1_028, "a100-80gb") and resources.fits(r, 1_028, "a100-40gb")


@pytest.mark.parametrize("rid,gpus,ok", [
    ("ncsa-delta-a100", 400, True), ("ncsa-delta-a100", 401, False),     # 100 nodes × 4
    ("ncsa-delta-h200", 8, True), ("ncsa-delta-h200", 9, False),         # 1 node of 8 per job
    ("tacc-vista", 64, True), ("tacc-vista", 65, False),                 # 64 nodes of 1 per job
    ("tacc-lonestar6-a100", 24, True), ("tacc-lonestar6-a100", 25, False),   # 8 nodes of 3
])
def test_a_job_fits_within_the_per_job_limit_and_the_partition(rid, gpus, ok):
    assert resources.fits(rid, gpus) is ok


def test_catalog_resources_lists_the_sizes(capsys):
    assert main(["catalog", "resources"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("ncsa-delta-h200 "))
    assert line.split()[3:7] == ["8", "8", "64", "8"]          # per node, nodes, GPUs, largest job (8 GPUs)
    # the size's source: the Delta user guide's partition table, at the revision read
    assert "provider-docs: NCSA, Delta User Guide, Running Jobs, table 'Delta Partitions/Queues'" in line
    assert "(2025-04-22, revision 43c8f4c)" in line


# ------------------------------------------------------------------ plans within the resource

DELTA = "proposal: {resource: ncsa-delta}\nworkloads:\n"


def test_a_405b_full_finetune_is_no_longer_planned_beyond_delta(plan_error):
    # Before: 128× h200 (a job of 16 H200 nodes; Delta has 8, one per job). The model states of 405B under
    # mixed-precision Adam fill no job Delta takes: exit 1 with the closest largest job and what it would take.
    err = plan_error(DELTA + "  - {name: ft405, kind: finetune, method: full, model: llama-3.1-405b, tokens: 100M}\n",
                     1)
    assert err.startswith("FILE:3: workloads[0]: ft405 does not fit in any job ncsa-delta takes: on 400× a40 "
                          "(ncsa-delta-a40 has 100 nodes of 4 GPUs, with no per-job node limit) it needs 64.34 GiB "
                          "per GPU, which has 44.34 GiB usable; it would fit on 128× h200, more than ncsa-delta "
                          "takes in one job: target another resource; or per GPU")


def test_an_unpinned_plan_stays_within_each_partition(plan_workloads):
    # A 70B full fine-tune fits on Delta's A100 partition (400 GPUs in one job at most), never on a job larger.
    w = plan_workloads(DELTA + "  - {name: ft70, kind: finetune, method: full, model: llama-3.1-70b, tokens: 100M}\n")
    w = w["ft70"]
    r = resources.resources()[w["resource"]["id"]]
    assert w["gpu"]["count"] <= r.largest_job_gpus(w["gpu"]["type"])


@pytest.mark.parametrize("pin,message", [
    ("gpu: h200, gpus: 16",
     "no ncsa-delta job takes 16 GPUs (at most 8 h200 GPUs: ncsa-delta-h200 allows 1 node of 8 GPUs per job); "
     "pin at most 8, or target another resource"),
    ("gpu: a100-40gb, gpus: 512",
     "no ncsa-delta job takes 512 GPUs (at most 400 a100-40gb GPUs: ncsa-delta-a100 has 100 nodes of 4 GPUs, with "
     "no per-job node limit); pin at most 400, or target another resource"),
])
def test_a_pin_beyond_the_partition_is_an_input_error(plan_error, pin, message):
    err = plan_error(DELTA + f"  - {{name: a, kind: finetune, method: lora, model: llama-3.1-8b, tokens: 10M, {pin}}}\n")
    assert err == f"FILE:3: workloads[0].gpus: no GPU configuration to consider: {message}\n"


def test_a_run_longer_than_the_period_on_the_largest_job_asks_for_fewer_tokens(plan_error):
    # 70B on 15T tokens: even on 400× a100-40gb (Delta's largest A100 job) one run takes 1,428 days (the step-time model at 400 GPUs), more than
    # the standard track's 365.25 days: the tokens that fit are 15T × 365.25 / 1,428.
    err = plan_error(DELTA + "  - {name: long, kind: pretrain, model: llama-3.1-70b, tokens: 15T}\n", 1)
    assert err.startswith("FILE:3: workloads[0]: long does not finish within the 365-day allocation period on any "
                          "job ncsa-delta takes: one run of 15,000,000,000,000 tokens takes 1,428 days even on 400× "
                          "a100-40gb (ncsa-delta-a100 has 100 nodes of 4 GPUs, with no per-job node limit); at most ")
    assert err.endswith(" tokens fit the period there: fewer tokens, or target another resource\n")


SERVICE = ("proposal: {resource: tacc-lonestar6}\nworkloads:\n  - {name: svc, kind: inference, model: llama-3.1-8b, "
           "request_rate: 120, input_tokens: 1k, output_tokens: 512, ttft_ms: 1000, tpot_ms: 50, hours: 100}\n")


def test_a_service_larger_than_one_job_runs_as_several(plan_workloads):
    # Before: internal error (exit 3), all replicas charged as one job Lonestar6's gpu-a100 (8 nodes of 3 per job)
    # does not take. Now each group of 24 one-GPU replicas that fits a job is a job of its own.
    w = plan_workloads(SERVICE)["svc"]
    replicas = w["inference"]["replicas"]
    assert replicas > 24 and w["gpu"]["count"] == replicas
    full, rest = divmod(replicas, 24)
    # gpu-a100: 3 SUs per node-hour, whole nodes; 100 h × 1.3 (buffer) = 130 h per job.
    nodes = full * 8 + -(-rest // 3)
    assert w["resource"]["amount"] == pytest.approx(nodes * 130 * 3)
    assert w["resource"]["arithmetic"].startswith(f"{replicas} replicas of 1 GPU, 24 per job (the largest job "
                                                  "tacc-lonestar6-a100 takes): ")
