"""Line-by-line training logs: torchtune, torchtitan, Megatron-LM, DeepSpeed, Axolotl.

Each reader has `claims(line)` (a line only this format writes: it fixes the
format), `step_line` (a pattern of this format's step lines: used to spot mixed
logs), `feed(lineno, line)` and `finish(options)`. Formats as PILOT_LOGS.md describes them.

Every pattern runs in time linear in the line (a log line can be megabytes): no two
adjacent repeats can match the same characters (`[\\d.]+\\s*\\w+` could: digits are
word characters, so a long run of digits was tried at every split, quadratic), a repeat
that starts a pattern is anchored to the start of its run (`(?<!-)-+`), and a repeat that
must be tried at several lengths is bounded (`\\S{1,40}?`). Every number read is checked
(checks.checked): finite, positive, within proposalkit/bounds.py.
"""

from __future__ import annotations

import re

from .checks import BATCH, DURATION, GPU_COUNT, JOB_RATE, MEMORY, PER_GPU_RATE, SEQUENCE, BadValue, checked
from .common import PilotResult, StepSeries, fail
from ..units import GiB, MiB

# Step numbers are compared only (a resumed run's fall back); more digits than this are not a step.
_STEP_DIGITS = 18


def step_number(text: str | None) -> int | None:
    return int(text) if text is not None and len(text) <= _STEP_DIGITS else None


class LineReader:
    name = ""
    signature: re.Pattern = re.compile(r"(?!)")
    step_line: re.Pattern | None = None     # None: the format has no step lines (a summary, a CSV)

    def __init__(self, path: str):
        self.path = path
        self.series = StepSeries()

    def claims(self, line: str) -> bool:
        return self.signature.search(line) is not None

    def error(self, lineno: int, message: str):
        return fail(self.path, message, lineno)


class Torchtune(LineReader):
    """DiskLogger: `Step N | key:value key:value ...`, memory in GiB."""

    name = "torchtune"
    signature = step_line = re.compile(r"^Step (\d+) \| ")
    _pair = re.compile(r"(?<!\S)(\w+):(\S+)")
    # Older releases logged `tokens_per_second`, also per rank (per GPU).
    _tps_keys = ("tokens_per_second_per_gpu", "tokens_per_second")
    _memory = {"peak_memory_reserved": "reserved", "peak_memory_alloc": "allocated", "peak_memory_active": "active"}

    def feed(self, lineno: int, line: str) -> bool:
        step = self.signature.search(line)
        if not step:
            return False
        pairs = dict(self._pair.findall(line))
        key = next((k for k in self._tps_keys if k in pairs), None)
        if key is None:
            raise self.error(lineno, "step line without tokens_per_second_per_gpu (truncated log?); "
                                     "expected `Step N | ... tokens_per_second_per_gpu:VALUE ...`")
        try:
            self.series.add(checked(pairs[key], key, PER_GPU_RATE), step_number(step.group(1)), lineno)
            for k, stat in self._memory.items():
                if k in pairs:
                    self.series.memory_max(stat, checked(pairs[k], k, MEMORY, GiB))   # torchtune logs GiB
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
    signature = step_line = re.compile(r"\bstep:\s*(\d+)\s+loss:")
    _tps = re.compile(r"\b(tps|wps):\s*(\S+)")
    _memory = re.compile(r"\bmemory:\s*(\S{1,40}?)\s*([A-Za-z]{1,8})\(")

    def feed(self, lineno: int, line: str) -> bool:
        step = self.signature.search(line)
        if not step:
            return False
        tps = self._tps.search(line)
        if tps is None:
            raise self.error(lineno, "step line without tps (truncated log?); expected `tps: N` (tokens per second per device)")
        self.series.add(checked(tps.group(2), tps.group(1), PER_GPU_RATE), step_number(step.group(1)), lineno)
        memory = self._memory.search(line)
        if memory:
            if memory.group(2) != "GiB":
                raise self.error(lineno, f"memory in {memory.group(2)}; expected GiB (`memory: XX.XXGiB(YY.YY%)`)")
            self.series.memory_max("reserved", checked(memory.group(1), "memory", MEMORY, GiB))   # max reserved
        return True

    def finish(self, options) -> PilotResult:
        r = PilotResult(self.path, self.name, token_definition="all input tokens per device (tps)")
        r.tokens_per_second_per_gpu = self.series.steady(self.path, r, "step lines")
        return r


class Megatron(LineReader):
    """Arguments block, `iteration N/M | ... elapsed time per iteration (ms): ... | global batch size: ... |`,
    and `[Rank r] (after N iterations) memory (MB) | allocated: ... | max reserved: ...` (MB = MiB)."""

    name = "megatron"
    step_line = re.compile(r"\biteration\s+(\d+)/\s*\d+\s*\|")
    signature = re.compile(r"(?<!-)-+ arguments -|" + step_line.pattern)
    _argument = re.compile(r"^\s*(seq_length|global_batch_size|world_size)\s+\.+\s+(\S+)\s*$")
    _expect = {"seq_length": SEQUENCE, "global_batch_size": BATCH, "world_size": GPU_COUNT}
    _ms = re.compile(r"elapsed time per iteration \(ms\):\s*([^\s|]+)")
    _gbs = re.compile(r"global batch size:\s*([^\s|]+)")
    _memory = re.compile(r"\bmemory \((\w+)\)\s*\|(.*)")
    _stat = re.compile(r"(max allocated|max reserved):\s*([^\s|]+)")

    def __init__(self, path: str):
        super().__init__(path)
        self.args: dict[str, int] = {}

    def feed(self, lineno: int, line: str) -> bool:
        arg = self._argument.match(line)
        if arg:
            name = arg.group(1)
            try:
                self.args[name] = checked(arg.group(2), name, self._expect[name])
            except ValueError:
                raise self.error(lineno, f"{name} is not an integer") from None
            return True
        iteration = self.step_line.search(line)
        if iteration:
            ms, gbs = self._ms.search(line), self._gbs.search(line)
            if ms is None:
                raise self.error(lineno, "iteration line without `elapsed time per iteration (ms):` (truncated log?)")
            batch = checked(gbs.group(1), "global batch size", BATCH) if gbs else self.args.get("global_batch_size")
            if batch is None or "seq_length" not in self.args:
                raise self.error(lineno, "iteration line before the arguments block; expected `seq_length` and "
                                         "`global_batch_size` in the arguments block to count tokens")
            seconds = checked(ms.group(1), "elapsed time per iteration (ms)", DURATION, 1 / 1000)
            rate = batch * self.args["seq_length"] / seconds
            if rate > JOB_RATE.bound.high:
                raise BadValue(f"global batch size {batch:,} × seq_length {self.args['seq_length']:,} ÷ "
                               f"{seconds:.3g} s = {rate:.3g} tokens/s is implausibly large; expected "
                               f"{JOB_RATE.bound.expected}")
            self.series.add(rate, step_number(iteration.group(1)), lineno)
            return True
        memory = self._memory.search(line)
        if memory:
            if memory.group(1) != "MB":
                raise self.error(lineno, f"memory in ({memory.group(1)}); expected `memory (MB)` (MB = MiB)")
            for key, value in self._stat.findall(memory.group(2)):
                stat = "reserved" if key == "max reserved" else "allocated"
                self.series.memory_max(stat, checked(value, key, MEMORY, MiB))      # Megatron's MB: bytes / 2^20
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
    """ThroughputTimer: `epoch=0/micro_step=10/global_step=10, ..., CurrSamplesPerSec=..., MemAllocated=...GB,
    MaxMemAllocated=...GB` (samples of the global train batch); see_memory_usage: `MA .. GB Max_MA .. GB CA .. GB
    Max_CA .. GB`."""

    name = "deepspeed"
    signature = re.compile(r"RunningAvgSamplesPerSec=|\bMax_MA\s+\S{1,40}?\s*[A-Za-z]{1,8}\s+CA\b")
    step_line = re.compile(r"RunningAvgSamplesPerSec=")
    _step = re.compile(r"\bglobal_step=(\d+)")
    _current = re.compile(r"CurrSamplesPerSec=([^,\s]+)")
    _max_alloc = re.compile(r"MaxMemAllocated=(\S{1,40}?)\s*([A-Za-z]{1,8})\b")
    _usage = re.compile(r"\bMax_MA\s+(\S{1,40}?)\s*([A-Za-z]{1,8})\s+CA\s+\S{1,40}?\s*[A-Za-z]{1,8}\s+"
                        r"Max_CA\s+(\S{1,40}?)\s*([A-Za-z]{1,8})\b")

    def _gib(self, lineno: int, what: str, value: str, unit: str) -> float:
        if unit != "GB":
            raise self.error(lineno, f"memory in {unit}; expected GB (DeepSpeed's GB is 2^30 bytes)")
        return checked(value, what, MEMORY, GiB)      # DeepSpeed divides by 1024**3 and prints "GB"

    def feed(self, lineno: int, line: str) -> bool:
        if self.step_line.search(line):
            current = self._current.search(line)
            if current is None:
                raise self.error(lineno, "throughput line without CurrSamplesPerSec= (truncated log?)")
            step = self._step.search(line)
            self.series.add(checked(current.group(1), "CurrSamplesPerSec", JOB_RATE),
                            step_number(step.group(1) if step else None), lineno)
            alloc = self._max_alloc.search(line)
            if alloc:
                self.series.memory_max("allocated", self._gib(lineno, "MaxMemAllocated", *alloc.groups()))
            return True
        usage = self._usage.search(line)
        if usage:
            self.series.memory_max("allocated", self._gib(lineno, "Max_MA", usage.group(1), usage.group(2)))
            self.series.memory_max("reserved", self._gib(lineno, "Max_CA", usage.group(3), usage.group(4)))
            return True
        return False

    def finish(self, options) -> PilotResult:
        if not options.seq_len:
            raise fail(self.path, f"DeepSpeed logs samples per second, not tokens; expected {options.seq_len_ask} "
                                  "(tokens per sample) to convert")
        r = PilotResult(self.path, self.name,
                        token_definition=f"all input tokens (samples × {options.seq_len_name} {options.seq_len})")
        r.tokens_per_second = self.series.steady(self.path, r, "throughput lines") * options.seq_len
        r.method += " (CurrSamplesPerSec × seq-len)"
        return r


class Axolotl(LineReader):
    """Trainer console dicts: `{'loss': ..., 'tokens/train_per_sec_per_gpu': ..., 'memory/max_mem_active(gib)': ...}`;
    older releases `tokens_per_second_per_gpu`. Memory keys in GiB."""

    name = "axolotl"
    signature = step_line = re.compile(r"^\{.*'(tokens/train_per_sec_per_gpu|tokens_per_second_per_gpu)'")
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
        if m.group(1) not in pairs:
            raise self.error(lineno, f"'{m.group(1)}' without a value; expected `'{m.group(1)}': NUMBER`")
        self.series.add(checked(pairs[m.group(1)], m.group(1), PER_GPU_RATE))
        for key, stat in self._memory.items():
            if key in pairs:
                self.series.memory_max(stat, checked(pairs[key], key, MEMORY, GiB))     # keys say (gib)
        return True

    def finish(self, options) -> PilotResult:
        r = PilotResult(self.path, self.name, token_definition="tokens per GPU as Axolotl's TokensPerSecondCallback counts them")
        r.tokens_per_second_per_gpu = self.series.steady(self.path, r, "log dicts")
        return r


LINE_READERS = (Torchtune, Torchtitan, Megatron, DeepSpeed, Axolotl)
