"""Pilot-run logs: detect the format, stream the file, report steady-state throughput
and peak memory (`proposalkit pilot`). Formats: ../../PILOT_LOGS shapes, one reader each."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..errors import InputError
from ..files import Refused, open_regular
from .common import ANSI, PilotResult, fail
from .documents import MAX_DOCUMENT_CHARS, read_json_log
from .summaries import SUMMARY_READERS
from .training import LINE_READERS as TRAINING_READERS

LINE_READERS = TRAINING_READERS + SUMMARY_READERS

JSON_FORMATS = ("hf-trainer", "llama-factory", "vllm", "sglang", "vllm-throughput")
FORMATS = tuple(r.name for r in LINE_READERS) + JSON_FORMATS


@dataclass(frozen=True)
class Options:
    log_format: str | None = None
    seq_len: int | None = None
    gpus: int | None = None


def read_logs(paths: list[str], options: Options) -> list[PilotResult]:
    """Every log read; all their problems raised together (exit 2, nothing printed)."""
    results, problems = [], []
    for path in paths:
        try:
            results.append(read_log(path, options))
        except InputError as error:
            problems += error.problems
    if problems:
        raise InputError(problems)
    return results


# The longest line a log may have: one JSON document or JSON line is capped the same
# (documents.MAX_DOCUMENT_CHARS); a longer line without a newline is not a log, and reading it
# whole would not be bounded memory.
MAX_LINE_CHARS = MAX_DOCUMENT_CHARS


def _bounded_lines(path: str, handle):
    """The handle's lines, each read up to MAX_LINE_CHARS; a longer one is an input error."""
    lineno = 0
    while True:
        line = handle.readline(MAX_LINE_CHARS)
        if not line:
            return
        lineno += 1
        if len(line) == MAX_LINE_CHARS and not line.endswith("\n"):
            raise fail(path, f"a line longer than {MAX_LINE_CHARS:,} characters; expected a text log", lineno)
        yield line


def read_log(path: str, options: Options) -> PilotResult:
    try:
        fd, _ = open_regular(path, "a pilot log file")
        with os.fdopen(fd, encoding="utf-8", errors="replace") as handle:
            result = _read(path, _bounded_lines(path, handle), options)
    except Refused as error:
        raise fail(path, str(error)) from None
    except IsADirectoryError:
        raise fail(path, "is a directory; expected a pilot log file") from None
    except OSError as error:
        raise fail(path, f"cannot read ({error.strerror}); expected a readable pilot log file") from None
    if options.gpus:
        if result.gpus and result.gpus != options.gpus:
            raise fail(path, f"--gpus {options.gpus} but the log says {result.gpus} ({result.gpus_source})")
        result.gpus, result.gpus_source = options.gpus, "--gpus"
    if result.gpus:
        if result.tokens_per_second is None and result.tokens_per_second_per_gpu is not None:
            result.tokens_per_second = result.tokens_per_second_per_gpu * result.gpus
        elif result.tokens_per_second_per_gpu is None and result.tokens_per_second is not None:
            result.tokens_per_second_per_gpu = result.tokens_per_second / result.gpus
    return result


def _numbered(handle, start: int):
    for lineno, line in enumerate(handle, start):
        yield lineno, line


def _read(path: str, handle, options: Options) -> PilotResult:
    forced = options.log_format
    first, lineno = None, 0
    for lineno, line in enumerate(handle, 1):
        if line.strip():
            first = line
            break
    if first is None:
        raise fail(path, "empty log; expected a pilot log (" + ", ".join(FORMATS) + ")")
    if forced in JSON_FORMATS or (forced is None and first.lstrip().startswith("{") and not first.lstrip().startswith("{'")):
        return read_json_log(path, first, _numbered(handle, lineno + 1), forced, options)
    return _read_lines(path, first, lineno, handle, forced, options)


def _read_lines(path: str, first: str, first_lineno: int, handle, forced, options) -> PilotResult:
    readers = [cls(path) for cls in LINE_READERS]
    reader = next((r for r in readers if r.name == forced), None)
    last_line, last_consumed, lineno = "", False, first_lineno

    def lines():
        yield first_lineno, first
        yield from _numbered(handle, first_lineno + 1)

    for lineno, raw in lines():
        last_line = raw
        line = raw.rstrip("\r\n")
        if "\x1b" in line:
            line = ANSI.sub("", line)
        if reader is None:
            reader = next((r for r in readers if r.claims(line)), None)
            if reader is None:
                continue
        try:
            last_consumed = reader.feed(lineno, line)
        except ValueError:
            raise fail(path, f"not a number where a {reader.name} line has one; expected a {reader.name} log",
                       lineno) from None
        if not last_consumed:
            other = next((r for r in readers if r is not reader and r.step(line)), None)
            if other is not None:
                raise fail(path, f"mixed formats: a {other.name} step line in a {reader.name} log; "
                                 f"expected one log per file", lineno)
    if reader is None:
        raise fail(path, "unknown log format: no line of a known format; expected one of "
                         + ", ".join(FORMATS) + " (or name it with --log-format)")
    if last_consumed and not last_line.endswith("\n"):
        raise fail(path, "truncated log: the last step line ends without a newline; expected complete lines", lineno)
    return reader.finish(options)
