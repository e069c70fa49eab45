"""The workload file format (CONTRACT.md) as typed models; unknown keys are errors.

The same models generate `proposalkit schema` (JSON Schema for editors).
Numbers accept decimal suffixes (7B, 16k, 200M, 2T); validation messages are
written for a researcher ("expected a positive integer") and the loader adds
file, line and field.
"""

from __future__ import annotations

import datetime
import math
from typing import Annotated, Literal, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag, WithJsonSchema
from pydantic_core import PydanticCustomError

from ..estimate.lora import LORA_TARGETS
from ..estimate.precision import OPTIMIZERS, PRECISIONS, TRAINING_METHODS as METHODS  # one home: the estimates
from ..units import parse_count

KINDS = ("finetune", "pretrain", "inference")
TRACKS = ("startup", "standard")
ACCESS_TIERS = ("explore", "discover", "accelerate")    # resources.yaml access_credit_tiers (a test holds them equal)


def describe(value: object) -> str:
    """A value as a message shows it: strings quoted, YAML's own spelling for the rest."""
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return "null (empty)"
    if isinstance(value, float):
        return str(value) if not math.isfinite(value) else f"{value:g}"
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
    expected = "a positive integer; suffixes k, M, B, T allowed"
    number = _number(value, expected)
    if number <= 0 or number != int(number):
        raise _fail("not a positive integer", value, expected)
    return int(number)


def _non_negative_int(value: object) -> int:
    expected = "an integer from 0 to 3"
    number = _number(value, expected)
    if not 0 <= number <= 3 or number != int(number):
        raise _fail("out of range", value, expected)
    return int(number)


def _positive_float(value: object) -> float:
    expected = "a positive number"
    number = _number(value, expected)
    if number <= 0:
        raise _fail("not a positive number", value, expected)
    return number


def _fraction(value: object) -> float:
    expected = "a fraction above 0 and at most 1, e.g. 0.40"
    number = _number(value, expected)
    if not 0 < number <= 1:
        raise _fail("out of range", value, expected)
    return number


def _buffer(value: object) -> float:
    expected = "a fraction from 0 to 1; 0.30 adds 30%"
    number = _number(value, expected)
    if not 0 <= number <= 1:
        raise _fail("out of range", value, expected)
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


def _model_ref(value: object) -> object:
    if isinstance(value, (str, dict)):
        return value
    raise _fail("not a model", value, "a catalog id such as 'llama-3.1-8b', or a mapping with params or config")


_COUNT_SCHEMA = {"anyOf": [{"type": "integer", "exclusiveMinimum": 0},
                           {"type": "string", "pattern": r"^\s*[0-9][0-9_]*(\.[0-9]*)?([eE][+-]?[0-9]+)?\s*[kKMBGT]?\s*$"}]}
_FLOAT_SCHEMA = {"anyOf": [{"type": "number", "exclusiveMinimum": 0},
                           {"type": "string", "pattern": r"^\s*[0-9][0-9_]*(\.[0-9]*)?([eE][+-]?[0-9]+)?\s*[kKMBGT]?\s*$"}]}

PositiveInt = Annotated[int, BeforeValidator(_positive_int), WithJsonSchema(_COUNT_SCHEMA)]


def _at_most(base, maximum: float, expected: str):
    """A positive number no larger than `maximum`: beyond it a value cannot be meant
    (a slip of the exponent or the suffix), and would print as nonsense in a proposal."""

    def check(value: object):
        number = base(value)
        if number > maximum:
            raise _fail("implausibly large", value, expected)
        return number

    return BeforeValidator(check)


def _capped(schema: dict, maximum: float) -> dict:
    return {"anyOf": [{**schema["anyOf"][0], "maximum": maximum}, schema["anyOf"][1]]}


# Upper bounds, each far above anything published, so they only catch slips:
# Llama 3 was pretrained on 15.6T tokens (Dubey et al. 2024) and the largest
# published models are near 2T parameters; context windows reach 10M tokens
# (Llama 4 Scout); the largest GPU clusters hold about 10^5 GPUs; a service
# kept up for a decade is a slip (a request longer than its allocation period
# is a calendar warning, since ACCESS projects can run as long as their grant).
MAX_TOKENS = 10**15
MAX_PARAMS = 10**14
MAX_SEQUENCE = 10**8
MAX_GPUS = 10**6
MAX_HOURS = 10**5
Tokens = Annotated[int, _at_most(_positive_int, MAX_TOKENS, "at most 10^15 tokens, 64× the 15.6T Llama 3 was "
                                                             "pretrained on; check the suffix: k, M, B, T"),
                   WithJsonSchema(_capped(_COUNT_SCHEMA, MAX_TOKENS))]
Params = Annotated[int, _at_most(_positive_int, MAX_PARAMS, "at most 10^14 parameters, 50× the largest published "
                                                             "models; check the suffix: M, B, T"),
                   WithJsonSchema(_capped(_COUNT_SCHEMA, MAX_PARAMS))]
Sequence = Annotated[int, _at_most(_positive_int, MAX_SEQUENCE, "at most 10^8 tokens per sequence, 10× the longest "
                                                                 "published context window"),
                     WithJsonSchema(_capped(_COUNT_SCHEMA, MAX_SEQUENCE))]
Samples = Annotated[int, _at_most(_positive_int, MAX_TOKENS, "at most 10^15 samples; check the suffix: k, M, B, T"),
                    WithJsonSchema(_capped(_COUNT_SCHEMA, MAX_TOKENS))]
GpuCount = Annotated[int, _at_most(_positive_int, MAX_GPUS, "at most 10^6 GPUs, 10× the largest clusters"),
                     WithJsonSchema(_capped(_COUNT_SCHEMA, MAX_GPUS))]
NonNegativeInt = Annotated[int, BeforeValidator(_non_negative_int), WithJsonSchema({"type": "integer", "minimum": 0})]
PositiveFloat = Annotated[float, BeforeValidator(_positive_float), WithJsonSchema(_FLOAT_SCHEMA)]
Fraction01 = Annotated[float, BeforeValidator(_fraction), WithJsonSchema({"type": "number", "exclusiveMinimum": 0, "maximum": 1})]
Buffer = Annotated[float, BeforeValidator(_buffer), WithJsonSchema({"type": "number", "minimum": 0, "maximum": 1})]
ZeroStage = Annotated[int, BeforeValidator(_non_negative_int), WithJsonSchema({"type": "integer", "minimum": 0, "maximum": 3})]
ServiceHours = Annotated[float, _at_most(_positive_float, MAX_HOURS, "at most 100,000 hours, 11 years kept up; "
                                                                     "use variants for several services"),
                         WithJsonSchema(_capped(_FLOAT_SCHEMA, MAX_HOURS))]
Bool = Annotated[bool, BeforeValidator(_boolean), WithJsonSchema({"type": "boolean"})]
Text = Annotated[str, BeforeValidator(_text), WithJsonSchema({"type": "string"})]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Proposal(_Strict):
    """Title block of the report."""

    title: Text | None = Field(None, description="Proposal title, shown on the report's title block.")
    pi: Text | None = Field(None, description="Principal investigator.")
    institution: Text | None = None
    resource: Text | None = Field(None, description="Target resource (catalog id): limits the GPU choice and sets the units.")
    track: Literal[TRACKS] | None = Field(None, description="NAIRR track: startup or standard (caps and warnings differ).")
    access_tier: Literal[ACCESS_TIERS] | None = Field(
        None, description="ACCESS project type the request is for: explore, discover or accelerate (credit limits).")
    date: Text | None = Field(None, description="Shown on the report only when given (reproducible builds).")


class ModelShape(_Strict):
    """A model not in the catalog: a parameter count, a shape, or a local Hugging Face config.json."""

    name: Text | None = None
    params: Params | None = Field(None, description="Total parameters, e.g. 7B.")
    layers: PositiveInt | None = None
    hidden: PositiveInt | None = None
    heads: PositiveInt | None = None
    kv_heads: PositiveInt | None = None
    head_dim: PositiveInt | None = None
    ffn_hidden: PositiveInt | None = None
    vocab: PositiveInt | None = None
    max_context: Sequence | None = None
    tied_embeddings: Bool | None = None
    mlp: Literal["swiglu", "gelu"] | None = None
    config: Text | None = Field(None, description="Path to a local Hugging Face config.json, relative to this file.")


def _model_kind(value: object) -> str:
    return "shape" if isinstance(value, (dict, ModelShape)) else "id"


# A catalog id or a mapping; the discriminator keeps a bad mapping's errors
# from also reporting "not a string".
ModelRef = Annotated[
    Union[Annotated[str, Tag("id")], Annotated[ModelShape, Tag("shape")]],
    Discriminator(_model_kind),
    BeforeValidator(_model_ref),
]

UNION_TAGS = ("id", "shape")


class Data(_Strict):
    """tokens = samples × seq_len × epochs."""

    samples: Samples
    seq_len: Sequence
    epochs: PositiveFloat = 1


class Throughput(_Strict):
    """A measured pilot: tokens per second on `gpus` GPUs of type `gpu` (all GPUs together)."""

    tokens_per_second: PositiveFloat
    gpu: Text
    gpus: GpuCount = 1


class Lora(_Strict):
    rank: PositiveInt = 16
    targets: list[Literal[LORA_TARGETS]] = Field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])


class Storage(_Strict):
    """Checkpointing policy (storage section of the report)."""

    checkpoints_retained: PositiveInt = Field(3, description="Checkpoints kept on scratch per run.")


class WorkloadFields(_Strict):
    """Every field a workload (or `defaults`) may set."""

    kind: Literal[KINDS] | None = Field(None, description="finetune | pretrain | inference")
    method: Literal[METHODS] | None = Field(None, description="full | lora | qlora (pretrain is always full)")
    model: ModelRef | None = Field(None, description="Catalog id (proposalkit catalog models) or a mapping.")
    description: Text | None = Field(None, description="One line on what the workload is for (shown in the report).")
    data: Data | None = None
    tokens: Tokens | None = Field(None, description="Training tokens of one variant, all epochs; or batch-inference tokens.")
    throughput: Throughput | None = None
    variants: PositiveInt | None = Field(None, description="Independent repeats (sweeps, seeds, ablations).")
    gpu: Text | None = Field(None, description="Pin a GPU type (catalog id).")
    gpus: GpuCount | None = Field(None, description="Pin the GPU count.")
    precision: Literal[PRECISIONS] | None = None
    buffer: Buffer | None = Field(None, description="Contingency added to GPU-hours (default 0.30).")
    seq_len: Sequence | None = None
    micro_batch: PositiveInt | None = None
    zero_stage: ZeroStage | None = None
    tensor_parallel: PositiveInt | None = None
    pipeline_parallel: PositiveInt | None = None
    activation_checkpointing: Bool | None = None
    flash_attention: Bool | None = None
    optimizer: Literal[OPTIMIZERS] | None = None
    lora: Lora | None = None
    mfu: Fraction01 | None = Field(None, description="Model-FLOPs utilization when no pilot is given.")
    context: Sequence | None = Field(None, description="Inference: tokens per sequence.")
    batch: PositiveInt | None = Field(None, description="Inference: concurrent sequences.")
    hours: ServiceHours | None = Field(None, description="Inference service: wall-clock hours kept up.")
    resource: Text | None = Field(None, description="Target resource for this workload (overrides proposal.resource).")
    concurrency: PositiveInt | None = Field(None, description="Runs of this workload at once.")
    storage: Storage | None = None


NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]*$"


class Workload(WorkloadFields):
    name: Annotated[Text, Field(pattern=NAME_PATTERN)] = Field(description="Unique id: lower-case letters, digits, - and _.")
    kind: Literal[KINDS] = Field(description="finetune | pretrain | inference")
    model: ModelRef = Field(description="Catalog id (proposalkit catalog models) or a mapping.")


class WorkloadFile(_Strict):
    proposal: Proposal | None = None
    defaults: WorkloadFields | None = None
    workloads: list[Workload] = Field(min_length=1)


def json_schema() -> dict:
    schema = WorkloadFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "proposalkit workload file"
    return schema
