"""Line-by-line training logs: torchtune, torchtitan, Megatron-LM, DeepSpeed.

Each reader has `claims(line)` (a line only this format writes: it fixes the
format), `step(line)` (a step line of this format: used to spot mixed logs),
`feed(lineno, line)` and `finish(options)`. Formats as PILOT_LOGS.md describes them.
"""

from __future__ import annotations

import re

from .common import PilotResult, StepSeries, fail, number
from ..units import GiB, MiB


class LineReader:
    name = ""
    signature: re.Pattern = re.compile(r"(?!)")

    def __init__(self, path: str):
        self.path = path
        self.series = StepSeries()

    def claims(self, line: str) -> bool:
        return self.signature.search(line) is not None

    step = claims

    def error(self, lineno: int, message: str):
        return fail(self.path, message, lineno)


class Torchtune(LineReader):
    """DiskLogger: `Step N | key:value key:value ...`, memory in GiB."""

    name = "torchtune"
    signature = re.compile(r"^Step \d+ \| ")
    _pair = re.compile(r"(\w+):(\S+)")
    # Older releases logged `tokens_per_second`, also per rank (per GPU).
    _tps_keys = ("tokens_per_second_per_gpu", "tokens_per_second")
    _memory = {"peak_memory_reserved": "reserved", "peak_memory_alloc": "allocated", "peak_memory_active": "active"}

    def feed(self, lineno: int, line: str) -> bool:
        if not self.signature.search(line):
            return False
        pairs = dict(self._pair.findall(line))
        key = next((k for k in self._tps_keys if k in pairs), None)
        if key is None:
            raise self.error(lineno, "step line without tokens_per_second_per_gpu (truncated log?); "
                                     "expected `Step N | ... tokens_per_second_per_gpu:VALUE ...`")
        try:
            self.series.add(number(pairs[key]))
            for k, stat in self._memory.items():
                if k in pairs:
                    self.series.memory_max(stat, number(pairs[k]) * GiB)   # torchtune logs GiB
        except ValueError:
            raise self.error(lineno, f"not a number in a step line; expected `{key}:NUMBER`") from None
        return True

    def finish(self, options) -> PilotResult:
        r = PilotResult(self.path, self.name, token_definition="unmasked label tokens (tokens_per_second_per_gpu)")
        r.tokens_per_second_per_gpu = self.series.steady(self.path, r, "step lines")
        return r


class Torchtitan(LineReader):
    """Console: `step: N  loss: ...  memory: XX.XXGiB(YY.YY%)  tps: 5,762 ...`; older releases `wps:`."""

    name = "torchtitan"
    signature = re.compile(r"\bstep:\s*\d+\s+loss:")
    _tps = re.compile(r"\b(?:tps|wps):\s*([\d,]+(?:\.\d+)?)")
    _memory = re.compile(r"\bmemory:\s*([\d.]+)\s*([A-Za-z]+)\(")

    def feed(self, lineno: int, line: str) -> bool:
        if not self.signature.search(line):
            return False
        tps = self._tps.search(line)
        if tps is None:
            raise self.error(lineno, "step line without tps (truncated log?); expected `tps: N` (tokens per second per device)")
        self.series.add(number(tps.group(1)))
        memory = self._memory.search(line)
        if memory:
            if memory.group(2) != "GiB":
                raise self.error(lineno, f"memory in {memory.group(2)}; expected GiB (`memory: XX.XXGiB(YY.YY%)`)")
            self.series.memory_max("reserved", float(memory.group(1)) * GiB)    # torchtitan: max reserved
        return True

    def finish(self, options) -> PilotResult:
        r = PilotResult(self.path, self.name, token_definition="all input tokens per device (tps)")
        r.tokens_per_second_per_gpu = self.series.steady(self.path, r, "step lines")
        return r


class Megatron(LineReader):
    """Arguments block, `iteration N/M | ... elapsed time per iteration (ms): ... | global batch size: ... |`,
    and `[Rank r] (after N iterations) memory (MB) | allocated: ... | max reserved: ...` (MB = MiB)."""

    name = "megatron"
    signature = re.compile(r"-+ arguments -+|\biteration\s+\d+/\s*\d+\s*\|")
    _iteration = re.compile(r"\biteration\s+\d+/\s*\d+\s*\|")
    _argument = re.compile(r"^\s*(seq_length|global_batch_size|world_size)\s+\.+\s+(\S+)\s*$")
    _ms = re.compile(r"elapsed time per iteration \(ms\):\s*([\d.,]+)")
    _gbs = re.compile(r"global batch size:\s*(\d+)")
    _memory = re.compile(r"\bmemory \((\w+)\)\s*\|(.*)")
    _stat = re.compile(r"(max allocated|max reserved):\s*([\d.]+)")

    def __init__(self, path: str):
        super().__init__(path)
        self.args: dict[str, int] = {}

    def step(self, line: str) -> bool:
        return self._iteration.search(line) is not None

    def feed(self, lineno: int, line: str) -> bool:
        arg = self._argument.match(line)
        if arg:
            try:
                self.args[arg.group(1)] = int(arg.group(2))
            except ValueError:
                raise self.error(lineno, f"{arg.group(1)} is not an integer") from None
            return True
        if self._iteration.search(line):
            ms, gbs = self._ms.search(line), self._gbs.search(line)
            if ms is None:
                raise self.error(lineno, "iteration line without `elapsed time per iteration (ms):` (truncated log?)")
            batch = int(gbs.group(1)) if gbs else self.args.get("global_batch_size")
            if batch is None or "seq_length" not in self.args:
                raise self.error(lineno, "iteration line before the arguments block; expected `seq_length` and "
                                         "`global_batch_size` in the arguments block to count tokens")
            seconds = number(ms.group(1)) / 1000
            if seconds <= 0:
                raise self.error(lineno, "elapsed time per iteration is 0; expected a positive time in ms")
            self.series.add(batch * self.args["seq_length"] / seconds)
            return True
        memory = self._memory.search(line)
        if memory:
            if memory.group(1) != "MB":
                raise self.error(lineno, f"memory in ({memory.group(1)}); expected `memory (MB)` (MB = MiB)")
            for key, value in self._stat.findall(memory.group(2)):
                stat = "reserved" if key == "max reserved" else "allocated"
                self.series.memory_max(stat, float(value) * MiB)      # Megatron's MB: bytes / 2^20
            return True
        return False

    def finish(self, options) -> PilotResult:
        r = PilotResult(self.path, self.name,
                        token_definition="all input tokens (global batch size × seq_length, padding included)")
        r.tokens_per_second = self.series.steady(self.path, r, "iteration lines")
        if "world_size" in self.args:
            r.gpus, r.gpus_source = self.args["world_size"], "world_size in the arguments block"
        return r


class DeepSpeed(LineReader):
    """ThroughputTimer: `..., CurrSamplesPerSec=..., MemAllocated=...GB, MaxMemAllocated=...GB`
    (samples of the global train batch); see_memory_usage: `MA .. GB Max_MA .. GB CA .. GB Max_CA .. GB`."""

    name = "deepspeed"
    signature = re.compile(r"RunningAvgSamplesPerSec=|\bMax_MA\s+[\d.]+\s*\w+\s+CA\b")
    _throughput = re.compile(r"RunningAvgSamplesPerSec=")
    _current = re.compile(r"CurrSamplesPerSec=([\d.eE+-]+)")
    _max_alloc = re.compile(r"MaxMemAllocated=([\d.]+)\s*([A-Za-z]+)")
    _usage = re.compile(r"\bMax_MA\s+([\d.]+)\s*([A-Za-z]+)\s+CA\s+[\d.]+\s*\w+\s+Max_CA\s+([\d.]+)\s*([A-Za-z]+)")

    def step(self, line: str) -> bool:
        return self._throughput.search(line) is not None

    def _gib(self, lineno: int, value: str, unit: str) -> float:
        if unit != "GB":
            raise self.error(lineno, f"memory in {unit}; expected GB (DeepSpeed's GB is 2^30 bytes)")
        return float(value) * GiB      # DeepSpeed divides by 1024**3 and prints "GB"

    def feed(self, lineno: int, line: str) -> bool:
        if self._throughput.search(line):
            current = self._current.search(line)
            if current is None:
                raise self.error(lineno, "throughput line without CurrSamplesPerSec= (truncated log?)")
            self.series.add(number(current.group(1)))
            alloc = self._max_alloc.search(line)
            if alloc:
                self.series.memory_max("allocated", self._gib(lineno, *alloc.groups()))
            return True
        usage = self._usage.search(line)
        if usage:
            self.series.memory_max("allocated", self._gib(lineno, usage.group(1), usage.group(2)))
            self.series.memory_max("reserved", self._gib(lineno, usage.group(3), usage.group(4)))
            return True
        return False

    def finish(self, options) -> PilotResult:
        if not options.seq_len:
            raise fail(self.path, "DeepSpeed logs samples per second, not tokens; expected --seq-len N "
                                  "(tokens per sample) to convert")
        r = PilotResult(self.path, self.name,
                        token_definition=f"all input tokens (samples × --seq-len {options.seq_len})")
        r.tokens_per_second = self.series.steady(self.path, r, "throughput lines") * options.seq_len
        r.method += " (CurrSamplesPerSec × seq-len)"
        return r


class Axolotl(LineReader):
    """Trainer console dicts: `{'loss': ..., 'tokens/train_per_sec_per_gpu': ..., 'memory/max_mem_active(gib)': ...}`;
    older releases `tokens_per_second_per_gpu`. Memory keys in GiB."""

    name = "axolotl"
    signature = re.compile(r"^\{.*'(tokens/train_per_sec_per_gpu|tokens_per_second_per_gpu)'")
    _pair = re.compile(r"'([^']+)':\s*([^,}\s]+)")
    _memory = {"memory/device_mem_reserved(gib)": "reserved", "memory/max_mem_allocated(gib)": "allocated",
               "memory/max_mem_active(gib)": "active"}

    def feed(self, lineno: int, line: str) -> bool:
        m = self.signature.search(line)
        if not m:
            return False
        if not line.rstrip().endswith("}"):
            raise self.error(lineno, "log dict without its closing brace (truncated log?); expected `{...}`")
        pairs = dict(self._pair.findall(line))
        self.series.add(number(pairs[m.group(1)]))
        for key, stat in self._memory.items():
            if key in pairs:
                self.series.memory_max(stat, number(pairs[key]) * GiB)     # keys say (gib)
        return True

    def finish(self, options) -> PilotResult:
        r = PilotResult(self.path, self.name, token_definition="tokens per GPU as Axolotl's TokensPerSecondCallback counts them")
        r.tokens_per_second_per_gpu = self.series.steady(self.path, r, "log dicts")
        return r


LINE_READERS = (Torchtune, Torchtitan, Megatron, DeepSpeed, Axolotl)
