"""The progress report (`usage -o DIR`): the same writer as `report` (all or nothing, under the folder's
lock), its burn-down charts, user text escaped in every format, the same bytes for the same input."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import weasyprint_available

from proposalkit.cli import main
from proposalkit.input.accounting import AccountingReader
from proposalkit.input.loading import load_files
from proposalkit.planning.planner import plan_files
from proposalkit.planning.usage import job_patterns, usage
from proposalkit.render.progress import burndown

DATA = Path(__file__).parent / "data" / "accounting"
PLAN = str(DATA / "plan.yaml")
FILES = load_files([PLAN])
SACCT = str(DATA / "october.sacct")


def write(out: Path, *extra: str) -> list[str]:
    code = main(["usage", PLAN, "--jobs", SACCT, "-o", str(out), "--report-format", "md,html", *extra])
    assert code == 0
    return sorted(os.path.relpath(p, out) for p in out.rglob("*") if p.is_file())


def test_the_progress_set_is_written(tmp_path, capsys):
    files = write(tmp_path / "out")
    # A burn-down per GPU type (each burns its own GPU-hours) and per system in its unit; none of all types added.
    assert files == ["charts/burndown-gpu-hours-a100-40gb-pcie.svg", "charts/burndown-gpu-hours-a100-40gb.svg",
                     "charts/burndown-ncsa-delta.svg", "charts/burndown-tacc-lonestar6.svg", "progress.html",
                     "progress.md"]
    printed = capsys.readouterr().out.split()
    assert sorted(os.path.relpath(p, tmp_path / "out") for p in printed) == files
    md = (tmp_path / "out" / "progress.md").read_text()
    assert md.startswith("# Progress report: the allocation's use against the plan\n\n**Usage fixture**\n")
    # sweep's 31.70 of 50.00 on a100-40gb; whole's 20.33 of 5.00 on a100-40gb-pcie: never 53.53 of 55.00 (the
    # 1.50 GPU-hours of unattributed jobs are in neither).
    assert ("As of 2026-10-31, each GPU type against its own planned GPU-hours: a100-40gb: 31.70 of 50.00 used "
            "(63.4%), 18.30 remaining; 0.72 a day over the last 30 days, at which they run out on 2026-11-26. "
            "a100-40gb-pcie: 20.33 of 5.00 used (406.7%), −15.33 remaining; 0.68 a day over the last 30 days; "
            "used up on 2026-10-10. The allocation ends on 2027-10-01.") in md
    assert "53.53" not in md and "55.00" not in md
    assert "![a100-40gb: GPU-hours remaining, planned against used](charts/burndown-gpu-hours-a100-40gb.svg)" in md
    html = (tmp_path / "out" / "progress.html").read_text()
    assert html.count("<svg") == 4 and "<td class=\"num\">2026-11-26</td>" in html


def test_the_markdown_format_is_the_reports_tables(tmp_path, capsys):
    write(tmp_path / "out")
    capsys.readouterr()
    assert main(["usage", PLAN, "--jobs", SACCT, "--format", "markdown"]) == 0
    tables = capsys.readouterr().out
    assert tables.startswith("Accounting: 17 jobs in ")
    assert tables in (tmp_path / "out" / "progress.md").read_text()


def test_same_input_same_bytes(tmp_path, capsys):
    write(tmp_path / "a")
    write(tmp_path / "b")
    for name in ("progress.md", "progress.html", "charts/burndown-ncsa-delta.svg"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_a_folder_that_cannot_be_written_is_exit_2_and_nothing_is_left(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert main(["usage", PLAN, "--jobs", SACCT, "-o", str(blocker), "--report-format", "md"]) == 2
    assert f"-o {blocker}: cannot write {blocker} (not a folder)" in capsys.readouterr().err
    assert blocker.read_text() == "not a folder"


def test_the_burn_down_by_hand():
    plan = plan_files(FILES)
    reader = AccountingReader([SACCT])
    u = usage(plan, reader, patterns=job_patterns(FILES), reader=reader)
    delta = next(b for b in u.allocations if b.label == "ncsa-delta")
    drawn = burndown(delta, u)
    # the allocation: Oct 1, 2026 (the first job) for a standard track's 12 × 30.4375 days → 365 whole days
    assert drawn.days == 365 and drawn.planned == 50
    # remaining at each day's end, Oct 1 to Oct 31: 50 − 10 (1001) = 40 after Oct 1, … 16 after Oct 31
    assert drawn.used[0] == (1, pytest.approx(40)) and drawn.used[-1] == (31, pytest.approx(16))
    # carried on at 0.8 SUs/day from 16 left: 20 days, to day 51 at 0
    assert drawn.projection == ((31, pytest.approx(16)), (pytest.approx(51), pytest.approx(0)))
    assert drawn.day_labels[:2] == ((0, "Oct 2026"), (31, "Nov"))


def test_job_names_are_inert_in_every_format(tmp_path, capsys):
    hostile = "@everyone_<script>alert(1)</script>_=HYPERLINK(1)\x1b[2J"
    path = tmp_path / "jobs.sacct"
    path.write_text("JobID|JobName|Account|Partition|AllocTRES|ElapsedRaw|State|Start|End\n"
                    f"1|{hostile}|abc|gpu|gres/gpu=1|3600|COMPLETED|2026-10-01T08:00:00|2026-10-01T09:00:00\n")
    assert main(["usage", PLAN, "--jobs", str(path), "-o", str(tmp_path / "out"), "--report-format", "md,html"]) == 0
    md = (tmp_path / "out" / "progress.md").read_text()
    html = (tmp_path / "out" / "progress.html").read_text()
    assert "<script>" not in html and "\x1b" not in md + html
    # Markdown: the name holds a mention, so it is one code span (md_code): nothing in it is HTML or a link
    span = "`@everyone_<script>alert(1)</script>_=HYPERLINK(1)\\x1b[2J`"
    assert span in md and md.count("<script>") == md.count(span)
    assert "&lt;script&gt;" in html
    capsys.readouterr()
    assert main(["usage", PLAN, "--jobs", str(path)]) == 0
    assert "\x1b" not in capsys.readouterr().out


@pytest.mark.skipif(not weasyprint_available(), reason="WeasyPrint or Pango cannot load here")
def test_the_pdf(tmp_path, capsys):
    assert main(["usage", PLAN, "--jobs", SACCT, "-o", str(tmp_path), "--report-format", "pdf"]) == 0
    assert (tmp_path / "progress.pdf").read_bytes().startswith(b"%PDF")
