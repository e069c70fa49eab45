"""The loss on the logits: what the cross-entropy keeps on the GPU at its peak, in bytes.

The loss is the one moment a training step holds a tensor of s·b·v values
(v the vocabulary, 128,256 for Llama 3), so how the framework computes it
decides gigabytes at 8k-32k tokens. Four ways, each read from the code that
runs it:

- standard: PyTorch's cross_entropy on logits upcast to fp32, as Hugging Face
  transformers computes every causal-LM loss (huggingface/transformers @
  d0fed636 src/transformers/loss/loss_utils.py, ForCausalLMLoss:
  ``logits = logits.float()`` then ``nn.functional.cross_entropy``) and
  torchtitan's ``cross_entropy(pred.flatten(0, 1).float(), labels)``.
  What autograd keeps, per logit: cross_entropy is log_softmax + nll_loss;
  log_softmax saves its fp32 output for its backward, nll_loss only the
  targets; the upcast (to_copy) saves nothing.
    forward, as log_softmax writes its output: the 16-bit logits (e) + their
      fp32 copy (4) + the log-softmax output (4) = e + 8 = 10 B (the fp32 copy
      is freed when the loss returns: nothing saved it);
    backward, as log_softmax's backward writes the input gradient: the saved
      log-softmax (4) + its gradient from nll_loss (4, dense) + the input
      gradient (4) = 12 B (the 16-bit logits are gone: the trainer drops the
      model outputs before backward and the upcast saved nothing).
  The peak is the larger, 12 B per logit (fp32 training: 4 + 4 = 8 forward,
  12 backward). Both phases come when every layer's saved activations are
  live (end of forward, start of backward), so they add to them.
- transformers-4.37: the loss LlamaForCausalLM.forward computed itself in Hugging Face transformers 4.37
  to 4.45 (transformers 4.37.0, 4.40.2, 4.44.2 and 4.45.2 on PyPI,
  src/transformers/models/llama/modeling_llama.py LlamaForCausalLM.forward; Mistral's and the other
  Llama-derived models' forward the same: modeling_mistral.py in 4.40.2), in a training loop that keeps
  the model's output until its backward (``output = model(...); output.loss.backward()``, as Answer.AI's
  fsdp_qlora train.py @ 8a89266 does; meta-llama/llama-recipes pull request #41, awgu 2023-07-25,
  measured what holding it costs: ``loss = model(**batch).loss`` instead of
  ``outputs = model(**batch); loss = outputs.loss`` lowered the peak active memory of a Llama-2-7B LoRA
  under FSDP on 4 A100s by 4.98 GB). The model upcasts the logits it returns,
  ``logits = logits.float()`` (the 16-bit projection output is freed on the rebinding: nothing saved
  it), and copies the shifted logits, ``shift_logits = logits[..., :-1, :].contiguous()``, before
  ``CrossEntropyLoss``; 4.46 moved the loss to loss_utils and returns 16-bit logits, and today's pads
  the labels instead of copying.
    forward, as log_softmax writes its output: the returned fp32 logits (4) + the shifted fp32 copy
      (4; a view, no copy, at micro-batch 1, where dropping the last row of one sequence leaves the
      slice contiguous) + the log-softmax output (4) = 12 B;
    backward: standard's 12 B + the returned fp32 logits, which the loop's output still holds (4)
      = 16 B: one fp32 copy of the logits more than today's loss held the same way (12 + e).
  Measured on CPU (benchmarks/transformers_loss.py): 11.94 and 15.92 B per logit at micro-batch 2.
  The Hugging Face Trainer drops the model's output before the backward (trainer.py compute_loss
  returns the loss alone), so its peak under 4.37-4.45 is standard's 12 B: a Trainer run is
  `standard` whatever its version.
- chunked: torchtune's CEWithChunkedOutputLoss (pytorch/torchtune @ ce5433b0
  torchtune/modules/loss/ce_chunked_output_loss.py, num_output_chunks = 8):
  the output projection writes 16-bit logits in n chunks, and each chunk is
  upcast and put through cross_entropy in turn. Every chunk's log-softmax
  output stays saved for backward (4 B per logit, all chunks); the fp32 copy
  exists for one chunk at a time. Forward peak (last chunk): e + 4 + 4/n =
  6.5 B per logit at n = 8; backward: 4 + (4 + 4 + e)/n = 5.25 B.
  Compiled (torch.compile: torchtune @ bd2a0fc7c recipes/full_finetune_single_device.py calls
  training.compile_loss(self._loss_fn) when compile is True, and training/_compile.py compile_loss
  runs the loss's apply_compile_strategy, which compiles compute_cross_entropy, the per-chunk
  cross_entropy(logits.float(), labels, reduction="sum") of ce_chunked_output_loss.py): Inductor
  fuses the upcast, the row max, the sum of exponentials and the target gather into reductions
  over the 16-bit chunk, and AOTAutograd's partitioner saves for the backward what costs the
  fewest bytes: the chunk's 16-bit logits (its graph input, already held as the output
  projection's result) and the per-row max and log-sum-exp (reductions are saved, not
  recomputed), recomputing the log-softmax elementwise in the backward instead of keeping it in
  fp32. Forward peak: every chunk's 16-bit logits, e B per logit, + 8 B per row. Backward, one
  chunk at a time: the 16-bit logits of the chunks not yet done (at most e), one chunk's input
  gradient in 16 bits (e/n) and, counted in case nll_loss's backward scatter is not fused into
  the gradient's kernel, one chunk of fp32 (4/n): e + (e + 4)/n = 2.75 B per logit at e = 2,
  n = 8, + 8 B per row. Uncompiled (eager) and the standard loss under torch.compile keep the
  counts above (torchtune's model upcasts whole logits with .float() outside the compiled layers,
  transformer.py TransformerDecoder.forward; torchtitan @ 9dec370 train.py leaves its loss
  uncompiled).
  The output projection's backward, after the loss's (eager or compiled alike): torchtune applies the
  projection to each chunk (pytorch/torchtune @ 3e5b0408 torchtune/modules/transformer.py chunked_output:
  ``[self.output(chunk) for chunk in last_hidden_state.chunk(self.num_output_chunks, dim=1)]``), so
  autograd gets n weight gradients to add. Its ready queue runs the node of highest sequence number first
  (pytorch/pytorch @ a898f49b torch/csrc/autograd/engine.h ReadyQueue::CompareNodeTaskTime), and every
  loss node is younger than every projection: all n chunks' losses go backward first, leaving the 16-bit
  logit gradients (e B per logit) in the projections' input buffers. Then the projections go backward one
  chunk at a time; the first weight gradient is a transposed view (TBackward0 of mm_mat2_backward's
  ``grad.t().mm(mat1).t()``) whose storage its base still shares, so InputBuffer's accumulate (pytorch/pytorch
  @ 4537ef6c torch/csrc/autograd/input_buffer.cpp: can_accumulate_inplace wants storage().use_count() == 1)
  adds the second out of place, ``old_var + var``: three v × h gradients at once, beside the logit
  gradients of the n - 2 chunks left and the hidden-state gradients of the 2 done (head_backward_bytes);
  later chunks add in place. Measured on CPU (benchmarks/chunked_head_grad.py): the backward's peak is
  that addition, 3·v·h·e + (n - 2)/n·e·s·b·v + 2/n·e·s·b·h (to 12 bytes of scalars).
- fused: fused linear + cross-entropy (Liger Kernel, linkedin/Liger-Kernel @
  e11c2d6c src/liger_kernel/ops/fused_linear_cross_entropy.py; Cut
  Cross-Entropy keeps less): the logits are never materialised. The forward
  computes the gradient of the LM head's input for all tokens (e·s·b·h,
  saved for backward) and a fp32 loss per token (4·s·b), going through the
  tokens in chunks of c = next_pow2(⌈s·b / ⌈v/h⌉⌉) rows, whose logits live as
  16-bit and fp32 copies at once ((e + 4)·c·v). The LM head's weight
  gradient it writes is the gradient buffer counted with the model states.
"""

from __future__ import annotations

import math
from fractions import Fraction

from .arith import exact
from ..options import LOSSES
from ..precision import FP32_BYTES
from ..notes import Note, note

# torchtune CEWithChunkedOutputLoss(num_output_chunks: int = 8) (@ ce5433b0).
CHUNKED_LOSS_CHUNKS = 8
# The compiled chunked loss saves two fp32 values per row: the row max and the log-sum-exp (above).
COMPILED_ROW_STATISTICS_BYTES = 2 * FP32_BYTES

LOSS_SOURCES = {
    "standard": "cross_entropy on fp32-upcast logits, as Hugging Face transformers (loss_utils.ForCausalLMLoss "
                "@ d0fed636) and torchtitan compute it",
    "chunked": f"torchtune CEWithChunkedOutputLoss, {CHUNKED_LOSS_CHUNKS} chunks upcast one at a time (@ ce5433b0)",
    "fused": "fused linear + cross-entropy (Liger Kernel @ e11c2d6c): logits never materialised",
    "transformers-4.37": "Hugging Face transformers 4.37-4.45 LlamaForCausalLM.forward's own loss (modeling_llama.py: "
                         "logits.float(), a contiguous copy of the shifted logits, CrossEntropyLoss), the fp32 "
                         "logits it returns held through the backward by a loop that keeps the output",
}
# The works the references list that each loss's account names (catalog/references.py ids).
LOSS_REFERENCES = {"standard": ("torchtitan-sac",), "chunked": ("torchtune-readme",), "fused": (),
                   "transformers-4.37": ()}
# transformers-4.37: the returned fp32 logits held by the training loop's output through the backward.
HELD_FP32_LOGITS = {"transformers-4.37": FP32_BYTES}


def loss_bytes_per_logit(loss: str, e: int, compiled: bool = False) -> tuple[Fraction | int, Fraction | int]:
    """(forward, backward) peak bytes per logit of a materialising loss; e bytes per 16-bit value;
    compiled: the chunked loss under torch.compile (the per-row statistics apart)."""
    upcast = FP32_BYTES if e < FP32_BYTES else 0          # .float() on fp32 logits returns them, no copy
    if loss == "standard":
        return e + upcast + FP32_BYTES, 3 * FP32_BYTES
    if loss == "transformers-4.37":
        # fp32 logits (the 16-bit ones freed, or the fp32 projection itself) + the shifted copy + log-softmax;
        # backward: standard's three fp32 buffers + the held fp32 logits.
        return 3 * FP32_BYTES, 3 * FP32_BYTES + HELD_FP32_LOGITS[loss]
    if loss == "chunked" and compiled:
        return e, e + exact(e + FP32_BYTES, CHUNKED_LOSS_CHUNKS)
    if loss == "chunked":
        n = CHUNKED_LOSS_CHUNKS
        return e + FP32_BYTES + exact(upcast, n), FP32_BYTES + exact(2 * FP32_BYTES + e, n)
    raise ValueError(f"loss: expected one of {', '.join(LOSSES)}, got {loss!r}")


def loss_peak_bytes(loss: str, tokens: int, hidden: int, vocab: int, e: int, tensor_parallel: int = 1,
                    compiled: bool = False) -> Fraction | int:
    """Bytes the loss holds at its peak for `tokens` = s·b tokens on one GPU.

    standard and chunked: max(forward, backward) bytes per logit × s·b·v / t
    (vocabulary-parallel logits, each tensor-parallel rank holds v/t of them).
    fused: e·s·b·h (input gradient) + 4·s·b (per-token loss) + (e + 4)·c·v
    (one chunk of c rows), ÷ t for the vocabulary-split part. compiled chunked:
    the per-logit peak + 8 B per row (row max and log-sum-exp).
    """
    if loss == "fused":
        inc = math.ceil(vocab / hidden)
        rows = min(tokens, 1 << max(0, math.ceil(tokens / inc) - 1).bit_length())   # triton.next_power_of_2
        return e * tokens * hidden + FP32_BYTES * tokens + exact((e + FP32_BYTES) * rows * vocab, tensor_parallel)
    forward, backward = loss_bytes_per_logit(loss, e, compiled)
    rows = COMPILED_ROW_STATISTICS_BYTES * tokens if compiled and loss == "chunked" else 0
    return max(forward, backward) * exact(tokens * vocab, tensor_parallel) + rows


def head_backward_bytes(loss: str, tokens: int, hidden: int, vocab: int, e: int, residual: int,
                        tensor_parallel: int = 1) -> Fraction | int:
    """The chunked loss's activations at the moment the output projection's backward accumulates its second
    chunk's weight gradient (phases.head_accumulation_bytes counts the gradients): the 16-bit logit
    gradients of the n - 2 chunks not yet consumed and the hidden-state gradients of the 2 done. 0 for the
    other losses (one projection, one weight gradient)."""
    if loss != "chunked":
        return 0
    n = CHUNKED_LOSS_CHUNKS
    return exact((n - 2) * e * tokens * vocab, n * tensor_parallel) + exact(2 * residual * tokens * hidden, n)


def loss_note(loss: str, e: int, compiled: bool = False) -> Note:
    """The loss's note: what it keeps per logit at the forward and backward peaks (the fused loss: none per
    logit), with LOSS_SOURCES' account of it; render/notes.py words it."""
    if loss == "fused":
        return note("loss", LOSS_REFERENCES[loss], loss=loss, why=LOSS_SOURCES[loss])
    compiled = compiled and loss == "chunked"
    forward, backward = loss_bytes_per_logit(loss, e, compiled)
    return note("loss", LOSS_REFERENCES[loss], loss=loss, why=LOSS_SOURCES[loss], compiled=compiled,
                forward_bytes_per_logit=float(forward), backward_bytes_per_logit=float(backward))
