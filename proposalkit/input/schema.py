"""The workload file format (CONTRACT.md) as typed models; unknown keys are errors.

The same models generate `proposalkit schema` (JSON Schema for editors).
What each value accepts, with its bounds and the message when it is refused,
is values.py; the loader adds file, line and field.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag, WithJsonSchema
from pydantic_core import PydanticCustomError

from ..catalog.modules import LORA_TARGETS, LoraSpec
from ..options import (  # one home, below the schema and the estimates
    INFERENCE_ATTENTION, LOSSES, OPTIMIZERS, PRECISIONS, TRAINING_METHODS as METHODS,
)
from ..knobs import KNOBS, default
from .frameworks import FRAMEWORKS
from .values import (
    Batch, Bool, Buffer, Checkpointing, CheckpointsRetained, Concurrency, ContextParallel, CountOrZero, Coverage, Dimension,
    Dropout, ExpertParallel, GpuCount, GradientAccumulation, LoraRank, Mfu, MicroBatch, Name, Params, PipelineParallel,
    PositiveFloat, PricePerHour, PromptTokens, Prose, RequestRate, Requests, Samples, Sequence, ServiceHours, TensorParallel, Text,
    Tokens, TokensPerSecond, TpotMs, TtftMs, TtftPercentile, Variants, EngineVersion, ZeroStage, model_reference,
)

KINDS = ("finetune", "pretrain", "inference")
TRACKS = ("startup", "standard")
ACCESS_TIERS = ("explore", "discover", "accelerate")    # resources.yaml access_credit_tiers (a test holds them equal)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _knob(name: str, value: object = None):
    """The field of a planning knob (proposalkit/knobs.py): described by the table's meaning; unset (None:
    the planner's default applies) unless a section states the default itself."""
    return Field(value, description=KNOBS[name].meaning)


class Proposal(_Strict):
    """Title block of the report."""

    title: Prose | None = Field(None, description="Proposal title, shown on the report's title block.")
    pi: Prose | None = Field(None, description="Principal investigator.")
    institution: Prose | None = Field(None, description="Institution, shown on the report's title block.")
    resource: Text | None = Field(None, description="Target resource (catalog id): limits the GPU choice and sets the units.")
    track: Literal[TRACKS] | None = Field(None, description="NAIRR track: startup or standard (caps and warnings differ).")
    access_tier: Literal[ACCESS_TIERS] | None = Field(
        None, description="ACCESS project type the request is for: explore, discover or accelerate (credit limits).")
    price_per_hour: PricePerHour | None = _knob("price_per_hour")
    date: Text | None = Field(None, description="Shown on the report only when given (reproducible builds).")


class ModelShape(_Strict):
    """A model not in the catalog: a parameter count, a shape, a local Hugging Face config.json, or a Hub id."""

    name: Name | None = Field(None, description="Name shown in the plan and the report (default: custom; a config.json's "
                                                "folder name).")
    params: Params | None = Field(None, description="Total parameters, e.g. 7B. Alone, the shape is assumed (and "
                                                      "stated): the nearest-sized catalog model of the family, else "
                                                      "the nearest standard decoder (Pythia, Megatron-LM tables).")
    family: Text | None = Field(None, description="With params alone: the catalog family whose nearest-sized model "
                                                  "lends its shape (a catalog id without its size: llama-3.1, "
                                                  "qwen2.5, gemma-2; or llama for every Llama). Default: the family "
                                                  "the name starts with, if any.")
    layers: Dimension | None = Field(None, description="Transformer blocks (config.json num_hidden_layers).")
    hidden: Dimension | None = Field(None, description="Model width (hidden_size).")
    heads: Dimension | None = Field(None, description="Attention heads (num_attention_heads).")
    kv_heads: Dimension | None = Field(
        None, description="Key/value heads of grouped-query attention (num_key_value_heads). Default: heads.")
    head_dim: Dimension | None = Field(None, description="Width of one attention head. Default: hidden ÷ heads.")
    ffn_hidden: Dimension | None = Field(None, description="MLP inner width (intermediate_size). Default: 4 × hidden.")
    vocab: Dimension | None = Field(None, description="Vocabulary size (vocab_size).")
    max_context: Sequence | None = Field(
        None, description="Longest sequence the model takes (max_position_embeddings): an inference workload's "
                          "tokens must fit it, and it caps the default training seq_len.")
    tied_embeddings: Bool | None = Field(
        None, description="The input embedding and the output projection share one matrix (tie_word_embeddings).")
    mlp: Literal["gated", "plain"] | None = Field(
        None, description="gated: gate, up, down (SwiGLU, GeGLU); plain: up, down (GELU, ReLU). Default: gated "
                          "when ffn_hidden is given, else plain (the GPT block).")
    experts: Dimension | None = Field(None, description="Mixture of experts: routed experts per layer.")
    experts_per_token: Dimension | None = Field(None, description="Mixture of experts: routed experts a token visits.")
    moe_ffn_hidden: Dimension | None = Field(None, description="One routed expert's inner width (default ffn_hidden).")
    shared_experts: CountOrZero | None = Field(None, description="Experts every token visits (DeepSeek, Qwen2-MoE).")
    dropout: Dropout | None = Field(None, description="Dropout in training: true/false, or the probability (0 is none).")
    config: Text | None = Field(None, description="Path to a local Hugging Face config.json, relative to this file.")
    hf: Text | None = Field(None, description="Hugging Face Hub id (ORG/NAME) whose config.json is fetched and cached.")
    revision: Text | None = Field(None, description="Branch, tag or commit of the Hub id (default: its main branch).")


def _model_kind(value: object) -> str:
    return "shape" if isinstance(value, (dict, ModelShape)) else "id"


# A catalog id or a mapping; the discriminator keeps a bad mapping's errors
# from also reporting "not a string".
ModelRef = Annotated[
    Union[Annotated[str, Tag("id")], Annotated[ModelShape, Tag("shape")]],
    Discriminator(_model_kind),
    BeforeValidator(model_reference),
]

UNION_TAGS = ("id", "shape", "one", "several", "count", "spread")


class Data(_Strict):
    """tokens = samples × seq_len × epochs."""

    samples: Samples = Field(description="Training samples (sequences).")
    seq_len: Sequence = Field(description="Tokens per sample; also the workload's seq_len unless it sets one.")
    epochs: PositiveFloat = Field(1, description="Passes over the samples (a fraction allowed).")


class Throughput(_Strict):
    """A measured pilot: tokens per second on `gpus` GPUs of type `gpu` (all GPUs together)."""

    tokens_per_second: TokensPerSecond = Field(
        description="Measured tokens per second of the whole job (all its GPUs together); for batch inference, "
                    "output tokens per second.")
    gpu: Text = Field(description="GPU type it ran on (catalog id).")
    gpus: GpuCount = Field(1, description="GPUs it ran on.")


class Pilot(_Strict):
    """A pilot run's log (`proposalkit pilot` formats), and what the log does not say: its GPU type and count."""

    log: Text = Field(description="Path to the log, relative to this workload file.")
    gpu: Text | None = Field(None, description="GPU type the pilot ran on (catalog id); no log names it.")
    gpus: GpuCount | None = Field(None, description="GPUs the pilot ran on, where the log does not say; "
                                                    "must equal the log's count where it does.")
    illustrative: Bool = Field(False, description="The log is an illustration, not a measurement (an example "
                                                  "proposal's): every document that uses it says so.")


def _pilot_kind(value: object) -> str:
    return "several" if isinstance(value, (list, tuple)) else "one"


# One pilot as a mapping, or several (two GPU counts give the scaling efficiency) as a list;
# the discriminator keeps a bad mapping's errors from also reporting "not a list".
PilotRef = Annotated[
    Union[Annotated[Pilot, Tag("one")], Annotated[list[Pilot], Tag("several")]],
    Discriminator(_pilot_kind),
]


def _lora_targets(targets: list) -> list:
    if not targets:
        raise PydanticCustomError("pk", "empty list (expected at least one module: {modules}, or all-linear)",
                                  {"modules": ", ".join(LORA_TARGETS[:-1])})
    if "all-linear" in targets and len(targets) > 1:
        raise PydanticCustomError("pk", "'all-linear' already names every linear module (got [{got}]; expected "
                                        "all-linear alone, or module names without it)",
                                  {"got": ", ".join(targets)})
    return targets


def _one_or_list(value: object) -> object:
    """PEFT's spelling: target_modules="all-linear" is a plain string; a string is a one-item list."""
    return [value] if isinstance(value, str) else value


class Lengths(_Strict):
    """A batch job's request lengths that vary: their mean, and the median and/or 99th percentile (a lognormal is
    fitted to them; estimate/lengths.py)."""

    mean: PromptTokens = Field(description="Mean tokens per request (the job's token count is requests × mean).")
    p50: PromptTokens | None = Field(None, description="Median tokens per request (at most the mean).")
    p99: PromptTokens | None = Field(None, description="99th percentile of tokens per request.")


def _length_kind(value: object) -> str:
    return "spread" if isinstance(value, dict) else "count"


# input_tokens / output_tokens: one number, or a mapping read as a distribution; the mapping's shape picks which, so
# an error names the one the user meant (not both branches of the union).
TokenLengths = Annotated[
    Union[Annotated[PromptTokens, Tag("count")], Annotated[Lengths, Tag("spread")]],
    Discriminator(_length_kind),
]


class Lora(_Strict):
    """LoRA adapters (method lora or qlora): their rank and the modules they adapt."""

    rank: LoraRank = Field(LoraSpec.rank, description="Adapter rank r.")   # one home: the estimate's default
    targets: Annotated[list[Text], BeforeValidator(_one_or_list),
                       AfterValidator(_lora_targets),
                       WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
                                       "description": "Module names of the model (q_proj, ...; GPT-2: c_attn, ...), "
                                                      "or all-linear"})] | None = Field(
        None, description="Default: the attention projections, in the model's module names (q_proj, k_proj, "
                          "v_proj, o_proj; GPT-2's c_attn).")


class Offload(_Strict):
    """What leaves the GPU for host memory (ZeRO-Offload / ZeRO-Infinity, FSDP CPUOffload)."""

    optimizer: Literal["cpu"] | None = _knob("offload_optimizer")
    params: Literal["cpu"] | None = _knob("offload_params")


class Storage(_Strict):
    """Checkpointing policy (storage section of the report)."""

    checkpoints_retained: CheckpointsRetained = _knob("checkpoints_retained", default("checkpoints_retained"))


KIND_TEXT = ("finetune (from a pretrained model), pretrain (from scratch) or inference (a batch job or a "
             "service).")
MODEL_TEXT = ("Catalog id (proposalkit catalog models), Hugging Face Hub id (ORG/NAME), or a mapping: a "
              "parameter count, a shape, a local config.json or a Hub id with its revision.")


class WorkloadFields(_Strict):
    """Every field a workload (or `defaults`) may set."""

    kind: Literal[KINDS] | None = Field(None, description=KIND_TEXT)
    method: Literal[METHODS] | None = Field(
        None, description="Required for finetune: full (every weight), lora (adapters on a 16-bit base) or qlora "
                          "(adapters on a 4-bit NF4 base); pretrain is always full.")
    model: ModelRef | None = Field(None, description=MODEL_TEXT)
    description: Prose | None = Field(None, description="One line on what the workload is for (shown in the report).")
    data: Data | None = Field(None, description="Training data, instead of tokens: tokens = samples × seq_len × epochs.")
    tokens: Tokens | None = Field(None, description="Training tokens of one variant, all epochs; or batch-inference tokens.")
    throughput: Throughput | None = Field(
        None, description="A measured rate without its log: replaces the FLOPs estimate (keep pilot: instead to "
                          "cite the log).")
    pilot: PilotRef | None = Field(
        None, description="Pilot-run log(s): {log, gpu, gpus}, or a list of them; the measured throughput replaces "
                          "the estimate and the measured peak memory is compared with it.")
    extrapolation: Prose | None = Field(
        None, description="How the pilot's measurement carries over to the GPU type planned when that is another "
                          "(e.g. a published speed ratio of the two GPUs for this kind of job, with its source), "
                          "shown in the report beside the extrapolated throughput; `proposalkit check --review` "
                          "asks for it.")
    variants: Variants | None = _knob("variants")
    gpu: Text | None = Field(None, description="Pin a GPU type (catalog id: proposalkit catalog gpus); else the "
                                               "planner chooses.")
    gpus: GpuCount | None = Field(None, description="Pin the GPU count of one run; else the planner chooses.")
    precision: Literal[PRECISIONS] | None = _knob("precision")
    buffer: Buffer | None = _knob("buffer")
    buffer_reason: Prose | None = _knob("buffer_reason")
    coverage: Coverage | None = _knob("coverage")
    seq_len: Sequence | None = _knob("seq_len")
    micro_batch: MicroBatch | None = _knob("micro_batch")
    gradient_accumulation_steps: GradientAccumulation | None = _knob("gradient_accumulation_steps")
    zero_stage: ZeroStage | None = _knob("zero_stage")
    tensor_parallel: TensorParallel | None = _knob("tensor_parallel")
    pipeline_parallel: PipelineParallel | None = _knob("pipeline_parallel")
    expert_parallel: ExpertParallel | None = _knob("expert_parallel")
    context_parallel: ContextParallel | None = _knob("context_parallel")
    activation_checkpointing: Checkpointing | None = _knob("activation_checkpointing")
    activation_offload: Bool | None = _knob("activation_offload")
    flash_attention: Bool | None = _knob("flash_attention")
    compile: Bool | None = _knob("compile")
    attention: Literal[INFERENCE_ATTENTION] | None = _knob("attention")
    loss: Literal[LOSSES] | None = _knob("loss")
    optimizer: Literal[OPTIMIZERS] | None = _knob("optimizer")
    mixed_precision: Bool | None = _knob("mixed_precision")
    optimizer_in_backward: Bool | None = _knob("optimizer_in_backward")
    offload: Offload | None = Field(None, description="Training: what leaves the GPU for host memory.")
    lora: Lora | None = _knob("lora")
    mfu: Mfu | None = Field(
        None, description="Model-FLOPs utilization when no pilot is given, taken as measured with this workload's "
                          "checkpointing. Default: the planner's, from published runs (the plan states it).")
    context: Sequence | None = _knob("context")
    batch: Batch | None = _knob("batch")
    hours: ServiceHours | None = Field(
        None, description="Inference service: wall-clock hours kept up (GPU-hours = its GPUs × hours).")
    requests: Requests | None = Field(
        None, description="Batch inference: prompts to answer (each input_tokens long, generating output_tokens).")
    input_tokens: TokenLengths | None = Field(
        None, description="Inference: prompt tokens per request; for a batch job whose prompts vary, "
                          "{mean, p50, p99} (the spread costs: estimate/lengths.py).")
    output_tokens: TokenLengths | None = Field(
        None, description="Inference: generated tokens per request; for a batch job whose outputs vary, "
                          "{mean, p50, p99} (the spread costs: estimate/lengths.py).")
    request_rate: RequestRate | None = Field(
        None, description="Inference service: requests per second to sustain (with hours kept up).")
    ttft_ms: TtftMs | None = Field(None, description="Inference service: time to first token target, milliseconds.")
    tpot_ms: TpotMs | None = Field(None, description="Inference service: time per output token target, milliseconds.")
    ttft_percentile: TtftPercentile | None = _knob("ttft_percentile")
    engine_version: EngineVersion | None = _knob("engine_version")
    resource: Text | None = Field(None, description="Target resource for this workload (overrides proposal.resource).")
    price_per_hour: PricePerHour | None = _knob("price_per_hour")
    concurrency: Concurrency | None = _knob("concurrency")
    storage: Storage | None = Field(None, description="Checkpoints kept on scratch (the storage estimate).")
    framework: Literal[FRAMEWORKS] | None = _knob("framework")


NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]*$"


class Workload(WorkloadFields):
    """One job, or one set of identical jobs (variants), to plan."""

    name: Annotated[Name, Field(pattern=NAME_PATTERN)] = Field(description="Unique id: lower-case letters, digits, - and _.")
    kind: Literal[KINDS] = Field(description=KIND_TEXT)
    model: ModelRef = Field(description=MODEL_TEXT)
    jobs: Text | None = Field(
        None, description="After the award (proposalkit usage): the job names of this workload in the job "
                          "accounting, a glob (* any text, ? one character, [ab] one of them; case-sensitive), "
                          "e.g. lora-sweep-*. Default: jobs named as the workload.")


class WorkloadFile(_Strict):
    proposal: Proposal | None = Field(None, description="The request's title block and target resource.")
    defaults: WorkloadFields | None = Field(
        None, description="Fields every workload takes unless it sets them (any workload field but name).")
    workloads: list[Workload] = Field(min_length=1, description="The workloads to plan, at least one.")


def json_schema() -> dict:
    schema = WorkloadFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "proposalkit workload file"
    return schema
