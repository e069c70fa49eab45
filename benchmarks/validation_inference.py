"""Published measured inference throughput beside proposalkit's estimate: the inference section
of docs/validation.md.

    python benchmarks/validation_inference.py     # print the Markdown section

Reads tests/data/validation_inference.yaml (every row of the project's reference/inference.json,
with the inputs the estimate takes) and computes each row through proposalkit.estimate.inference:
a trtllm-bench offline row is a batch job at steady state (enough requests that the batch is
what the KV cache and the engine allow), a fixed-batch row a static batch of that size, a
first-token row the prefill of one prompt. Rows marked `calibrate` fit the engine fractions
(benchmarks/calibrate_inference.py); the others are held out. Nothing is tuned per row.
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from proposalkit.catalog import gpus as catalog_gpus  # noqa: E402
from proposalkit.catalog import models as catalog_models  # noqa: E402
from proposalkit.estimate import engines  # noqa: E402
from proposalkit.estimate.inference import batch_job, prefill, replica  # noqa: E402

DATA = ROOT / "tests" / "data" / "validation_inference.yaml"

# Requests of an offline row that does not say how many: enough that the ramp-up and the tail are
# negligible (trtllm-bench rows give theirs: perf-overview.md's $num_requests table).
STEADY_REQUESTS = 1_000_000

# Issue 13's targets.
MEDIAN_TARGET = 0.15
ROW_TARGET = 0.35


def load(path: Path = DATA) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)["rows"]


@dataclass(frozen=True)
class Result:
    row: dict
    estimate: float | None          # in the row's metric; None: not computable (reason in `why`)
    why: str = ""

    @property
    def id(self) -> str:
        return self.row["id"]

    @property
    def error(self) -> float | None:
        """estimate / published − 1 (positive: the estimate is higher)."""
        return None if self.estimate is None else self.estimate / self.row["value"] - 1

    @property
    def role(self) -> str:
        return self.row.get("role", "validate")


def predict(row: dict, engine: engines.Engine | None = None) -> float:
    """The estimate of one row, in its metric (engine: override the row's, for calibration)."""
    model = catalog_models()[row["model"]]
    gpu = catalog_gpus()[row["gpu"]]
    tp = row["tensor_parallel"]
    rep = replica(model, gpu, tensor_parallel=tp, precision=row["precision"],
                  engine=engine or row["engine"], kv_precision=row.get("kv_precision"))
    if row["metric"] == "ttft_ms":
        return prefill(rep, row["input_tokens"], batch=row.get("batch", 1)).seconds * 1e3
    replicas = row["gpus"] // tp
    fixed = row.get("batch")
    requests = fixed * replicas if fixed else row.get("requests", STEADY_REQUESTS)
    job = batch_job(rep, requests, row["input_tokens"], row["output_tokens"], replicas=replicas,
                    batch=fixed)
    if row["metric"] == "output_tokens_per_second_per_gpu":
        return job.output_tokens_per_second / row["gpus"]
    return job.output_tokens_per_second


def results(rows: list[dict] | None = None, engine: engines.Engine | None = None) -> list[Result]:
    out = []
    for row in rows if rows is not None else load():
        if row.get("input_tokens") is None or row.get("tensor_parallel") is None:
            out.append(Result(row, None, row.get("why", "inputs not stated")))
            continue
        out.append(Result(row, predict(row, engine)))
    return out


def median_abs(rs: list[Result]) -> float:
    return statistics.median(abs(r.error) for r in rs if r.error is not None)


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def render(rs: list[Result] | None = None) -> str:
    """The Markdown section: the calibration table, then planned vs published for every row."""
    rs = results() if rs is None else rs
    done = [r for r in rs if r.error is not None]
    held = [r for r in done if r.role == "validate"]
    fit = [r for r in done if r.role == "calibrate"]
    e = engines.TRT_LLM
    lines = [
        "## Inference throughput and latency",
        "",
        "proposalkit's inference model (proposalkit/estimate/inference.py) against every published "
        "measurement in the project's reference data (reference/inference.json; rows in "
        "tests/data/validation_inference.yaml). Offline rows are batch jobs at steady state; "
        "fixed-batch rows a static batch; first-token rows the prefill of one prompt. All count "
        "output tokens (trtllm-bench and MLPerf do).",
        "",
        "### Calibration",
        "",
        "| engine | bandwidth fraction | compute fraction (fp8) | compute fraction (16-bit) | all-reduce latency | link fraction | fitted on |",
        "|---|---|---|---|---|---|---|",
        f"| {e.name} | {e.bandwidth_fraction:.2f} | {e.compute_fraction_8bit:.2f} | {e.compute_fraction_16bit:.2f} "
        f"| {e.allreduce_latency * 1e6:.0f} µs | {e.link_fraction:.2f} | {len(fit)} calibration rows (below) |",
        "",
        "vLLM, SGLang and Hugging Face transformers take TensorRT-LLM's fractions (no measurement of "
        "theirs with stated settings is calibrated yet); their memory rules and batch limits are their own.",
        "",
        f"Median |error|: {median_abs(done):.1%} over all {len(done)} rows computed, "
        f"{median_abs(held):.1%} over the {len(held)} held-out rows, "
        f"{median_abs(fit):.1%} over the {len(fit)} calibration rows "
        f"(target ≤ {MEDIAN_TARGET:.0%}); largest |error| {max(abs(r.error) for r in done):.1%} "
        f"(target ≤ {ROW_TARGET:.0%}).",
        "",
        "| row | model | GPUs | TP | precision | input / output | metric | published | planned | error | role |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rs:
        row = r.row
        planned = _fmt(r.estimate) if r.estimate is not None else f"— ({r.why})"
        error = f"{r.error:+.1%}" if r.error is not None else "—"
        lengths = f"{row.get('input_tokens') or '?'} / {row.get('output_tokens') or '?'}"
        lines.append(
            f"| {r.id} | {row['model']} | {row['gpus']} × {row['gpu']} | {row.get('tensor_parallel') or '?'} "
            f"| {row['precision']} | {lengths} | {row['metric']} | {_fmt(row['value'])} | {planned} | {error} "
            f"| {r.role} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render())
