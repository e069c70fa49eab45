"""Fit TensorRT-LLM's achieved fractions on the calibration rows of tests/data/validation_inference.yaml.

    python benchmarks/calibrate_inference.py          # print the fit beside the constants in engines.py

The fitted values are the constants TRT_BANDWIDTH_FRACTION, TRT_COMPUTE_FRACTION_8BIT,
TRT_COMPUTE_FRACTION_16BIT, TRT_ALLREDUCE_LATENCY and TRT_LINK_FRACTION in
proposalkit/estimate/engines.py (tests/test_inference_validation.py holds them equal to this fit).

Rows: `role: calibrate`: every H100 row of TensorRT-LLM's performance overview (Llama-3.1-8B on
one H100, Llama-3.3-70B on two, Llama-3.1-405B on eight; ten input/output pairs each) and the one
16-bit compute-bound row, TensorRT-LLM v0.5's Llama-7B first-token latency on an A100. Held out:
every H200 row, the other first-token row, the fixed-batch A100 rows, the vLLM row (MLPerf rows are
not computable). Objective: the sum over the rows of squared log(estimate / published), minimised
by coordinate descent on a grid (0.01 for fractions, 1 µs for the all-reduce latency), all five
parameters at once (one fit for all rows, never one row at a time).
"""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from validation_inference import load, predict  # noqa: E402
from proposalkit.estimate import engines  # noqa: E402

PARAMETERS = {          # name: (low, high), the grid searched
    "bandwidth_fraction": (0.30, 1.00),
    "compute_fraction_8bit": (0.20, 1.00),
    "compute_fraction_16bit": (0.20, 1.00),
    "allreduce_latency": (0.0, 100e-6),
    "link_fraction": (0.10, 1.00),
}
STEPS = {"allreduce_latency": 1e-6}
STEP = 0.01


def calibration_rows() -> list[dict]:
    return [r for r in load() if r.get("role") == "calibrate"]


def loss(engine: engines.Engine, rows: list[dict]) -> float:
    return sum(math.log(predict(r, engine) / r["value"]) ** 2 for r in rows)


def fit(rows: list[dict] | None = None, start: engines.Engine = engines.TRT_LLM) -> engines.Engine:
    rows = calibration_rows() if rows is None else rows
    best = start
    best_loss = loss(best, rows)
    for _ in range(10):
        moved = False
        for name, (low, high) in PARAMETERS.items():
            step = STEPS.get(name, STEP)
            grid = [round(low + i * step, 8) for i in range(round((high - low) / step) + 1)]
            for value in grid:
                trial = dataclasses.replace(best, **{name: value})
                trial_loss = loss(trial, rows)
                if trial_loss < best_loss - 1e-12:
                    best, best_loss, moved = trial, trial_loss, True
        if not moved:
            break
    return best


def main() -> int:
    fitted = fit()
    for name in PARAMETERS:
        print(f"{name:24s} fitted {getattr(fitted, name):.6g}   in engines.py {getattr(engines.TRT_LLM, name):.6g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
