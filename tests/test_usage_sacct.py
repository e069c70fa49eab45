"""`proposalkit usage` on Slurm accounting: the fixtures of tests/data/accounting/, figures computed by hand.

october.sacct is sacct --parsable2 output written from sacct's documentation (its header says which
pages): a header line, job steps under their allocations, every job state, array and heterogeneous job
ids, a running job's End Unknown, AllocTRES with and without a GPU type. plan.yaml is the plan it is
read against (its comments derive the planned figures: sweep 50 GPU-hours and 50 SUs requested on
ncsa-delta-a100; whole 5 GPU-hours and 7.5 SUs on tacc-lonestar6-a100, which charges whole nodes).
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from proposalkit.cli import main
from proposalkit.input import sacct
from proposalkit.input.accounting import AccountingReader
from proposalkit.input.loading import load_files
from proposalkit.planning.charges import charge, job_amount
from proposalkit.planning.planner import plan_files
from proposalkit.planning.usage import job_patterns, usage
from proposalkit.catalog.resources import resource

DATA = Path(__file__).parent / "data" / "accounting"
PLAN = str(DATA / "plan.yaml")
FILES = load_files([PLAN])
SACCT = str(DATA / "october.sacct")
NOHEADER = str(DATA / "october-noheader.sacct")
NOHEADER_FORMAT = "JobID,JobName,State,Elapsed,AllocTRES,Start,End,Partition"


def run_json(capsys, *args) -> dict:
    assert main(["usage", PLAN, "--jobs", *args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def plan():
    return plan_files(FILES)


@pytest.fixture(scope="module")
def october(plan):
    reader = AccountingReader([SACCT])
    return usage(plan, reader, patterns=job_patterns(FILES), reader=reader)


# ------------------------------------------------------------------ the fields, as sacct(1) writes them


@pytest.mark.parametrize("text, seconds", [
    ("36000", 36000),               # ElapsedRaw: seconds
    ("0", 0),
    ("10:00:00", 36000),            # Elapsed: HH:MM:SS
    ("30:00", 1800),                # MM:SS ([DD-[HH:]]MM:SS): 30 minutes
    ("00:30", 30),                  # 30 seconds
    ("1-02:03:04", 93784),          # D-HH:MM:SS = 26 h 3 min 4 s = 93,600 + 180 + 4
    ("12-00:00:00", 1036800),       # 12 × 86,400
])
def test_elapsed_as_seconds_or_days_hours_minutes_seconds(text, seconds):
    assert sacct.elapsed_seconds(text, "Elapsed") == seconds


@pytest.mark.parametrize("text", ["", "ten", "1:2:3:4", "00:61:00", "1-25:00:00", "-5"])
def test_elapsed_that_is_neither_is_refused(text):
    with pytest.raises(sacct.FieldError):
        sacct.elapsed_seconds(text, "Elapsed")


@pytest.mark.parametrize("job_id, step, pending_range", [
    ("1001", False, False), ("1001.batch", True, False), ("1001.extern", True, False), ("1001.0", True, False),
    ("1002_1", False, False), ("1002_1.batch", True, False), ("1002_[3-5]", False, True),
    ("1002_[3-5%2]", False, True), ("1008+0", False, False), ("1008+1.0", True, False),
])
def test_job_id_forms(job_id, step, pending_range):
    assert sacct.job_id_parts(job_id) == (step, pending_range)


@pytest.mark.parametrize("job_id", ["", "abc", "12a", "1002_", "1008+", "1.2.3"])
def test_a_job_id_that_is_none_of_them(job_id):
    assert sacct.job_id_parts(job_id) is None


@pytest.mark.parametrize("tres, gpus, gpu_type, nodes", [
    ("billing=16,cpu=16,gres/gpu:a100=1,gres/gpu=1,mem=62.50G,node=1", 1, "a100", 1),   # generic count wins
    ("cpu=8,gres/gpu=4,mem=64G,node=2", 4, None, 2),
    ("cpu=2,gres/gpu:a100=2,mem=8G,node=1", 2, "a100", 1),        # typed only: its count
    ("cpu=4,gres/gpu:a100=2,gres/gpu:v100=1,node=1", 3, None, 1),   # typed only, two types: summed
    ("cpu=4,gres/gpumem=40G,gres/gpuutil=80,node=1", None, None, 1),   # gpumem/gpuutil are not GPUs
    ("billing=4,cpu=4,mem=16G,node=1", None, None, 1),              # a CPU job
    ("cpu=4,gres/gpu=0,node=1", None, None, 1),                     # no_consume prints zero
    ("", None, None, None),                                          # a pending job
])
def test_gpus_from_alloc_tres(tres, gpus, gpu_type, nodes):
    assert sacct.gpus_of(tres) == (gpus, gpu_type, nodes)


def test_every_documented_state_has_a_category_and_cancelled_by_a_uid_is_cancelled():
    # sacct(1) JOB STATE CODES and job_state_codes.html: every base state, and the flags sacct may show.
    for name in ("BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY",
                 "PENDING", "PREEMPTED", "RUNNING", "REQUEUED", "RESIZING", "REVOKED", "SUSPENDED", "TIMEOUT"):
        assert sacct.state_of(name)[1] is not None, name
    assert sacct.state_of("CANCELLED by 51234") == ("CANCELLED", sacct.CANCELLED)
    assert sacct.state_of("CANCELLED+") == ("CANCELLED", sacct.CANCELLED)       # sacct without -P truncates
    assert sacct.state_of("OOM") == ("OUT_OF_MEMORY", sacct.OUT_OF_MEMORY)      # the short codes (a CSV)
    assert sacct.state_of("MIGRATED") == ("MIGRATED", None)                    # unknown: reported, not guessed


# ------------------------------------------------------------------ the fixture month, by hand


def test_sweep_figures_by_hand(october):
    w = october.workloads[0]
    assert w.name == "sweep" and w.pattern == "sweep-*"
    # Its jobs (name sweep-*), GPUs × elapsed hours; steps (.batch, .extern) skipped:
    #   1001 COMPLETED 1 × 10 h = 10        1002_1 FAILED 1 × 2 h = 2      1002_2 TIMEOUT 1 × 5 h = 5
    #   1003 OUT_OF_MEMORY 1 × 0.5 = 0.5    1004 PREEMPTED 1 × 1 = 1       1005 CANCELLED by 51234 600 s = 1/6
    #   1007 NODE_FAIL 2                    1014 REQUEUED 1                1016 BOOT_FAIL 120 s = 1/30
    #   1006 COMPLETED 10 (20:00 → 06:00: 4 h on Oct 20, 6 h on Oct 21)
    #   1013 CANCELLED before it started (Start None): 0;  1012_[3-5] PENDING: 0
    # used = 10 + 2 + 5 + 0.5 + 1 + 1/6 + 2 + 1 + 1/30 + 10 = 31.7 GPU-hours
    assert w.gpu_hours.used == pytest.approx(31.7)
    assert w.jobs == 12 and w.jobs_completed == 2 and w.jobs_pending == 1
    # lost: failed 2, timeout 5, out of memory 0.5, preempted 1, cancelled 1/6, node failure 2 + 1/30
    # (BOOT_FAIL), requeued 1; in all 11.7, 11.7 / 31.7 = 36.9% of what was used
    assert dict(w.lost.items()) == pytest.approx({"failed": 2, "timeout": 5, "out_of_memory": 0.5, "preempted": 1,
                                                  "cancelled": 1 / 6, "node_fail": 2 + 1 / 30, "requeued": 1})
    assert w.lost.total == pytest.approx(11.7) and w.lost_share == pytest.approx(11.7 / 31.7)
    # Delta SUs, each job: 1 GPU × h × 1, at least 1 SU (ncsa-delta-a100's minimum_amount):
    #   10 + 2 + 5 + 1 (0.5 raised) + 1 + 1 (1/6 raised) + 2 + 1 + 1 (1/30 raised) + 10 = 34 SUs; jobs never
    #   started are not charged
    assert w.units.unit == "SUs" and w.units.used == pytest.approx(34)
    assert w.units.planned == pytest.approx(50) and w.units.remaining == pytest.approx(16)
    # planned 50 GPU-hours requested, 40 estimated; remaining 50 − 31.7 = 18.3
    assert (w.gpu_hours.planned, w.gpu_hours_estimated) == pytest.approx((50, 40))
    assert w.gpu_hours.remaining == pytest.approx(18.3)
    # runs: 4 planned (variants), a 10 h run fits Delta's 48 h walltime in 1 job; 2 completed
    assert (w.runs_planned, w.jobs_planned, w.runs_completed) == (4, 4, 2)


def test_burn_rate_and_run_out_by_hand(october):
    # as of the latest job end: 1009 RUNNING, Start 2026-10-30T22:00 + 21,600 s = 2026-10-31T04:00 → Oct 31.
    # The 30 days Oct 2 – Oct 31 leave out Oct 1 (1001's 10 GPU-hours, 10 SUs).
    assert october.as_of == date(2026, 10, 31) and october.window_start == date(2026, 10, 2)
    sweep = october.workloads[0]
    # sweep: 31.7 − 10 = 21.7 GPU-hours in 30 days = 0.72333/day; 18.3 left ÷ 0.72333 = 25.30 days after
    # Nov 1 00:00 → Nov 26
    assert sweep.gpu_hours.last_30_days == pytest.approx(21.7)
    assert sweep.gpu_hours.rate_per_day == pytest.approx(21.7 / 30)
    assert sweep.gpu_hours.runs_out_on == date(2026, 11, 26)
    # Delta: 34 − 10 = 24 SUs in 30 days = 0.8/day; 16 left ÷ 0.8 = 20 days after Nov 1 → Nov 21
    delta = next(b for b in october.allocations if b.label == "ncsa-delta")
    assert (delta.used, delta.last_30_days, delta.runs_out_on) == (pytest.approx(34), pytest.approx(24),
                                                                   date(2026, 11, 21))
    # every job's GPU-hours: sweep 31.7 + whole 20 1/3 + unattributed 1.5 (1011; 1010 has no GPU) = 53.5333;
    # planned 50 + 5 = 55; in 30 days 43.5333 = 1.45111/day; 1.4667 left ÷ 1.45111 = 1.0107 days after
    # Nov 1 00:00 → Nov 2
    t = october.gpu_hours
    assert t.used == pytest.approx(53.5 + 1 / 30) and t.planned == pytest.approx(55)
    assert t.last_30_days == pytest.approx(43.5 + 1 / 30)
    assert t.runs_out_on == date(2026, 11, 2)


def test_a_whole_node_resource_charges_each_job_as_the_plan_charges_it(october):
    whole = october.workloads[1]
    # tacc-lonestar6-a100: 3 GPUs per node, whole nodes, node-hours × 3, a 15-minute minimum per job.
    #   1008+0: 2 GPUs, 10 min → ⌈2 ÷ 3⌉ = 1 node × max(1/6, 0.25) h × 3 = 0.75 SUs (the minimum time)
    #   1008+1: 4 GPUs on node=2, 2 h → ⌈4 ÷ 3⌉ = 2 nodes × 2 h × 3 = 12 SUs
    #   1009:   2 GPUs (gres/gpu:a100=2 only), running 6 h so far → 1 node × 6 h × 3 = 18 SUs
    # = 30.75 SUs; GPU-hours 2 × 1/6 + 4 × 2 + 2 × 6 = 20 1/3
    assert whole.units.used == pytest.approx(30.75)
    assert whole.gpu_hours.used == pytest.approx(20 + 1 / 3)
    assert whole.jobs == 3 and whole.jobs_running == 1
    # the plan's own charge of the same resource, through the same rule (charges.charge): 1 node × 2.5 h × 3
    assert whole.units.planned == pytest.approx(7.5)
    res = resource("tacc-lonestar6-a100")
    for gpus, hours, nodes in ((2, 1 / 6, 1), (4, 2, 2), (2, 6, 1)):
        assert job_amount(res, gpus, hours, nodes)[0] == pytest.approx(charge(res, "a100-40gb-pcie", gpus, hours).amount)
    # a job the accounting says held more nodes than its GPUs fill is charged those nodes
    assert job_amount(res, 2, 1.0, 2)[0] == pytest.approx(2 * 1 * 3)
    # used up: the running sum reached 5 GPU-hours on Oct 10 (1/3 + 8)
    assert whole.gpu_hours.runs_out_on == date(2026, 10, 10)


def test_unattributed_jobs_are_listed_and_counted(october):
    listed = [(j.job, j.name, j.gpu_hours, j.state) for j in october.unattributed]
    assert listed == [("1010", "jupyter", 0.0, "COMPLETED"), ("1011", "interactive", pytest.approx(1.5), "COMPLETED")]
    assert october.unattributed_gpu_hours == pytest.approx(1.5)
    assert october.unattributed[0].where.endswith("october.sacct:26")
    # 1010 has no GPU in AllocTRES: reported with its line, not guessed
    assert any("october.sacct:26: AllocTRES: job 1010: no GPU count" in n for n in october.notes)


def test_job_steps_are_skipped_and_each_allocation_counted_once(october):
    # 7 step lines: 1001.batch, 1001.extern, 1002_1.batch, 1008+0.batch, 1008+1.0, 1006.batch, 1009.batch
    assert (october.jobs, october.steps_skipped) == (17, 7)


def test_the_noheader_file_with_its_format_gives_the_same_figures(capsys):
    with_header = run_json(capsys, SACCT)
    without = run_json(capsys, NOHEADER, "--sacct-format", NOHEADER_FORMAT)
    for data in (with_header, without):
        data.pop("accounting"), data.pop("unattributed"), data.pop("notes")
    assert with_header == without


def test_json_keys_are_the_contracts(capsys):
    data = run_json(capsys, SACCT)
    w = data["workloads"][0]
    for key in ("name", "gpu_hours_planned", "gpu_hours_used", "units_used", "runs_planned", "runs_completed",
                "gpu_hours_lost", "gpu_hours_remaining", "measured_tokens_per_second"):
        assert key in w, key
    assert set(w["units_used"]) == {"unit", "amount"}
    assert {"failed", "timeout", "out_of_memory", "preempted", "cancelled", "node_fail"} <= set(w["gpu_hours_lost"])
    assert set(data["unattributed"][0]) >= {"job", "name", "gpu_hours", "state"}
    assert set(data["totals"]) >= {"gpu_hours_planned", "gpu_hours_used", "burn_rate_gpu_hours_per_day",
                                   "runs_out_on"}
    assert data["schema_version"] == 1
    assert data["totals"]["runs_out_on"] == "2026-11-02" and data["time_zone"] == "as written, no zone"


def test_as_of_leaves_out_later_jobs_and_moves_the_window(capsys):
    # --as-of 2026-10-15: jobs started after Oct 15 (1006 on Oct 20, 1009 on Oct 30) are left out.
    # sweep then used 31.7 − 10 = 21.7; whole 1/3 + 8 = 8 1/3. The window Sep 16 – Oct 15 holds all of it.
    data = run_json(capsys, SACCT, "--as-of", "2026-10-15")
    sweep, whole = data["workloads"]
    assert data["as_of"] == "2026-10-15" and data["accounting"]["jobs_after_as_of"] == 2
    assert sweep["gpu_hours_used"] == pytest.approx(21.7) and sweep["gpu_hours_last_30_days"] == pytest.approx(21.7)
    assert whole["gpu_hours_used"] == pytest.approx(8 + 1 / 3)
    # sweep: 21.7 / 30 = 0.72333/day; 28.3 left → 39.12 days after Oct 16 → Nov 24
    assert sweep["runs_out_on"] == "2026-11-24"


def test_a_job_in_two_files_is_counted_once_from_the_file_named_last(tmp_path, capsys):
    # An earlier export saw 1009 running 2 h; the later one 6 h. Named last, the later one counts.
    early = tmp_path / "early.sacct"
    early.write_text("JobID|JobName|Account|Partition|AllocTRES|ElapsedRaw|State|Start|End\n"
                     "1009|whole|abc123|gpu-a100|gres/gpu=2,node=1|7200|RUNNING|2026-10-30T22:00:00|Unknown\n")
    data = run_json(capsys, str(early), SACCT)
    assert data["accounting"]["duplicates"] == 1 and data["accounting"]["jobs"] == 17
    assert data["workloads"][1]["gpu_hours_used"] == pytest.approx(20 + 1 / 3)      # 6 h, not 2 h, not both
    reversed_order = run_json(capsys, SACCT, str(early))
    assert reversed_order["workloads"][1]["gpu_hours_used"] == pytest.approx(20 + 1 / 3 - 8)   # 2 h × 2 GPUs


def test_the_text_output_says_where_the_times_come_from(capsys):
    assert main(["usage", PLAN, "--jobs", SACCT]) == 0
    out = capsys.readouterr().out
    assert "times as written, no zone" in out
    assert "as of 2026-10-31 (the latest job end); burn rate over the 30 days 2026-10-02 to 2026-10-31" in out
    assert "ncsa-delta: 0.80 SUs/day over the last 30 days; runs out 2026-11-21" in out
