"""The supplement's charge line starts from the runtime line's hours and the buffer, and every product it
prints is the one a reader gets multiplying the figures before it and rounding up to a hundredth (issue 23,
"one number, one value"): a run of 9.23 h × (1 + 30%) × 2 GPUs × 2 runs is 47.996, printed 48.00 GPU-hours,
× 3 SUs = 144.00 SUs, where the request had been worked from unrounded hours (143.97 beside 2 × 12.00 × 3 × 2)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from conftest import printed

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "workloads" / "code-models.yaml"

LINE = re.compile(r"\*\* ncsa-delta-[a-z0-9]+: (\d+) GPUs? × ([\d,.]+) h × \(1 \+ (\d+)% buffer\) per run"
                  r"(?: × (\d+) runs)? = ([\d,.]+) GPU-hours × ([\d.]+) SUs? per GPU-hour = ([\d,.]+) SUs$")


def number(text: str) -> float:
    return float(text.replace(",", ""))


def test_each_charge_line_multiplies_the_printed_figures(tmp_path):
    cli = [sys.executable, "-m", "proposalkit"]
    plan = json.loads(subprocess.run(cli + ["plan", str(EXAMPLE), "--format", "json"], capture_output=True,
                                     text=True, check=True).stdout)
    subprocess.run(cli + ["report", str(EXAMPLE), "-o", str(tmp_path), "--format", "md"], check=True,
                   capture_output=True)
    text = (tmp_path / "supplement.md").read_text()
    lines = [line for line in text.splitlines() if line.startswith("- **SUs:**")]
    assert len(lines) == len(plan["workloads"]) == 4
    for w, line in zip(plan["workloads"], lines):
        m = LINE.search(line)
        assert m, line
        gpus, hours, pct, runs = int(m[1]), number(m[2]), int(m[3]), int(m[4] or 1)
        gpu_hours, rate, amount = number(m[5]), float(m[6]), number(m[7])
        # the runtime line's hours, the plan's buffer, GPUs and runs
        assert (gpus, hours, pct, runs) == (w["gpu"]["count"], w["runtime_hours"], round(100 * w["buffer"]),
                                            w["variants"])
        # each product, by hand from the printed factors
        assert gpu_hours == printed(gpus * hours * (1 + pct / 100) * runs) == w["gpu_hours_requested"]
        assert amount == printed(gpu_hours * rate) == w["resource"]["amount"]


def test_the_pilot_workload_reads_as_worked_by_hand(tmp_path):
    # lora-sweep, from its pilot log alone (workloads/pilots/lora-sweep/trainer_state.json, 1× h200):
    # num_input_tokens_seen 409,600 ÷ train_runtime 63.2895 s = 6,471.85 tokens/s, carried 6,472; 204.8M tokens
    # ÷ 6,472 ÷ 3,600 = 8.790001 h, carried rounded up to 8.80 h; × 1.3 × 10 runs = 114.40 GPU-hours; × 3 SUs per
    # GPU-hour (NCSA Delta H200) = 343.20 SUs.
    cli = [sys.executable, "-m", "proposalkit"]
    subprocess.run(cli + ["report", str(EXAMPLE), "-o", str(tmp_path), "--format", "md"], check=True,
                   capture_output=True)
    text = (tmp_path / "supplement.md").read_text()
    assert ("ncsa-delta-h200: 1 GPU × 8.80 h × (1 + 30% buffer) per run × 10 runs = 114.40 GPU-hours × "
            "3 SUs per GPU-hour = 343.20 SUs") in text
