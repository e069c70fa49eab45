"""Every memory breakdown the documents and `plan` print adds up to its printed total (issue 23, one number, one
value): the supplement gave lora-sweep '15.04 weights + 0.08 gradients + 0.16 optimizer + 2.15 activations + 2.74
overhead = 20.16 GiB', whose printed parts add to 20.17. Each component is carried as printed, rounded up to 0.01
GiB, and every total is the sum of its printed parts (estimate/breakdown.as_printed), so a reviewer who adds them
by hand gets the printed figure, and the fit is judged on that figure.

Through the command line: workload files in, `report`'s section B and supplement (md, html) and `plan`'s table and
JSON out; every breakdown each prints is read back from the text and added in decimal."""

from __future__ import annotations

import contextlib
import html
import io
import json
import re
from decimal import ROUND_CEILING, Decimal
from pathlib import Path

import pytest

from proposalkit.cli import main

ROOT = Path(__file__).resolve().parent.parent
FILES = [ROOT / "workloads/code-models.yaml", ROOT / "workloads/inference/evaluation.yaml",
         ROOT / "tests/golden/workloads.yaml", ROOT / "tests/data/cloud.yaml",
         ROOT / "tests/data/proposals/six-workloads.yaml", ROOT / "tests/data/proposals/no-resource.yaml",
         ROOT / "tests/data/memory-breakdowns.yaml"]
CENT = Decimal("0.01")
GIB = 2**30
NUMBER = r"[\d,]+\.\d\d"


def gib(text: str) -> Decimal:
    return Decimal(text.replace(",", ""))


def printed(n_bytes: int) -> Decimal:
    """A byte count of the plan JSON as the documents print it (fmt_gib: to the nearest 0.01 GiB)."""
    return Decimal(f"{n_bytes / GIB:.2f}")


@pytest.fixture(scope="module", params=FILES, ids=[p.stem for p in FILES])
def out(request, tmp_path_factory):
    """(section B, supplement, section B html, supplement html, plan's table, plan's JSON) of one workload file."""
    folder = tmp_path_factory.mktemp(request.param.stem)
    assert main(["report", str(request.param), "-o", str(folder), "--format", "md,html"]) == 0
    docs = [(folder / name).read_text(encoding="utf-8")
            for name in ("report.md", "supplement.md", "report.html", "supplement.html")]
    text = folder / "plan.txt"
    data = folder / "plan.json"
    for path, extra in ((text, []), (data, ["--format", "json"])):    # capsys is per test: stdout caught here
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(io.StringIO()):
            assert main(["plan", str(request.param), *extra]) == 0
        path.write_text(buffer.getvalue(), encoding="utf-8")
    return (*docs, text.read_text(encoding="utf-8"), json.loads(data.read_text(encoding="utf-8")))


def sections(supplement: str) -> dict[str, str]:
    """The supplement's derivation of each workload (S.2.n), by workload name."""
    parts = re.split(r"^### S\.2\.\d+ ([\w-]+): ", supplement.split("## S.3")[0], flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def memory_line(section: str) -> tuple[dict[str, Decimal], Decimal, Decimal]:
    """(components, total, usable) of a workload's 'Memory per GPU' bullet."""
    m = re.search(rf"\*\*Memory per GPU:\*\* (.+?) = ({NUMBER}) GiB on the device \(what must fit\) of ({NUMBER}) "
                  r"GiB usable", section)
    assert m, section[:300]
    parts = {}
    for term in m.group(1).split(" + "):
        figure, name = re.fullmatch(rf"({NUMBER}) (.+)", term).groups()
        parts[name] = gib(figure)
    return parts, gib(m.group(2)), gib(m.group(3))


def test_the_memory_line_adds_to_its_total_and_fits_as_printed(out):
    _, supplement, *_ = out
    for name, section in sections(supplement).items():
        parts, total, usable = memory_line(section)
        assert sum(parts.values()) == total, (name, parts, total)
        assert total <= usable, (name, total, usable)


def test_the_memory_table_adds_to_its_total_and_repeats_the_line(out):
    _, supplement, *_ = out
    for name, section in sections(supplement).items():
        parts, total, usable = memory_line(section)
        header = re.search(r"^\| memory per GPU \(estimate\) \| (.+) \|$", section, re.M).group(1).split(" | ")
        row = re.search(r"^\| GiB \| (.+) \|$", section, re.M).group(1).split(" | ")
        cells = dict(zip(header, row))
        components = {k: gib(v) for k, v in cells.items() if not k.startswith(("total", "usable"))}
        table_total = gib(cells["total (device)"].strip("*"))
        assert sum(components.values()) == table_total == total, (name, cells)
        assert list(components.values()) == list(parts.values()), (name, components, parts)


def test_which_memory_is_the_sum_of_the_printed_components(out):
    """allocated = the components but the overhead; reserved − allocated and device − reserved are the overhead's
    two parts (the allocator's reserve, the CUDA context printed beside it); device = the total."""
    _, supplement, *_ = out
    contexts = {gib(x) for x in re.findall(rf"CUDA context (?:and library workspaces )?({NUMBER}) GiB", supplement)}
    for name, section in sections(supplement).items():
        parts, total, _ = memory_line(section)
        m = re.search(rf"allocated ({NUMBER}) GiB .*? reserved ({NUMBER}) GiB .*? device ({NUMBER}) GiB", section)
        allocated, reserved, device = (gib(g) for g in m.groups())
        assert allocated == sum(v for k, v in parts.items() if k != "overhead"), (name, allocated, parts)
        assert device == total and device - reserved in contexts, (name, device, reserved, contexts)
        assert reserved - allocated + device - reserved == parts.get("overhead", Decimal(0)), (name, m.group(0))
        ample = re.search(rf"the reserved pool reaches ({NUMBER}) GiB", section)
        if ample:      # CPU offload's pool: allocated × (1 + 38%), the share rounded up as the reserve is
            share = re.search(r"the pool grows to (\d+)% above the allocated bytes", supplement).group(1)
            grown = (allocated * Decimal(share) / 100).quantize(CENT, ROUND_CEILING)
            assert gib(ample.group(1)) == allocated + grown, (name, ample.group(0))


def test_the_phase_counted_is_the_allocated_figure(out):
    _, supplement, *_ = out
    for name, section in sections(supplement).items():
        m = re.search(rf"- peak (at the loss|later in the backward): .*?\(({NUMBER}) GiB allocated with the loss\); "
                      rf"all ({NUMBER}) GiB of gradients .*?activations \(({NUMBER}) GiB\)", section)
        if m:
            allocated = gib(re.search(rf"allocated ({NUMBER}) GiB \(torch", section).group(1))
            counted = m.group(2) if m.group(1) == "at the loss" else m.group(4)
            assert gib(counted) == allocated, (name, m.group(0))


def test_an_engines_reservation_adds_up(out):
    """'0.9 × the GPU's 44.34 GiB = 39.91 GiB for weights, workspace and KV pool, the CUDA context beside it =
    40.91 GiB per GPU: weights 14.96 GiB + workspace 0.79 GiB + CUDA context 1.00 GiB + KV pool 24.16 GiB'."""
    _, supplement, *_ = out
    for name, section in sections(supplement).items():
        m = re.search(rf"= ({NUMBER}) GiB per GPU(?: of the {NUMBER} GiB)?: weights ({NUMBER}) GiB \+ workspace "
                      rf"({NUMBER}) GiB \+ CUDA context ({NUMBER}) GiB \+ KV pool ({NUMBER}) GiB", section)
        if not m:
            continue
        total, weights, workspace, context, pool = (gib(g) for g in m.groups())
        assert weights + workspace + context + pool == total == memory_line(section)[1], (name, m.group(0))
        parts = memory_line(section)[0]
        assert (parts["weights"], parts["activations"], parts["KV cache"]) == (weights, workspace, pool), name
        budget = re.search(rf"= ({NUMBER}) GiB for (weights, workspace and KV pool|weights and KV pool)", section)
        if budget:
            inside = weights + pool + (workspace if "workspace" in budget.group(2) else 0)
            assert gib(budget.group(1)) == inside, (name, budget.group(0))


def test_every_configuration_said_to_fit_fits_as_printed(out):
    """The GPUs considered (where the planner chose): the chosen row is the memory line's total, and no row that
    fits (or is chosen) prints more memory per GPU than it has usable."""
    _, supplement, *_ = out
    for name, section in sections(supplement).items():
        _, total, _ = memory_line(section)
        rows = re.findall(rf"^\| (\d+× [\w.-]+) \| ({NUMBER}) \| ({NUMBER}) \| .*\| (.+) \|$", section, re.M)
        for gpus, per_gpu, usable, outcome in rows:
            if outcome == "**chosen**":
                assert gib(per_gpu) == total, (name, gpus, per_gpu, total)
            if outcome == "**chosen**" or outcome.startswith("fits"):
                assert gib(per_gpu) <= gib(usable), (name, gpus, per_gpu, usable, outcome)


def test_the_pilots_are_compared_with_the_printed_statistic(out):
    section_b, supplement, *_ = out
    derivations = sections(supplement)
    found = re.findall(rf"([\w-]+): the pilot's peak memory, {NUMBER} GiB (\w+) per GPU .*? the estimate of "
                       rf"({NUMBER}) GiB \2", section_b)
    found += re.findall(rf"^\| ([\w-]+) \| .*\| {NUMBER} vs ({NUMBER}) GiB (\w+) \(", supplement, re.M)
    for name, *rest in found:
        stat, figure = (rest[0], rest[1]) if rest[0].isalpha() else (rest[1], rest[0])
        which = re.search(rf"{stat} ({NUMBER}) GiB \(", derivations[name]).group(1)
        assert gib(figure) == gib(which), (name, stat, figure, which)


def test_plan_table_and_json_carry_the_printed_figures(out):
    """`plan`'s mem/GPU is the supplement's total; the JSON's components, printed, add to its per_gpu_bytes
    printed, and allocated_bytes to the components but the overhead."""
    _, supplement, _, _, table, data = out
    derivations = sections(supplement)
    for w in data["workloads"]:
        m = w["memory"]
        components = {k: printed(v) for k, v in m["components"].items()}
        assert sum(m["components"].values()) == m["per_gpu_bytes"] == m["device_bytes"], w["name"]
        assert sum(components.values()) == printed(m["per_gpu_bytes"]), (w["name"], components)
        assert sum(v for k, v in components.items() if k != "overhead") == printed(m["allocated_bytes"]), w["name"]
        row = next(line for line in table.splitlines() if line.startswith(w["name"] + " "))
        assert f" {printed(m['per_gpu_bytes']):,} GiB " in row, (row, printed(m["per_gpu_bytes"]))
        assert memory_line(derivations[w["name"]])[1] == printed(m["per_gpu_bytes"]), w["name"]


def test_the_html_documents_print_the_same_breakdowns(out):
    _, supplement, _, supplement_html, *_ = out
    text = html.unescape(re.sub(r"<[^>]+>", "", supplement_html))
    for name, section in sections(supplement).items():
        parts, total, _ = memory_line(section)
        line = " + ".join(f"{v:,} {k}" for k, v in parts.items()) + f" = {total:,} GiB on the device"
        assert line in text, (name, line)
