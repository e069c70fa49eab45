"""JSON logs: HF Trainer `trainer_state.json`, LLaMA-Factory `trainer_log.jsonl`,
vLLM `bench serve` and SGLang `bench_serving` results (SGLang's JSONL writes a bare
`Infinity`, which Python's json module reads)."""

from __future__ import annotations

import json
import math
import re
from array import array

from .common import MIN_STEADY_STEPS, PilotResult, fail, warmup_count
from ..units import GiB


def trainer_state(path: str, data: dict) -> PilotResult:
    history = data.get("log_history")
    if not isinstance(history, list):
        raise fail(path, "no log_history list; expected a Hugging Face trainer_state.json")
    final = next((e for e in reversed(history) if isinstance(e, dict) and "train_runtime" in e), None)
    if final is None:
        raise fail(path, "no final log_history entry with train_runtime (run not finished, or truncated?); "
                         "expected the entry the Trainer writes at the end of training")
    r = PilotResult(path, "hf-trainer", token_definition="all input tokens, padding included (num_input_tokens_seen)")
    runtime = final["train_runtime"]
    tokens = data.get("num_input_tokens_seen") or final.get("num_input_tokens_seen")
    if tokens is None:
        for entry in reversed(history):
            if isinstance(entry, dict) and entry.get("num_input_tokens_seen"):
                tokens = entry["num_input_tokens_seen"]
                break
    if not _positive(tokens) or not _positive(runtime):
        raise fail(path, "no token count; expected num_input_tokens_seen (TrainingArguments "
                         "include_num_input_tokens_seen=True) and a positive train_runtime")
    r.tokens_per_second = float(tokens) / runtime
    r.steps_logged = data.get("global_step")
    r.method = "num_input_tokens_seen ÷ train_runtime (a whole-run average: the file has no per-step times)"
    r.notes.append("warm-up not excluded: trainer_state.json gives only the whole-run train_runtime")
    r.notes.append("no peak memory: the Trainer logs only memory deltas (skip_memory_metrics=False)")
    return r


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


_ELAPSED = re.compile(r"^(?:(\d+) days?, )?(\d+):(\d{2}):(\d{2})$")


def _seconds(path: str, lineno: int, text) -> float:
    m = _ELAPSED.match(str(text))
    if not m:
        raise fail(path, f"elapsed_time {text!r}; expected H:MM:SS", lineno)
    days, h, mi, s = (int(g or 0) for g in m.groups())
    return ((days * 24 + h) * 60 + mi) * 60 + s


class LlamaFactory:
    """trainer_log.jsonl: cumulative `total_tokens` and `elapsed_time` per logged step (whole job)."""

    name = "llama-factory"

    def __init__(self, path: str):
        self.path = path
        self.elapsed, self.tokens = array("d"), array("d")
        self.memory: dict[str, float] = {}

    def feed(self, lineno: int, entry: dict) -> None:
        if "current_steps" not in entry:
            raise fail(self.path, "entry without current_steps; expected LLaMA-Factory trainer_log.jsonl lines", lineno)
        if "total_tokens" in entry:
            if not _positive(entry["total_tokens"]) and entry["total_tokens"] != 0:
                raise fail(self.path, "total_tokens is not a number; expected a token count", lineno)
            self.elapsed.append(_seconds(self.path, lineno, entry.get("elapsed_time")))
            self.tokens.append(float(entry["total_tokens"]))
        for key, stat in (("vram_reserved", "reserved"), ("vram_allocated", "allocated")):
            if key in entry and _positive(entry[key]) and entry[key] * GiB > self.memory.get(stat, -1):
                self.memory[stat] = entry[key] * GiB     # LLaMA-Factory logs GiB

    def finish(self, options) -> PilotResult:
        n = len(self.tokens)
        if n == 0:
            raise fail(self.path, "no total_tokens in any entry; expected include_num_input_tokens_seen: true")
        k = warmup_count(n)
        if n - k < MIN_STEADY_STEPS:
            raise fail(self.path, f"no steady state: {n} logged step(s), {k} of them warm-up; expected at least "
                                  f"{k + MIN_STEADY_STEPS} logged steps ({MIN_STEADY_STEPS} after warm-up)")
        seconds = self.elapsed[-1] - self.elapsed[k - 1]
        if seconds <= 0:
            raise fail(self.path, "elapsed_time does not advance after warm-up; expected increasing H:MM:SS")
        r = PilotResult(self.path, self.name, token_definition="all input tokens, padding included (total_tokens)")
        r.tokens_per_second = (self.tokens[-1] - self.tokens[k - 1]) / seconds
        r.steps_logged, r.warmup_steps, r.steps_used = n, k, n - k
        r.method = f"tokens ÷ seconds between the last warm-up entry and the last entry ({n - k} entries)"
        r.peak_memory = {s: int(round(b)) for s, b in self.memory.items()}
        return r


def serve_benchmark(path: str, results: list[dict], bare_infinity: bool) -> PilotResult:
    last = results[-1]
    backend = str(last.get("backend", ""))
    name = "sglang" if bare_infinity or backend.startswith("sglang") else "vllm"
    for key in ("output_throughput", "total_token_throughput"):
        if not _positive(last.get(key)) or not math.isfinite(last[key]):
            raise fail(path, f"no positive finite {key}; expected a {name} benchmark result")
    r = PilotResult(path, name, token_definition="output (generated) tokens")
    r.output_tokens_per_second = float(last["output_throughput"])
    r.total_tokens_per_second = float(last["total_token_throughput"])
    r.tokens_per_second = r.output_tokens_per_second
    r.method = "the benchmark's own figure (output tokens ÷ benchmark duration)"
    if len(results) > 1:
        r.method += f"; the last of {len(results)} results in the file"
    return r


def read_json_log(path: str, first: str, rest, forced: str | None, options) -> PilotResult:
    """`first` is the first non-blank line; `rest` iterates (lineno, line) after it."""
    try:
        obj = json.loads(first)
    except ValueError:
        obj = None
    if isinstance(obj, dict):          # one JSON object a line
        return _jsonl(path, first, obj, rest, forced, options)
    text = _whole_document(path, first, rest)
    try:
        data = json.loads(text)
    except ValueError as error:
        raise fail(path, f"truncated or invalid JSON ({error.msg} at line {error.lineno}); "
                         "expected one JSON document or one JSON object a line") from None
    if isinstance(data, dict) and "log_history" in data and forced in (None, "hf-trainer"):
        return trainer_state(path, data)
    if isinstance(data, dict) and "output_throughput" in data and forced in (None, "vllm", "sglang"):
        return serve_benchmark(path, [data], bool(re.search(r":\s*-?Infinity\b", text)))
    if isinstance(data, dict) and "total_num_tokens" in data and forced in (None, "vllm-throughput"):
        return offline_throughput(path, data)
    raise fail(path, "unknown JSON log; expected trainer_state.json (log_history), a vLLM/SGLang "
                     "benchmark result (output_throughput) or vLLM benchmark_throughput (total_num_tokens)")


def offline_throughput(path: str, data: dict) -> PilotResult:
    """vLLM `benchmark_throughput --output-json`: its tokens_per_second counts prompt and output tokens."""
    tokens, seconds = data.get("total_num_tokens"), data.get("elapsed_time")
    if not (_positive(tokens) and _positive(seconds) and math.isfinite(tokens / seconds)):
        raise fail(path, "no positive total_num_tokens and elapsed_time; expected a vLLM benchmark_throughput result")
    r = PilotResult(path, "vllm-throughput", token_definition="prompt and output tokens (total_num_tokens)")
    r.total_tokens_per_second = r.tokens_per_second = tokens / seconds
    r.method = "total_num_tokens ÷ elapsed_time (the benchmark's own figure; no output-only rate in this file)"
    return r


# One JSON document (trainer_state.json, a benchmark result) is parsed whole; real ones are
# kilobytes to a few MB (one log_history entry a logged step), so a cap keeps memory bounded.
MAX_DOCUMENT_CHARS = 64 * 2**20


def _whole_document(path: str, first: str, rest) -> str:
    parts, size = [first], len(first)
    for _, line in rest:
        size += len(line)
        if size > MAX_DOCUMENT_CHARS:
            raise fail(path, "a one-document JSON log over 64 MiB; expected a trainer_state.json or benchmark "
                             "result (kilobytes), or one JSON object a line")
        parts.append(line)
    return "".join(parts)


def _jsonl(path, first, obj, rest, forced, options) -> PilotResult:
    if "current_steps" in obj and forced in (None, "llama-factory"):
        reader = LlamaFactory(path)
        reader.feed(1, obj)
        for lineno, line in rest:
            if line.strip():
                reader.feed(lineno, _loads(path, lineno, line))
        return reader.finish(options)
    if "output_throughput" in obj and forced in (None, "vllm", "sglang"):
        results, infinity = [obj], ": Infinity" in first
        for lineno, line in rest:
            if line.strip():
                entry = _loads(path, lineno, line)
                if "output_throughput" not in entry:
                    raise fail(path, "mixed formats: a line without output_throughput; expected benchmark results", lineno)
                results.append(entry)
                infinity = infinity or bool(re.search(r":\s*-?Infinity\b", line))
        return serve_benchmark(path, results, infinity)
    raise fail(path, "unknown JSON lines; expected LLaMA-Factory trainer_log.jsonl (current_steps) or "
                     "vLLM/SGLang benchmark results (output_throughput)", 1)


def _loads(path: str, lineno: int, line: str) -> dict:
    try:
        entry = json.loads(line)
    except ValueError:
        raise fail(path, "truncated or invalid JSON line; expected one JSON object a line", lineno) from None
    if not isinstance(entry, dict):
        raise fail(path, "not a JSON object; expected one JSON object a line", lineno)
    return entry
