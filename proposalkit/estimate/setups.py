"""The setups the memory estimate takes: a training step's and a serving replica's settings.

Records only (no arithmetic), so that every estimate module can name them without importing
memory.py, which imports those modules.
"""

from __future__ import annotations

from dataclasses import dataclass

from .checkpointing import DEFAULT_SELECTIVE_POLICY
from ..catalog.modules import LoraSpec
from ..options import DEFAULT_LOSS


@dataclass(frozen=True)
class TrainingSetup:
    method: str                  # "full" | "lora" | "qlora"  (pretraining is "full")
    seq_len: int
    micro_batch: int = 1
    precision: str = "bf16"      # fp32 | bf16 | fp16 (mixed precision when 16-bit)
    optimizer: str = "adamw"     # adamw | adamw-8bit | paged-adamw | paged-adamw-8bit | sgd
    data_parallel: int = 1       # GPUs over which ZeRO shards
    zero_stage: int = 0          # 0..3 (FSDP full-shard = 3)
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    expert_parallel: int = 1     # GPUs of the data-parallel group over which the routed experts are split
    activation_checkpointing: bool = False
    flash_attention: bool = True
    lora: LoraSpec | None = None
    sequence_parallel: bool = True   # with tensor_parallel > 1 (Korthikanti §4.2.2)
    # 16-bit training keeps fp32 master weights and fp32 optimizer moments (mixed
    # precision, ZeRO §3.1). False: pure 16-bit training, moments in the weights'
    # dtype and no master copy: torchtune's recipes ("bfloat16 ... uses 2 bytes per
    # model and optimizer parameter"; "we don't support mixed-precision training",
    # torchtune docs/source/tutorials/memory_optimizations.rst).
    master_weights: bool = True
    loss: str = DEFAULT_LOSS     # standard | chunked | fused (estimate/loss.py)
    # torchtune optimizer_in_bwd: each parameter's step runs in its gradient hook (model_states.py).
    optimizer_in_backward: bool = False
    # CPU offload (ZeRO-Offload / ZeRO-Infinity, FSDP CPUOffload): optimizer states (and the fp32
    # master) in host memory; parameter and gradient shards in host memory (stage 3 only).
    offload_optimizer: bool = False
    offload_params: bool = False
    # Which optimizer implementation holds the states (model_states.OPTIMIZER_IMPLS): "torch", or a
    # framework's own ("fp32-gradient-buffer": DeepSpeed BF16_Optimizer's; "fp32-main-gradients":
    # Megatron-LM's). A framework preset sets it.
    optimizer_impl: str = "torch"
    # activation_checkpointing may also be "selective", kept by `selective_policy` (estimate/checkpointing.py:
    # "attention", Megatron-LM's; "op", torchtitan's); a framework preset sets the policy.
    selective_policy: str = DEFAULT_SELECTIVE_POLICY
    activation_offload: bool = False   # torchtune OffloadActivations (estimate/checkpointing.py)
    context_parallel: int = 1          # torchtitan ring attention: the sequence split over cp GPUs
    # Without FlashAttention, the softmax runs in fp32 (eager PyTorch under autocast, transformers'
    # eager attention); False: a fused 16-bit softmax kernel (Megatron-LM), Korthikanti's count.
    softmax_fp32: bool = True
    # 16-bit compute by torch.autocast over fp32 parameters (Hugging Face Trainer's fp16/bf16 AMP): each
    # saved activation at the dtype autocast gives it (activations.autocast_terms); a framework preset sets it.
    autocast_fp32_params: bool = False
    # How the layers' kernels run (activations.py, kernels.py): "fused" (what fused kernels keep:
    # Megatron-LM's Transformer Engine kernels), "eager" (eager PyTorch's extra saved tensors) or
    # "compiled" (torch.compile of each layer: fused layers, an eager final norm, a compiled chunked loss).
    kernels: str = "fused"
    # Micro-batches accumulated per optimizer step (None: not stated): with the behaviour flags below, whether
    # gradients persist beside the loss peak (phases.py).
    gradient_accumulation_steps: int | None = None
    # What the framework running the step does, resolved from the workload's `framework` when it is loaded
    # (input/frameworks.py behaviour; proposalkit/knobs.py gives each flag's meaning and default). The estimate
    # reads these, never a framework's name.
    optimizer_step_temporary: str = "none"      # "foreach": torch's foreach AdamW allocates √v at the step (phases.py)
    frees_gradients_between_steps: bool = True  # False: the framework keeps gradient buffers across steps
    data_parallel_impl: str = "ddp"             # "fsdp2": FSDP2's sharded .grad, freed each step (phases, model_states)
    fsdp_fp32_params: bool = False              # FSDP2 MixedPrecisionPolicy over fp32 params: fp32 gradient reduce
    # Where the framework does what a flag says: (flag, source) pairs, quoted by the notes.
    flag_sources: tuple[tuple[str, str], ...] = ()

    def source_of(self, flag: str, otherwise: str) -> str:
        """Where the framework does what `flag` says (flag_sources), else `otherwise`."""
        return next((text for name, text in self.flag_sources if name == flag), otherwise)


@dataclass(frozen=True)
class InferenceSetup:
    context: int                 # tokens per sequence (prompt + generated)
    batch: int = 1               # concurrent sequences
    precision: str = "bf16"      # fp32 | bf16 | fp16 | fp8 | int8 | int4
    kv_precision: str = "bf16"
    tensor_parallel: int = 1
    prefill_tokens: int | None = None   # tokens per forward pass; None: DEFAULT_PREFILL_TOKENS
    attention: str = "flash"     # flash | sdpa | eager (activations.py: eager keeps a layer's s×s scores)
    engine: str | None = None    # catalog/engines.py id; "hf": whole-prompt prefill and its logits (prompt_logits.py)
