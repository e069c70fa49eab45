"""What a layer keeps for its backward under each activation-checkpointing policy, and under
activation offloading, in bytes per GPU (the recomputed transient apart).

Symbols as in activations.py: s tokens of the sequence on this GPU, b micro-batch, h hidden,
a heads, d head size, kv key/value heads, f the MLP's inner width, t tensor parallel, e bytes
per 16-bit value.

- Full checkpointing keeps each layer's input (e·s·b·h, ÷ t with sequence parallelism) and
  recomputes the whole layer in the backward (Korthikanti et al. 2022, Table 2).
- Selective, policy "attention" (Megatron-LM ``--recompute-granularity selective``,
  Korthikanti et al. 2022 §4.2): keeps every activation but the attention core's, the s×s
  scores, softmax and dropout (the 5as/h term), or under FlashAttention its fp32 softmax
  statistics; it recomputes that core, one layer at a time. The default: it keeps the most.
- Selective, policy "op" (torchtitan's op-level selective checkpointing, pytorch/torchtitan @
  82010c79 torchtitan/models/llama/parallelize_llama.py, ``_save_list`` and
  ``_custom_policy``: "Saves output of all compute ops, except every second mm"): per layer
  the checkpoint's input, the outputs of the 1st, 3rd, 5th, ... aten.mm in forward order, and
  the output of the fused attention kernel (its output e·s·b·a·d and fp32 log-sum-exp
  4·a·s·b). A Llama block runs wq, wk, wv, wo, w1, w3, w2 (torchtitan's Attention and
  FeedForward forwards), so it keeps q (a·d), v (kv·d), w1's output (f) and w2's output (h):
  Llama-3.1-8B, per token and layer, 2·(4096 + 4096 + 1024 + 14336 + 4096 + 4096) + 4·32 =
  63,616 B ≈ 64 KB, against 8 KB for full checkpointing. Tensor parallelism splits the
  column-parallel outputs (wq, wv, w1) by t; the row-parallel ones (wo, w2) are saved as the
  mm wrote them, full width before the reduce-scatter (not in that commit's save list). A
  plain MLP runs up, down (its 5th mm is up); a mixture of experts' routed experts run as
  grouped matmuls (not aten.mm: recomputed), its router and shared experts as mm.
- Activation offloading (torchtune OffloadActivations, pytorch/torchtune @ e511d5a2
  torchtune/training/_activation_offloading.py): every saved activation of at least 1,024
  bytes is copied to pinned CPU memory in the forward; a stash of the last
  max_fwd_stash_size = 5 saved tensors stays on the GPU until their copies finish, and the
  backward brings each back as its layer needs it. torchtune excludes the output layer, so the
  head's inputs and the loss stay on the GPU.
"""

from __future__ import annotations

from fractions import Fraction

from ..precision import FP32_BYTES
from ..catalog.shapes import ModelSpec, is_moe, moe_layer_count, projection_widths, shared_expert_ffn_hidden
from ..knobs import default

SELECTIVE_POLICIES = ("attention", "op")
DEFAULT_SELECTIVE_POLICY = default("selective_policy")     # Megatron-LM's (proposalkit/knobs.py)
# torchtune OffloadActivations(max_fwd_stash_size: int = 5, min_offload_size: int = 1024) (@ e511d5a2).
OFFLOAD_STASH_TENSORS = 5

POLICY_SOURCES = {
    "attention": "selective checkpointing of the attention core (Megatron-LM; Korthikanti et al. 2022 §4.2): "
                 "every activation kept but the attention scores/softmax, recomputed one layer at a time",
    "op": "torchtitan's op-level selective checkpointing (@ 82010c79 parallelize_llama.py: every other "
          "matmul's output and the attention kernel's output kept, the rest recomputed)",
}
# The works the references list that each policy's account cites (catalog/references.py ids).
POLICY_REFERENCES = {"attention": ("korthikanti-2022",), "op": ("torchtitan-sac",)}


def attention_core_bytes(terms: dict[str, Fraction]) -> Fraction | int:
    """The attention core's stored bytes in a layer's terms: scores/softmax/dropout, or FlashAttention's statistics."""
    return terms.get("attention scores", 0) + terms.get("softmax statistics", 0)


def op_policy_saved_bytes(model: ModelSpec, tokens: int, e: int, t: int, flash_attention: bool,
                          layer_input: Fraction | int, moe_layer: bool) -> Fraction:
    """Bytes one layer keeps under torchtitan's op-level policy: its input, every other mm's output, the attention output.

    The mm outputs in forward order, (width, split by t): q, k, v (column parallel), o (row
    parallel: h, whole), then the MLP: gated gate, up (column), down (row); plain up, down; an
    MoE layer its router (h → experts, replicated) and shared experts' mms.
    """
    q, k, v, o_input = projection_widths(model)
    h = model.hidden
    mms: list[tuple[int, int]] = [(q, t), (k, t), (v, t), (h, 1)]
    if moe_layer and is_moe(model) and moe_layer_count(model):
        mms.append((model.experts, 1))
        widths = [shared_expert_ffn_hidden(model)] * (model.shared_experts or 0)
    else:
        widths = [model.ffn_hidden]
    for f in widths:
        mms += ([(f, t), (f, t), (h, 1)] if model.mlp == "gated" else [(f, t), (h, 1)])
    saved = Fraction(layer_input)
    saved += sum(Fraction(e * tokens * width, split) for width, split in mms[0::2])   # 1st, 3rd, 5th, ...
    if flash_attention:
        # _scaled_dot_product_flash_attention's outputs: the attention output and the fp32 log-sum-exp per row and head
        saved += Fraction(e * tokens * o_input + FP32_BYTES * model.heads * tokens, t)
    return saved


def offloaded_stash_bytes(kept_per_layer: Fraction | int, largest_tensor: Fraction | int, layers: int) -> Fraction | int:
    """What activation offloading leaves on the GPU of `layers` layers' saved activations: the
    forward stash of the last OFFLOAD_STASH_TENSORS tensors, each at most the largest saved tensor."""
    return min(layers * kept_per_layer, OFFLOAD_STASH_TENSORS * largest_tensor)
