"""Bad accounting input: every malformed line is exit 2 with FILE:LINE: field: message (all of a file's
lines together), never a traceback; an unknown state or a job without GPUs is reported, not guessed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from proposalkit.cli import main

PLAN = str(Path(__file__).parent / "data" / "accounting" / "plan.yaml")
HEADER = "JobID|JobName|Account|Partition|AllocTRES|ElapsedRaw|State|Start|End\n"
GOOD = "1001|sweep-r8|abc|gpuA100x4|gres/gpu=1,node=1|3600|COMPLETED|2026-10-01T08:00:00|2026-10-01T09:00:00\n"


def usage_error(tmp_path, capsys, text: str, *extra: str, name: str = "jobs.sacct") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert main(["usage", PLAN, "--jobs", str(path), *extra]) == 2
    out = capsys.readouterr()
    assert out.out == "" and "Traceback" not in out.err and "internal error" not in out.err
    return out.err.replace(str(path), "FILE").strip()


@pytest.mark.parametrize("line, message", [
    ("1002|sweep|abc|gpuA100x4|gres/gpu=1|3600|COMPLETED|2026-10-01T08:00:00\n",
     "FILE:3: 8 fields, expected 9 (JobID|JobName|Account|Partition|AllocTRES|ElapsedRaw|State|Start|End)"),
    ("job-7|sweep|abc|gpuA100x4|gres/gpu=1|3600|COMPLETED|2026-10-01T08:00:00|2026-10-01T09:00:00\n",
     "FILE:3: JobID: expected JobID[.step], ArrayJobID_TaskID or HetJobID+Offset, got 'job-7'"),
    ("1002|sweep|abc|gpuA100x4|gres/gpu=1|an hour|COMPLETED|2026-10-01T08:00:00|2026-10-01T09:00:00\n",
     "FILE:3: ElapsedRaw: expected seconds or [D-]HH:MM:SS, got 'an hour'"),
    ("1002|sweep|abc|gpuA100x4|gres/gpu=1|3600|COMPLETED|Ystday 10:00|2026-10-01T09:00:00\n",
     "FILE:3: Start: expected YYYY-MM-DDTHH:MM:SS (sacct's standard time format; unset SLURM_TIME_FORMAT) or "
     "Unknown, got 'Ystday 10:00'"),
    ("1002|sweep|abc|gpuA100x4|gres/gpu=2|3600|COMPLETED|2026-13-01T08:00:00|2026-10-01T09:00:00\n",
     "FILE:3: Start: not a date and time: '2026-13-01T08:00:00'"),
    ("1002|sweep|abc|gpuA100x4|cpu=4,gres/gpu=two|3600|COMPLETED|2026-10-01T08:00:00|2026-10-01T09:00:00\n",
     "FILE:3: AllocTRES: gres/gpu: expected a count, got 'two'"),
])
def test_a_malformed_sacct_line_names_file_line_and_field(tmp_path, capsys, line, message):
    assert usage_error(tmp_path, capsys, HEADER + GOOD + line) == message


def test_every_malformed_line_of_a_file_is_reported_together(tmp_path, capsys):
    bad = "1002|sweep|abc|gpuA100x4|gres/gpu=1|x|COMPLETED|2026-10-01T08:00:00|2026-10-01T09:00:00\n"
    err = usage_error(tmp_path, capsys, HEADER + bad + GOOD + bad + "1|2\n")
    assert [line.split(":")[1] for line in err.splitlines()] == ["2", "4", "5"]


def test_a_header_without_the_fields_needed(tmp_path, capsys):
    err = usage_error(tmp_path, capsys, "JobID|JobName|State\n1|a|COMPLETED\n")
    assert err.startswith("FILE:1: header: its header lacks alloctres, start, elapsedraw (fields: JobID, JobName, "
                          "State); expected sacct --parsable2 --format=JobID,JobName,Account,Partition,AllocTRES,")


def test_noheader_output_in_another_order_asks_for_its_format(tmp_path, capsys):
    err = usage_error(tmp_path, capsys, "1001|sweep|COMPLETED|01:00:00|gres/gpu=1|2026-10-01T08:00:00\n")
    assert err == ("FILE:1: 6 fields, expected 9 (JobID|JobName|Account|Partition|AllocTRES|ElapsedRaw|State|Start|"
                   "End); give the --format sacct was run with as --sacct-format")
    err = usage_error(tmp_path, capsys, "1001|sweep|COMPLETED|01:00:00|gres/gpu=1|2026-10-01T08:00:00\n",
                      "--sacct-format", "JobID,JobName,State,Elapsed,AllocTRES")
    assert "--sacct-format lacks start" in err


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"])
def test_an_empty_file(tmp_path, capsys, text):
    assert usage_error(tmp_path, capsys, text) == (
        "FILE: empty: expected sacct --parsable2 output (JobID|JobName|…) or CSV with a header line (job,gpus,…)")


def test_a_line_without_end(tmp_path, capsys):
    err = usage_error(tmp_path, capsys, HEADER + "1|" + "x" * 70_000)
    assert err == "FILE:2: a line longer than 65,536 characters; expected sacct --parsable2 output or CSV"


def test_not_a_file(tmp_path, capsys):
    missing = tmp_path / "missing.sacct"
    assert main(["usage", PLAN, "--jobs", str(missing)]) == 2
    assert f"{missing}: cannot read (No such file or directory)" in capsys.readouterr().err
    assert main(["usage", PLAN, "--jobs", str(tmp_path)]) == 2
    assert "not a regular file (got a folder" in capsys.readouterr().err
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert main(["usage", PLAN, "--jobs", str(fifo)]) == 2       # refused before reading: no blocking
    assert "a FIFO" in capsys.readouterr().err


@pytest.mark.parametrize("text, message", [
    ("job,gpu,gpus,strat,hours\n", "FILE:1: header: unknown column 'strat' (did you mean 'state'?); no start column "
                                   "(expected job, gpus, start, end or hours; optional workload, name, gpu, nodes, "
                                   "partition, state, tokens, log); not sacct output either (no '|')"),
    ("job,gpus,start\n", "FILE:1: header: no end or hours column (expected job, gpus, start, end or hours; "
                         "optional workload, name, gpu, nodes, partition, state, tokens, log); not sacct output "
                         "either (no '|')"),
    ("job,gpus,start,hours\nsweep-1,-1,2026-10-01T00:00:00,1\n",
     "FILE:2: gpus: expected a non-negative integer, got '-1'"),
    ("job,gpus,start,end\nsweep-1,1,2026-10-01T09:00:00,2026-10-01T08:00:00\n",
     "FILE:2: end: 2026-10-01T08:00:00 is before start 2026-10-01T09:00:00"),
    ("job,gpus,start,hours\nsweep-1,1,yesterday,1\n",
     "FILE:2: start: expected an ISO 8601 date and time (2026-10-01T08:00:00), got 'yesterday'"),
    ("job,gpus,start,end,hours\nsweep-1,1,2026-10-01T08:00:00,2026-10-01T09:00:00,2\n",
     "FILE:2: hours: 2 h, but end - start is 1 h: give one of them"),
    ("job,gpus,start,end\nsweep-1,1,2026-10-01T08:00:00,\n",
     "FILE:2: end: empty, and no hours: give when the job ended, or its hours (so far, if running)"),
    ("job,gpus,start,hours\nsweep-1,1,2026-10-01T08:00:00\n", "FILE:2: 3 fields, expected 4 (job,gpus,start,hours)"),
    ("job,gpus,start,hours\n,1,2026-10-01T08:00:00,1\n", "FILE:2: job: empty: expected the job's id"),
])
def test_a_malformed_csv_line(tmp_path, capsys, text, message):
    assert usage_error(tmp_path, capsys, text, name="jobs.csv") == message


def test_an_unknown_state_is_reported_not_guessed(tmp_path, capsys):
    path = tmp_path / "jobs.sacct"
    path.write_text(HEADER + GOOD.replace("COMPLETED", "MIGRATED"))
    assert main(["usage", PLAN, "--jobs", str(path), "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert f"{path}:2: State: job 1001: unknown job state 'MIGRATED'" in out
    import json

    sweep = json.loads(out)["workloads"][0]
    # its hour is used (charged), neither completed nor lost
    assert (sweep["gpu_hours_used"], sweep["jobs_unknown_state"], sweep["jobs_completed"]) == (1, 1, 0)
    assert sum(sweep["gpu_hours_lost"].values()) == 0


def test_a_job_without_gpus_in_its_tres_is_reported(tmp_path, capsys):
    path = tmp_path / "jobs.sacct"
    path.write_text(HEADER + GOOD.replace("gres/gpu=1,", "cpu=8,"))
    assert main(["usage", PLAN, "--jobs", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"note: {path}:2: AllocTRES: job 1001: no GPU count (cpu=8,node=1): its 1.00 hours are not counted" in out


def test_notes_of_one_kind_are_bounded(tmp_path, capsys):
    path = tmp_path / "jobs.sacct"
    path.write_text(HEADER + "".join(GOOD.replace("1001", str(2000 + i)).replace("COMPLETED", "MIGRATED")
                                     for i in range(25)))
    assert main(["usage", PLAN, "--jobs", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.count("unknown job state 'MIGRATED'") == 20 and "… and 5 more like the above (unknown-state)" in out


@pytest.mark.parametrize("args, message", [
    (["--as-of", "31/10/2026"], "argument --as-of: '31/10/2026' is not a date YYYY-MM-DD"),
    (["-o", "x", "--report-format", "docx"], "--report-format: unknown format docx (expected md, html, pdf"),
])
def test_bad_options(tmp_path, capsys, args, message):
    path = tmp_path / "jobs.sacct"
    path.write_text(HEADER + GOOD)
    try:
        code = main(["usage", PLAN, "--jobs", str(path), *args])
    except SystemExit as stop:          # argparse's own usage error
        code = stop.code
    assert code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("text, name, message", [
    (HEADER + "1002|sweep|abc|gpuA100x4|gres/gpu=1|99999999999999|RUNNING|2026-10-01T08:00:00|Unknown\n", "jobs.sacct",
     "FILE:2: ElapsedRaw: implausibly large: '99999999999999' (at most 100,000 hours"),
    (HEADER + "1002|sweep|abc|gpuA100x4|gres/gpu=99999999999|60|COMPLETED|2026-10-01T08:00:00|Unknown\n",
     "jobs.sacct", "FILE:2: AllocTRES: implausibly large: 'gres/gpu=99999999999' (at most 10^6 GPUs"),
    ("job,gpus,start,hours\n1,1,2026-10-01T08:00:00,1e12\n", "jobs.csv",
     "FILE:2: hours: implausibly large: '1e12' (at most 100,000 hours"),
    ("job,gpus,start,end\n1,1,2026-10-01T08:00:00,9999-12-31T00:00:00\n", "jobs.csv",
     "FILE:2: end: implausibly large: '9999-12-31T00:00:00' (at most 100,000 hours"),
    ("job,gpus,start,hours\n1,100000000,2026-10-01T08:00:00,1\n", "jobs.csv",
     "FILE:2: gpus: implausibly large: '100000000' (at most 10^6 GPUs"),
])
def test_an_implausibly_long_or_wide_job_is_an_input_error_not_an_overflow(tmp_path, capsys, text, name, message):
    assert usage_error(tmp_path, capsys, text, name=name).startswith(message)
