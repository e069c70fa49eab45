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

import contextlib
import dataclasses
import io
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from proposalkit import cli  # noqa: E402
from proposalkit.catalog import gpus as catalog_gpus  # noqa: E402
from proposalkit.catalog import models as catalog_models  # noqa: E402
from proposalkit.catalog import engines  # noqa: E402
from proposalkit.input.configs.read import model_from_config  # noqa: E402
from proposalkit.estimate.batch import batch_job  # noqa: E402
from proposalkit.estimate.lengths import Spread  # noqa: E402
from proposalkit.input.lengths import LengthStats  # noqa: E402
from proposalkit.estimate.inference import decode_step, mean_context, prefill, replica  # noqa: E402
from validation_speed import TAIL  # noqa: E402  (issue 22: planned faster than measured by more than this is a tail)

DATA = ROOT / "tests" / "data" / "validation_inference.yaml"
FILES = ROOT / "benchmarks" / "validation" / "inference"     # one workload file per row


def workload_file(row_id: str) -> Path:
    return FILES / f"{row_id.replace('/', '_')}.yaml"

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
    def faster(self) -> float | None:
        """How much faster than measured the plan is: planned ÷ measured for a rate, measured ÷ planned for a
        time to first token (above TAIL: a tail of issue 22, named out of scope in its `diagnosis`)."""
        if self.estimate is None:
            return None
        return self.row["value"] / self.estimate if self.row["metric"] == "ttft_ms" else self.estimate / self.row["value"]

    @property
    def role(self) -> str:
        return self.row.get("role", "validate")


def model_of(row: dict):
    """The row's ModelSpec: from the catalog, or from the config.json the row names (`config`, relative to
    the repository) for a model outside it, read as `model: {config: ...}` reads it."""
    if row.get("config"):
        spec, problems = model_from_config(json.loads((ROOT / row["config"]).read_text()), row["model"])
        if spec is None:
            raise ValueError(f"{row['id']}: {row['config']}: {problems}")
        return dataclasses.replace(spec, max_context=row["max_context"]) if row.get("max_context") else spec
    return catalog_models()[row["model"]]


def spread_of(row: dict, model) -> Spread | None:
    """The row's lengths that vary (input_lengths / output_lengths: {mean, p50, p99}) as the planner reads them
    (planning/inference.spread_of); None where both are single numbers."""
    if not (row.get("input_lengths") or row.get("output_lengths")):
        return None

    def points(name: str) -> tuple[float, ...]:
        stats = row.get(f"{name}_lengths")
        return LengthStats(**stats).points(model.max_context) if stats else (float(row[f"{name}_tokens"]),)
    return Spread(points("input"), points("output"))


def predict(row: dict, engine: engines.Engine | None = None) -> float:
    """The estimate of one row, in its metric (engine: override the row's, for calibration)."""
    model = model_of(row)
    gpu = catalog_gpus()[row["gpu"]]
    tp = row["tensor_parallel"]
    # The row's engine as its release runs (engine_version: vLLM's V0 engine's cost per step, TensorRT-LLM v0.5's
    # fp16 context FMHA). A TensorRT-LLM override (calibration's trial fractions) runs as the row's release too; a
    # vLLM override carries the V0 cost per step being fitted itself (calibrate_inference.fit_decode_step).
    if engine is None:
        engine = engines.engine_at_version(engines.engine(row["engine"]), row.get("engine_version"))[0]
    elif engine.id == "trt-llm":
        engine = engines.engine_at_version(engine, row.get("engine_version"))[0]
    rep = replica(model, gpu, tensor_parallel=tp, precision=row["precision"], engine=engine,
                  kv_precision=row.get("kv_precision"))
    if row["metric"] == "ttft_ms":
        return prefill(rep, row["input_tokens"], batch=row.get("batch", 1)).seconds * 1e3
    if row["metric"] == "decode_tokens_per_second":     # output tokens/s of `batch` sequences mid-generation
        context = mean_context(row["input_tokens"], row["output_tokens"])
        return decode_step(rep, row.get("batch", 1), context).tokens_per_second
    replicas = row["gpus"] // tp
    fixed = row.get("batch")
    requests = fixed * replicas if fixed else row.get("requests", STEADY_REQUESTS)
    job = batch_job(rep, requests, row["input_tokens"], row["output_tokens"], replicas=replicas,
                    batch=fixed, spread=spread_of(row, model))
    if row["metric"] == "output_tokens_per_second_per_gpu":
        return job.output_tokens_per_second / row["gpus"]
    return job.output_tokens_per_second


def through_cli() -> bool:
    """Whether `proposalkit plan` takes the engines in `framework` yet (issue 13's input fields): then
    every row is planned from its workload file, the door users use; until then through the API."""
    from proposalkit.input.frameworks import INFERENCE_ENGINES
    return set(engines.ENGINES) <= set(INFERENCE_ENGINES)


def plan_json(path: Path) -> dict:
    """`proposalkit plan PATH --format json`, in-process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["plan", str(path), "--format", "json"])
    if code != 0:
        raise RuntimeError(f"{path.name}: proposalkit plan exited {code}: {err.getvalue().strip()}")
    return json.loads(out.getvalue())


def planned(row: dict) -> float:
    """The row's metric from the plan JSON of its workload file (the `inference` block)."""
    block = plan_json(workload_file(row["id"]))["workloads"][0]["inference"]
    if row["metric"] == "ttft_ms":
        return block["ttft_ms"]
    if row["metric"] == "decode_tokens_per_second":
        return 1e3 / block["tpot_ms"]
    if row["metric"] == "output_tokens_per_second_per_gpu":
        return block["output_tokens_per_second"] / row["gpus"]
    return block["output_tokens_per_second"]


def results(rows: list[dict] | None = None, engine: engines.Engine | None = None) -> list[Result]:
    """Every row planned: from its workload file through the CLI when the CLI takes the engines (and no
    engine override is asked for, as calibration does), else through the API; the same physics."""
    out = []
    cli_door = engine is None and through_cli()
    for row in rows if rows is not None else load():
        if row.get("input_tokens") is None or row.get("tensor_parallel") is None:
            out.append(Result(row, None, row.get("why", "inputs not stated")))
            continue
        if cli_door:
            out.append(Result(row, planned(row)))
            continue
        out.append(Result(row, predict(row, engine if row["engine"] == "trt-llm" else None)))
    return out


def median_abs(rs: list[Result]) -> float:
    return statistics.median(abs(r.error) for r in rs if r.error is not None)


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def tails(rs: list[Result]) -> list[Result]:
    """The rows planned faster than measured by more than TAIL (issue 22's done-when): each names itself out of
    scope in its `diagnosis`, with what was checked."""
    return [r for r in rs if r.faster is not None and r.faster > TAIL]


def _diagnoses(beyond: list[Result], tail: list[Result]) -> list[str]:
    """What was checked for the rows beyond ±35% and the tails (their `diagnosis` in the data file), one item
    per text."""
    texts: dict[str, list[str]] = {}
    for r in beyond + [r for r in tail if r not in beyond]:
        texts.setdefault(r.row.get("diagnosis") or "no diagnosis yet", []).append(r.id)
    if not texts:
        return []
    items = [f"- **{', '.join(ids)}**: {text}" for text, ids in texts.items()]
    return [f"Rows beyond ±{ROW_TARGET:.0%}, and rows planned more than {TAIL - 1:.0%} faster than measured, "
            "and what was checked:", "", *items, ""]


def render(rs: list[Result] | None = None) -> str:
    """The Markdown section: the calibration table, then planned vs published for every row."""
    rs = results() if rs is None else rs
    done = [r for r in rs if r.error is not None]
    held = [r for r in done if r.role == "validate"]
    fit = [r for r in done if r.role == "calibrate"]
    beyond = [r for r in done if abs(r.error) > ROW_TARGET]
    e = engines.TRT_LLM
    lines = [
        "## Inference throughput and latency",
        "",
        "proposalkit's inference model (`proposalkit/estimate/inference.py`) against published measurements: "
        "every row of the project's reference data (`reference/inference.json`) and the rows marked *added* in "
        "`tests/data/validation_inference.yaml` (the same TensorRT-LLM table's Llama-3.3-70B and Llama-3.1-405B "
        "rows left out of the reference data, TensorRT-LLM v0.5's other Llama-2 first-token rows and its GPT-J 6B "
        "and Falcon-180B rows, one vLLM measurement on an A100, and AMD's vLLM throughput table of Llama 3.1 70B and 405B "
        "on eight MI300X GPUs, vLLM's CI latency tests at batch 8, and SGLang's offline throughput of Llama 3.3 70B on "
        "four H200s over lengths that vary, from datacrunch-research/h200-benchmarks). Rows whose lengths vary give "
        "them as `{mean, p50, p99}` (the random datasets: uniform up to the flag, so median = mean and p99 = 0.99 of "
        "the top). "
        + ("Each row is an ordinary workload file (`benchmarks/validation/inference/`) planned with `proposalkit "
           "plan FILE --format json`; the figure is read from the plan's `inference` block. " if through_cli() else
           "Each row is computed through `proposalkit.estimate.inference`. ")
        + "Offline rows are batch jobs with the request count the benchmark used; fixed-batch rows a batch of that "
        "size; first-token rows one prompt (its TTFT); the vLLM decode row one request (1 / its TPOT). All count output "
        "tokens (trtllm-bench, MLPerf and vLLM's benchmark do).",
        "",
        "### Calibration",
        "",
        "| engine | bandwidth fraction | compute fraction (fp8) | compute fraction (16-bit) | all-reduce latency "
        "| link fraction | launches per layer of a prefill pass | fitted on |",
        "|---|---|---|---|---|---|---|---|",
        f"| {e.name} | {e.bandwidth_fraction:.2f} | {e.compute_fraction_8bit:.2f} | {e.compute_fraction_16bit:.2f} "
        f"| {e.allreduce_latency * 1e6:.0f} µs | {e.link_fraction:.2f} | {e.prefill_layer_seconds * 1e6:.0f} µs "
        f"| the {len(fit)} rows marked calibrate |",
        "",
        "One fit (`benchmarks/calibrate_inference.py`: least squares on log(planned / published), coordinate "
        "descent on a 0.01 grid, 1 µs for the latencies). The five fractions are fitted on every H100 row of "
        "TensorRT-LLM's performance overview (Llama-3.1-8B on one GPU, Llama-3.3-70B on two, Llama-3.1-405B on "
        "eight; ten input/output pairs each) and TensorRT-LLM v0.5's 16-bit first-token row of Llama-2 7B on an "
        "A100, the reference data's one 16-bit compute-bound row. The launches per layer of a prefill pass are "
        "fitted on the same v0.5 table's first-token rows of GPT-J 6B and Falcon-180B (128 and 2,048 tokens on "
        "H100, L40S and A100 GPUs; planned from their config.json), with the fractions held; the two groups "
        "alternate until neither moves. A prefill pass is launched kernel by kernel (TensorRT-LLM captures CUDA "
        "graphs for generation-only batches; its piecewise graphs, \"to reduce context-phase launch overhead\", "
        "are opt-in: docs/source/features/torch_compile_and_piecewise_cuda_graph.md), so every pass pays its "
        f"layers' launches beside its FLOPs and weight reads: {32 * e.prefill_layer_seconds * 1e3:.1f} ms for a 32-layer "
        "model, hidden in a pass of "
        "thousands of packed tokens, most of a lone 128-token prompt's first-token latency. Held out: "
        "every H200 row, the fixed-batch A100 rows, the v0.5 table's other Llama-2 first-token rows and the vLLM "
        "rows. The FP8 checkpoints "
        "of the overview are run with an fp8 KV cache (with a 16-bit cache no bandwidth fraction up to 1 fits the "
        "long-output rows); its `kv_cache_free_gpu_mem_fraction` is the 0.90 default (the overview sometimes used "
        "0.95). Prefill and decode are summed: a model in which prompt tokens ride free in memory-bound decode "
        "steps fitted the calibration rows worse. vLLM and SGLang take TensorRT-LLM's fractions (their memory "
        "rules and batch limits are their own; the vLLM row checks that at batch 1, and LMSYS measured SGLang's "
        "offline throughput on par with TensorRT-LLM's); Hugging Face transformers' speed is refused (no "
        "published measurement with stated settings). A workload naming a vLLM release before 0.8.0 "
        "(`engine_version`) runs vLLM's V0 engine, whose CPU work between decode steps is not overlapped with the "
        f"GPU: each decode step costs {engines.VLLM_V0_DECODE_STEP_SECONDS * 1e3:g} ms more, fitted (the fractions "
        "held) on vLLM's CI latency of Llama 3.1 8B at batch 8 on A100, H100 and H200; the 70B rows of the same "
        "builds are held out. TensorRT-LLM v0.5's first-token rows name their release (`engine_version: '0.5'`): its "
        "fp8 builds run the context FMHA in fp16 (`--use_gpt_attention_plugin float16` beside `--enable_fp8`), so "
        "their prefill's attention is planned at the 16-bit rate, its GEMMs at the fp8 one.",
        "",
        f"Median |error|: **{median_abs(done):.1%}** over all {len(done)} rows computed, {median_abs(held):.1%} "
        f"over the {len(held)} held-out rows, {median_abs(fit):.1%} over the {len(fit)} calibration rows "
        f"(target ≤ {MEDIAN_TARGET:.0%}). Rows beyond ±{ROW_TARGET:.0%}: "
        + (", ".join(f"{r.id} ({r.error:+.1%})" for r in beyond) if beyond else "none") + ".",
        "",
        *_diagnoses(beyond, tails(done)),
        "| row | model | GPUs | TP | precision | input / output | metric | published | planned | error | role |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    missing = []
    for r in rs:
        row = r.row
        if r.estimate is None:
            missing.append(r)
        planned = _fmt(r.estimate) if r.estimate is not None else "not computed ¹"
        error = f"{r.error:+.1%}" if r.error is not None else "—"
        lengths = f"{row.get('input_tokens') or '?'} / {row.get('output_tokens') or '?'}"
        role = r.role + (" (added)" if row.get("added") else "")
        lines.append(
            f"| {r.id} | {row['model']} | {row['gpus']} × {row['gpu']} | {row.get('tensor_parallel') or '?'} "
            f"| {row['precision']} | {lengths} | {row['metric']} | {_fmt(row['value'])} | {planned} | {error} "
            f"| {role} |")
    if missing:
        reasons = sorted({r.why for r in missing})
        notes = (f"{', '.join(r.id for r in missing if r.why == why)}: {why}." for why in reasons)
        lines += ["", "¹ " + " ".join(notes)]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render())
