"""What the kernels a framework runs save beyond the fused-kernel count of activations.py, per layer.

activations._terms() counts what fused kernels keep (Korthikanti et al. 2022, a fused RMSNorm and
SwiGLU saving their 16-bit inputs, as torch.compile and Megatron's Transformer Engine kernels run
them). Two ways of running a model keep tensors of other sizes or more tensors, each read from
the code that runs it:

- autocast over fp32 parameters (Hugging Face Trainer AMP): autocast_terms(), the terms it stores
  at other sizes (the fp32 residual stream, 16-bit copies per projection);
- eager PyTorch (no torch.compile, no fused kernels): eager_terms(), the tensors its unfused ops
  save in addition, and final_norm_extra() for the model's last norm.

Symbols as in activations.py: sb tokens × micro-batch on this GPU, h hidden, f MLP inner width,
e bytes per 16-bit value, t tensor parallel (split = 1/t; replicated = 1/t with sequence
parallelism, else 1).
"""

from __future__ import annotations

from fractions import Fraction

from ..precision import FP32_BYTES
from ..notes import Note, note
from ..catalog.shapes import (
    ModelSpec, expert_ffn_hidden, is_mla, mlp_matrices, projection_widths, routed_experts,
    shared_expert_ffn_hidden,
)

# torch.autocast over fp32 parameters (Hugging Face Trainer AMP): the residual stream stays fp32 (the
# embeddings are fp32, and adding a 16-bit sublayer output to it promotes, PyTorch type promotion), the
# norms run in fp32 (layer_norm is on autocast's float32 list; transformers' LlamaRMSNorm @ d0fed636
# computes in fp32 and returns its fp32 input's dtype), so each norm saves a 4-byte input; every linear
# fed by a norm casts that fp32 output to its own saved 16-bit copy (linear is on autocast's lower-precision
# list; a non-leaf cast is not cached, PyTorch docs "Automatic Mixed Precision package - torch.amp").
AUTOCAST_RESIDUAL_BYTES = FP32_BYTES
# Linears each norm's output feeds, one 16-bit copy each: q, k, v (transformers' BertSelfAttention and
# LlamaAttention @ d0fed636 keep three nn.Linear; a fused qkv matrix casts once, so this bounds it).
AUTOCAST_QKV_COPIES = 3
# Autocast caches the 16-bit cast of each fp32 leaf weight it feeds to a lower-precision op until the
# outermost autocast region exits, whatever the grad mode (pytorch/pytorch aten/src/ATen/autocast_mode.cpp
# cached_cast: can_try_cache for an fp32 leaf that requires grad, no grad-mode condition): at the forward's
# end every block linear's and the output projection's 16-bit copy is live (2 B per cast weight in fp16/bf16).
# It coexists with the fp32 gradients under gradient accumulation (not freed between micro-batches), which
# the workload format does not state: counted, since an under-estimate is the worst error.



def autocast_terms(model: ModelSpec, sb: int, e: int, replicated: Fraction) -> dict[str, Fraction]:
    """The terms of _terms() that autocast over fp32 parameters stores at other sizes, per layer.

    The norms' inputs are the fp32 residual stream (4 B each, not e); the
    attention projections each save their own e-byte cast of the fp32 norm
    output (AUTOCAST_QKV_COPIES, not one shared e-byte input; MLA's latent
    path is left at one); the MLP's input projections likewise (gate and up
    of a gated MLP: 2, plain: 1), also where one norm feeds attention and
    MLP. Everything computed by a 16-bit op stays e bytes: q, k, v, the
    o_proj input, the MLP inner tensors (GELU/SiLU are on neither autocast
    list and run in their input's 16-bit dtype); the scores are counted by
    softmax_fp32 (a mask added in the parameters' fp32 dtype, as BERT's
    extended attention mask, promotes them to fp32 before the fp32 softmax,
    which saves its output, as counted). Per token and layer, for BERT
    (two norms, plain MLP): 2·4 + 3·e + e = 8 + 4e bytes · h against the
    16-bit count's 2·e + e + e = 4e: 16 · h against 8 · h in fp16.
    """
    h = model.hidden
    qkv_copies = 1 if is_mla(model) else AUTOCAST_QKV_COPIES
    mlp_copies = 2 if mlp_matrices(model) == 3 else 1
    return {"norm inputs": model.norms_per_layer * AUTOCAST_RESIDUAL_BYTES * sb * h * replicated,
            "qkv input": qkv_copies * e * sb * h * replicated,
            "mlp input": mlp_copies * e * sb * h * replicated}





# Eager PyTorch's RMSNorm computes in fp32 and saves that copy: transformers' LlamaRMSNorm @ d0fed636
# (models/llama/modeling_llama.py: hidden_states.to(torch.float32); pow(2).mean; hidden_states *
# rsqrt(...); return self.weight * hidden_states.to(input_dtype)), torchtune's RMSNorm @ bd2a0fc7c
# (torchtune/modules/rms_norm.py: x_fp32 = x.float(); x_normed = (x_fp32 * rsqrt(...)).type_as(x);
# return x_normed * self.scale) and torchtitan's RMSNorm @ 9dec370 (torchtitan/models/norms.py:
# self._norm(x.float()).type_as(x) * self.weight). Autograd keeps pow's and mul's input, the fp32 copy
# (4 B per value; the 16-bit input itself is then saved by nothing: to_copy saves nothing), the per-row
# rsqrt (4 B per token, as the fused kernel's rstd), and the weight multiply's other operand, the
# normalised tensor in the input's dtype. A fused kernel (torch.compile, Transformer Engine) saves the
# 16-bit input and rstd only, which activations._terms() counts as "norm inputs". Beyond it, per norm
# and value: 4 + e_in - e_in = 4 B (e_in the input's bytes: 2 in 16-bit, 4 in fp32 or under autocast,
# where the input is the fp32 residual stream and .to(float32) returns it).
EAGER_NORM_FP32_COPY = FP32_BYTES
# Gemma's RMSNorm multiplies in fp32 and casts after (transformers @ d0fed636 models/gemma/modeling_gemma.py
# GemmaRMSNorm: output = self._norm(x.float()); output * (1.0 + self.weight.float()); output.type_as(x)): it
# keeps the fp32 copy and the fp32 normalised tensor, 8 B per value, against the counted input (e_in).
GEMMA_NORM_FP32_TENSORS = 2 * FP32_BYTES


def is_gemma(model: ModelSpec) -> bool:
    """Gemma's RMSNorm: config.json's model_type (gemma, gemma2, gemma3_text) or a catalog id gemma-*."""
    return model.family.startswith("gemma") or model.id.startswith("gemma")


def norm_extra_bytes(model: ModelSpec, counted: int) -> int:
    """Bytes per normalised value an eager RMSNorm saves beyond the fused count (`counted` B, its input).
    LayerNorm adds nothing: native_layer_norm saves its input, mean and rstd, as the fused count has it."""
    if model.norm != "rmsnorm":
        return 0
    if is_gemma(model):
        return GEMMA_NORM_FP32_TENSORS - counted
    return EAGER_NORM_FP32_COPY


def eager_note(model: ModelSpec) -> Note:
    """The assumption on eager PyTorch's extras: "eager-extras" where eager_terms() adds something (an RMSNorm
    or a gated MLP), else "eager-no-extras" (LayerNorm and a plain MLP: GPT-2, BERT, Falcon); render/notes.py
    words them."""
    if model.norm == "rmsnorm" or mlp_matrices(model) == 3:
        return note("eager-extras", gemma_norm=is_gemma(model))      # Gemma's norm keeps one more fp32 tensor
    return note("eager-no-extras")


AUTOCAST_NOTE = note("autocast-fp32-params")     # autocast over fp32 parameters: what it saves (autocast_terms)
COMPILE_NOTE = note("compiled-layers")           # torch.compile: the layers keep what fused kernels keep
HEAD_COPY_NOTE = note("gqa-head-copies")         # K and V copied to every query head are saved (head_copy_terms)


def eager_terms(model: ModelSpec, sb: int, e: int, split: Fraction, replicated: Fraction, moe: bool,
                norm_input_bytes: int) -> dict[str, Fraction]:
    """Per layer, what eager PyTorch saves beyond the fused-kernel terms of activations._terms() (the K/V
    head copies apart: head_copy_terms()).

    - The norms (norms_per_layer, the q/k norms, MLA's latent norms): norm_extra_bytes() per value.
    - A gated MLP (SwiGLU, GeGLU) keeps its activation's output too: act(gate(x)) * up(x) saves both
      operands of the multiply (up's output and the activation's output) and the activation saves its
      input (gate's output); a fused SwiGLU (Megatron-LM @ d98e8a64d megatron/core/fusions/
      fused_bias_swiglu.py SwiGLUFunction: ctx.save_for_backward(input) only, recomputing silu in the
      backward; Liger; Inductor) keeps gate and up outputs only. One more e·sb·f per MLP a token
      passes through (transformers' LlamaMLP @ d0fed636: down_proj(act_fn(gate_proj(x)) * up_proj(x));
      torchtune FeedForward @ bd2a0fc7c: w2(activation(w1(x)) * w3(x)); torchtitan @ 9dec370 model.py:
      w2(F.silu(w1(x)) * w3(x))). A plain GELU MLP saves GELU's input only, as counted.
    RoPE adds nothing: q·cos + rotate_half(q)·sin saves only the cos and sin buffers (no gradient), so
    q and k are saved once, by attention, as counted.
    """
    h = model.hidden
    q_width, k_width, _, _ = projection_widths(model)
    norm = norm_extra_bytes(model, norm_input_bytes)
    terms: dict[str, Fraction] = {}
    normed = model.norms_per_layer * h * replicated
    if model.qk_norm != "none":
        normed += (q_width + k_width) * split
    if is_mla(model):
        normed += ((model.q_lora_rank or 0) + model.kv_lora_rank) * replicated
    if norm:
        terms["eager norm fp32 copies"] = norm * sb * normed
    if mlp_matrices(model) == 3:
        width = expert_ffn_hidden(model) * routed_experts(model) if moe else model.ffn_hidden
        if moe and model.shared_experts:
            width += shared_expert_ffn_hidden(model) * model.shared_experts
        terms["eager activation output"] = e * sb * width * split
    return terms


def head_copy_terms(model: ModelSpec, sb: int, e: int, split: Fraction) -> dict[str, Fraction]:
    """Grouped-query attention in PyTorch model code: K and V copied to every query head before attention,
    which saves the copies, 2·e·sb·(a - kv)·d per layer, ÷ t; eager and under torch.compile alike.

    torchtune @ bd2a0fc7c modules/attention.py: k.unsqueeze(2).expand(...).flatten(1, 2); torchtitan @
    9dec370 models/llama/model.py: keys = repeat_kv(xk, self.n_rep); transformers' sdpa_attention_forward
    calls repeat_kv unless use_gqa_in_sdpa (no attention mask and torch >= 2.5), i.e. whenever a mask is
    passed, as with padded batches (counted, since a workload does not say). Inductor keeps the copies too:
    benchmarks/saved_tensors.py measured the same saved bytes for that expand + flatten + SDPA compiled as
    eager. Megatron's Transformer Engine attention takes the kv heads as they are (FUSED in planner terms).
    """
    q_width, k_width, v_width, _ = projection_widths(model)
    if is_mla(model) or k_width >= q_width:
        return {}
    return {"k, v head copies": e * sb * ((q_width - k_width) + (q_width - v_width)) * split}


def final_norm_extra(model: ModelSpec, sb: int, norm_input_bytes: int, replicated: Fraction) -> Fraction:
    """The model's last norm run eagerly: torchtune and torchtitan compile each layer, not the final norm
    (torchtune @ bd2a0fc7c training/_compile.py compile_model: m.compile() for each
    TransformerSelfAttentionLayer; torchtitan @ 9dec370 parallelize_llama.py apply_compile: each
    TransformerBlock), so it keeps norm_extra_bytes() per value under torch.compile too."""
    return norm_extra_bytes(model, norm_input_bytes) * sb * model.hidden * replicated


