"""Text summaries a benchmark prints once (no steps, no warm-up to exclude: the
benchmark excludes its own): TensorRT-LLM `trtllm-bench`, MLPerf Inference
`mlperf_log_summary.txt`; and `nvidia-smi --format=csv` memory samples."""

from __future__ import annotations

import re

from .common import PilotResult, StepSeries, fail, number
from .training import LineReader
from ..units import GiB, KiB, MiB


class Summary(LineReader):
    """Collects `Key: value` lines; keys named in `fields`."""

    fields: dict[str, str] = {}

    def __init__(self, path: str):
        super().__init__(path)
        self.values: dict[str, float] = {}
        self._key = re.compile(r"^\s*(" + "|".join(map(re.escape, self.fields)) + r")\s*:\s*(\S+)")

    def step(self, line: str) -> bool:
        return False

    def feed(self, lineno: int, line: str) -> bool:
        m = self._key.match(line)
        if not m:
            return False
        self.values[self.fields[m.group(1)]] = number(m.group(2))
        return True


class TrtllmBench(Summary):
    name = "trtllm-bench"
    signature = re.compile(r"^\s*(Request Throughput \(req/sec\)|Total Output Throughput \(tokens/sec\)|TP Size)\s*:")
    fields = {"TP Size": "tp", "PP Size": "pp",
              "Total Output Throughput (tokens/sec)": "output",
              "Per GPU Output Throughput (tokens/sec/gpu)": "per_gpu",
              "Total Token Throughput (tokens/sec)": "total"}

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
    fields = {"Tokens per second": "tokens", "Completed tokens per second": "tokens",
              "Samples per second": "samples", "Completed samples per second": "samples"}

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

    def step(self, line: str) -> bool:
        return False

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
        self.series.memory_max("device", number(amount) * _UNITS[self.unit])
        self.samples += 1
        if self.gpu_column is not None and len(cells) > self.gpu_column:
            self.gpus.add(cells[self.gpu_column])
        return True

    def finish(self, options) -> PilotResult:
        if not self.samples:
            raise fail(self.path, "no memory.used value; expected nvidia-smi CSV rows under the header")
        r = PilotResult(self.path, self.name, token_definition="nvidia-smi measures memory only")
        r.peak_memory = {"device": int(round(self.series.memory["device"]))}
        r.method = f"peak memory.used over {self.samples} sample(s) (whole device: reserved + CUDA context)"
        if self.gpus:
            r.gpus, r.gpus_source = len(self.gpus), "distinct GPUs in the CSV"
        return r


SUMMARY_READERS = (TrtllmBench, MLPerf, NvidiaSmi)
