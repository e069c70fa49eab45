"""proposalkit.usage (proposalkit/api.py): the plan beside the job accounting, as `proposalkit usage` gives
it. Each call is checked against the command line on the same files: the same JSON and tables, the same
located errors (InputError for exit 2), nothing printed."""

from __future__ import annotations

import json
from datetime import date, datetime
from pathlib import Path

import pytest
import yaml

import proposalkit
from proposalkit.cli import main

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "accounting"
PLAN = DATA / "plan.yaml"
EXAMPLE = ROOT / "workloads" / "code-models.yaml"
MONTH = ROOT / "workloads" / "accounting" / "2026-10.sacct"
NOHEADER_FORMAT = "JobID,JobName,State,Elapsed,AllocTRES,Start,End,Partition"     # its comment says so


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["usage", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("plan_files, jobs, options", [
    ([EXAMPLE], [MONTH], {}),
    ([PLAN], [DATA / "october.sacct"], {}),
    ([PLAN], [DATA / "cloud.csv"], {}),
    ([PLAN], [DATA / "october-noheader.sacct"], {"sacct_format": NOHEADER_FORMAT}),
    # Two files holding the same allocations: each job counted once, from the file named last.
    ([PLAN], [DATA / "october.sacct", DATA / "october-noheader.sacct"], {"sacct_format": NOHEADER_FORMAT}),
    ([PLAN], [DATA / "october.sacct"], {"as_of": "2026-10-15", "start": date(2026, 9, 1)}),
])
def test_usage_gives_what_the_command_line_prints(capsys, plan_files, jobs, options):
    flags = {"sacct_format": "--sacct-format", "as_of": "--as-of", "start": "--start"}
    args = [str(p) for p in plan_files] + ["--jobs", *map(str, jobs)]
    args += [item for key, value in options.items() for item in (flags[key], str(value))]
    used = proposalkit.usage(plan_files if len(plan_files) > 1 else plan_files[0],
                             jobs=jobs if len(jobs) > 1 else jobs[0], **options)
    code, out, err = _cli(capsys, *args, "--format", "json")
    assert code == 0 and err == ""
    assert proposalkit.usage_json(used) == out
    assert proposalkit.usage_dict(used) == json.loads(out)
    assert proposalkit.usage_text(used) == _cli(capsys, *args)[1]
    assert isinstance(used, proposalkit.Usage) and isinstance(used.workloads[0], proposalkit.WorkloadUsage)


def test_the_records_hold_the_json_figures():
    used = proposalkit.usage(EXAMPLE, jobs=MONTH)
    data = proposalkit.usage_dict(used)
    lora = used.workloads[0]
    # The example month (workloads/accounting/2026-10.sacct): lora-sweep's 13 jobs, 8 of its 10 runs completed.
    assert (lora.name, lora.jobs, lora.runs_completed, lora.runs_planned) == ("lora-sweep", 13, 8, 10)
    assert data["workloads"][0]["gpu_hours_used"] == round(lora.gpu_hours.used, 6)
    assert data["totals"]["runs_out_on"] == used.gpu_hours.runs_out_on.isoformat()
    assert [j["job"] for j in data["unattributed"]] == [j.job for j in used.unattributed]
    assert isinstance(used.lost, proposalkit.LostHours) and isinstance(used.gpu_hours, proposalkit.Burn)


def test_text_and_data_give_the_same_usage_as_the_file():
    text = EXAMPLE.read_text(encoding="utf-8")
    from_path = proposalkit.usage_json(proposalkit.usage(EXAMPLE, jobs=[MONTH]))
    assert proposalkit.usage_json(proposalkit.usage(text=text, base_dir=EXAMPLE.parent, jobs=MONTH)) == from_path
    assert proposalkit.usage_json(proposalkit.usage(data=yaml.safe_load(text), base_dir=EXAMPLE.parent,
                                                    jobs=str(MONTH))) == from_path


def test_a_malformed_accounting_line_is_the_command_lines_error(tmp_path, capsys):
    bad = tmp_path / "jobs.sacct"
    bad.write_text("JobID|JobName|AllocTRES|ElapsedRaw|State|Start\n"
                   "1001|sweep|gres/gpu=1|an hour|COMPLETED|2026-10-01T08:00:00\n", encoding="utf-8")
    with pytest.raises(proposalkit.InputError) as caught:
        proposalkit.usage(PLAN, jobs=bad)
    problem, = caught.value.problems
    assert (problem.path, problem.line, problem.field) == (str(bad), 2, "ElapsedRaw")
    code, out, err = _cli(capsys, str(PLAN), "--jobs", str(bad))
    assert (code, out) == (2, "") and err.strip() == str(problem)
    with pytest.raises(proposalkit.InputError, match="cannot read"):
        proposalkit.usage(PLAN, jobs=tmp_path / "missing.sacct")


def test_usage_prints_nothing(capfd):
    used = proposalkit.usage(EXAMPLE, jobs=MONTH)
    for render in (proposalkit.usage_dict, proposalkit.usage_json, proposalkit.usage_text):
        render(used)
    assert used.notes       # the month's CPU job (no GPU count): a note the command line prints, returned here
    assert capfd.readouterr() == ("", "")


@pytest.mark.parametrize("call, error, words", [
    (lambda: proposalkit.usage(PLAN, jobs={"path": "x"}), TypeError, "not a mapping"),
    (lambda: proposalkit.usage(PLAN, jobs=[]), TypeError, "at least one accounting file"),
    (lambda: proposalkit.usage(PLAN, jobs="1001|sweep|gres/gpu=1\n"), TypeError, "not their text"),
    (lambda: proposalkit.usage(PLAN, jobs=[3]), TypeError, "jobs= are the accounting files' paths"),
    (lambda: proposalkit.usage(jobs=DATA / "october.sacct"), TypeError, "usage() takes one of a path"),
    (lambda: proposalkit.usage(PLAN, jobs=DATA / "october.sacct", as_of=datetime(2026, 10, 1)), TypeError,
     "datetime.date or 'YYYY-MM-DD'"),
    (lambda: proposalkit.usage(PLAN, jobs=DATA / "october.sacct", start="31/10/2026"), ValueError,
     "usage(start=...): '31/10/2026' is not a date YYYY-MM-DD"),
    (lambda: proposalkit.usage(PLAN, jobs=DATA / "october.sacct", sacct_format=["JobID"]), TypeError, "one str"),
])
def test_a_call_that_does_not_say_what_its_inputs_are_is_a_type_or_value_error(call, error, words):
    with pytest.raises(error) as caught:
        call()
    assert words in str(caught.value)


def test_the_usage_functions_are_annotated_and_exported():
    import inspect

    for name in ("usage", "usage_dict", "usage_json", "usage_text"):
        assert name in proposalkit.__all__
        signature = inspect.signature(getattr(proposalkit, name))
        assert signature.return_annotation is not inspect.Signature.empty, name
        assert all(p.annotation is not inspect.Parameter.empty for p in signature.parameters.values()), name
