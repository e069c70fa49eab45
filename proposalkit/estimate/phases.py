"""Whether a training step's gradients coexist with its loss peak.

The loss peaks at the end of the forward and the start of the backward
(loss.py). A trainer that frees the gradients after each optimizer step
(optimizer.zero_grad(set_to_none=True), PyTorch's default since 2.0, before
which zero_grad kept zeroed gradients: pytorch/pytorch @ 002d2f0b
torch/optim/optimizer.py, `def zero_grad(self, set_to_none: bool = True)`;
torchtune @ 01067f61 recipes/full_finetune_single_device.py calls
`self._optimizer.zero_grad(set_to_none=True)` after each step) and steps
after every micro-batch has no gradient yet at that moment but the output
projection's, which the loss's backward writes first. The other gradients
appear later in the backward, after the loss's buffers are freed. So the
step's peak is the larger of two phases, not their sum:
  loss:     weights + optimizer + saved activations + the loss's peak + the
            output projection's gradient + the hidden-state gradient it writes;
  backward: weights + optimizer + every gradient + saved activations (all of
            them, conservatively) + the recomputed layer.
Gradients persist beside the loss, and the sum stays, where something keeps
them across micro-batches or steps (each case named by gradients_persist()).
A third moment follows the backward, the optimizer step: every saved
activation is freed by then, but torch's foreach AdamW allocates a temporary
the size of the second moment while weights, gradients and states are live
(step_temporary_bytes): weights + optimizer + every gradient + that temporary.
With tied embeddings the end of the backward is a moment too: the shared
weight's second gradient beside every gradient (tied_embedding_temporary).
Under the chunked loss the loss moment has a second instant, the output
projection's backward adding its second chunk's weight gradient out of place
(loss.py): three v × h gradients at once with the logit gradients not yet
consumed (head_accumulation_bytes); the larger instant is the loss moment.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

from .arith import exact
from ..precision import FP32_BYTES
from .setups import TrainingSetup
from ..catalog.shapes import ModelSpec
from ..units import bytes_per_element
from ..notes import Note, note

# What the framework running the step does (TrainingSetup's behaviour flags, which input/frameworks.py sets
# with their sources): frees_gradients_between_steps (false: its gradient buffers outlive zero_grad),
# data_parallel_impl "fsdp2" (FSDP2's sharded gradients are plain .grad tensors, freed by zero_grad each step:
# torchtune @ 015b39c7 recipes/full_finetune_distributed.py, torchtitan @ e9f53473 torchtitan/train.py), and
# optimizer_step_temporary "foreach": torch.optim.AdamW with neither foreach nor fused given defaults to foreach
# on CUDA (pytorch/pytorch @ dc80ccde torch/optim/adam.py adam(): _default_to_fused_or_foreach(params,
# differentiable, use_fused=False); AdamW runs the same code), and _multi_tensor_adam allocates
# `exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)`, a new tensor the size and dtype of every second
# moment of the parameter group, before _foreach_addcdiv_ applies the update. The fused kernel (fused=True) and
# bitsandbytes' 8-bit and paged optimizers update in place.
FOREACH_ADAMW = "torch.optim.AdamW with foreach"     # what the step note says where no source is given


def step_temporary_bytes(setup: TrainingSetup, moments) -> Fraction | int:
    """Bytes torch's foreach AdamW allocates during the optimizer step beside the model states: one tensor per
    parameter the size of its second moment (half of `moments`, the two Adam moments on the GPU). 0 where the
    step updates in place (fused, 8-bit, paged, a framework's own optimizer), runs on the CPU (offload) or one
    parameter at a time (optimizer in backward)."""
    if (setup.optimizer != "adamw" or setup.optimizer_step_temporary != "foreach"
            or setup.optimizer_impl != "torch" or setup.optimizer_in_backward or setup.offload_optimizer):
        return 0
    return exact(moments, 2)


def tied_embedding_temporary(model: ModelSpec, setup: TrainingSetup) -> tuple[Fraction | int, Fraction | int]:
    """(the embedding's second gradient, the hidden-state gradient it is computed from) at the end of the backward
    of a model whose input embeddings and output projection share one weight: the output projection's gradient
    is that weight's .grad since the loss's backward, and the embedding's backward then computes a new v × h
    gradient (embedding_dense_backward) that autograd's AccumulateGrad adds into it in place (torch/csrc/autograd/
    functions/accumulate_grad.h, pytorch/pytorch @ dc80ccde: `variable_grad += new_grad` when a gradient is
    already held), so both exist at once, beside every gradient, after the layers' activations are freed.
    (0, 0) where the weight is not shared, the optimizer steps in the backward, or a framework's own gradient
    buffers take the gradients (DeepSpeed, Megatron-LM), or pipeline stages hold the two uses apart."""
    if (not model.has_architecture or not model.tied_embeddings or setup.method != "full"
            or setup.optimizer_in_backward or not setup.frees_gradients_between_steps
            or setup.pipeline_parallel > 1 or setup.offload_optimizer or setup.offload_params):
        return 0, 0
    residual = FP32_BYTES if setup.autocast_fp32_params or setup.precision == "fp32" else bytes_per_element(setup.precision)
    hidden = exact(residual * setup.seq_len * setup.micro_batch * model.hidden, setup.context_parallel)
    return head_gradient_bytes(model, setup), hidden


def tied_note(tied: int, at_end: int) -> Note:
    """The assumption where the end of the backward with tied embeddings is the peak counted."""
    return note("tied-embeddings-end", second_gradient_bytes=tied, allocated_bytes=at_end)


def step_note(setup: TrainingSetup, temporary: int, at_step: int, counted: bool) -> Note:
    """The optimizer step's moment: its temporary (the square root of every second moment), the bytes allocated
    then, whether it is the peak counted; `why` the optimizer's own account (FOREACH_ADAMW or a preset's)."""
    return note("optimizer-step", temporary_bytes=temporary, allocated_bytes=at_step, counted=counted,
                why=setup.source_of("optimizer_step_temporary", FOREACH_ADAMW))


def gradients_persist(model: ModelSpec, setup: TrainingSetup) -> str | None:
    """Why the gradients are counted beside the loss peak (None: they do not coexist with it)."""
    steps = setup.gradient_accumulation_steps
    if steps is None:
        return "gradient_accumulation_steps unset"
    if steps > 1:
        return f"gradient accumulation over {steps} micro-batches keeps the gradients from one to the next"
    if not setup.frees_gradients_between_steps:
        return setup.source_of("frees_gradients_between_steps", "the framework keeps its gradient buffers across steps")
    if setup.optimizer_impl != "torch":
        return "the framework's optimizer keeps its own gradient buffer"
    if setup.method != "full":
        return "the adapters' gradients are small and counted beside the loss (conservative)"
    if setup.optimizer_in_backward:
        return "the optimizer step in backward holds one parameter's gradient at any moment"
    if setup.pipeline_parallel > 1:
        return "the pipeline schedule accumulates gradients over its micro-batches"
    if setup.offload_optimizer or setup.offload_params:
        return "the gradients stream to the offloaded optimizer through GPU buffers (conservative)"
    if setup.data_parallel > 1 and not (setup.data_parallel_impl == "fsdp2" and setup.zero_stage >= 2):
        # torch/csrc/distributed/c10d/reducer.cpp (pytorch/pytorch @ ad78a7b3) initialize_buckets: each
        # bucket's flat `gradients` tensor is allocated once and lives as long as the DDP module.
        return ("data parallelism keeps gradient buckets across steps (PyTorch DDP's reducer buckets, or a ZeRO "
                "implementation the workload does not name)")
    if setup.tensor_parallel > 1 and setup.data_parallel_impl != "fsdp2":
        return "tensor parallelism outside torchtune/torchtitan may keep a gradient buffer (conservative)"
    if not model.has_architecture:
        return "the model gives only a parameter count"
    return None


def head_accumulation_bytes(model: ModelSpec, setup: TrainingSetup) -> Fraction | int:
    """The output projection's weight gradients held at once under the chunked loss (loss.py): the first chunk's
    (a view, kept), the second's and their out-of-place sum, 3 × head_gradient_bytes, in autograd's input buffer
    (beside any .grad a persisting framework keeps). 0 for the other losses, a frozen head (LoRA, QLoRA) or a
    model given only a parameter count."""
    if setup.loss != "chunked" or setup.method != "full" or not model.has_architecture:
        return 0
    return 3 * head_gradient_bytes(model, setup)


def head_accumulation_note(head: int, at_head: int) -> Note:
    """The assumption where the chunked loss's gradient accumulation is the peak counted."""
    return note("chunked-head-accumulation", gradient_bytes=head, allocated_bytes=at_head)


def head_gradient_bytes(model: ModelSpec, setup: TrainingSetup) -> Fraction | int:
    """The output projection's gradient (v·h ÷ t, tied or not), whole before any reduce-scatter: 4 bytes under
    autocast over fp32 parameters or fp32 training, else the weights' width."""
    width = FP32_BYTES if setup.autocast_fp32_params else bytes_per_element(setup.precision)
    return exact(model.vocab * model.hidden * width, setup.tensor_parallel)


def phase_note(model: ModelSpec, setup: TrainingSetup, peak: str | None, at_loss: int = 0, at_backward: int = 0,
               gradients: int = 0) -> Note | None:
    """The assumption on the gradients beside the loss (None where there is nothing useful to say): the peak
    moment and the two compared ("peak-phase"), or why the gradients are summed with the loss
    ("gradients-beside-loss": `why` is gradients_persist's reason, None where the accumulation is unset)."""
    if peak is not None:
        return note("peak-phase", peak=peak, loss_bytes=at_loss, backward_bytes=at_backward, gradient_bytes=gradients)
    why = gradients_persist(model, setup)
    if setup.gradient_accumulation_steps is None:
        if gradients_persist(model, dataclasses.replace(setup, gradient_accumulation_steps=1)) is not None:
            return None          # the sum stays whatever the accumulation: nothing to ask of the user
        return note("gradients-beside-loss", why=None)
    return note("gradients-beside-loss", why=why)
