"""The setups the memory estimate takes: a training step's and a serving replica's settings.

Records only (no arithmetic), so that every estimate module can name them without importing
memory.py, which imports those modules. Each field that is a planning knob has the knob's name
and its default from the one table (proposalkit/knobs.py, which says what each means and where
its default comes from; tests/test_knobs.py holds the records to it); the rest say which
configuration the estimate is of.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog.modules import LoraSpec
from ..knobs import default, knob


@dataclass(frozen=True)
class TrainingSetup:
    method: str                  # "full" | "lora" | "qlora"  (pretraining is "full")
    seq_len: int
    micro_batch: int = default("micro_batch")
    precision: str = default("precision")           # fp32 | bf16 | fp16 (mixed precision when 16-bit)
    optimizer: str = default("optimizer")           # adamw | adamw-8bit | paged-adamw | paged-adamw-8bit | sgd
    data_parallel: int = 1       # GPUs over which ZeRO shards
    zero_stage: int = knob("zero_stage").chosen[0]  # 0..3 (FSDP full-shard = 3)
    tensor_parallel: int = default("tensor_parallel")
    pipeline_parallel: int = default("pipeline_parallel")
    expert_parallel: int = default("expert_parallel")   # GPUs of the data-parallel group the routed experts split over
    # False, True (full) or "selective", kept by `selective_policy` (estimate/checkpointing.py: "attention",
    # Megatron-LM's; "op", torchtitan's); a framework preset sets the policy.
    activation_checkpointing: bool | str = knob("activation_checkpointing").chosen[0]
    flash_attention: bool = default("flash_attention")
    lora: LoraSpec | None = default("lora")
    sequence_parallel: bool = default("sequence_parallel")   # with tensor_parallel > 1 (Korthikanti §4.2.2)
    # 16-bit training keeps fp32 master weights and fp32 optimizer moments (mixed
    # precision, ZeRO §3.1). False: pure 16-bit training, moments in the weights'
    # dtype and no master copy: torchtune's recipes ("bfloat16 ... uses 2 bytes per
    # model and optimizer parameter"; "we don't support mixed-precision training",
    # torchtune docs/source/tutorials/memory_optimizations.rst).
    mixed_precision: bool = default("mixed_precision")
    loss: str = default("loss")  # standard | chunked | fused (estimate/loss.py)
    # torchtune optimizer_in_bwd: each parameter's step runs in its gradient hook (model_states.py).
    optimizer_in_backward: bool = default("optimizer_in_backward")
    # CPU offload (ZeRO-Offload / ZeRO-Infinity, FSDP CPUOffload): optimizer states (and the fp32
    # master) in host memory; parameter and gradient shards in host memory (stage 3 only).
    offload_optimizer: bool = default("offload_optimizer")
    offload_params: bool = default("offload_params")
    # Which optimizer implementation holds the states (model_states.OPTIMIZER_IMPLS): "torch", or a
    # framework's own ("fp32-gradient-buffer": DeepSpeed BF16_Optimizer's; "fp32-main-gradients":
    # Megatron-LM's). A framework preset sets it.
    optimizer_impl: str = default("optimizer_impl")
    selective_policy: str = default("selective_policy")
    activation_offload: bool = default("activation_offload")   # torchtune OffloadActivations (checkpointing.py)
    context_parallel: int = default("context_parallel")        # torchtitan ring attention: the sequence ÷ cp GPUs
    # Without FlashAttention, the softmax runs in fp32 (eager PyTorch under autocast, transformers'
    # eager attention); False: a fused 16-bit softmax kernel (Megatron-LM), Korthikanti's count.
    softmax_fp32: bool = default("softmax_fp32")
    # 16-bit compute by torch.autocast over fp32 parameters (Hugging Face Trainer's fp16/bf16 AMP): each
    # saved activation at the dtype autocast gives it (activations.autocast_terms); a framework preset sets it.
    autocast_fp32_params: bool = default("autocast_fp32_params")
    # How the layers' kernels run (activations.py, kernels.py): "eager" (eager PyTorch's extra saved
    # tensors), "compiled" (torch.compile of each layer: fused layers, an eager final norm, a compiled
    # chunked loss) or "fused" (what fused kernels keep: Megatron-LM's Transformer Engine kernels, and
    # Korthikanti et al.'s count).
    kernels: str = default("kernels")
    # Micro-batches accumulated per optimizer step (None: not stated): with the behaviour flags below, whether
    # gradients persist beside the loss peak (phases.py).
    gradient_accumulation_steps: int | None = default("gradient_accumulation_steps")
    # What the framework running the step does, resolved from the workload's `framework` when it is loaded
    # (input/frameworks.py behaviour). The estimate reads these, never a framework's name.
    optimizer_step_temporary: str = default("optimizer_step_temporary")   # "foreach": √v allocated at the step
    frees_gradients_between_steps: bool = default("frees_gradients_between_steps")   # False: buffers kept
    data_parallel_impl: str = default("data_parallel_impl")   # "fsdp2": sharded .grad, freed each step
    fsdp_fp32_params: bool = default("fsdp_fp32_params")      # FSDP2 over fp32 params: fp32 gradient reduce
    # Where the framework does what a flag says: (flag, source) pairs, quoted by the notes.
    flag_sources: tuple[tuple[str, str], ...] = ()

    def source_of(self, flag: str, otherwise: str) -> str:
        """Where the framework does what `flag` says (flag_sources), else `otherwise`."""
        return next((text for name, text in self.flag_sources if name == flag), otherwise)


@dataclass(frozen=True)
class InferenceSetup:
    context: int                 # tokens per sequence (prompt + generated)
    batch: int = default("batch")                   # concurrent sequences
    precision: str = default("precision")           # fp32 | bf16 | fp16 | fp8 | int8 | int4
    kv_precision: str = default("precision")        # the KV cache's (inference.default_kv_precision decides)
    tensor_parallel: int = default("tensor_parallel")
    prefill_tokens: int | None = None   # tokens per forward pass; None: DEFAULT_PREFILL_TOKENS
    attention: str = default("attention")   # flash | sdpa | eager (activations.py: eager keeps a layer's s×s scores)
    engine: str | None = None    # catalog/engines.py id (None: the default engine); its row says how it runs
