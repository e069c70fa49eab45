"""Pilot-run logs: detect the format, stream the file, report steady-state throughput
and peak memory (`proposalkit pilot`). Formats: ../../PILOT_LOGS shapes, one reader each."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import InputError
from .checks import BadValue, check_result
from .common import ANSI, PilotResult, fail
from .documents import read_json_log
from .reading import lines
from .summaries import SUMMARY_READERS
from .training import LINE_READERS as TRAINING_READERS

LINE_READERS = TRAINING_READERS + SUMMARY_READERS

JSON_FORMATS = ("hf-trainer", "llama-factory", "vllm", "sglang", "vllm-throughput")
FORMATS = tuple(r.name for r in LINE_READERS) + JSON_FORMATS

# One search a line finds whether any reader claims it (a line of no known format, the common
# case before the format is known, costs one regex search, not one a reader).
_ANY_SIGNATURE = re.compile("|".join(f"(?:{r.signature.pattern})" for r in LINE_READERS))


@dataclass(frozen=True)
class Options:
    log_format: str | None = None
    seq_len: int | None = None
    gpus: int | None = None
    # How the user gives the sequence length, for logs that count samples: the command line's
    # option, or the workload's field when a workload names the log.
    seq_len_name: str = "--seq-len"
    seq_len_ask: str = "--seq-len N"


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


def read_log(path: str, options: Options) -> PilotResult:
    result = _read(path, lines(path), options)
    if options.gpus:
        if result.gpus and result.gpus != options.gpus:
            raise fail(path, f"--gpus {options.gpus} but the log says {result.gpus} ({result.gpus_source})")
        result.gpus, result.gpus_source = options.gpus, "--gpus"
    if result.gpus:
        if result.tokens_per_second is None and result.tokens_per_second_per_gpu is not None:
            result.tokens_per_second = result.tokens_per_second_per_gpu * result.gpus
        elif result.tokens_per_second_per_gpu is None and result.tokens_per_second is not None:
            result.tokens_per_second_per_gpu = result.tokens_per_second / result.gpus
    check_result(result)
    return result


def _read(path: str, numbered, options: Options) -> PilotResult:
    forced = options.log_format
    first, lineno = None, 0
    for lineno, line in numbered:
        if line.strip():
            first = line
            break
    if first is None:
        raise fail(path, "empty log; expected a pilot log (" + ", ".join(FORMATS) + ")")
    if forced in JSON_FORMATS or (forced is None and first.lstrip().startswith("{") and not first.lstrip().startswith("{'")):
        return read_json_log(path, first, lineno, numbered, forced, options)
    return _read_lines(path, first, lineno, numbered, forced, options)


def _read_lines(path: str, first: str, first_lineno: int, numbered, forced, options) -> PilotResult:
    readers = [cls(path) for cls in LINE_READERS]
    reader = next((r for r in readers if r.name == forced), None)
    others = _other_steps(readers, reader)
    last_line, last_consumed, lineno = "", False, first_lineno

    def all_lines():
        yield first_lineno, first
        yield from numbered

    for lineno, raw in all_lines():
        last_line = raw
        line = raw.rstrip("\r\n")
        if "\x1b" in line:
            line = ANSI.sub("", line)
        if reader is None:
            if not _ANY_SIGNATURE.search(line):
                continue
            reader = next(r for r in readers if r.claims(line))
            others = _other_steps(readers, reader)
        try:
            last_consumed = reader.feed(lineno, line)
        except ValueError:
            raise fail(path, f"not a number where a {reader.name} line has one; expected a {reader.name} log",
                       lineno) from None
        except BadValue as error:
            raise fail(path, str(error), lineno) from None
        if not last_consumed and others is not None and others.search(line):
            other = next(r for r in readers if r is not reader and r.step_line is not None and r.step_line.search(line))
            raise fail(path, f"mixed formats: a {other.name} step line in a {reader.name} log; "
                             f"expected one log per file", lineno)
    if reader is None:
        raise fail(path, "unknown log format: no line of a known format; expected one of "
                         + ", ".join(FORMATS) + " (or name it with --log-format)")
    if last_consumed and not last_line.endswith("\n"):
        raise fail(path, "truncated log: the last step line ends without a newline; expected complete lines", lineno)
    try:
        return reader.finish(options)
    except BadValue as error:
        raise fail(path, str(error)) from None


def _other_steps(readers, reader) -> re.Pattern | None:
    """One pattern for the step lines of every format but `reader`'s (a mixed log)."""
    if reader is None:
        return None
    patterns = [r.step_line.pattern for r in readers if r is not reader and r.step_line is not None]
    return re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None
