"""Rules across the fields that set how model states are held (mixed_precision, optimizer_in_backward,
paged optimizers, offload): what cannot go together, said before planning."""

from __future__ import annotations

from ..estimate.precision import PAGED_OPTIMIZERS

STATE_FIELDS = ("mixed_precision", "optimizer_in_backward", "offload")


def state_rules(workload) -> list[tuple[tuple, str]]:
    """(path, message) for each problem of the model-state fields of one workload."""
    problems: list[tuple[tuple, str]] = []
    if workload.kind == "inference":
        for name in STATE_FIELDS:
            if getattr(workload, name) is not None:
                problems.append(((name,), f"not used by inference (got {name}, expected it only on finetune or pretrain)"))
        return problems
    offload = workload.offload
    if offload is not None and offload.params == "cpu" and workload.zero_stage not in (None, 3):
        problems.append((("offload", "params"), "parameters are offloaded only under full sharding (got zero_stage "
                                                f"{workload.zero_stage}, expected zero_stage 3 or nothing)"))
    if offload is not None and offload.optimizer == "cpu" and workload.optimizer in PAGED_OPTIMIZERS:
        problems.append((("offload", "optimizer"), f"a paged optimizer ({workload.optimizer}) already pages its states "
                                                   "to host memory (expected offload.optimizer or a paged optimizer, "
                                                   "not both)"))
    if workload.mixed_precision is not None and workload.precision == "fp32":
        problems.append((("mixed_precision",), "fp32 training has no 16-bit compute to mix (got precision fp32, "
                                               "expected mixed_precision with bf16 or fp16, or leave it out)"))
    return problems
