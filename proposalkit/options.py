"""The option lists a workload may name, where the estimates give each name its meaning.

One home below both readers: the workload schema (input/) offers these and the estimates refuse
others. What each option does is said where it is computed: precisions and optimizers in
precision.py, the losses in estimate/loss.py, the attention kernels in estimate/activations.py.
"""

from __future__ import annotations

from .units import PRECISION_BITS

TRAINING_METHODS = ("full", "lora", "qlora")
TRAINING_PRECISIONS = ("fp32", "bf16", "fp16")
OPTIMIZERS = ("adamw", "adamw-8bit", "paged-adamw", "paged-adamw-8bit", "sgd")
# bitsandbytes PagedAdamW (32-bit states) and PagedAdamW8bit: states in CUDA unified memory
# (estimate/model_states.py says how they count).
PAGED_OPTIMIZERS = ("paged-adamw", "paged-adamw-8bit")
ADAPTER_PRECISIONS = ("fp32", "bf16", "fp16")
INFERENCE_PRECISIONS = tuple(PRECISION_BITS)       # fp32 bf16 fp16 fp8 int8 int4
KV_PRECISIONS = tuple(PRECISION_BITS)
PRECISIONS = tuple(PRECISION_BITS)                 # any workload precision (training or inference)

# How the cross-entropy is computed (estimate/loss.py): PyTorch's on fp32 logits, torchtune's
# chunked loss, a fused linear + cross-entropy (Liger Kernel), transformers 4.37-4.45's own loss
# in a loop that keeps the model's output through the backward.
LOSSES = ("standard", "chunked", "fused", "transformers-4.37")
DEFAULT_LOSS = "standard"

# Inference attention kernels: flash (FlashAttention), sdpa (PyTorch scaled_dot_product_attention,
# which runs a flash or memory-efficient kernel for 16-bit inputs), eager (matmul + softmax).
INFERENCE_ATTENTION = ("flash", "sdpa", "eager")
