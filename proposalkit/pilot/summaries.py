"""Text summaries a benchmark prints once (no steps, no warm-up to exclude: the
benchmark excludes its own): TensorRT-LLM `trtllm-bench`, MLPerf Inference
`mlperf_log_summary.txt`; and `nvidia-smi --format=csv` memory samples."""

from __future__ import annotations

import re

from .checks import (GPU_COUNT, JOB_RATE, MEMORY, PER_GPU_RATE, PIPELINE_PARALLEL, TENSOR_PARALLEL, BadValue, Expect,
                     checked)
from .common import PilotResult, StepSeries, fail
from .training import LineReader
from ..units import GiB, KiB, MiB


class Summary(LineReader):
    """Collects `Key: value` lines; keys named in `fields`, each with what its value must be."""

    fields: dict[str, tuple[str, Expect]] = {}

    def __init__(self, path: str):
        super().__init__(path)
        self.values: dict[str, float] = {}
        self._key = re.compile(r"^\s*(" + "|".join(map(re.escape, self.fields)) + r")\s*:\s*(\S+)")

    def feed(self, lineno: int, line: str) -> bool:
        m = self._key.match(line)
        if not m:
            return False
        name, expect = self.fields[m.group(1)]
        self.values[name] = checked(m.group(2), m.group(1), expect)
        return True


class TrtllmBench(Summary):
    name = "trtllm-bench"
    signature = re.compile(r"^\s*(Request Throughput \(req/sec\)|Total Output Throughput \(tokens/sec\)|TP Size)\s*:")
    fields = {"TP Size": ("tp", TENSOR_PARALLEL), "PP Size": ("pp", PIPELINE_PARALLEL),
              "Total Output Throughput (tokens/sec)": ("output", JOB_RATE),
              "Per GPU Output Throughput (tokens/sec/gpu)": ("per_gpu", PER_GPU_RATE),
              "Total Token Throughput (tokens/sec)": ("total", JOB_RATE)}

    def finish(self, options) -> PilotResult:
        if "output" not in self.values:
            raise fail(self.path, "no `Total Output Throughput (tokens/sec):` line (truncated?); "
                                  "expected trtllm-bench's performance overview")
        r = PilotResult(self.path, self.name, token_definition="output (generated) tokens")
        r.output_tokens_per_second = r.tokens_per_second = self.values["output"]
        r.total_tokens_per_second = self.values.get("total")
        r.tokens_per_second_per_gpu = self.values.get("per_gpu")
        if "tp" in self.values:
            r.gpus = int(self.values["tp"] * self.values.get("pp", 1))
            r.gpus_source = "TP Size × PP Size"
        r.method = "the benchmark's own figure"
        return r


class MLPerf(Summary):
    name = "mlperf"
    signature = re.compile(r"MLPerf Results Summary")
    # Offline prints `Tokens per second:`, Server `Completed tokens per second:` (output tokens).
    fields = {"Tokens per second": ("tokens", JOB_RATE), "Completed tokens per second": ("tokens", JOB_RATE),
              "Samples per second": ("samples", JOB_RATE), "Completed samples per second": ("samples", JOB_RATE)}

    def finish(self, options) -> PilotResult:
        if "tokens" not in self.values:
            raise fail(self.path, "no `Tokens per second:` line; expected an LLM benchmark's "
                                  "mlperf_log_summary.txt (Offline or Server)")
        r = PilotResult(self.path, self.name, token_definition="output (generated) tokens")
        r.output_tokens_per_second = r.tokens_per_second = self.values["tokens"]
        r.method = "the benchmark's own figure (LoadGen summary)"
        return r


_UNITS = {"MiB": MiB, "GiB": GiB, "KiB": KiB, "B": 1}


class NvidiaSmi(LineReader):
    """`--query-gpu=...,memory.used,... --format=csv[,nounits]`: the unit in the header
    (`memory.used [MiB]`) and, without nounits, after each value; `[N/A]` skipped."""

    name = "nvidia-smi"
    signature = re.compile(r"(^|,\s*)memory\.used \[")

    def __init__(self, path: str):
        super().__init__(path)
        self.column = self.unit = self.gpu_column = None
        self.gpus: set[str] = set()
        self.samples = 0

    def feed(self, lineno: int, line: str) -> bool:
        cells = [c.strip() for c in line.split(",")]
        if self.column is None:
            header = next((i for i, c in enumerate(cells) if c.startswith("memory.used [")), None)
            if header is None:
                return False
            self.unit = cells[header][len("memory.used ["):].rstrip("]")
            if self.unit not in _UNITS:
                raise self.error(lineno, f"memory.used in [{self.unit}]; expected [MiB] (or KiB, GiB)")
            self.column = header
            self.gpu_column = next((i for i, c in enumerate(cells) if c in ("index", "uuid", "pci.bus_id")), None)
            return True
        if len(cells) <= self.column:
            raise self.error(lineno, f"{len(cells)} column(s); expected memory.used in column {self.column + 1} (truncated?)")
        value = cells[self.column]
        if value in ("[N/A]", "[Not Supported]"):
            return True
        amount, _, unit = value.partition(" ")
        if unit and unit != self.unit:
            raise self.error(lineno, f"memory.used {value!r}; expected {self.unit} as the header says")
        self.series.memory_max("device", checked(amount, "memory.used", MEMORY, _UNITS[self.unit]))
        self.samples += 1
        if self.gpu_column is not None and len(cells) > self.gpu_column:
            self.gpus.add(cells[self.gpu_column])
        return True

    def finish(self, options) -> PilotResult:
        if not self.samples:
            raise fail(self.path, "no memory.used value; expected nvidia-smi CSV rows under the header")
        if not self.series.memory["device"]:
            raise fail(self.path, f"memory.used is 0 in all {self.samples} sample(s); expected samples taken while "
                                  "the pilot ran")
        r = PilotResult(self.path, self.name, token_definition="nvidia-smi measures memory only")
        r.peak_memory = {"device": int(round(self.series.memory["device"]))}
        r.method = f"peak memory.used over {self.samples} sample(s) (whole device: reserved + CUDA context)"
        if self.gpus:
            r.gpus, r.gpus_source = len(self.gpus), "distinct GPUs in the CSV"
        return r


class Lightning(LineReader):
    """`metrics.csv` of CSVLogger with ThroughputMonitor: `train/device/samples_per_sec`,
    `train/samples_per_sec` (whole job), `.../items_per_sec` when a length_fn counts items
    (tokens); the separator `|` of ThroughputMonitor's default accepted as `/`."""

    name = "lightning"
    signature = re.compile(r"(^|,)train[/|](device[/|])?(samples|items)_per_sec(,|$)")

    def __init__(self, path: str):
        super().__init__(path)
        self.device_series = StepSeries()
        self.columns: dict[str, int] | None = None
        self.kind = ""

    def feed(self, lineno: int, line: str) -> bool:
        cells = line.split(",")
        if self.columns is None:
            names = [c.strip().replace("|", "/") for c in cells]
            self.kind = "items" if any(n.endswith("items_per_sec") for n in names) else "samples"
            self.columns = {key: names.index(f"train/{key}{self.kind}_per_sec")
                            for key in ("", "device/") if f"train/{key}{self.kind}_per_sec" in names}
            return True
        if len(cells) <= max(self.columns.values()):
            raise self.error(lineno, f"{len(cells)} column(s); expected as many as the header (truncated?)")
        whole, device = (cells[self.columns[k]].strip() if k in self.columns else "" for k in ("", "device/"))
        if whole:
            self.series.add(checked(whole, f"train/{self.kind}_per_sec", JOB_RATE))
        if device:
            self.device_series.add(checked(device, f"train/device/{self.kind}_per_sec", PER_GPU_RATE))
        return True

    def finish(self, options) -> PilotResult:
        scale = 1
        if self.kind == "samples":
            if not options.seq_len:
                raise fail(self.path, "Lightning logged samples per second, not items (tokens); expected "
                                      f"{options.seq_len_ask} (tokens per sample) to convert")
            scale = options.seq_len
        definition = ("items as ThroughputMonitor's length_fn counts them (tokens)" if self.kind == "items"
                      else f"all input tokens (samples × {options.seq_len_name} {options.seq_len})")
        r = PilotResult(self.path, self.name, token_definition=definition)
        if len(self.series.values):
            r.tokens_per_second = self.series.steady(self.path, r, "throughput rows") * scale
        if len(self.device_series.values):
            r.tokens_per_second_per_gpu = self.device_series.steady(self.path, r, "throughput rows") * scale
        if r.tokens_per_second is None and r.tokens_per_second_per_gpu is None:
            raise fail(self.path, f"no train/{self.kind}_per_sec value; expected ThroughputMonitor rows")
        if r.tokens_per_second and r.tokens_per_second_per_gpu:
            ratio = r.tokens_per_second / r.tokens_per_second_per_gpu
            # ThroughputMonitor's whole-job rate is the device rate × world size, so the medians' ratio is
            # the GPU count; 1% leaves room for rounding in the CSV.
            if abs(ratio - round(ratio)) > 0.01 * ratio:
                raise fail(self.path, f"train/{self.kind}_per_sec ÷ train/device/{self.kind}_per_sec = {ratio:.3g}, "
                                      "not a whole number of GPUs; expected the whole job's rate = the device rate "
                                      "× the GPU count")
            try:
                r.gpus = checked(float(round(ratio)), "the GPU count (whole-job ÷ per-device rate)", GPU_COUNT)
            except BadValue as error:
                raise fail(self.path, str(error)) from None
            r.gpus_source = "whole-job ÷ per-device rate"
        if scale != 1:
            r.method += " (samples × seq-len)"
        return r


SUMMARY_READERS = (TrtllmBench, MLPerf, NvidiaSmi, Lightning)
