"""`proposalkit usage` on the plain CSV form (tests/data/accounting/cloud.csv), figures computed by hand,
and the measured throughput beside the plan's (tokens, or a pilot log the CSV names)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proposalkit.cli import main

DATA = Path(__file__).parent / "data" / "accounting"
PLAN = str(DATA / "plan.yaml")
CSV = str(DATA / "cloud.csv")
PILOT_LOG = Path(__file__).parent / "data" / "pilot" / "torchtune_log_1732300000.txt"


def run_json(capsys, *paths) -> dict:
    assert main(["usage", PLAN, "--jobs", *map(str, paths), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_csv_figures_by_hand(capsys):
    data = run_json(capsys, CSV)
    sweep, whole = data["workloads"]
    # c-1: workload column names sweep; 1 GPU, 08:00 → 18:00 = 10 GPU-hours, 10 SUs.
    # c-2: no workload; its name sweep-a matches sweep-*; 2 GPUs × 3 h = 6 GPU-hours, 2 × 3 × 1 = 6 SUs.
    assert sweep["gpu_hours_used"] == pytest.approx(16) and sweep["units_used"] == {"unit": "SUs", "amount": 16}
    assert sweep["runs_completed"] == 2 and whole["jobs"] == 0
    # c-3 (name other, 4 GPUs × 1.5 h = 6, FAILED) and c-4 (workload ghost, not in the plan; 1 × 2 = 2):
    # unattributed, 8 GPU-hours, in the totals: 16 + 8 = 24; lost 6 (failed), 6 / 24 = 25%
    assert [(u["job"], u["gpu_hours"], u["state"]) for u in data["unattributed"]] == [
        ("c-3", 6.0, "FAILED"), ("c-4", 2.0, "COMPLETED")]      # CD: sacct's short code for COMPLETED
    assert "names workload 'ghost', not in the plan" in data["unattributed"][1]["reason"]
    t = data["totals"]
    assert (t["gpu_hours_used"], t["gpu_hours_unattributed"]) == (24, 8)
    assert t["gpu_hours_lost"]["failed"] == 6 and t["gpu_hours_lost_share"] == 0.25
    # times written with Z: the zone is said, the times kept as written
    assert data["time_zone"] == "UTC"
    assert data["as_of"] == "2026-10-04"        # c-4: Oct 4 00:00 + 2 h


def test_measured_throughput_beside_the_plan(capsys):
    sweep = run_json(capsys, CSV)["workloads"][0]
    # c-1: 36M tokens in 36,000 s on 1 GPU; c-2: 18M tokens in 10,800 s on 2 GPUs.
    # whole jobs: 54M ÷ (36,000 + 10,800) s = 1,153.85 tokens/s; per GPU 54M ÷ (36,000 + 21,600) = 937.5;
    # planned per GPU 1,000 ÷ 1 = 1,000 → 0.9375
    assert sweep["measured_tokens_per_second"] == pytest.approx(54e6 / 46800, abs=1e-3)
    assert sweep["measured_tokens_per_second_per_gpu"] == pytest.approx(937.5)
    assert sweep["planned_tokens_per_second_per_gpu"] == pytest.approx(1000)
    assert sweep["throughput_ratio"] == pytest.approx(0.9375)
    assert sweep["throughput_jobs"] == 2


def test_a_pilot_log_named_by_a_row_gives_the_tokens(tmp_path, capsys):
    # The torchtune log's steady rate is 3,000 tokens/s per GPU (`proposalkit pilot ... --gpus 2`: 6,000 for
    # the job); a 1 h job on 2 GPUs: 6,000 × 3,600 = 21.6M tokens; per GPU 3,000. The plan's whole: 1,000
    # tokens/s on 2 GPUs = 500 per GPU → 6.0
    path = tmp_path / "jobs.csv"
    path.write_text("job,name,gpus,start,hours,log\n"
                    f"w-1,whole,2,2026-10-01T00:00:00,1,{PILOT_LOG}\n")
    whole = run_json(capsys, path)["workloads"][1]
    assert whole["measured_tokens_per_second_per_gpu"] == pytest.approx(3000)
    assert whole["throughput_ratio"] == pytest.approx(6.0)


def test_running_job_in_csv_counts_its_hours_so_far(tmp_path, capsys):
    path = tmp_path / "jobs.csv"
    path.write_text("job,gpus,start,end,hours,state\n"
                    "sweep-1,1,2026-10-01T00:00:00,,5,RUNNING\n")
    sweep = run_json(capsys, path)["workloads"][0]
    assert sweep["gpu_hours_used"] == 5 and sweep["jobs_running"] == 1 and sweep["runs_completed"] == 0


def test_times_in_two_zones_are_refused(tmp_path, capsys):
    path = tmp_path / "jobs.csv"
    path.write_text("job,gpus,start,hours\n"
                    "sweep-1,1,2026-10-01T00:00:00Z,1\n"
                    "sweep-2,1,2026-10-01T02:00:00+02:00,1\n")
    assert main(["usage", PLAN, "--jobs", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:3: start: times in UTC+02:00 but {path}:2 has times UTC" in err


def test_sacct_local_times_and_a_csv_in_utc_are_refused_together(tmp_path, capsys):
    path = tmp_path / "jobs.csv"
    path.write_text("job,gpus,start,hours\nsweep-1,1,2026-10-01T00:00:00Z,1\n")
    assert main(["usage", PLAN, "--jobs", str(DATA / "october.sacct"), str(path)]) == 2
    assert "write every time of the accounting in one zone" in capsys.readouterr().err
