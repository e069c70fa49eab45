"""The value types of the workload format: what each field accepts, its JSON Schema, and the
message when a value is refused.

Numbers accept decimal suffixes (7B, 16k, 200M, 2T) and are held to BOUNDS (bounds.py): a
value outside cannot be meant. Messages are written for a researcher ("expected a positive
integer"); the loader adds file, line and field. schema.py builds the format's models from these.
"""

from __future__ import annotations

import datetime
import math
import re
from typing import Annotated, Literal, Union

from pydantic import BeforeValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from ..units import parse_count
from ..bounds import BOUNDS
from ..catalog.engines import ENGINE_GENERATIONS
from .text_rules import (NAME_CHARACTERS, NAME_WHY, PROSE_CHARACTERS, PROSE_WHY, TEXT_CHARACTERS,
                         TEXT_WHY, text_problem)


def describe(value: object) -> str:
    """A value as a message shows it: strings quoted, YAML's own spelling for the rest."""
    if isinstance(value, str):
        # A long text (a pasted paragraph, a 1 MB line) is quoted by its start, not whole.
        return repr(value) if len(value) <= 80 else repr(value[:60]) + f"… ({len(value):,} characters)"
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return "null (empty)"
    if isinstance(value, float):
        return str(value) if not math.isfinite(value) else f"{value:g}"
    if isinstance(value, int) and abs(value) >= 10**16:
        # Compact, as floats print (1e+300): a slip of 300 digits is not echoed back whole.
        digits = str(abs(value))
        mantissa = f"{digits[0]}.{digits[1:6]}".rstrip("0").rstrip(".")
        return f"{'-' if value < 0 else ''}{mantissa}e+{len(digits) - 1}"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return repr(value)


def _fail(what: str, value: object, expected: str) -> PydanticCustomError:
    return PydanticCustomError("pk", "{what} (got {got}, expected {expected})",
                               {"what": what, "got": describe(value), "expected": expected})


def _number(value: object, expected: str) -> float:
    try:
        return parse_count(value)
    except ValueError as reason:
        what = "not a finite number" if "finite" in str(reason) else "not a number"
        raise _fail(what, value, expected) from None


def _positive_int(value: object) -> int:
    if type(value) is int and 0 < value <= 2**53:   # the common case: exact as a float too, so the same value
        return value
    expected = "a positive integer; suffixes k, M, B, T allowed"
    number = _number(value, expected)
    if number <= 0 or number != int(number):
        raise _fail("not a positive integer", value, expected)
    return int(number)


def _range_check(name: str):
    """The check of a number within BOUNDS[name], both ends allowed (a whole number for zero_stage)."""
    bound = BOUNDS[name]

    def check(value: object):
        number = _number(value, bound.expected)
        if not bound.low <= number <= bound.high or (name == "zero_stage" and number != int(number)):
            raise _fail("out of range", value, bound.expected)
        return int(number) if name == "zero_stage" else number

    return check


def _in_range(name: str):
    """A number within BOUNDS[name], both ends allowed (a whole number for zero_stage)."""
    return BeforeValidator(_range_check(name))


AUTO = "auto"       # buffer: auto, set by the coverage its request reaches (planning/ranges.py)
_buffer_number = _range_check("buffer")


def _buffer(value: object):
    return AUTO if value == AUTO else _buffer_number(value)


def _positive_float(value: object) -> float:
    expected = "a positive number"
    number = _number(value, expected)
    if number <= 0:
        raise _fail("not a positive number", value, expected)
    return number


def _boolean(value: object) -> bool:
    if isinstance(value, bool):
        return value
    raise _fail("not a boolean", value, "true or false")


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise _fail("not text", value, "text")


def _count_or_zero(value: object) -> int:
    """A whole number from 0 (shared experts): 0 is none."""
    expected = "a whole number from 0"
    if isinstance(value, bool):
        raise _fail("not a whole number", value, expected)
    number = _number(value, expected)
    if number < 0 or number != int(number):
        raise _fail("not a whole number", value, expected)
    if number > BOUNDS["dimension"].high:
        raise _fail("implausibly large", value, BOUNDS["dimension"].expected)
    return int(number)


def _checkpointing(value: object) -> bool | str:
    """Activation checkpointing: true (full), false, or 'selective' (estimate/checkpointing.py)."""
    if isinstance(value, bool) or value == "selective":
        return value
    raise _fail("not a checkpointing setting", value, "true (full), false or selective")


def _dropout(value: object) -> bool:
    """Dropout on or off: a boolean, or the probability as Hugging Face configs give it (0 is off)."""
    if isinstance(value, bool):
        return value
    expected = "true, false, or a probability from 0 to below 1"
    number = _number(value, expected)
    if not 0 <= number < 1:
        raise _fail("out of range", value, expected)
    return number > 0


def model_reference(value: object) -> object:
    """A model field's value before its kind is told apart: a catalog or Hub id, or a mapping."""
    if isinstance(value, (str, dict)):
        return value
    raise _fail("not a model", value, "a catalog id such as 'llama-3.1-8b', a Hugging Face Hub id such as "
                                       "'Qwen/Qwen2.5-7B-Instruct', or a mapping with params, config or hf")


_COUNT_SCHEMA = {"anyOf": [{"type": "integer", "exclusiveMinimum": 0},
                           {"type": "string", "pattern": r"^\s*[0-9][0-9_]*(\.[0-9]*)?([eE][+-]?[0-9]+)?\s*[kKMBGT]?\s*$"}]}
_FLOAT_SCHEMA = {"anyOf": [{"type": "number", "exclusiveMinimum": 0},
                           {"type": "string", "pattern": r"^\s*[0-9][0-9_]*(\.[0-9]*)?([eE][+-]?[0-9]+)?\s*[kKMBGT]?\s*$"}]}

def _within(base, name: str):
    """A number checked by `base` (type and sign), then against BOUNDS[name]: a value
    outside cannot be meant (a slip of the exponent or the suffix)."""
    bound = BOUNDS[name]

    def check(value: object):
        number = base(value)
        if number > bound.high:
            raise _fail("implausibly large", value, bound.expected)
        if number < bound.low:
            raise _fail("implausibly small", value, bound.expected)
        return number

    return BeforeValidator(check)


def _capped(schema: dict, name: str) -> dict:
    return {"anyOf": [{**schema["anyOf"][0], "maximum": BOUNDS[name].high}, schema["anyOf"][1]]}


def _bounded_int(name: str):
    return Annotated[int, _within(_positive_int, name), WithJsonSchema(_capped(_COUNT_SCHEMA, name))]


Tokens = _bounded_int("tokens")
Params = _bounded_int("params")
Sequence = _bounded_int("sequence")
Samples = _bounded_int("samples")
GpuCount = _bounded_int("gpus")
Variants = _bounded_int("variants")
Concurrency = _bounded_int("concurrency")
CheckpointsRetained = _bounded_int("checkpoints_retained")
MicroBatch = _bounded_int("micro_batch")
GradientAccumulation = _bounded_int("gradient_accumulation_steps")
Batch = _bounded_int("batch")
LoraRank = _bounded_int("lora_rank")
TensorParallel = _bounded_int("tensor_parallel")
PipelineParallel = _bounded_int("pipeline_parallel")
ExpertParallel = _bounded_int("expert_parallel")
ContextParallel = _bounded_int("context_parallel")
Dimension = _bounded_int("dimension")
Requests = _bounded_int("requests")
PromptTokens = _bounded_int("sequence")
TokensPerSecond = Annotated[float, _within(_positive_float, "tokens_per_second"),
                            WithJsonSchema({"anyOf": [{"type": "number", "minimum": BOUNDS["tokens_per_second"].low},
                                                      _FLOAT_SCHEMA["anyOf"][1]]})]
PositiveFloat = Annotated[float, BeforeValidator(_positive_float), WithJsonSchema(_FLOAT_SCHEMA)]
Mfu = Annotated[float, _in_range("mfu"), WithJsonSchema({"type": "number", "minimum": BOUNDS["mfu"].low, "maximum": 1})]
Buffer = Annotated[Union[float, Literal["auto"]], BeforeValidator(_buffer),
                   WithJsonSchema({"anyOf": [{"type": "number", "minimum": 0, "maximum": 1}, {"const": AUTO}]})]
Coverage = Annotated[float, _in_range("coverage"),
                     WithJsonSchema({"type": "number", "minimum": BOUNDS["coverage"].low, "maximum": 1})]
TtftPercentile = Annotated[float, _in_range("ttft_percentile"),
                           WithJsonSchema({"type": "number", "minimum": BOUNDS["ttft_percentile"].low,
                                           "maximum": BOUNDS["ttft_percentile"].high})]
ZeroStage = Annotated[int, _in_range("zero_stage"), WithJsonSchema({"type": "integer", "minimum": 0, "maximum": 3})]
def _bounded_float(name: str):
    bound = BOUNDS[name]
    return Annotated[float, _within(_positive_float, name),
                     WithJsonSchema({"anyOf": [{"type": "number", "exclusiveMinimum": 0, "maximum": bound.high},
                                               _FLOAT_SCHEMA["anyOf"][1]]})]


RequestRate = _bounded_float("request_rate")
TtftMs = _bounded_float("ttft_ms")
TpotMs = _bounded_float("tpot_ms")
PricePerHour = _bounded_float("price_per_hour")
ServiceHours = Annotated[float, _within(_positive_float, "hours"), WithJsonSchema(_capped(_FLOAT_SCHEMA, "hours"))]
Bool = Annotated[bool, BeforeValidator(_boolean), WithJsonSchema({"type": "boolean"})]
def _checked_text(limit: int, why: str):
    """Text held to text_rules.py: no invisible character, at most `limit` characters."""
    def check(value: object) -> str:
        text = _text(value)
        problem = text_problem(text, limit, why)
        if problem is not None:
            raise _fail(problem[0], text, problem[1])
        return text
    return Annotated[str, BeforeValidator(check), WithJsonSchema({"type": "string", "maxLength": limit})]


Text = _checked_text(TEXT_CHARACTERS, TEXT_WHY)          # ids and paths
Name = _checked_text(NAME_CHARACTERS, NAME_WHY)          # a workload's or a model's name
Prose = _checked_text(PROSE_CHARACTERS, PROSE_WHY)       # title, PI, institution, description


# Fields whose values have a rule of their own.
_RELEASE = re.compile(r"\d+\.\d+(\.\d+)?")
_RELEASE_EXPECTED = "a release such as '0.6.3' or '0.10.1' (in quotes), or v0 / v1 for vLLM's engine generations"


def _engine_version(value: object) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # YAML reads 0.10 as the number 0.1: a release must be text.
        raise _fail("a number, not a release (YAML reads 0.10 as 0.1)", value, _RELEASE_EXPECTED)
    text = _text(value).strip()
    if text.lower() in ENGINE_GENERATIONS:
        return text.lower()
    if not _RELEASE.fullmatch(text.lstrip("vV")):
        raise _fail("not a release", value, _RELEASE_EXPECTED)
    return text.lstrip("vV")


EngineVersion = Annotated[str, BeforeValidator(_engine_version), WithJsonSchema(
    {"anyOf": [{"type": "string", "pattern": r"^v?\d+\.\d+(\.\d+)?$"}, {"enum": list(ENGINE_GENERATIONS)}]})]
CountOrZero = Annotated[int, BeforeValidator(_count_or_zero), WithJsonSchema({"type": "integer", "minimum": 0})]
Dropout = Annotated[bool, BeforeValidator(_dropout), WithJsonSchema(
    {"anyOf": [{"type": "boolean"}, {"type": "number", "minimum": 0, "exclusiveMaximum": 1}]})]
Checkpointing = Annotated[Union[bool, str], BeforeValidator(_checkpointing), WithJsonSchema(
    {"anyOf": [{"type": "boolean"}, {"const": "selective"}]})]
