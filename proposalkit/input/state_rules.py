"""Rules across the fields that set how model states are held (mixed_precision, optimizer_in_backward,
paged optimizers, offload): what cannot go together, said before planning."""

from __future__ import annotations

from ..options import PAGED_OPTIMIZERS

STATE_FIELDS = ("mixed_precision", "optimizer_in_backward", "offload")

# Frameworks whose optimizer always keeps fp32 main parameters for 16-bit weights and steps once after the whole
# backward, over a gradient buffer of every parameter: DeepSpeed (microsoft/DeepSpeed @ 38327e07
# deepspeed/runtime/zero/stage_1_and_2.py single_partition_of_fp32_groups, zero/stage3.py
# fp32_partitioned_groups_flat, bf16_optimizer.py fp32_groups_flat_partition; the step in engine.step()) and
# Megatron-LM (NVIDIA/Megatron-LM @ d98e8a64d megatron/core/optimizer/optimizer.py Float16OptimizerWithFloat16Params
# fp32 main params; @ 0e9fcc1d megatron/core/distributed/param_and_grad_buffer.py: one contiguous grad buffer).
FP32_MAIN_FRAMEWORKS = {"deepspeed": "DeepSpeed (its ZeRO and BF16 optimizers)", "megatron": "Megatron-LM"}


def state_rules(workload) -> list[tuple[tuple, str]]:
    """(path, message) for each problem of the model-state fields of one workload."""
    problems: list[tuple[tuple, str]] = []
    if workload.kind == "inference":
        for name in STATE_FIELDS:
            if getattr(workload, name) is not None:
                problems.append(((name,), f"not used by inference (got {name}, expected it only on finetune or pretrain)"))
        return problems
    offload = workload.offload
    if offload is not None and offload.optimizer is None and offload.params is None:
        problems.append((("offload",), "nothing to offload (got an empty mapping, expected optimizer: cpu, params: "
                                       "cpu or both, or leave offload out)"))
    if offload is not None and offload.params == "cpu" and workload.zero_stage not in (None, 3):
        problems.append((("offload", "params"), "parameters are offloaded only under full sharding (got zero_stage "
                                                f"{workload.zero_stage}, expected zero_stage 3 or nothing)"))
    if offload is not None and offload.optimizer == "cpu" and workload.optimizer in PAGED_OPTIMIZERS:
        problems.append((("offload", "optimizer"), f"a paged optimizer ({workload.optimizer}) already pages its states "
                                                   "to host memory (expected offload.optimizer or a paged optimizer, "
                                                   "not both)"))
    owner = FP32_MAIN_FRAMEWORKS.get(workload.framework)
    if owner and workload.mixed_precision is False:
        problems.append((("mixed_precision",), f"{owner} keeps fp32 main weights for 16-bit parameters (got "
                                               f"mixed_precision: false with framework {workload.framework}, "
                                               "expected true or nothing)"))
    if (workload.framework == "deepspeed" and offload is not None and offload.optimizer == "cpu"
            and workload.zero_stage == 0):
        # DeepSpeed's offload_optimizer is a zero_optimization setting: without ZeRO, bf16 runs BF16_Optimizer,
        # which keeps its states on the GPU (microsoft/DeepSpeed @ 38327e07 runtime/engine.py
        # _do_optimizer_sanity_check: BF16_Optimizer "and not self.zero_cpu_offload()").
        problems.append((("offload", "optimizer"), "DeepSpeed offloads the optimizer under ZeRO (got zero_stage 0 "
                                                   "with framework deepspeed, expected zero_stage 1, 2, 3 or "
                                                   "nothing)"))
    if workload.activation_offload and workload.activation_checkpointing is False:
        # pytorch/torchtune @ bd2a0fc7c recipes/full_finetune_single_device.py (and its other recipes): RuntimeError
        # "enable_activation_offloading should only be True when enable_activation_checkpointing is True".
        problems.append((("activation_offload",), "torchtune offloads activations only with activation checkpointing "
                                                  "(got activation_checkpointing: false, expected true, selective or "
                                                  "nothing)"))
    if owner and workload.optimizer_in_backward:
        problems.append((("optimizer_in_backward",), f"{owner} steps after the whole backward, over a gradient "
                                                     "buffer of every parameter (got optimizer_in_backward with "
                                                     f"framework {workload.framework}, expected false or nothing; "
                                                     "the step in backward is torchtune's optimizer_in_bwd)"))
    if workload.optimizer_in_backward and (workload.gradient_accumulation_steps or 1) > 1:
        # pytorch/torchtune @ 01067f61 recipes/full_finetune_single_device.py: RuntimeError "Gradient accumulation
        # is not supported with optimizer in bwd." (each gradient is applied and freed in its hook).
        problems.append((("gradient_accumulation_steps",), "the optimizer step in backward applies each gradient as "
                                                           "it is produced, so there is nothing to accumulate (got "
                                                           f"{workload.gradient_accumulation_steps} with "
                                                           "optimizer_in_backward, expected 1 or nothing)"))
    if workload.mixed_precision is not None and workload.precision == "fp32":
        problems.append((("mixed_precision",), "fp32 training has no 16-bit compute to mix (got precision fp32, "
                                               "expected mixed_precision with bf16 or fp16, or leave it out)"))
    return problems
