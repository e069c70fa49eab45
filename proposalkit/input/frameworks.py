"""`framework:` presets: the defaults each framework's standard recipe uses, read from its source.

A preset fills only the fields a workload leaves unset. Precedence: the workload's own field, then
`defaults:` (merged into the workload before validation, so it counts as the workload's), then the
framework's preset, then the planner's documented default. Every default a preset fills is stated
as an assumption with its source; so is each setting of the recipe that the planner's own default
already matches (the reader sees the framework was taken into account, not ignored).

One table: PRESETS. Each entry is a field, its value, the source (repository @ commit, file, the
setting) and, where the recipe differs by method, the methods it applies to.
"""

from __future__ import annotations

from dataclasses import dataclass

# Training frameworks a workload may name (CONTRACT.md, `framework`).
TRAINING_FRAMEWORKS = ("hf-trainer", "torchtune", "torchtitan", "deepspeed", "megatron", "axolotl", "llama-factory")
# Inference engines of the contract; accepted once their effect is modelled (issue 13). Until then a
# workload naming one gets an input error saying so, never a field accepted that does nothing.
INFERENCE_ENGINES: tuple[str, ...] = ()
PLANNED_ENGINES = ("vllm", "sglang", "trt-llm", "hf")
FRAMEWORKS = TRAINING_FRAMEWORKS + INFERENCE_ENGINES

TORCHTUNE = "pytorch/torchtune @ bd2a0fc7c"
TORCHTITAN = "pytorch/torchtitan @ 9dec370 (the commit of its Dec 2024 H100 benchmarks)"
TRANSFORMERS = "huggingface/transformers TrainingArguments"
AXOLOTL = "axolotl-ai-cloud/axolotl @ 067b021c8"
LLAMA_FACTORY = "hiyouga/LLaMA-Factory @ ff6d4d12e"
MEGATRON = "NVIDIA/Megatron-LM @ d98e8a64d"
HF_LOSS = ("huggingface/transformers @ d0fed636 src/transformers/loss/loss_utils.py ForCausalLMLoss: "
           "logits.float() then cross_entropy")


@dataclass(frozen=True)
class PresetDefault:
    field: str
    value: object
    source: str
    methods: tuple[str, ...] = ("full", "lora", "qlora")   # the training methods the recipe setting covers


@dataclass(frozen=True)
class Matches:
    """A recipe setting the planner's own default already follows (stated, nothing filled in)."""

    text: str
    source: str


PRESETS: dict[str, tuple[PresetDefault, ...]] = {
    "torchtune": (
        PresetDefault("loss", "chunked",
                      f"{TORCHTUNE} recipes/configs/llama3_1/*.yaml: loss LinearCrossEntropyLoss (8 chunks, each "
                      "projected and upcast in turn; its 2024 configs used CEWithChunkedOutputLoss, the chunked "
                      "loss as counted; LinearCrossEntropyLoss also drops the 16-bit logits, ≈2 B per logit less)"),
        PresetDefault("activation_checkpointing", True,
                      f"{TORCHTUNE} recipes/configs/llama3_1/8B_full_single_device.yaml, 8B_lora_single_device.yaml, "
                      "8B_qlora_single_device.yaml and 8B_full.yaml: enable_activation_checkpointing: True"),
    ),
    "torchtitan": (
        PresetDefault("loss", "standard",
                      f"{TORCHTITAN} train.py loss_fn: cross_entropy(pred.flatten(0, 1).float(), labels) on the "
                      "whole fp32-upcast logits (torchtitan @ b5bcd76c chunks it since: set loss: chunked for a "
                      "2026 torchtitan)"),
    ),
    "hf-trainer": (
        PresetDefault("loss", "standard", HF_LOSS),
    ),
    "deepspeed": (),
    "megatron": (
        # The distributed optimizer shards the fp32 main parameters and Adam moments over the data-parallel
        # ranks (ZeRO stage 1); the weights and gradient buffers stay whole on every rank.
        PresetDefault("zero_stage", 1,
                      f"{MEGATRON} examples/llama/train_llama3_8b_h100_fp8.sh and "
                      "examples/mixtral/train_mixtral_8x7b_distributed.sh: --use-distributed-optimizer "
                      "(the optimizer states sharded over data-parallel ranks, as ZeRO stage 1)"),
    ),
    "axolotl": (
        PresetDefault("loss", "standard", f"{AXOLOTL} trains through transformers' Trainer: {HF_LOSS}"),
        PresetDefault("activation_checkpointing", True,
                      f"{AXOLOTL} examples/llama-3/lora-8b.yml, qlora.yml, fft-8b.yaml: gradient_checkpointing: true"),
        PresetDefault("flash_attention", True,
                      f"{AXOLOTL} examples/llama-3/lora-8b.yml, qlora.yml, fft-8b.yaml: "
                      "attn_implementation: flash_attention_2"),
    ),
    "llama-factory": (
        PresetDefault("loss", "standard", f"{LLAMA_FACTORY} trains through transformers' Trainer: {HF_LOSS}"),
        PresetDefault("activation_checkpointing", True,
                      f"{LLAMA_FACTORY} src/llamafactory/hparams/model_args.py: disable_gradient_checkpointing "
                      "defaults to False (gradient checkpointing on)"),
    ),
}

MATCHES: dict[str, tuple[Matches, ...]] = {
    "torchtitan": (
        Matches("FSDP mixed precision: bf16 compute over fp32 sharded parameters, fp32 gradient reduction "
                "(fp32 master weights, the planner's default)",
                f"{TORCHTITAN} torchtitan/config_manager.py: mixed_precision_param bfloat16, "
                "mixed_precision_reduce float32"),
    ),
    "hf-trainer": (
        Matches("automatic mixed precision (bf16/fp16 autocast over fp32 weights: fp32 master weights, the "
                "planner's default); attention through PyTorch SDPA (FlashAttention kernels, the planner's default)",
                f"{TRANSFORMERS}: bf16/fp16 run as torch.amp autocast over the model's fp32 parameters; "
                "from_pretrained's attn_implementation is sdpa where PyTorch has it"),
    ),
    "deepspeed": (
        Matches("bf16 training with fp32 master weights (the planner's default)",
                "microsoft/DeepSpeed deepspeed/runtime/bf16_optimizer.py (BF16_Optimizer keeps fp32 master copies of the "
                "bf16 parameters)"),
    ),
    "megatron": (
        Matches("bf16 training with fp32 main parameters in the optimizer (the planner's default)",
                f"{MEGATRON} megatron/core/optimizer/optimizer.py: Float16OptimizerWithFloat16Params keeps fp32 "
                "main params"),
    ),
    "llama-factory": (
        Matches("trainable parameters upcast to fp32 under bf16 autocast (fp32 master weights, the planner's default)",
                f"{LLAMA_FACTORY} src/llamafactory/model/adapter.py: cast_trainable_params_to_fp32 unless pure_bf16"),
    ),
}


def _show(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def apply_preset(workload):
    """(workload with the preset's defaults filled in, the assumptions stating them)."""
    name = workload.framework
    if name is None or workload.kind == "inference":
        return workload, ()
    method = workload.method or "full"
    updates: dict[str, object] = {}
    notes: list[str] = []
    for default in PRESETS.get(name, ()):
        if getattr(workload, default.field) is None and method in default.methods:
            updates[default.field] = default.value
            notes.append(f"{default.field}: {_show(default.value)} ({name} preset; {default.source}; set "
                         f"{default.field} to override)")
    for match in MATCHES.get(name, ()):
        notes.append(f"{name}: {match.text} ({match.source})")
    return (workload.model_copy(update=updates) if updates else workload), tuple(notes)


def framework_problem(workload) -> str | None:
    """A framework that does not fit the workload's kind, as a message (None when it fits)."""
    name = workload.framework
    if name is None:
        return None
    if workload.kind == "inference" and name in TRAINING_FRAMEWORKS:
        expected = (f"an inference engine: {', '.join(INFERENCE_ENGINES)}" if INFERENCE_ENGINES else
                    f"no framework: the inference engines {', '.join(PLANNED_ENGINES)} are not modelled yet")
        return f"a training framework on an inference workload (got {name!r}, expected {expected})"
    if workload.kind != "inference" and name in INFERENCE_ENGINES:
        return (f"an inference engine on a {workload.kind} workload (got {name!r}, expected a training "
                f"framework: {', '.join(TRAINING_FRAMEWORKS)})")
    return None
