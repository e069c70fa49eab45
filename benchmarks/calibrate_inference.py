"""Fit TensorRT-LLM's achieved fractions and its prefill launch cost on the calibration rows of
tests/data/validation_inference.yaml.

    python benchmarks/calibrate_inference.py          # print the fit beside the constants in engines.py

The fitted values are the constants TRT_BANDWIDTH_FRACTION, TRT_COMPUTE_FRACTION_8BIT,
TRT_COMPUTE_FRACTION_16BIT, TRT_ALLREDUCE_LATENCY, TRT_LINK_FRACTION and TRT_PREFILL_LAYER_SECONDS
in proposalkit/catalog/engines.py (tests/test_inference_validation.py holds them equal to this fit).

Rows: `role: calibrate`. The five fractions are fitted on every H100 row of TensorRT-LLM's performance
overview (Llama-3.1-8B on one H100, Llama-3.3-70B on two, Llama-3.1-405B on eight; ten input/output
pairs each) and the one 16-bit compute-bound row, TensorRT-LLM v0.5's Llama-7B first-token latency on
an A100. The per-layer launch cost of a prefill pass, which a pass of thousands of packed tokens hides
and a lone short prompt shows, is fitted on the rows marked `fits: launch`: the same v0.5 table's
first-token rows of GPT-J 6B and Falcon-180B (128 and 2,048 tokens on H100, L40S and A100 GPUs),
models outside the catalog planned from their config.json. Each group fits its own parameters with the
other group's held, alternately, until neither moves. Held out: every H200 row, the v0.5 table's other
Llama-2 first-token rows, the fixed-batch A100 rows, the vLLM rows (MLPerf rows are not computable).
vLLM's V0 engine's cost per decode step is fitted apart (fit_decode_step) on the rows marked `fits: decode-step`,
vLLM's CI latency of Llama 3.1 8B at batch 8 on A100, H100 and H200, the fractions held; the 70B rows of the same
builds are held out.
Objective: the sum over a group's rows of squared log(estimate / published), minimised by coordinate
descent on a grid (0.01 for fractions, 1 µs for the all-reduce latency and the launch cost), all of a
group's parameters at once (never one row at a time).
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
from proposalkit.catalog import engines  # noqa: E402

FRACTIONS = {           # name: (low, high), the grid searched
    "bandwidth_fraction": (0.30, 1.00),
    "compute_fraction_8bit": (0.20, 1.00),
    "compute_fraction_16bit": (0.20, 1.00),
    "allreduce_latency": (0.0, 100e-6),
    "link_fraction": (0.10, 1.00),
}
LAUNCH = {"prefill_layer_seconds": (0.0, 500e-6)}
PARAMETERS = {**FRACTIONS, **LAUNCH}
STEPS = {"allreduce_latency": 1e-6, "prefill_layer_seconds": 1e-6}
STEP = 0.01


def calibration_rows() -> list[dict]:
    return [r for r in load() if r.get("role") == "calibrate"]


def groups(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """(rows that fit the fractions, rows that fit the launch cost: `fits: launch`). Rows that fit vLLM's V0
    cost per decode step (`fits: decode-step`) are neither: fit_decode_step takes them."""
    return ([r for r in rows if r.get("fits") not in ("launch", "decode-step")],
            [r for r in rows if r.get("fits") == "launch"])


def fit_decode_step(rows: list[dict] | None = None) -> float:
    """vLLM's V0 cost per decode step (engines.VLLM_V0_DECODE_STEP_SECONDS), on the rows marked `fits: decode-step`
    (vLLM's CI latency of Llama 3.1 8B at batch 8), TensorRT-LLM's fractions held: the same objective, a 10 µs grid
    from 0 to 5 ms, then 1 µs about its best."""
    rows = [r for r in (calibration_rows() if rows is None else rows) if r.get("fits") == "decode-step"]

    def objective(seconds: float) -> float:
        e = dataclasses.replace(engines.VLLM, decode_step_seconds=seconds)
        return sum(math.log(predict(r, e) / r["value"]) ** 2 for r in rows)

    coarse = min((round(i * 10e-6, 8) for i in range(501)), key=objective)
    return min((round(coarse + i * 1e-6, 8) for i in range(-10, 11) if coarse + i * 1e-6 >= 0), key=objective)


def loss(engine: engines.Engine, rows: list[dict]) -> float:
    return sum(math.log(predict(r, engine) / r["value"]) ** 2 for r in rows)


def fit(rows: list[dict] | None = None, start: engines.Engine = engines.TRT_LLM) -> engines.Engine:
    """The fractions on their rows and the launch cost on theirs, alternately, until neither moves."""
    rows = calibration_rows() if rows is None else rows
    fractions_rows, launch_rows = groups(rows)
    best = start
    for _ in range(10):
        before = best
        best = fit_group(fractions_rows, FRACTIONS, best)
        if launch_rows:
            best = fit_group(launch_rows, LAUNCH, best)
        if best == before:
            break
    return best


def fit_group(rows: list[dict], parameters: dict, start: engines.Engine) -> engines.Engine:
    """Coordinate descent of `parameters` on `rows` from `start` (the other parameters held)."""
    best = start
    best_loss = loss(best, rows)
    for _ in range(10):
        moved = False
        for name, (low, high) in parameters.items():
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
    print(f"{'vLLM V0 decode step':24s} fitted {fit_decode_step():.6g}   in engines.py "
          f"{engines.VLLM_V0_DECODE_STEP_SECONDS:.6g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
