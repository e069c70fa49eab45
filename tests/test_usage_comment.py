"""Tokens from sacct's Comment field (`tokens=N`, docs/usage.md) through `proposalkit usage`: read into the
measured throughput as a CSV's `tokens` column is, bounded as the other fields, and every malformed Comment
an error naming its file, line and field (exit 2).

tests/data/accounting/comments.sacct against plan.yaml (sweep plans 1,000 tokens/s on 1 GPU; whole 1,000
tokens/s on 2 GPUs, 500 per GPU). By hand:
- sweep: 2001 tokens=32400000 in 36,000 s on 1 GPU (900/s); 2002 `Tokens=27M` in 18,000 s (1,500/s; its
  `max_tokens=4096` is not the item); 2003 (no Comment) and 2004 (a Comment without tokens=) give none.
  (32.4M + 27M) ÷ (36,000 + 18,000) s = 1,100 tokens/s, per GPU the same; ÷ 1,000 planned = 1.10.
- whole: 2005 tokens=6.48M in 7,200 s on 2 GPUs: 900 tokens/s for the job, 6.48M ÷ 14,400 = 450 per GPU;
  ÷ 500 planned = 0.90.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proposalkit.cli import main

DATA = Path(__file__).parent / "data" / "accounting"
PLAN = str(DATA / "plan.yaml")
COMMENTS = str(DATA / "comments.sacct")
HEADER = "JobID|JobName|Account|Partition|AllocTRES|ElapsedRaw|State|Start|End|Comment\n"
JOB = "1001|sweep-r8|abc|gpuA100x4|gres/gpu=1,node=1|3600|COMPLETED|2026-10-01T08:00:00|2026-10-01T09:00:00|"


def run_json(capsys, *args: str) -> dict:
    assert main(["usage", PLAN, "--jobs", *args, "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return json.loads(out)


def measured(data: dict) -> dict:
    keys = ("measured_tokens_per_second", "measured_tokens_per_second_per_gpu", "planned_tokens_per_second_per_gpu",
            "throughput_ratio", "throughput_jobs")
    return {w["name"]: {k: w[k] for k in keys} for w in data["workloads"]}


def test_the_comments_tokens_give_the_measured_throughput(capsys):
    assert measured(run_json(capsys, COMMENTS)) == {
        "sweep": {"measured_tokens_per_second": 1100.0, "measured_tokens_per_second_per_gpu": 1100.0,
                  "planned_tokens_per_second_per_gpu": 1000.0, "throughput_ratio": 1.1, "throughput_jobs": 2},
        "whole": {"measured_tokens_per_second": 900.0, "measured_tokens_per_second_per_gpu": 450.0,
                  "planned_tokens_per_second_per_gpu": 500.0, "throughput_ratio": 0.9, "throughput_jobs": 1},
    }


def test_the_same_jobs_as_csv_tokens_give_the_same_figures(tmp_path, capsys):
    csv = tmp_path / "comments.csv"
    csv.write_text("job,name,gpus,start,hours,state,tokens\n"
                   "2001,sweep-r8,1,2026-10-01T08:00:00,10,COMPLETED,32400000\n"
                   "2002,sweep-r16,1,2026-10-02T08:00:00,5,COMPLETED,27000000\n"
                   "2003,sweep-r32,1,2026-10-03T08:00:00,2,FAILED,\n"
                   "2004,sweep-r64,1,2026-10-04T08:00:00,1,COMPLETED,\n"
                   "2005,whole,2,2026-10-05T08:00:00,2,COMPLETED,6480000\n"
                   "2006,jupyter,1,2026-10-06T08:00:00,1,COMPLETED,1000\n", encoding="utf-8")
    from_sacct, from_csv = run_json(capsys, COMMENTS), run_json(capsys, str(csv))
    assert measured(from_csv) == measured(from_sacct)
    assert from_csv["totals"] == from_sacct["totals"]


def test_a_header_without_comment_reads_no_tokens(capsys):
    data = run_json(capsys, str(DATA / "october.sacct"))
    assert all(w["throughput_jobs"] == 0 and w["measured_tokens_per_second"] is None for w in data["workloads"])


def test_noheader_output_reads_the_comment_at_its_place_in_sacct_format(tmp_path, capsys):
    # `--noheader --format=JobID,JobName,Comment,…`: 5,000 tokens in 1 h on 1 GPU, 5,000 ÷ 3,600 = 1.389/s.
    path = tmp_path / "noheader.sacct"
    path.write_text("1001|sweep-r8|tokens=5k|gres/gpu=1|3600|COMPLETED|2026-10-01T08:00:00\n", encoding="utf-8")
    data = run_json(capsys, str(path), "--sacct-format", "JobID,JobName,Comment,AllocTRES,ElapsedRaw,State,Start")
    assert data["workloads"][0]["measured_tokens_per_second"] == pytest.approx(5000 / 3600, abs=1e-3)


def usage_error(tmp_path, capsys, text: str, name: str = "jobs.sacct") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert main(["usage", PLAN, "--jobs", str(path)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and "Traceback" not in out.err and "internal error" not in out.err
    return out.err.replace(str(path), "FILE").strip()


FORM = "tokens=N, e.g. tokens=195000000 or tokens=195M (suffixes k, M, B, T)"


@pytest.mark.parametrize("comment, message", [
    ("tokens=lots", f"FILE:2: Comment: tokens: expected a non-negative count, {FORM}; got 'lots'"),
    ("tokens=-5M", f"FILE:2: Comment: tokens: expected a non-negative count, {FORM}; got '-5M'"),
    ("tokens=", f"FILE:2: Comment: expected {FORM}, got 'tokens='"),
    ("tokens: 1.2B", f"FILE:2: Comment: expected {FORM}, got 'tokens: 1.2B'"),
    ("tokens=1M, tokens=2M", f"FILE:2: Comment: tokens given 2 times in 'tokens=1M, tokens=2M': write one {FORM}"),
    # 2·10^15 is past BOUNDS["tokens"] (10^15).
    ("tokens=2e15", "FILE:2: Comment: implausibly large: 'tokens=2e15' (at most 10^15 tokens, 64× the 15.6T "
                    "Llama 3 was pretrained on; check the suffix: k, M, B, T)"),
    # 40B tokens in 1 GPU × 3,600 s is 11.1M tokens/s per GPU, past BOUNDS["tokens_per_second_per_gpu"] (10^7).
    ("run 3 tokens=40B", "FILE:2: Comment: 'run 3 tokens=40B': 11,111,111 tokens per second per GPU "
                         "(40,000,000,000 tokens in 1 GPU × 3,600 s); expected at most 10^7 tokens per second per "
                         "GPU: training even a 10M-parameter model that fast takes 6·10^14 FLOP/s, most of an "
                         "H100's dense 16-bit peak"),
])
def test_a_malformed_comment_names_file_line_and_field(tmp_path, capsys, comment, message):
    assert usage_error(tmp_path, capsys, HEADER + JOB + comment + "\n") == message


def test_a_comment_within_bounds_is_read(tmp_path, capsys):
    # 36B tokens in 3,600 s on 1 GPU: 10^7 tokens/s, the bound itself, is allowed.
    path = tmp_path / "edge.sacct"
    path.write_text(HEADER + JOB + "TOKENS=36B\n", encoding="utf-8")
    assert run_json(capsys, str(path))["workloads"][0]["measured_tokens_per_second"] == 1e7


@pytest.mark.parametrize("tokens, message", [
    ("2e15", "FILE:2: tokens: implausibly large: '2e15' (at most 10^15 tokens, 64× the 15.6T Llama 3 was "
             "pretrained on; check the suffix: k, M, B, T)"),
    ("4e10", "FILE:2: tokens: '4e10': 11,111,111 tokens per second per GPU (40,000,000,000 tokens in 1 GPU × "
             "3,600 s); expected at most 10^7"),
])
def test_the_csv_tokens_are_bounded_the_same_way(tmp_path, capsys, tokens, message):
    err = usage_error(tmp_path, capsys, f"job,name,gpus,start,hours,tokens\n1,sweep-a,1,2026-10-01T08:00:00,1,{tokens}\n",
                      name="jobs.csv")
    assert err.startswith(message)
