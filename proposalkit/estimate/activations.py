"""Activation memory: what a training step stores for its backward pass, in
bytes per GPU (the transient workspace of an inference forward pass is
workspace.py).

Symbols follow Korthikanti et al. 2022 (Table 1): s sequence length,
b micro-batch, h hidden size, a attention heads, L layers, t tensor-parallel
size, p pipeline-parallel size, v vocabulary; d head size, kv key/value
heads, f the MLP's inner width (shapes from catalog/shapes.py).

Sources, cited where used: Korthikanti et al. 2022, "Reducing Activation
Recomputation in Large Transformer Models", §4 (activations per layer, eq.
1-2, Table 2; pipeline §4.2.3; embeddings and output layer §4.3); Dao et al.
2022, "FlashAttention" (no s x s matrices stored; softmax statistics kept).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import NamedTuple

from .arith import ceil, check_positive, exact, memo
from ..precision import FP32_BYTES
from ..catalog.modules import default_lora
from .lora import lora_activation_bytes_per_layer
from .checkpointing import (
    OFFLOAD_STASH_TENSORS, POLICY_REFERENCES, POLICY_SOURCES, attention_core_bytes, offloaded_stash_bytes, op_policy_saved_bytes,
)
from .kernels import (
    AUTOCAST_NOTE, AUTOCAST_RESIDUAL_BYTES, COMPILE_NOTE, HEAD_COPY_NOTE, autocast_terms, eager_note, eager_terms,
    final_norm_extra, head_copy_terms,
)
from .loss import head_backward_bytes, loss_note, loss_peak_bytes
from ..catalog.shapes import (
    ModelSpec, expert_ffn_hidden, is_mla, is_moe, largest_linear_params, linear_weight_params, mlp_matrices,
    moe_layer_count,
    projection_widths, require_architecture, routed_experts, shared_expert_ffn_hidden,
)
from .setups import TrainingSetup
from ..notes import Note, note

# A dropout mask is stored as 1 byte per element (Korthikanti et al. 2022 §4.1).
MASK_BYTES = 1
# FlashAttention keeps the softmax log-sum-exp statistics, one fp32 value per
# query row per head, instead of the s x s probabilities (Dao et al. 2022, Alg. 1-2).
SOFTMAX_STATISTICS_BYTES = 4
# Mixture-of-experts router probabilities are computed in fp32 (Mixtral's HF
# implementation applies softmax with dtype=torch.float).
ROUTER_PROBABILITY_BYTES = 4




def tensor_parallel_shares(tensor_parallel: int, sequence_parallel: bool) -> tuple[Fraction | int, Fraction | int]:
    """(inside, outside): one GPU's share of a layer's per-token work, on a t-way tensor-parallel group.
    Inside the attention and MLP blocks (Q, K, V, the scores, the o_proj input, the MLP's inner width) each GPU
    holds 1/t of the heads and of the width. Outside them (the norms, the blocks' inputs, the dropouts and the
    residual adds) every GPU holds the whole sequence, unless sequence parallelism splits it along the sequence,
    1/t (Korthikanti et al. 2022 §4.2.2: eq. 2 without, Table 2 with). Activation memory (here) and the
    memory-bound kernels' time (step_time.py) both take these shares."""
    split = exact(1, tensor_parallel)
    return split, split if sequence_parallel else 1


def activation_terms_per_layer(
    model: ModelSpec,
    seq_len: int,
    micro_batch: int,
    *,
    flash_attention: bool,
    tensor_parallel: int = 1,
    sequence_parallel: bool = True,
    bytes_per_value: int = 2,
    moe_layer: bool = True,
    softmax_fp32: bool = False,
    autocast_fp32_params: bool = False,
    kernels: str = "fused",
) -> dict[str, Fraction]:
    """Bytes one transformer layer stores for the backward pass, term by term.

    Korthikanti et al. 2022 §4.1 count, for a GPT block in 16-bit (e = 2
    bytes per value, masks 1 byte), with sb = s·b:
      LayerNorm inputs              2 · e·sb·h        =  4 sbh
      QKV input (shared)            e·sb·h            =  2 sbh
      Q and K (for QKᵀ), V          e·sb·(h + h + h)  =  6 sbh
      softmax output, dropout mask, dropout output
                                    (e + 1 + e)·a·s²·b = 5 a s² b
      o_proj input                  e·sb·h            =  2 sbh
      MLP input                     e·sb·h            =  2 sbh
      GELU input (up output) and down_proj input
                                    2 · e·sb·4h       = 16 sbh
      two dropout masks (attention out, MLP out)
                                    2 · sb·h          =  2 sbh
      total                         sbh · (34 + 5as/h)          (eq. 1)
    Generalised here: Q is a·d wide and K, V kv·d wide (grouped-query
    attention); the o_proj input is a·d wide; a SwiGLU MLP stores gate output
    (SiLU input), up output and their product (down_proj input), 3 · e·sb·f,
    as fused SwiGLU kernels do (eager: kernels.eager_terms() adds what unfused
    ops keep beyond this count); a GELU MLP 2 · e·sb·f; without dropout there are no masks
    and the softmax output alone serves the backward (2 a s² b, not 5).
    FlashAttention (Dao et al. 2022) stores no s² tensor, only the fp32
    log-sum-exp per row and head (4·a·s·b); its dropout mask is regenerated.
    softmax_fp32: the softmax runs in fp32, as eager PyTorch attention does in
    16-bit training (autocast runs softmax in fp32, PyTorch's autocast op
    reference "CUDA Ops that can autocast to float32"; transformers' Llama-family
    eager_attention_forward @ d0fed636 calls softmax(..., dtype=torch.float32)):
    its fp32 output is saved (4 B per score) and the 16-bit copy the V matmul
    takes (e), or with dropout the mask (1) and the 16-bit dropout output (e):
    4 + e (+ 1) per score, 6 (7 with dropout) in bf16 against Korthikanti's
    fused 16-bit softmax, 2 (5). Megatron-LM's fused softmax kernel keeps the
    paper's count.
    A mixture-of-experts layer (moe_layer) stores the shared input (router),
    one input and the inner activations per routed expert (experts_per_token,
    at the expert width), the shared experts' inner activations and the fp32
    router probabilities: the tokens routed, not every expert. Each routed
    expert's output is multiplied by its routing weight, whose gradient needs
    that output (e·sb·h per routed expert; HF Mixtral: expert_layer(x) *
    routing_weights); Qwen2-MoE's sigmoid-gated shared expert keeps its output
    for the gate's gradient likewise (e·sb·h). MLA (DeepSeek)
    stores Q, K at a·(dn + dr) and V at a·dv as expanded from the latents,
    plus the latents before and after their RMSNorms (2·(q_lora + kv_lora) + dr).
    Each norm stores its input (norms_per_layer: Gemma 2/3 four, Falcon-7B,
    Phi-2 and GPT-J one), q/k norms too (qk_norm: Qwen3, Gemma 3, OLMo 2 keep
    q and k before their norm, e·sb·(a·d + kv·d)); parallel attention after one norm (those three) feeds
    the MLP the QKV input, so no separate MLP input is stored.
    Tensor parallelism splits Q, K, V, the scores, the o_proj input and the
    MLP inner activations by t; the norms, the QKV/MLP inputs and the masks
    are split only with sequence parallelism (eq. 2 vs Table 2), so with
    sequence parallelism the whole layer is divided by t.
    autocast_fp32_params: 16-bit compute by autocast over fp32 parameters
    (Hugging Face Trainer AMP): autocast_terms() gives the tensors autocast
    leaves in fp32 and the 16-bit copies it makes.
    kernels: "eager" (eager PyTorch, no torch.compile, no fused kernels):
    kernels.eager_terms() adds the fp32 norm copies and a gated MLP's
    activation output; "eager" and "compiled" (torch.compile) add GQA's
    K/V head copies (kernels.head_copy_terms()); "fused" (Megatron) neither.
    """
    require_architecture(model, "activation memory")
    check_positive(seq_len, "seq_len")
    check_positive(micro_batch, "micro_batch")
    check_positive(tensor_parallel, "tensor_parallel")
    return _terms(model, seq_len, micro_batch, flash_attention, tensor_parallel, sequence_parallel,
                  bytes_per_value, moe_layer, softmax_fp32, autocast_fp32_params, kernels)


def _terms(model: ModelSpec, s: int, b: int, flash_attention: bool, tensor_parallel: int,
           sequence_parallel: bool, e: int, moe_layer: bool, softmax_fp32: bool = False,
           autocast_fp32_params: bool = False, kernels: str = "fused") -> dict[str, Fraction]:
    """activation_terms_per_layer() without its checks (training_memory has made them)."""
    h, a = model.hidden, model.heads
    q_width, k_width, v_width, o_width = projection_widths(model)
    sb = s * b
    split, replicated = tensor_parallel_shares(tensor_parallel, sequence_parallel)
    moe = moe_layer and moe_layer_count(model) > 0
    routed = routed_experts(model) if moe else 1
    f = expert_ffn_hidden(model) if moe else model.ffn_hidden
    inner_tensors = mlp_matrices(model)
    shared_input = model.parallel_attention and model.norms_per_layer == 1   # one norm feeds QKV and MLP

    terms: dict[str, Fraction] = {}
    terms["norm inputs"] = model.norms_per_layer * e * sb * h * replicated
    terms["qkv input"] = e * sb * h * replicated
    terms["q, k, v"] = e * sb * (q_width + k_width + v_width) * split
    if model.qk_norm != "none":
        terms["q/k norm inputs"] = e * sb * (q_width + k_width) * split
    if is_mla(model):
        terms["mla latents"] = e * sb * (2 * (model.q_lora_rank or 0) + 2 * model.kv_lora_rank
                                         + model.qk_rope_head_dim) * replicated
    if flash_attention:
        terms["softmax statistics"] = SOFTMAX_STATISTICS_BYTES * a * s * b * split
    else:
        if softmax_fp32 and e < FP32_BYTES:
            per_score = FP32_BYTES + e + (MASK_BYTES if model.dropout else 0)
        else:
            per_score = e + ((MASK_BYTES + e) if model.dropout else 0)
        terms["attention scores"] = per_score * a * s * s * b * split
    terms["o_proj input"] = e * sb * o_width * split
    if not shared_input:
        terms["mlp input"] = e * sb * h * replicated
    if moe:
        terms["expert inputs"] = e * sb * h * routed * split
        terms["router probabilities"] = ROUTER_PROBABILITY_BYTES * sb * model.experts * replicated
    if moe:
        terms["expert outputs"] = e * sb * h * routed * split
    terms["mlp inner"] = inner_tensors * e * sb * f * routed * split
    if moe and model.shared_experts:
        terms["shared expert inner"] = (inner_tensors * e * sb * shared_expert_ffn_hidden(model)
                                        * model.shared_experts * split)
    if moe and model.shared_expert_gate:
        terms["shared expert output"] = e * sb * h * split
    if model.dropout:
        terms["dropout masks"] = 2 * MASK_BYTES * sb * h * replicated
    autocast = autocast_fp32_params and e < FP32_BYTES
    if autocast:
        terms.update(autocast_terms(model, sb, e, replicated))
    if kernels == "eager":
        terms.update(eager_terms(model, sb, e, split, replicated, moe, AUTOCAST_RESIDUAL_BYTES if autocast else e))
    if kernels != "fused":
        terms.update(head_copy_terms(model, sb, e, split))
    return terms


def activation_bytes_per_layer(
    model: ModelSpec,
    seq_len: int,
    micro_batch: int,
    *,
    flash_attention: bool,
    tensor_parallel: int = 1,
    sequence_parallel: bool = True,
    bytes_per_value: int = 2,
) -> int:
    """Bytes one layer stores for backward; the sum of activation_terms_per_layer().

    GPT-style block (GELU, f = 4h, MHA, dropout, no FlashAttention):
    s·b·h·(34 + 5·a·s/h) (Korthikanti et al. 2022 eq. 1); with t-way tensor
    and sequence parallelism that divided by t (Table 2).
    """
    terms = activation_terms_per_layer(
        model, seq_len, micro_batch,
        flash_attention=flash_attention, tensor_parallel=tensor_parallel,
        sequence_parallel=sequence_parallel, bytes_per_value=bytes_per_value,
    )
    return ceil(sum(terms.values()))


class TrainingActivations(NamedTuple):
    """Activation bytes of a training step: `total` where gradients persist (the loss peak and the recomputed
    layer compared, every gradient beside both), and the two phases where they do not (phases.py): `at_loss`,
    the saved activations with the loss's peak and the hidden-state gradient the output projection's backward
    writes; `at_backward`, the saved activations with the recomputed layer. Equal to `total` under pipeline
    parallelism (the schedule accumulates gradients over micro-batches). `at_head`: the saved activations as the
    chunked loss's output projection accumulates its weight gradients (loss.head_backward_bytes; else 0)."""

    total: int
    at_loss: int
    at_backward: int
    notes: tuple[Note, ...]
    at_head: int = 0


def training_activation_bytes(model: ModelSpec, setup: TrainingSetup) -> tuple[int, tuple[str, ...]]:
    """Activation bytes on the busiest GPU of a training step, with the notes to print (training_activations)."""
    acts = training_activations(model, setup)
    return acts.total, acts.notes


@memo
def training_activations(model: ModelSpec, setup: TrainingSetup) -> TrainingActivations:
    """Activation bytes on the busiest GPU of a training step, by phase, with the notes to print.

    Per layer: activation_bytes_per_layer(). Full activation checkpointing
    keeps each layer's input (e·s·b·h, ÷ t with sequence parallelism) and one
    layer's full activations while it is recomputed (Korthikanti Table 2,
    full activation recomputation: 2sbh per layer).
    Pipeline parallelism with 1F1B: the first stage holds p microbatches of its
    L/p layers, "p × L/p = L layers worth of activations" whatever p is
    (Korthikanti §4.2.3). The embedding dropout mask adds s·b·h·p/t; the last
    norm (e·sbh/t) and the output projection input (e·sbh/t) sit on the last
    stage (Korthikanti §4.3), with the loss's peak (loss.py: 12 B per logit
    for cross_entropy on fp32-upcast logits, where the paper counts 4),
    compared with the recomputed layer: the loss peaks at the end of the
    forward, the recompute comes later in the backward. The embedding output
    is not counted apart: it is the first layer's input, already counted.
    LoRA adds each adapter's rank-r product x·A (e·s·b·r); QLoRA adds the one
    block matrix that bitsandbytes dequantizes to 16 bits for each matmul.
    Selective checkpointing keeps what its policy saves and recomputes the
    rest (checkpointing.py); activation offloading leaves a stash of saved
    tensors on the GPU; context parallelism divides every per-token tensor
    and the loss by cp, adding the ring attention's K/V blocks in flight.
    setup.kernels: "eager" adds kernels.eager_terms() to every layer and the
    final norm's fp32 copy; "compiled" (torch.compile of each layer) the final
    norm's copy and the compiled chunked loss (loss.py); both GQA's K/V head
    copies (kernels.head_copy_terms()); "fused" none of these.
    """
    if not model.has_architecture:
        return TrainingActivations(0, 0, 0, (note("training-activations-not-estimated", model=model.id),))
    e = 4 if setup.precision == "fp32" else 2
    autocast = setup.autocast_fp32_params and e < FP32_BYTES
    residual = AUTOCAST_RESIDUAL_BYTES if autocast else e   # the layer inputs: the fp32 stream under autocast
    cp = setup.context_parallel
    # Context parallelism (torchtitan, ring attention) gives each GPU s/cp of the sequence's tokens:
    # every per-token activation, and the loss, divided by cp (input/loading.py requires FlashAttention).
    s, b, h, v = exact(setup.seq_len, cp), setup.micro_batch, model.hidden, model.vocab
    t, p = setup.tensor_parallel, setup.pipeline_parallel
    sp = setup.sequence_parallel or t == 1
    split, replicated = tensor_parallel_shares(t, sp)
    ckpt = setup.activation_checkpointing
    layer_input = residual * s * b * h * replicated
    lora = (lora_activation_bytes_per_layer(model, setup.lora or default_lora(model), s * b, e, t)
            if setup.method in ("lora", "qlora") else 0)

    def layer_kinds(moe_layer: bool) -> tuple:
        """(kept for backward, transient while recomputed, largest saved tensor) of one layer of this kind."""
        terms = _terms(model, s, b, setup.flash_attention, t, sp, e, moe_layer, setup.softmax_fp32, autocast,
                       setup.kernels)
        full = sum(terms.values()) + lora
        widest = max(projection_widths(model)[0], model.ffn_hidden, expert_ffn_hidden(model) if moe_layer else 0)
        largest = max(layer_input, e * s * b * widest * split)
        if ckpt is True:
            return layer_input, full, layer_input
        if ckpt == "selective" and setup.selective_policy == "attention":
            core = attention_core_bytes(terms)
            return full - core, core, largest
        if ckpt == "selective":
            saved = op_policy_saved_bytes(model, s * b, e, t, setup.flash_attention, layer_input, moe_layer)
            return saved + lora, full, largest
        return full, 0, largest

    # A model with dense and MoE layers (DeepSeek's first_k_dense_replace) counts every layer at the larger kind.
    moe_layers = moe_layer_count(model)
    kinds = [moe_layer for moe_layer, present in ((True, moe_layers > 0), (False, moe_layers < model.layers))
             if present]
    per_kind = [layer_kinds(moe_layer) for moe_layer in kinds]
    kept, recompute, largest = (max(x[i] for x in per_kind) for i in range(3))
    dequantized = 0
    if setup.method == "qlora":
        # bitsandbytes dequantizes one NF4 matrix at a time to the compute dtype for
        # each matmul (MatMul4Bit); the largest block matrix bounds that buffer.
        dequantized = exact(e * largest_linear_params(model), t)

    layers_per_stage = math.ceil(model.layers / p)
    in_flight = p                     # 1F1B: the first stage holds p microbatches

    def stage(microbatches: int) -> Fraction:
        """What the stage's layers keep for the backward (the recomputed layer apart)."""
        if setup.activation_offload:
            return offloaded_stash_bytes(kept, largest, microbatches * layers_per_stage)
        return microbatches * layers_per_stage * kept

    if setup.activation_offload:
        recompute += largest          # the backward brings a layer's saved tensors back before it recomputes
    if cp > 1:
        # Ring attention: the next K/V block arrives while the current one is used (two K and V
        # buffers) and the partial outputs are merged in fp32 (torch.distributed.tensor.experimental
        # context_parallel, _templated_ring_attention).
        q_width, k_width, v_width, _ = projection_widths(model)
        recompute += 2 * e * s * b * (k_width + v_width) * split + FP32_BYTES * s * b * q_width * split

    embedding_masks = MASK_BYTES * s * b * h * in_flight * replicated if model.dropout else 0
    # The last stage keeps the final norm's input and (unless the loss is fused) the LM head's input
    # (Korthikanti §4.3: 2·e·sbh/t), then the loss peaks while every saved activation is still live; a
    # checkpointed layer is recomputed later, in the backward, after the loss's buffers are freed, so
    # the two transients are compared, not added (the larger of the phases).
    # Under autocast the final norm's input is the fp32 residual stream; the LM head saves its 16-bit cast.
    head_inputs = (residual + (0 if setup.loss == "fused" else e)) * s * b * h * replicated
    if setup.kernels != "fused":
        head_inputs += final_norm_extra(model, s * b, residual, replicated)
    loss = loss_peak_bytes(setup.loss, s * b, h, v, e, t, compiled=setup.kernels == "compiled")
    head = head_backward_bytes(setup.loss, s * b, h, v, e, residual, t)
    common = dequantized
    if autocast:
        # The cast copies of the busiest stage's block weights and of the output projection (tied or not).
        cast_weights = linear_weight_params(model) * exact(layers_per_stage, model.layers) + v * h
        common += exact(e * cast_weights, t)
    if p == 1:
        common += stage(1) + embedding_masks + head_inputs
        total = common + max(loss, recompute)
        # The output projection's backward writes the gradient of its input, the hidden states (the residual
        # stream's width and dtype), while the loss's buffers are live: counted with the loss, whole on each
        # tensor-parallel GPU (conservative).
        at_loss, at_backward = common + loss + residual * s * b * h, common + recompute
        at_head = common + head if head else 0
    else:
        first = stage(in_flight) + embedding_masks + recompute
        last = stage(1) + head_inputs + max(loss, recompute)
        total = at_loss = at_backward = common + max(first, last)
        at_head = common + stage(1) + head_inputs + head if head else 0   # the last stage

    notes = _training_notes(model, setup.method, e, ckpt, setup.flash_attention,
                            p, t, sp, layers_per_stage, len(kinds) > 1, setup.loss, setup.softmax_fp32,
                            setup.kernels)
    notes += _mechanism_notes(model, ckpt, setup.selective_policy, setup.activation_offload, cp, e, s * b)
    if autocast:
        notes += (AUTOCAST_NOTE,)
    return TrainingActivations(ceil(total), ceil(at_loss), ceil(at_backward), notes, ceil(at_head))


@memo
def _mechanism_notes(model: ModelSpec, checkpointing, policy: str, offload: bool, cp: int, e: int,
                     tokens) -> tuple[Note, ...]:
    """Notes on selective checkpointing, activation offloading and context parallelism, where used."""
    notes = []
    if checkpointing == "selective":
        notes.append(note("selective-policy", POLICY_REFERENCES[policy], policy=policy, why=POLICY_SOURCES[policy]))
    if offload:
        notes.append(note("activation-offload", ("torchtune-readme",), stash_tensors=OFFLOAD_STASH_TENSORS))
    if cp > 1:
        notes.append(note("context-parallel", ("torchtitan-sac",), context_parallel=cp, tokens=tokens))
    return tuple(notes)


@memo
def _training_notes(model: ModelSpec, method: str, e: int, checkpointing: bool, flash_attention: bool, p: int,
                    t: int, sp: bool, layers_per_stage: int, mixed_kinds: bool, loss: str,
                    softmax_fp32: bool, kernels: str = "fused") -> tuple[Note, ...]:
    """training_activation_bytes()'s notes: the same for every GPU count and ZeRO stage tried."""
    notes = []
    if is_moe(model):
        notes.append(note("moe-activations", experts_per_token=model.experts_per_token, experts=model.experts,
                          shared_experts=model.shared_experts, mixed_kinds=mixed_kinds))
    if method in ("lora", "qlora"):
        notes.append(note("lora-activations", ("hu-2021",)))
    if method == "qlora":
        notes.append(note("qlora-dequant-buffer", ("dettmers-2023", "hu-2021")))
    notes.append(note("training-activations", ("dao-2022", "korthikanti-2022"), flash_attention=flash_attention,
                      softmax_fp32=not flash_attention and softmax_fp32 and e < 4, value_bytes=e,
                      checkpointing=checkpointing))
    if kernels != "fused":
        notes.append(COMPILE_NOTE if kernels == "compiled" else eager_note(model))
        if head_copy_terms(model, 1, 1, Fraction(1)):
            notes.append(HEAD_COPY_NOTE)
    notes.append(loss_note(loss, e, compiled=kernels == "compiled"))
    if p > 1:
        notes.append(note("pipeline-activations", ("korthikanti-2022",), pipeline_parallel=p,
                          layers_per_stage=layers_per_stage))
    if t > 1:
        notes.append(note("tensor-parallel-activations", ("korthikanti-2022",), tensor_parallel=t,
                          sequence_parallel=sp))
    return tuple(notes)
