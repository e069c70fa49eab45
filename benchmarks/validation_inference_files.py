"""Write one workload file per computable row of tests/data/validation_inference.yaml into
benchmarks/validation/inference/ (python benchmarks/validation_inference_files.py).

Each file is what a researcher would write for the published run: the model, the engine
(`framework`), the precision (fp8 weights bring an fp8 KV cache, as the FP8 checkpoints of
TensorRT-LLM's overview do), the GPU and tensor parallelism pinned, and the requests with their
input and output tokens. benchmarks/validation_inference.py plans each with `proposalkit plan
FILE --format json` and reads the plan's `inference` block.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from validation_inference import FILES, ROOT, load, workload_file  # noqa: E402


def workload(row: dict) -> dict:
    """The workload of one row: a batch job of `requests` prompts (first-token rows: one prompt of one
    token's output; the vLLM decode row: one request, whose TPOT is the batch-1 decode step)."""
    requests = row.get("requests") or (row["batch"] * (row["gpus"] // row["tensor_parallel"]) if row.get("batch")
                                       else 1)
    model = row["model"]
    if row.get("config"):       # a model outside the catalog: its config.json (and the context the run allowed)
        model = {"config": os.path.relpath(ROOT / row["config"], FILES)}
        if row.get("max_context"):
            model["max_context"] = row["max_context"]
    w = {"name": row["id"].lower().replace("/", "-"), "kind": "inference", "model": model,
         "framework": row["engine"], "precision": row["precision"],
         "requests": requests, "input_tokens": row["input_tokens"], "output_tokens": row["output_tokens"],
         "gpu": row["gpu"], "gpus": row["gpus"], "tensor_parallel": row["tensor_parallel"]}
    for name in ("input", "output"):     # lengths that vary: {mean, p50, p99} in place of the mean
        if row.get(f"{name}_lengths"):
            w[f"{name}_tokens"] = dict(row[f"{name}_lengths"])
    if row.get("engine_version"):
        w["engine_version"] = row["engine_version"]
    if row.get("batch") and row["metric"] != "decode_tokens_per_second":
        w["batch"] = row["batch"]
    return w


def header(row: dict) -> str:
    lines = [f"{row['id']}: {row['published_model']}, {row['engine']}, {row['gpus']} x {row['gpu']}, "
             f"TP {row['tensor_parallel']}, {row['precision']}, {row['input_tokens']} in / {row['output_tokens']} out",
             f"Published: {row['value']} {row['published_metric']} ({row['scenario']})",
             f"Source: {row['source']}"]
    return "".join(f"# {line}\n" for line in lines)


def main() -> int:
    FILES.mkdir(parents=True, exist_ok=True)
    for row in load():
        if row.get("input_tokens") is None or row.get("tensor_parallel") is None:
            continue
        text = header(row) + yaml.safe_dump({"workloads": [workload(row)]}, sort_keys=False, width=110)
        workload_file(row["id"]).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
