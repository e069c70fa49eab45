"""Issue 23, "one number, one value": a reviewer redoes every printed product by hand and gets the printed figure.

Through the CLI (workload YAML in, `report` and `plan --format json` out), on several workload files:

- the p10–p90 ranges: section B's "need p10–p90" and the supplement's Range line are the printed GPU-hours ÷ the
  printed factors of the speed's error (the range note: "p10–p90 = L–H × the estimate of tokens/s"), the low end
  rounded down and the high end up to 0.01 h; the plan JSON gives the same ends, and its tokens/s, runtime, memory
  and latency ranges are worked from the printed figures the same way; the total's ends are the workloads' summed;
- a pilot carried to other GPUs: "M tokens/s measured … × (the step-time model's A … ÷ its B … = R) = C" holds
  with R = A ÷ B to 3 decimals and C = M × R, as does the peak-rate form and two pilots' per-GPU × count.

The arithmetic here is the reader's, in decimal, written without the package's helpers.
"""

from __future__ import annotations

import json
import re
import shutil
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from proposalkit.cli import main

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data"
FILES = [ROOT / "workloads" / "code-models.yaml", ROOT / "workloads" / "inference" / "evaluation.yaml",
         DATA / "proposals" / "six-workloads.yaml", DATA / "proposals" / "no-resource.yaml", DATA / "cloud.yaml",
         DATA / "accounting" / "plan.yaml", DATA / "pilot" / "two-scales" / "workload.yaml"]
GiB = 2**30
CENT = Decimal("0.01")


def number(text: str) -> Decimal:
    return Decimal(text.replace(",", ""))


def down(x: Decimal, step: Decimal) -> Decimal:
    return x.quantize(step, ROUND_FLOOR)


def up(x: Decimal, step: Decimal) -> Decimal:
    return x.quantize(step, ROUND_CEILING)


def half_up(x: Decimal, step: Decimal) -> Decimal:
    return x.quantize(step, ROUND_HALF_UP)


def exact(x: float) -> Decimal:
    """A JSON figure as written."""
    return Decimal(repr(x))


def outputs(path: Path, tmp_path: Path, capsys) -> tuple[dict, str, str]:
    """(the plan JSON, section B's Markdown, the supplement's Markdown) of one workload file."""
    assert main(["plan", str(path), "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    out = tmp_path / "out"
    assert main(["report", str(path), "-o", str(out), "--format", "md"]) == 0
    capsys.readouterr()
    return plan, (out / "report.md").read_text(encoding="utf-8"), (out / "supplement.md").read_text(encoding="utf-8")


def factors(w: dict, words: str) -> tuple[Decimal, Decimal] | None:
    """The printed p10 and p90 factors of a workload's range note whose quantities start with `words`."""
    for text in w["assumptions"]:
        m = re.match(rf"range of {re.escape(words)}[^:]*: p10–p90 = ([\d.]+)–([\d.]+) × the estimate of", text)
        if m:
            return Decimal(m.group(1)), Decimal(m.group(2))
    return None


def section(supplement: str, name: str) -> str:
    """A workload's derivation section of the supplement (S.2.k)."""
    start = re.search(rf"^### S\.2\.\d+ {re.escape(name)}: ", supplement, re.M).start()
    end = supplement.find("\n### ", start + 1)
    return supplement[start:end if end > 0 else len(supplement)]


def need_column(report: str) -> dict[str, str]:
    """Section B table's "need p10–p90" cell of each workload."""
    lines = [line for line in report.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    col = header.index("need p10–p90")
    return {cells[0]: cells[col] for cells in ([c.strip() for c in line.strip("|").split("|")] for line in lines[2:])
            if not cells[0].startswith("**")}


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_printed_range_is_the_printed_estimate_times_the_printed_factors(path, tmp_path, capsys):
    plan, report, supplement = outputs(path, tmp_path, capsys)
    needs = need_column(report)
    checked = 0
    for w in plan["workloads"]:
        name, r, text = w["name"], w["ranges"], section(supplement, w["name"])
        speed = factors(w, "tokens/s")
        if speed is not None:
            low, high = speed
            # GPU-hours: the printed figure of the GPU-hours line, ÷ the printed factors, outward to 0.01 h.
            hours = number(re.search(r"- \*\*GPU-hours:\*\* .*? = ([\d,.]+); ×", text).group(1))
            p10, p90 = down(hours / high, CENT), up(hours / low, CENT)
            worked = f"{p10:,.2f}–{p90:,.2f}"
            assert needs[name] == worked, (name, needs[name], f"{hours} ÷ {high} and ÷ {low}")
            assert f"- **Range:** p10–p90 {hours:,.2f} ÷ {high} to ÷ {low} = {worked} GPU-h (" in text
            assert (exact(r["gpu_hours"]["p10"]), exact(r["gpu_hours"]["p50"]), exact(r["gpu_hours"]["p90"])) == \
                (p10, hours, p90)
            # Runtime: the printed hours per run, the same way.
            per_run = exact(w["runtime_hours"])
            assert (exact(r["runtime_hours"]["p10"]), exact(r["runtime_hours"]["p90"])) == \
                (down(per_run / high, CENT), up(per_run / low, CENT))
            # tokens/s: the rate as printed (whole tokens/s, half up) × the factors, outward to whole tokens/s.
            rate = half_up(exact(w["tokens_per_second"]), Decimal(1))
            if rate >= 100:
                assert (exact(r["tokens_per_second"]["p10"]), exact(r["tokens_per_second"]["p90"])) == \
                    (down(rate * low, Decimal(1)), up(rate * high, Decimal(1)))
            checked += 1
        memory = factors(w, "memory per GPU")
        if memory is not None:
            gib = number(re.search(r"- \*\*Memory per GPU:\*\* .*? = ([\d,.]+) GiB on the device", text).group(1))
            assert f"{w['memory']['device_bytes'] / GiB:.2f}" == f"{gib:.2f}"
            assert (f"{r['device_bytes']['p10'] / GiB:.2f}", f"{r['device_bytes']['p90'] / GiB:.2f}") == \
                (f"{down(gib * memory[0], CENT)}", f"{up(gib * memory[1], CENT)}")
            checked += 1
        ttft = factors(w, "time to first token")
        printed = re.search(r"- \*\*TTFT:\*\* .* = ([\d,.]+) ms$", text, re.M)
        if ttft is not None and printed:
            ms = number(printed.group(1))
            tenth = Decimal("0.1") if ms >= 10 else None
            if tenth is not None:
                assert (exact(r["ttft_ms"]["p10"]), exact(r["ttft_ms"]["p90"])) == \
                    (down(ms * ttft[0], tenth), up(ms * ttft[1], tenth))
                checked += 1
    assert checked >= 2
    # The whole request's ends are the workloads' as printed, added.
    if "ranges" in plan["totals"]:
        for p in ("p10", "p90"):
            total = sum((exact(w["ranges"]["gpu_hours"][p]) for w in plan["workloads"] if "ranges" in w), Decimal(0))
            assert exact(plan["totals"]["ranges"]["gpu_hours"][p]) == total


# ------------------------------------------------------------------ a pilot carried to other GPUs

TORCHTUNE = DATA / "pilot" / "torchtune_log_1732300000.txt"    # 3,000 tokens/s per GPU (test_pilot_workload)

STEP_TIME = re.compile(r"([\d,.]+) tokens/s measured on \d+× \S+ × \(the step-time model's ([\d,.]+) tokens/s on "
                       r"\d+× \S+ ÷ its ([\d,.]+) on \d+× \S+ = ([\d.]+)\) = ([\d,.]+) tokens/s")
PEAKS = re.compile(r"([\d,.]+) tokens/s measured on \d+× \S+ × \((\d+)/(\d+) GPUs\) × \([^=()]+ = ([\d.]+)\) = "
                   r"([\d,.]+) tokens/s")
PER_GPU = re.compile(r"on \d+ GPUs ([\d,.]+) per GPU × (\d+) = ([\d,.]+) tokens/s")


def carried(tmp_path: Path, extra: str, pilot: str = "pilot: {log: tt.txt, gpu: a100-80gb, gpus: 1}",
            method: str = "lora") -> Path:
    shutil.copy(TORCHTUNE, tmp_path / "tt.txt")
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n  - name: carried\n    description: a pilot carried to other GPUs\n"
                    f"    kind: finetune\n    method: {method}\n    model: llama-3.1-8b\n    tokens: 100M\n"
                    f"    seq_len: 2048\n{extra}    {pilot}\n", encoding="utf-8")
    return path


CARRIED = {
    # torchtune's 3,000 tokens/s on 1× a100-80gb, planned on 2× h100-80gb: by the step-time model's ratio
    "step-time, 2x h100": lambda tmp: carried(tmp, "    gpu: h100-80gb\n    gpus: 2\n"),
    # the line: 55,000 tokens/s on 1× a100-80gb carried to 1× h100-80gb (test_check_review)
    "step-time, given rate": lambda tmp: carried(tmp, "    gpu: h100-80gb\n    gpus: 1\n",
                                                 pilot="throughput: {tokens_per_second: 55000, gpu: a100-80gb, "
                                                       "gpus: 1}"),
    # a pilot on no whole model copy: the dense peaks and the counts
    "peaks, tensor parallel": lambda tmp: carried(tmp, "    gpu: h100-80gb\n    gpus: 2\n    tensor_parallel: 2\n"),
    # two pilots on 2 and 8 GPUs, planned on 4: per GPU × 4
    "two pilots": lambda tmp: DATA / "pilot" / "two-scales" / "workload.yaml",
}


@pytest.mark.parametrize("case", list(CARRIED))
def test_a_carried_pilot_is_the_product_of_its_printed_factors(case, tmp_path, capsys):
    plan, _, supplement = outputs(CARRIED[case](tmp_path), tmp_path, capsys)
    [w] = plan["workloads"]
    assert w["throughput_source"] == "pilot-extrapolated"
    derivation = w["derivation"]["throughput"]
    lines = 0
    for m in STEP_TIME.finditer(derivation):
        measured, to, was, ratio, result = (number(g) for g in m.groups())
        assert half_up(to / was, Decimal("0.001")) == ratio, m.group(0)
        assert half_up(measured * ratio, Decimal(1)) == result, m.group(0)
        assert exact(w["tokens_per_second"]) == measured * ratio
        lines += 1
    for m in PEAKS.finditer(derivation):
        measured, to_count, from_count, ratio, result = (number(g) for g in m.groups())
        assert half_up(measured * to_count / from_count * ratio, Decimal(1)) == result, m.group(0)
        lines += 1
    for m in PER_GPU.finditer(derivation):
        per_gpu, count, result = (number(g) for g in m.groups())
        assert per_gpu * count == result, m.group(0)
        lines += 1
    assert lines >= 1, derivation
    # The documents print the same line (Markdown escapes aside).
    assert derivation.split(" (")[0].replace("*", "\\*") in supplement.replace("\\_", "_")
