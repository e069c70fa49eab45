"""`framework:` presets: the defaults each framework's standard recipe uses, read from its source.

A preset fills only the fields a workload leaves unset. Precedence: the workload's own field, then
`defaults:` (merged into the workload before validation, so it counts as the workload's), then the
framework's preset, then the planner's documented default. Every default a preset fills is stated
as an assumption with its source, also where it equals the planner's own default (the reader sees
the framework was taken into account, and a later change of the planner's default does not move it).

One table: PRESETS. Each entry is a field, its value, the source (repository @ commit, file, the
setting) and, where the recipe differs by method, the methods it applies to.

What the framework does that no workload field says (how its optimizer holds gradients, what its step
allocates, its kernels, ...) becomes behaviour flags, knobs only a preset sets (proposalkit/knobs.py):
FLAGS for those a framework always sets, and a function for each that depends on the workload
(optimizer_impl, selective_policy, softmax_fp32, sequence_parallel, kernels). behaviour() resolves them
once, when the file is loaded (input/loading.py LoadedWorkload.behaviour): the estimates read the flags,
never a framework's name.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog.engines import ENGINES, engine as engine_named
from ..knobs import default, knob
from ..notes import Note, note

# Training frameworks a workload may name (CONTRACT.md, `framework`).
TRAINING_FRAMEWORKS = ("hf-trainer", "torchtune", "torchtitan", "deepspeed", "megatron", "axolotl", "llama-factory")
# Inference engines of the contract: their memory rule, batch limit and achieved fractions are
# catalog/engines.py's (one home), applied by planning/inference.py.
INFERENCE_ENGINES: tuple[str, ...] = ENGINES
FRAMEWORKS = TRAINING_FRAMEWORKS + INFERENCE_ENGINES

TORCHTUNE = "pytorch/torchtune @ bd2a0fc7c"
TORCHTITAN = "pytorch/torchtitan @ 9dec370 (the commit of its Dec 2024 H100 benchmarks)"
TRANSFORMERS = "huggingface/transformers @ 2cda12cb src/transformers/trainer.py (mixed precision through accelerate)"
AXOLOTL = "axolotl-ai-cloud/axolotl @ 067b021c8"
LLAMA_FACTORY = "hiyouga/LLaMA-Factory @ ff6d4d12e"
MEGATRON = "NVIDIA/Megatron-LM @ d98e8a64d"
DEEPSPEED = "microsoft/DeepSpeed @ 38327e07"
HF_LOSS = ("huggingface/transformers @ d0fed636 src/transformers/loss/loss_utils.py ForCausalLMLoss: "
           "logits.float() then cross_entropy")


@dataclass(frozen=True)
class PresetDefault:
    field: str
    value: object
    source: str
    methods: tuple[str, ...] = ("full", "lora", "qlora")   # the training methods the recipe setting covers
    references: tuple[str, ...] = ()    # the works `source` names beyond the framework's own (catalog/references.py)


# The framework's own code as the references list it, where they list it (catalog/references.py ids).
FRAMEWORK_REFERENCES = {"torchtune": ("torchtune-readme",), "torchtitan": ("torchtitan-sac",)}


PRESETS: dict[str, tuple[PresetDefault, ...]] = {
    "torchtune": (
        PresetDefault("mixed_precision", False,
                      f"{TORCHTUNE} recipes/full_finetune_single_device.py (and the LoRA recipes): the model is built "
                      "under training.set_default_dtype(dtype), bf16 in every config; 'Mixed precision training and "
                      "fp16 precision are currently not supported': weights, gradients, Adam moments and LoRA "
                      "adapters in bf16, no fp32 master copy", references=("hu-2021", "micikevicius-2018")),
        PresetDefault("loss", "chunked",
                      f"{TORCHTUNE} recipes/configs/llama3_1/*.yaml: loss LinearCrossEntropyLoss (8 chunks, each "
                      "projected and upcast in turn; its 2024 configs used CEWithChunkedOutputLoss, the chunked "
                      "loss as counted; LinearCrossEntropyLoss also drops the 16-bit logits, ≈2 B per logit less)"),
        PresetDefault("activation_checkpointing", True,
                      f"{TORCHTUNE} recipes/configs/llama3_1/8B_full_single_device.yaml, 8B_lora_single_device.yaml, "
                      "8B_qlora_single_device.yaml and 8B_full.yaml: enable_activation_checkpointing: True"),
        PresetDefault("compile", False,
                      f"{TORCHTUNE} recipes/configs/llama3_1/8B_full.yaml, llama3_2/3B_full_single_device.yaml and "
                      "the other recipe configs: compile: False ('torch.compile the model + loss, True increases "
                      "speed + decreases memory')"),
    ),
    "torchtitan": (
        PresetDefault("activation_checkpointing", "selective",
                      f"{TORCHTITAN} train_configs/llama3_8b.toml: [activation_checkpoint] mode = 'selective', "
                      "selective_ac_option = 'op' (its 70B and 405B configs use mode = 'full': set it)"),
        PresetDefault("mixed_precision", True,
                      f"{TORCHTITAN} torchtitan/config_manager.py: FSDP2 MixedPrecisionPolicy with "
                      "mixed_precision_param bfloat16 over fp32 sharded parameters, mixed_precision_reduce float32"),
        # Without it the planner could pick ZeRO stage 1 or 2, which under pipeline parallelism holds less than
        # FSDP with unsharded fp32 gradient accumulation (model_states.py): an under-estimate.
        PresetDefault("zero_stage", 3,
                      f"{TORCHTITAN} torchtitan/config_manager.py: --training.data_parallel_shard_degree default -1, "
                      "FSDP2 fully_shard over the remaining GPUs (parallelize_llama.py apply_fsdp)"),
        PresetDefault("loss", "standard",
                      f"{TORCHTITAN} train.py loss_fn: cross_entropy(pred.flatten(0, 1).float(), labels) on the "
                      "whole fp32-upcast logits (torchtitan @ b5bcd76c chunks it since: set loss: chunked for a "
                      "2026 torchtitan)"),
        PresetDefault("compile", False,
                      f"{TORCHTITAN} train_configs/llama3_8b.toml: [training] compile = false (torchtitan's later "
                      "configs: [compile] enable = false)"),
    ),
    "hf-trainer": (
        PresetDefault("mixed_precision", True,
                      f"{TRANSFORMERS}: bf16/fp16 run as torch.amp autocast over the model's fp32 parameters, and "
                      "PEFT keeps LoRA adapters in fp32 (autocast_adapter_dtype)", references=("hu-2021",)),
        PresetDefault("flash_attention", True,
                      "huggingface/transformers from_pretrained: attn_implementation sdpa where PyTorch has it "
                      "(FlashAttention kernels, no s×s scores stored)", references=("dao-2022",)),
        PresetDefault("loss", "standard", HF_LOSS),
        PresetDefault("compile", False, f"{TRANSFORMERS}: TrainingArguments torch_compile defaults to False"),
    ),
    "deepspeed": (
        PresetDefault("mixed_precision", True,
                      "microsoft/DeepSpeed @ 38327e07 deepspeed/runtime/bf16_optimizer.py fp32_groups_flat_partition, "
                      "zero/stage_1_and_2.py single_partition_of_fp32_groups, zero/stage3.py "
                      "fp32_partitioned_groups_flat: fp32 master copies of the 16-bit parameters",
                      references=("micikevicius-2018",)),
        PresetDefault("compile", False,
                      f"{DEEPSPEED} deepspeed/runtime/engine.py: the model is compiled only when engine.compile() is "
                      "called (_is_compiled = False until then); Megatron-DeepSpeed's RMSNorm and SwiGLU are plain "
                      "PyTorch (microsoft/Megatron-DeepSpeed @ 9618f214 megatron/model/rmsnorm.py: "
                      "self._norm(x.float()).type_as(x) * self.weight; transformer.py ParallelMLP with --swiglu: "
                      "F.silu(x[0]) * x[1])"),
    ),
    "megatron": (
        PresetDefault("mixed_precision", True,
                      f"{MEGATRON} megatron/core/optimizer/optimizer.py: Float16OptimizerWithFloat16Params keeps "
                      "fp32 main params"),
        PresetDefault("flash_attention", True,
                      f"{MEGATRON} megatron/core/transformer/transformer_config.py: attention_backend "
                      "AttnBackend.auto (Transformer Engine's flash or fused attention; its Llama 3 example passes "
                      "--attention-backend fused): no s×s scores stored"),
        # The distributed optimizer shards the fp32 main parameters and Adam moments over the data-parallel
        # ranks (ZeRO stage 1); the weights and gradient buffers stay whole on every rank.
        PresetDefault("zero_stage", 1,
                      f"{MEGATRON} examples/llama/train_llama3_8b_h100_fp8.sh and "
                      "examples/mixtral/train_mixtral_8x7b_distributed.sh: --use-distributed-optimizer "
                      "(the optimizer states sharded over data-parallel ranks, as ZeRO stage 1)",
                      references=("rajbhandari-2020",)),
    ),
    "axolotl": (
        # bf16: auto sets cfg.torch_dtype = bfloat16 (src/axolotl/utils/config/__init__.py) and the model is
        # loaded in it (loaders/model.py model_kwargs["torch_dtype"]): a full fine-tune trains bf16 weights with
        # no fp32 copy; PEFT's LoRA adapters are fp32 (the planner's default for LoRA).
        PresetDefault("mixed_precision", False,
                      f"{AXOLOTL} src/axolotl/utils/config/__init__.py and loaders/model.py: bf16 sets "
                      "cfg.torch_dtype = torch.bfloat16 and the model is loaded in it; the full fine-tune "
                      "trains bf16 weights without an fp32 master copy", methods=("full",)),
        PresetDefault("loss", "standard", f"{AXOLOTL} trains through transformers' Trainer: {HF_LOSS}"),
        PresetDefault("activation_checkpointing", True,
                      f"{AXOLOTL} examples/llama-3/lora-8b.yml, qlora.yml, fft-8b.yaml: gradient_checkpointing: true"),
        PresetDefault("flash_attention", True,
                      f"{AXOLOTL} examples/llama-3/lora-8b.yml, qlora.yml, fft-8b.yaml: "
                      "attn_implementation: flash_attention_2"),
        PresetDefault("compile", False,
                      f"{AXOLOTL} src/axolotl/utils/schemas/config.py: torch_compile default None (not compiled); "
                      "its Llama 3 examples do not set it"),
    ),
    "llama-factory": (
        PresetDefault("mixed_precision", True,
                      f"{LLAMA_FACTORY} src/llamafactory/model/adapter.py: trainable parameters are upcast to "
                      "fp32 (cast_trainable_params_to_fp32) unless pure_bf16"),
        PresetDefault("loss", "standard", f"{LLAMA_FACTORY} trains through transformers' Trainer: {HF_LOSS}"),
        PresetDefault("activation_checkpointing", True,
                      f"{LLAMA_FACTORY} src/llamafactory/hparams/model_args.py: disable_gradient_checkpointing "
                      "defaults to False (gradient checkpointing on)"),
        PresetDefault("compile", False,
                      f"{LLAMA_FACTORY} has no compile setting of its own: transformers' TrainingArguments "
                      "torch_compile, default False"),
    ),
}

# What a recipe does that the preset cannot set for every run of the framework, said beside its defaults:
# (the statement, what the author sets where their run does it: a hint on stderr, never in the documents,
# the methods whose recipes do it: a LoRA workload is not told about the full fine-tune recipes).
NOTES: dict[str, tuple[tuple[str, str, tuple[str, ...]], ...]] = {
    "torchtune": ((
        f"its single-device full fine-tune recipes also fuse the optimizer step into the backward "
        f"with bitsandbytes PagedAdamW8bit ({TORCHTUNE} recipes/configs/llama3_1/8B_full_single_device.yaml: "
        "optimizer_in_bwd: True)",
        "optimizer_in_backward: true and optimizer: paged-adamw-8bit (a recipe that fuses the optimizer step)",
        ("full",)),
    ),
}

# Optimizer implementations a framework runs in place of torch.optim (estimate/model_states.py
# OPTIMIZER_IMPLS), with the condition and the source; not a workload field.
OPTIMIZER_IMPL_SOURCES = {
    "fp32-gradient-buffer": ("DeepSpeed's BF16_Optimizer with bf16 at ZeRO stage 0 (deepspeed/runtime/"
                             "bf16_optimizer.py): an fp32 gradient accumulation buffer of the whole replica beside "
                             "the bf16 gradients; at stages 1-3 DeepSpeed's ZeRO optimizers with bf16 gradients "
                             "(microsoft/DeepSpeed @ 4be8df721 runtime/engine.py get_data_types: grad_accum_dtype is "
                             "bf16 under ZeRO unless data_types.grad_accum_dtype is set; _do_optimizer_sanity_check)"),
    "fp32-main-gradients": (f"Megatron-LM's fp32 main gradients ({MEGATRON} megatron/training/arguments.py: "
                            "accumulate_allreduce_grads_in_fp32 for bf16; docs/distrib_optimizer.md)"),
}


def selective_policy(workload) -> tuple[str | None, Note | None]:
    """(the selective-checkpointing policy the framework runs, an assumption stating it), or (None, None):
    the planner's default (the attention core, Megatron-LM's selective recompute)."""
    if workload.framework == "torchtitan" and workload.activation_checkpointing == "selective":
        return "op", note("framework-selective-policy", FRAMEWORK_REFERENCES["torchtitan"], framework="torchtitan",
                          why=f"{TORCHTITAN} torchtitan/parallelisms/parallelize_llama.py: selective_ac_option 'op' "
                              "saves every other matmul's output and the attention output")
    return None, None


def softmax_fp32(workload) -> tuple[bool | None, Note | None]:
    """Whether unfused attention runs its softmax in fp32, when the framework decides (None: the planner's
    default, eager PyTorch under autocast, which does)."""
    if workload.framework == "megatron" and workload.flash_attention is False:
        return False, note("framework-softmax-16bit", framework="megatron",
                           why=f"{MEGATRON} megatron/training/arguments.py: --attention-softmax-in-fp32 is off unless "
                               "passed")
    return None, None


def sequence_parallel(workload) -> tuple[bool | None, Note | None]:
    """Whether tensor parallelism also splits the norms' and dropouts' activations along the sequence, when the
    framework decides (None: the planner's default, Megatron-LM's sequence parallelism, Korthikanti §4.2.2)."""
    if workload.framework == "deepspeed" and (workload.tensor_parallel or 1) > 1:
        return False, note("framework-no-sequence-parallel", ("bigscience-2022", "korthikanti-2022"),
                           framework="deepspeed",
                           why="DeepSpeed trains tensor-parallel through Megatron-DeepSpeed, whose BLOOM run passes no "
                               "--sequence-parallel: bigscience-workshop/bigscience @ e726b159 "
                               "train/tr11-176B-ml/tr11-176B-ml.slurm")
    return None, None


# Megatron-LM's layers run Transformer Engine's and its own fused kernels: a fused RMSNorm with the QKV
# linear that saves the 16-bit input and rstd (TELayerNormColumnParallelLinear), and the fused SwiGLU that
# saves only its input and recomputes silu in the backward (d98e8a64d megatron/core/fusions/
# fused_bias_swiglu.py SwiGLUFunction: ctx.save_for_backward(input_for_backward); bias_activation_fusion
# is on with --swiglu in its Llama 3 example). What they keep is the fused count, without torch.compile.
FUSED_FRAMEWORKS = {"megatron": f"{MEGATRON} Transformer Engine's fused RMSNorm + linear and "
                                "megatron/core/fusions/fused_bias_swiglu.py SwiGLUFunction (saves its input only)"}


def kernels(workload) -> tuple[str, Note | None]:
    """How a training workload's layers run (estimate/memory.py TrainingSetup.kernels), and the assumption
    stating it: fused (a framework's own fused kernels), compiled (compile: true) or eager."""
    name = workload.framework
    if name in FUSED_FRAMEWORKS:
        return "fused", note("framework-fused-kernels", framework=name, why=FUSED_FRAMEWORKS[name],
                             compile=bool(workload.compile))
    if workload.compile:
        return "compiled", note("compile-given")
    if workload.compile is None:
        return "eager", note("compile-default", compile=default("compile"), why=knob("compile").source)
    return "eager", None


def optimizer_impl(workload, precision: str) -> tuple[str, Note | None]:
    """(the optimizer implementation the framework runs, an assumption stating it or None)."""
    name = workload.framework
    if workload.kind == "inference" or name is None:
        return "torch", None
    # DeepSpeed picks BF16_Optimizer for bf16 without ZeRO (stage 0), where grad_accum_dtype defaults to fp32;
    # under ZeRO it defaults to bf16 and the ZeRO optimizer runs (microsoft/DeepSpeed @ 4be8df721, 2023-01,
    # runtime/engine.py get_data_types and _do_optimizer_sanity_check; BF16_Optimizer at stage 1 only with
    # data_types.grad_accum_dtype fp32, which the workload format does not express). With zero_stage unset the
    # planner's search applies it at stage 0 only (planning/search.py memory_of).
    if name == "deepspeed" and precision == "bf16" and workload.zero_stage in (None, 0):
        impl = "fp32-gradient-buffer"
    elif name == "megatron" and precision in ("bf16", "fp16"):
        impl = "fp32-main-gradients"
    else:
        return "torch", None
    return impl, note("framework-optimizer", ("rajbhandari-2020",) if impl == "fp32-gradient-buffer" else (),
                      impl=impl, framework=name, why=OPTIMIZER_IMPL_SOURCES[impl])


# What each framework always does that the estimates count, as behaviour flags (proposalkit/knobs.py): the flag,
# its value and where the framework does so. Training only. They add no assumption line of their own: an
# estimate that a flag changes quotes its source (estimate/phases.py).
FLAGS: dict[str, tuple[PresetDefault, ...]] = {
    "hf-trainer": (
        # No optimizer_step_temporary: TrainingArguments' default optim is "adamw_torch_fused" where torch >= 2.8
        # (huggingface/transformers PR #37358, merged July 2025; transformers 5.x training_args.py: default_optim
        # = "adamw_torch_fused" if is_torch_greater_or_equal_than_2_8), torch.optim.AdamW(fused=True), whose kernel
        # updates in place; this project's runs (transformers 5.17.0, torch 2.11) record optim ADAMW_TORCH_FUSED,
        # fused=True, foreach None (benchmarks/validation/measured/results/h100-80gb-hbm3-2026-11-26.json). Older
        # versions' adamw_torch was foreach (transformers @ fd798335), whose step also holds √v (estimate/phases.py).
        # TrainingArguments fp16/bf16: torch.amp autocast, the model's parameters left in fp32 (applied to full
        # fine-tunes with mixed_precision true; LoRA's frozen base weights are 16-bit).
        PresetDefault("autocast_fp32_params", True, f"{TRANSFORMERS}: bf16/fp16 run as torch.amp autocast over the "
                                                    "model's fp32 parameters"),
    ),
    "llama-factory": (
        # No optimizer_step_temporary: the Trainer's default optim, torch's fused AdamW (see hf-trainer above).
        # It trains through the Trainer with its trainable parameters upcast to fp32 (cast_trainable_params_to_fp32).
        PresetDefault("autocast_fp32_params", True, f"{LLAMA_FACTORY} src/llamafactory/model/adapter.py: trainable "
                                                    "parameters upcast to fp32, trained through transformers' "
                                                    "Trainer (autocast)"),
    ),
    "torchtitan": (
        # pytorch/torchtitan @ 5cffd5ac torchtitan/optimizer.py build_optimizers: {"fused": fused, "foreach": not
        # fused} with fused = job_config.optimizer.fused, a store_true flag (off unless given) until torchtitan's
        # optimizer.implementation option, "fused" by default (config_manager.py @ 391ddd3d).
        PresetDefault("optimizer_step_temporary", "foreach",
                      "torchtitan's AdamW with foreach = not --optimizer.fused, off unless given (torchtitan @ "
                      "5cffd5ac optimizer.py; its later optimizer.implementation defaults to fused, which holds no "
                      "temporary)"),
        # torchtitan @ e9f53473 torchtitan/train.py: train_step opens with self.optimizers.zero_grad(), PyTorch's
        # default set_to_none.
        PresetDefault("data_parallel_impl", "fsdp2", f"{TORCHTITAN} parallelize_llama.py apply_fsdp: FSDP2 "
                                                     "fully_shard"),
        PresetDefault("fsdp_fp32_params", True,
                      f"{TORCHTITAN} torchtitan/config_manager.py: FSDP2 MixedPrecisionPolicy with "
                      "mixed_precision_param bfloat16 over fp32 sharded parameters, mixed_precision_reduce float32"),
    ),
    "torchtune": (
        # torchtune @ 015b39c7 recipes/full_finetune_distributed.py: zero_grad(set_to_none=True) after the step.
        PresetDefault("data_parallel_impl", "fsdp2", f"{TORCHTUNE} recipes/full_finetune_distributed.py: FSDP2 "
                                                     "fully_shard, no mixed-precision policy"),
    ),
    "deepspeed": (
        # microsoft/DeepSpeed @ 38327e07: bf16_optimizer.py allocates fp32_groups_gradients_flat once
        # (torch.zeros_like) and clear_hp_grads() only zeroes it; zero/stage_1_and_2.py backward() allocates
        # the reduce bucket (ipg_buffer, reduce_bucket_size 5e8 values, two with overlap_comm) before the
        # loss's backward and keeps the gradient partitions (averaged_gradients) until step(); zero/stage3.py
        # allocates grad_partitions_flat_buffer and the IPG bucket once, at initialisation.
        PresetDefault("frees_gradients_between_steps", False,
                      "DeepSpeed keeps gradient buffers across steps (BF16_Optimizer's fp32 gradients; ZeRO's reduce "
                      "bucket allocated before the loss's backward and its gradient partitions; DeepSpeed @ "
                      "38327e07)"),
        # DeepSpeed's offload_optimizer is a zero_optimization setting (input/state_rules.py).
        PresetDefault("offload_under_zero", True, f"{DEEPSPEED} runtime/engine.py _do_optimizer_sanity_check: "
                                                  "BF16_Optimizer without ZeRO keeps its states on the GPU"),
    ),
    "megatron": (
        # NVIDIA/Megatron-LM @ d98e8a64 megatron/core/distributed/param_and_grad_buffer.py: grad_data =
        # torch.zeros(...) once; zero_grad_buffer() -> reset() -> grad_data.zero_().
        PresetDefault("frees_gradients_between_steps", False,
                      "Megatron-LM's contiguous main-gradient buffer is allocated once and zeroed, not freed "
                      "(param_and_grad_buffer.py @ d98e8a64)"),
    ),
}


@dataclass(frozen=True)
class Behaviour:
    """The behaviour flags a workload's framework sets (knob name, value), where the framework does so (knob
    name, source) and the assumptions stating those the plan prints. Empty without a framework."""

    flags: tuple[tuple[str, object], ...] = ()
    sources: tuple[tuple[str, str], ...] = ()
    notes: tuple[Note, ...] = ()


def behaviour(workload) -> Behaviour:
    """The workload's framework as behaviour flags, resolved once (a training workload's; inference engines are
    catalog rows, catalog/engines.py). The assumptions come in the order the plan prints them."""
    if workload.kind == "inference":
        return Behaviour()
    precision = workload.precision or default("precision")     # training loads any checkpoint at this precision
    flags: dict[str, object] = {}
    sources: dict[str, str] = {}
    notes: list[Note] = []
    impl, impl_note = optimizer_impl(workload, precision)
    policy, policy_note = selective_policy(workload)
    softmax32, softmax_note = softmax_fp32(workload)
    sp, sp_note = sequence_parallel(workload)
    how, kernels_note = kernels(workload)
    for name, value, note in (("optimizer_impl", impl, impl_note), ("selective_policy", policy, policy_note),
                              ("softmax_fp32", softmax32, softmax_note), ("sequence_parallel", sp, sp_note),
                              ("kernels", how, kernels_note)):
        if value is not None and value != default(name):
            flags[name] = value
        if note:
            notes.append(note)
    for flag in FLAGS.get(workload.framework, ()):
        flags[flag.field], sources[flag.field] = flag.value, flag.source
    return Behaviour(tuple(flags.items()), tuple(sources.items()), tuple(notes))


def apply_preset(workload):
    """(workload with the preset's defaults filled in, the assumptions stating them)."""
    name = workload.framework
    if name is None or workload.kind == "inference":
        return workload, ()
    method = workload.method or "full"
    updates: dict[str, object] = {}
    notes: list[Note] = []
    for default in PRESETS.get(name, ()):
        if getattr(workload, default.field) is None and method in default.methods:
            updates[default.field] = default.value
            notes.append(note("preset-default", FRAMEWORK_REFERENCES.get(name, ()) + default.references,
                              field=default.field, value=default.value, framework=name, why=default.source))
    notes += [note("framework-recipe", FRAMEWORK_REFERENCES.get(name, ()), framework=name, why=text, hint=hint)
              for text, hint, methods in NOTES.get(name, ()) if method in methods]
    return (workload.model_copy(update=updates) if updates else workload), tuple(notes)


def framework_problem(workload) -> str | None:
    """A framework that does not fit the workload's kind, as a message (None when it fits)."""
    name = workload.framework
    if name is None:
        return None
    if workload.kind == "inference" and name in TRAINING_FRAMEWORKS:
        expected = f"an inference engine: {', '.join(INFERENCE_ENGINES)}"
        return f"a training framework on an inference workload (got {name!r}, expected {expected})"
    if workload.kind != "inference" and name in INFERENCE_ENGINES:
        return (f"an inference engine on a {workload.kind} workload (got {name!r}, expected a training "
                f"framework: {', '.join(TRAINING_FRAMEWORKS)})")
    if workload.kind == "inference" and (workload.requests is not None or workload.request_rate is not None):
        e = engine_named(name) if name in INFERENCE_ENGINES else None
        if e is not None and not e.speed_modelled:
            form = "a batch job by requests" if workload.requests is not None else "a service sized by request_rate"
            return (f"{name}: {e.name}'s speed is not modelled (no published measurement with stated settings), "
                    f"which {form} needs (expected vllm, sglang or trt-llm for an "
                    "estimate; or, measured under transformers, tokens = requests × output_tokens with context "
                    "and pilot: {log, gpu, gpus}; or a service by hours with context and batch)")
    return None
