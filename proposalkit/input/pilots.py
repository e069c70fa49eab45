"""`pilot:` in a workload → the measured runs (PilotRun), read by the `proposalkit pilot` readers.

Each log is read as `proposalkit pilot` reads it (proposalkit/pilot/: format detection, warm-up
rule, median of the steady steps); here only what a workload adds: the path relative to the
workload file, the GPU type and count the log does not say, the kind of run (a training log on a
training workload, an inference benchmark on batch inference), and a file hash to cite.
Every problem is FILE:LINE: workloads[i].pilot.log: LOG: message (exit 2).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from pydantic import ConfigDict, Field

from .. import catalog
from ..errors import InputError, Problem
from .messages import unknown_gpu
from .source import Path, field_name
from .schema import Pilot, Throughput

# The logs of runs that generate tokens (output tokens per second) and of runs that train;
# nvidia-smi measures memory only and has no throughput to plan with.
INFERENCE_FORMATS = ("vllm", "sglang", "trtllm-bench", "mlperf")
PROMPT_AND_OUTPUT_FORMATS = ("vllm-throughput",)
MEMORY_ONLY_FORMATS = ("nvidia-smi",)
# The framework (input/frameworks.py FRAMEWORKS) that writes each log format the readers tell apart: the
# workload that cites such a log runs that framework's recipe, so `plan` and `check --review` suggest
# `framework:` where the workload names none. Lightning's metrics.csv, MLPerf summaries and nvidia-smi name
# none of them. A Trainer's trainer_state.json is also what Axolotl and LLaMA-Factory runs leave (both run
# the Hugging Face Trainer), so the suggestion names them too.
LOG_FRAMEWORKS = {"torchtune": "torchtune", "torchtitan": "torchtitan", "megatron": "megatron",
                  "deepspeed": "deepspeed", "axolotl": "axolotl", "hf-trainer": "hf-trainer",
                  "llama-factory": "llama-factory", "vllm": "vllm", "vllm-throughput": "vllm", "sglang": "sglang",
                  "trtllm-bench": "trt-llm"}
LOG_FRAMEWORKS_ALSO = {"hf-trainer": ("axolotl", "llama-factory")}
# At most two pilots: two GPU counts of one GPU type give the scaling efficiency (planning/pilots.py).
MOST_PILOTS = 2


@dataclass(frozen=True)
class PilotRun:
    """One pilot log as the workload uses it."""

    log: str                    # as written in the workload file (relative to it)
    sha256: str
    format: str
    steps_used: int | None
    steps_dropped: int | None   # warm-up steps excluded (pilot/common.py WARMUP_RULE)
    gpu: str
    gpus: int
    gpus_source: str            # "the log (…)" or "pilot.gpus in the workload"
    tokens_per_second: float    # the whole job: all `gpus` together
    token_definition: str
    peak_memory: tuple[str, int] | None     # (statistic, bytes): device, reserved, allocated or active
    method: str
    step_ratios: tuple[float, ...] = ()     # percentiles 0-100 of the steady steps' rates ÷ their median
    illustrative: bool = False  # pilot.illustrative: an example log, not a measurement (said wherever it is used)


class MeasuredThroughput(Throughput):
    """The `throughput:` the planner uses, taken from pilot logs; `runs` are the logs (not serialised)."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)
    runs: tuple[PilotRun, ...] = Field((), exclude=True)


def sha256_of(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_pilots(workload, index: int, source, base_dir: str) -> tuple[tuple[PilotRun, ...], list[Problem]]:
    """The workload's pilot logs read, or the problems (each naming the log)."""
    given = workload.pilot
    if given is None:
        return (), []
    several = isinstance(given, list)
    pilots = given if several else [given]
    root = ("workloads", index, "pilot")

    def at(i: int, key: str | None = None) -> Path:
        path = root + ((i,) if several else ())
        return path + ((key,) if key else ())

    def problem(path: Path, message: str) -> Problem:
        return Problem(source.path, source.line(path), field_name(path), message)

    if workload.throughput is not None:
        return (), [problem(root, "given with throughput (expected one measured rate: keep pilot to cite the log "
                                  "and compare it with the estimate, or throughput for a number without a log)")]
    if not pilots:
        return (), [problem(root, "an empty list (expected a pilot {log, gpu, gpus}, or two on different GPU counts)")]
    if len(pilots) > MOST_PILOTS:
        return (), [problem(root, f"{len(pilots)} pilots (expected one, or two of one GPU type on different GPU "
                                  "counts, which give the scaling efficiency)")]
    runs, problems = [], []
    for i, pilot in enumerate(pilots):
        run, found = _read_one(workload, pilot, base_dir, lambda key, i=i: at(i, key), problem)
        problems += found
        if run is not None:
            runs.append(run)
    if not problems and len(runs) == 2:
        a, b = runs
        if a.gpu != b.gpu:
            problems.append(problem(at(1, "gpu"), f"{b.log} ran on {b.gpu}, {a.log} on {a.gpu} (expected two pilots "
                                                  "of one GPU type on different GPU counts: the scaling efficiency "
                                                  "compares counts, not types)"))
        elif a.gpus == b.gpus:
            problems.append(problem(at(1, "gpus"), f"{a.log} and {b.log} both ran on {a.gpus} GPU{'s' if a.gpus != 1 else ''} (expected two "
                                                   "different GPU counts, or one pilot)"))
    return tuple(runs) if not problems else (), problems


def _read_one(workload, pilot: Pilot, base_dir: str, at, problem) -> tuple[PilotRun | None, list[Problem]]:
    from ..pilot import Options, read_log    # on first use: a plan without pilots need not import the readers

    log_at = at("log")
    full = os.path.normpath(os.path.join(base_dir, pilot.log))
    if not os.path.lexists(full):
        return None, [problem(log_at, f"{pilot.log}: file not found (looked for {full}; the path is relative to "
                                      "the workload file)")]
    seq_len = workload.seq_len or (workload.data.seq_len if workload.data else None)
    try:
        result = read_log(full, Options(seq_len=seq_len, seq_len_name="seq_len", seq_len_ask="seq_len: N in the workload"))
    except InputError as error:
        return None, [problem(log_at, f"{pilot.log}{f':{p.line}' if p.line else ''}: {p.message}")
                      for p in error.problems]
    problems = []
    kind = "inference" if result.format in INFERENCE_FORMATS + PROMPT_AND_OUTPUT_FORMATS else "training"
    if result.format in MEMORY_ONLY_FORMATS:
        problems.append(problem(log_at, f"{pilot.log}: an {result.format} log measures memory only (expected a log "
                                        "with throughput: a training log, or an inference benchmark)"))
    elif kind != ("inference" if workload.kind == "inference" else "training"):
        expected = "a training log" if kind == "inference" else "an inference benchmark (output tokens per second)"
        problems.append(problem(log_at, f"{pilot.log}: a {result.format} log is {'an' if kind == 'inference' else 'a'} "
                                        f"{kind} run, on {'an' if workload.kind == 'inference' else 'a'} {workload.kind} workload "
                                        f"(expected {expected})"))
    elif result.format in PROMPT_AND_OUTPUT_FORMATS:
        problems.append(problem(log_at, f"{pilot.log}: a {result.format} log counts prompt and output tokens together "
                                        "(expected output tokens per second, as batch inference counts its tokens: "
                                        "vLLM or SGLang bench serve JSON, trtllm-bench, MLPerf)"))
    gpus = catalog.gpus()
    if pilot.gpu is None:
        problems.append(problem(at(None), f"{pilot.log}: gpu required (no log names the GPU type; expected gpu: "
                                          "the catalog id it ran on, e.g. a100-80gb)"))
    elif pilot.gpu not in gpus:
        problems.append(problem(at("gpu"), unknown_gpu(pilot.gpu, gpus)))
    count, count_source = result.gpus, f"the log ({result.gpus_source})"
    if pilot.gpus is not None:
        if result.gpus is not None and result.gpus != pilot.gpus:
            problems.append(problem(at("gpus"), f"{pilot.gpus} but {pilot.log} says {result.gpus} "
                                                f"({result.gpus_source}); expected the log's count or nothing"))
        elif result.gpus is None:
            count, count_source = pilot.gpus, "pilot.gpus in the workload"
    if count is None:
        problems.append(problem(at(None), f"{pilot.log}: gpus required (the {result.format} log does not say how many "
                                          "GPUs ran; expected gpus: N beside log)"))
    if problems:
        return None, problems
    rate = result.output_tokens_per_second if kind == "inference" else result.tokens_per_second
    if rate is None and result.tokens_per_second_per_gpu is not None:
        rate = result.tokens_per_second_per_gpu * count
    if rate is None:
        return None, [problem(log_at, f"{pilot.log}: no throughput in the {result.format} log "
                                      f"({result.token_definition}; expected tokens per second)")]
    return PilotRun(log=pilot.log, sha256=sha256_of(full), format=result.format, steps_used=result.steps_used,
                    steps_dropped=result.warmup_steps, gpu=pilot.gpu, gpus=count, gpus_source=count_source,
                    tokens_per_second=rate, token_definition=result.token_definition, peak_memory=result.peak(),
                    method=result.method, step_ratios=result.step_ratios,
                    illustrative=pilot.illustrative), []


def measured_throughput(runs: tuple[PilotRun, ...]) -> MeasuredThroughput:
    """The `throughput:` the planner starts from: the pilot on the most GPUs (the others give the scaling)."""
    first = max(runs, key=lambda r: r.gpus)
    return MeasuredThroughput.model_construct(tokens_per_second=first.tokens_per_second, gpu=first.gpu,
                                              gpus=first.gpus, runs=runs)
