"""JSON logs: HF Trainer `trainer_state.json`, LLaMA-Factory `trainer_log.jsonl`,
vLLM `bench serve` and SGLang `bench_serving` results (SGLang's JSONL writes a bare
`Infinity`, which Python's json module reads)."""

from __future__ import annotations

import json
import math
import re
from array import array

from .checks import DURATION, ELAPSED, JOB_RATE, MEMORY, TOKENS, BadValue, checked, shown
from .common import PilotResult, fail, resumed_note, steady_segments
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
    if tokens is None or runtime is None:
        raise fail(path, "no token count; expected num_input_tokens_seen (TrainingArguments "
                         "include_num_input_tokens_seen=True) and a positive train_runtime")
    r.tokens_per_second = _value(path, None, tokens, "num_input_tokens_seen", TOKENS) / \
        _value(path, None, runtime, "train_runtime", DURATION)
    step = data.get("global_step")
    r.steps_logged = step if isinstance(step, int) and not isinstance(step, bool) and 0 <= step < 2**63 else None
    r.method = "num_input_tokens_seen ÷ train_runtime (a whole-run average: the file has no per-step times)"
    r.notes.append("warm-up not excluded: trainer_state.json gives only the whole-run train_runtime")
    peak = _trainer_peak_allocated(path, history)
    if peak is None:
        r.notes.append("no peak memory: the Trainer logs its memory metrics only with skip_memory_metrics=False")
    else:
        r.peak_memory = {"allocated": peak}
        r.notes.append("peak memory allocated = before_init_mem_gpu + init_mem_gpu_alloc_delta + "
                       "train_mem_gpu_alloc_delta + train_mem_gpu_peaked_delta (the Trainer's memory deltas, "
                       "skip_memory_metrics=False), on the first GPU")
    return r


# With skip_memory_metrics=False the Trainer's TrainerMemoryTracker (transformers trainer_utils.py) logs, in the
# entry with train_runtime, torch.cuda.memory_allocated() before Trainer.__init__ (before_init_mem_gpu) and per
# stage the change over the stage (alloc_delta = end - begin) and the peak above the end (peaked_delta =
# max_memory_allocated() - end, the peak statistics reset at the stage's start). The training stage begins where
# __init__ ended, so its peak allocated = before_init + init alloc + train alloc + train peaked.
_TRAINER_MEMORY = ("before_init_mem_gpu", "init_mem_gpu_alloc_delta", "train_mem_gpu_alloc_delta",
                   "train_mem_gpu_peaked_delta")


def _trainer_peak_allocated(path: str, history: list) -> int | None:
    """Peak bytes allocated while training, from the Trainer's memory metrics; None where it did not log them."""
    entry = next((e for e in history if isinstance(e, dict) and all(k in e for k in _TRAINER_MEMORY)), None)
    if entry is None:
        return None
    total = 0.0
    for key in _TRAINER_MEMORY:
        value = entry[key]
        if key.endswith("_alloc_delta") and isinstance(value, (int, float)) and not isinstance(value, bool):
            total += value       # a stage can free memory (a negative change); the sum is checked below
        else:
            total += _value(path, None, value, key, MEMORY)
    return int(_value(path, None, total, "the peak allocated these sum to", MEMORY))


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _value(path: str, lineno: int | None, raw, what: str, expect, scale: float = 1) -> float:
    """A JSON number × scale checked (common.checked), its problem located at the file (and line)."""
    try:
        return checked(raw, what, expect, scale)
    except ValueError:
        raise fail(path, f"{what} {shown(raw)} is not a number; expected {expect.noun}", lineno) from None
    except BadValue as error:
        raise fail(path, str(error), lineno) from None


# Python's timedelta as str() writes it: H:MM:SS, with "N day(s), " before past 24 hours.
_ELAPSED = re.compile(r"^(?:(\d{1,9}) days?, )?(\d{1,9}):([0-5]\d):([0-5]\d)$")


def _seconds(path: str, lineno: int, text) -> float:
    m = _ELAPSED.match(str(text)[:40])
    if not m:
        raise fail(path, f"elapsed_time {shown(text)}; expected H:MM:SS", lineno)
    days, h, mi, s = (int(g or 0) for g in m.groups())
    seconds = ((days * 24 + h) * 60 + mi) * 60 + s
    if seconds > ELAPSED.bound.high:
        raise fail(path, f"elapsed_time {shown(text)} is implausibly large; expected {ELAPSED.bound.expected}", lineno)
    return seconds


class LlamaFactory:
    """trainer_log.jsonl: cumulative `total_tokens` and `elapsed_time` per logged step (whole job).

    A resumed run appends to the same file: `current_steps` falls back to the checkpoint's step and
    `elapsed_time` restarts from 0 (LogCallback times from on_train_begin of each process), while
    `total_tokens` carries on from the checkpoint's count. Tokens ÷ seconds across such a restart
    counts the replayed steps' tokens in too little time, so each run (segment) is measured on its
    own, between its last warm-up entry and its last entry, and the segments' tokens and seconds
    are summed."""

    name = "llama-factory"

    def __init__(self, path: str):
        self.path = path
        self.elapsed, self.tokens = array("d"), array("d")
        self.memory: dict[str, float] = {}
        self.restarts: list[tuple[int, int]] = []     # (index of the segment's first entry, its line)
        self._last: tuple[int, float, float] | None = None

    def feed(self, lineno: int, entry: dict) -> None:
        if "current_steps" not in entry:
            raise fail(self.path, "entry without current_steps; expected LLaMA-Factory trainer_log.jsonl lines", lineno)
        step = entry["current_steps"]
        if isinstance(step, bool) or not isinstance(step, int):
            raise fail(self.path, f"current_steps {shown(step)} is not a step number; expected a whole number", lineno)
        if "total_tokens" in entry:
            tokens = _value(self.path, lineno, entry["total_tokens"], "total_tokens", TOKENS)
            elapsed = _seconds(self.path, lineno, entry.get("elapsed_time"))
            if self._last is not None and (step <= self._last[0] or elapsed < self._last[1] or tokens < self._last[2]):
                self.restarts.append((len(self.tokens), lineno))
            self._last = (step, elapsed, tokens)
            self.elapsed.append(elapsed)
            self.tokens.append(tokens)
        for key, stat in (("vram_reserved", "reserved"), ("vram_allocated", "allocated")):
            if key in entry:
                value = _value(self.path, lineno, entry[key], key, MEMORY, GiB)     # LLaMA-Factory logs GiB
                if value > self.memory.get(stat, -1):
                    self.memory[stat] = value

    def finish(self, options) -> PilotResult:
        if not self.tokens:
            raise fail(self.path, "no total_tokens in any entry; expected include_num_input_tokens_seen: true")
        r = PilotResult(self.path, self.name, token_definition="all input tokens, padding included (total_tokens)")
        segments = steady_segments(self.path, len(self.tokens), self.restarts, r)
        tokens = seconds = 0.0
        for _, first, end in segments:     # from the last warm-up entry to the segment's last entry
            if end > first:
                tokens += self.tokens[end - 1] - self.tokens[first - 1]
                seconds += self.elapsed[end - 1] - self.elapsed[first - 1]
        if seconds <= 0:
            raise fail(self.path, "elapsed_time does not advance after warm-up; expected increasing H:MM:SS")
        r.tokens_per_second = tokens / seconds
        r.method = f"tokens ÷ seconds between the last warm-up entry and the last entry ({r.steps_used} entries)"
        if self.restarts:
            r.method = (f"tokens ÷ seconds between the last warm-up entry and the last entry of each of its "
                        f"{len(segments)} segments, summed ({r.steps_used} entries)")
            r.notes.append(resumed_note(len(segments), "current_steps, elapsed_time or total_tokens falls back",
                                        self.restarts))
        r.peak_memory = {s: int(round(b)) for s, b in self.memory.items()}
        return r


def serve_benchmark(path: str, results: list[dict], bare_infinity: bool, lineno: int | None = None) -> PilotResult:
    """`lineno`: the last result's line, in a file of one result a line."""
    last = results[-1]
    backend = str(last.get("backend", ""))
    name = "sglang" if bare_infinity or backend.startswith("sglang") else "vllm"
    for key in ("output_throughput", "total_token_throughput"):
        if not _positive(last.get(key)) or not math.isfinite(last[key]):
            raise fail(path, f"no positive finite {key}; expected a {name} benchmark result", lineno)
    r = PilotResult(path, name, token_definition="output (generated) tokens")
    r.output_tokens_per_second = _value(path, lineno, last["output_throughput"], "output_throughput", JOB_RATE)
    r.total_tokens_per_second = _value(path, lineno, last["total_token_throughput"], "total_token_throughput", JOB_RATE)
    r.tokens_per_second = r.output_tokens_per_second
    r.method = "the benchmark's own figure (output tokens ÷ benchmark duration)"
    if len(results) > 1:
        r.method += f"; the last of {len(results)} results in the file"
    return r


def read_json_log(path: str, first: str, first_lineno: int, rest, forced: str | None, options) -> PilotResult:
    """`first` is the first non-blank line, at `first_lineno`; `rest` iterates (lineno, line) after it."""
    try:
        obj = json.loads(first)
    except (ValueError, RecursionError):
        obj = None
    if isinstance(obj, dict) and ("current_steps" in obj or "output_throughput" in obj):    # one object a line
        return _jsonl(path, first, first_lineno, obj, rest, forced, options)
    text = _whole_document(first, rest)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        if isinstance(obj, dict):     # an object a line, of no format known
            raise fail(path, _UNKNOWN_LINES, first_lineno) from None
        raise fail(path, f"truncated or invalid JSON ({error.msg}); expected one JSON document or one JSON object "
                         "a line", first_lineno + error.lineno - 1) from None
    except ValueError:         # the one other error of json.loads: an integer past int's 4,300 digits
        raise fail(path, "invalid JSON: a number of more than 4,300 digits; expected one JSON document or one "
                         "JSON object a line") from None
    except RecursionError:
        raise fail(path, _TOO_DEEP) from None
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
    if tokens is None or seconds is None:
        raise fail(path, "no positive total_num_tokens and elapsed_time; expected a vLLM benchmark_throughput result")
    r = PilotResult(path, "vllm-throughput", token_definition="prompt and output tokens (total_num_tokens)")
    r.total_tokens_per_second = r.tokens_per_second = _value(path, None, tokens, "total_num_tokens", TOKENS) / \
        _value(path, None, seconds, "elapsed_time", DURATION)
    r.method = "total_num_tokens ÷ elapsed_time (the benchmark's own figure; no output-only rate in this file)"
    return r


def _whole_document(first: str, rest) -> str:
    """The document's text: bounded by the file's (reading.PILOT_LOG)."""
    return first + "".join(line for _, line in rest)


def _jsonl(path, first, first_lineno, obj, rest, forced, options) -> PilotResult:
    if "current_steps" in obj and forced in (None, "llama-factory"):
        reader = LlamaFactory(path)
        reader.feed(first_lineno, obj)
        for lineno, line in rest:
            if line.strip():
                reader.feed(lineno, _loads(path, lineno, line))
        return reader.finish(options)
    if "output_throughput" in obj and forced in (None, "vllm", "sglang"):
        results, infinity, last = [obj], ": Infinity" in first, first_lineno
        for lineno, line in rest:
            if line.strip():
                entry = _loads(path, lineno, line)
                if "output_throughput" not in entry:
                    raise fail(path, "mixed formats: a line without output_throughput; expected benchmark results", lineno)
                results.append(entry)
                infinity = infinity or bool(re.search(r":\s*-?Infinity\b", line))
                last = lineno
        return serve_benchmark(path, results, infinity, last)
    raise fail(path, _UNKNOWN_LINES, first_lineno)


_UNKNOWN_LINES = ("unknown JSON lines; expected LLaMA-Factory trainer_log.jsonl (current_steps) or vLLM/SGLang "
                  "benchmark results (output_throughput)")


# Python's json parser recurses once a nesting level (about 1,000 levels deep at most); no log nests so deep.
_TOO_DEEP = "JSON nested too deeply for a log; expected a trainer_state.json, a benchmark result or one JSON object a line"


def _loads(path: str, lineno: int, line: str) -> dict:
    try:
        entry = json.loads(line)
    except ValueError:
        raise fail(path, "truncated or invalid JSON line; expected one JSON object a line", lineno) from None
    except RecursionError:
        raise fail(path, _TOO_DEEP, lineno) from None
    if not isinstance(entry, dict):
        raise fail(path, "not a JSON object; expected one JSON object a line", lineno)
    return entry
