"""The report cites only what a reviewer can read (issue 23, item 4): no file of this project (the reviewer
has the report, not the repository: docs/validation.md, a benchmark, a catalog file) and no "common rule of
thumb" in place of its source; each of the supplement's references (S.6) ends with one full stop. Checked on the examples, the
golden workload file and the cloud one."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from proposalkit.input.loading import load_files
from proposalkit.planning.planner import plan_files
from proposalkit.render import context as ctx
from proposalkit.render import report

ROOT = Path(__file__).resolve().parent.parent
FILES = [sorted(str(p) for p in (ROOT / "workloads").glob("*.yaml")),
         [str(ROOT / "tests" / "golden" / "workloads.yaml")],
         [str(ROOT / "tests" / "data" / "cloud.yaml")]]


def _project_paths() -> list[str]:
    """This project's documentation, benchmark and catalog files: paths a reviewer cannot open."""
    out = subprocess.run(["git", "ls-files", "docs", "benchmarks", "proposalkit/catalog"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.split()
    files = [p for p in out if p.endswith((".md", ".py", ".yaml", ".json", ".csv"))]
    # and their folders below the top level (benchmarks/validation/measured/): a top-level folder name alone
    # (docs/, benchmarks/) is also a part of other projects' paths a report cites rightly
    folders = {str(Path(p).parents[i]) + "/" for p in files for i in range(len(Path(p).parents) - 2)}
    return files + sorted(folders)


def internal_citations(text: str, paths: list[str]) -> list[str]:
    text = text.replace("\\_", "_")      # Markdown escapes the underscores of a file name (calibrate\_step...)
    found = [p for p in paths if p in text]
    return found + (["common rule of thumb"] if "rule of thumb" in text.lower() and "common rule" in text.lower()
                    else [])


def test_the_check_finds_an_internal_file():
    # the test of the test: the ranges' notes read '(measured ÷ planned; docs/validation.md, Ranges)' before
    assert internal_citations("p10–p90 (measured ÷ planned; docs/validation.md, Ranges)",
                              ["docs/validation.md"]) == ["docs/validation.md"]
    assert internal_citations("memory: a common rule of thumb (16 bytes per parameter)", []) == [
        "common rule of thumb"]
    assert internal_citations("NVIDIA/TensorRT-LLM, docs/source/performance/perf-overview.md", ["docs/cli.md"]) == []
    # an escaped file name and a folder of the project are found too
    assert internal_citations("their median (benchmarks/calibrate\\_step\\_time.py)",
                              ["benchmarks/calibrate_step_time.py"]) == ["benchmarks/calibrate_step_time.py"]
    assert "benchmarks/validation/measured/" in _project_paths()


@pytest.mark.parametrize("files", FILES, ids=["examples", "golden", "cloud"])
def test_the_report_cites_no_file_of_this_project(files):
    paths = _project_paths()
    assert "docs/validation.md" in paths
    context = ctx.report_context(plan_files(load_files(files)))
    for md in (report.render_markdown(context), report.render_supplement_markdown(context)):
        assert internal_citations(md, paths) == []


# Two full stops that are not part of an ellipsis: a cloud resource's entry read 'was not read.. Size:' when
# its price's citation (ending with a full stop, catalog/sources.text) got another.
DOUBLED_STOP = re.compile(r"(?<!\.)\.\.(?!\.)")


@pytest.mark.parametrize("files", FILES, ids=["examples", "golden", "cloud"])
def test_each_reference_ends_with_one_full_stop(files):
    md = report.render_supplement_markdown(ctx.report_context(plan_files(load_files(files))))
    references = md[md.index("## S.6 References"):]
    assert DOUBLED_STOP.findall(references) == []
    assert DOUBLED_STOP.findall("was not read.. Size: ...") == [".."]
