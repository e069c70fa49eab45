"""The transient workspace of an inference forward pass, in bytes per GPU.

Nothing is kept for a backward pass: one layer's live tensors for the tokens of a pass, the
sampled positions' logits and, under transformers, the whole prompt's (prompt_logits.py). What a
training step stores for its backward is activations.py. Symbols as there (Korthikanti et al.
2022, Table 1); vLLM engine arguments (max_num_batched_tokens); transformers' eager attention.
"""

from __future__ import annotations

from .arith import ceil, exact
from ..catalog.shapes import (
    ModelSpec, expert_ffn_hidden, mlp_matrices, moe_layer_count, projection_widths, routed_experts,
    shared_expert_ffn_hidden,
)
from ..options import INFERENCE_ATTENTION
from ..precision import FP32_BYTES, check_choice
from ..catalog.engines import engine as engine_named
from .prompt_logits import keeps_prompt_logits, prompt_logits_bytes
from .setups import InferenceSetup

# Logits of the sampled positions at inference are fp32 (vLLM's sampler
# upcasts the logits to float32 before sampling).
LOGIT_BYTES = 4
# Inference prefill is processed in chunks of at most this many tokens per
# forward pass: vLLM's default max_num_batched_tokens for the offline LLM class
# on GPUs under 70 GiB and on A100s (vllm/engine/arg_utils.py,
# EngineArgs.get_batch_defaults: 8192; 16384 on H100-class GPUs; 2048 for the
# OpenAI server). The activation workspace scales with it.
DEFAULT_PREFILL_TOKENS = 8192


def inference_activation_bytes(model: ModelSpec, setup: InferenceSetup) -> int:
    """Transient activation workspace of one forward pass, per GPU.

    Nothing is kept for a backward pass; the peak is one layer's live tensors
    for the tokens of a forward pass, n = min(batch·context, prefill_tokens)
    (chunked prefill, vLLM max_num_batched_tokens): the residual stream and its
    normalised copy (2·e·n·h) plus the wider of the attention projections
    (q, k, v and the attention output: e·n·(2·a·d + 2·kv·d); MLA's widths from
    projection_widths) and the MLP inner tensors (3 or 2 · e·n·f per routed
    expert at the expert width, plus the shared experts; a dense layer's f
    when wider), those split by t; plus the fp32 logits of the sampled
    positions (4·batch·v). e = 2 bytes (4 for fp32). Under transformers (an engine of
    whole-prompt prefill, or eager attention, which only transformers runs) each prompt is one forward
    pass (n = batch·context) and, for a model without logits_to_keep, its
    logits at every position are live (prompt_logits.py).
    """
    if not model.has_architecture:
        return 0
    check_choice(setup.attention, INFERENCE_ATTENTION, "attention")
    e = 4 if setup.precision == "fp32" else 2
    chunk = setup.prefill_tokens if setup.prefill_tokens is not None else DEFAULT_PREFILL_TOKENS
    eager = setup.attention == "eager"
    # Eager attention runs in Hugging Face transformers, whose generate() prefills each prompt in one
    # forward pass: no chunking.
    whole = eager or engine_named(setup.engine).whole_prompt_prefill
    n = setup.batch * setup.context if whole else min(setup.batch * setup.context, chunk)
    h = model.hidden
    attention = sum(projection_widths(model))
    widths = []
    if moe_layer_count(model) < model.layers:
        widths.append(model.ffn_hidden)
    if moe_layer_count(model) > 0:
        widths.append(expert_ffn_hidden(model) * routed_experts(model)
                      + shared_expert_ffn_hidden(model) * model.shared_experts)
    mlp = mlp_matrices(model) * max(widths)
    t = setup.tensor_parallel
    scores = eager_scores_bytes(model, setup.batch, setup.context, e) if eager else 0
    layer = exact(e * n * 2 * h * t + max(e * n * attention + scores, e * n * mlp), t)   # e·n·2h + max(...)/t
    logits = LOGIT_BYTES * setup.batch * model.vocab
    if whole and keeps_prompt_logits(model):
        logits += prompt_logits_bytes(setup.batch, setup.context, model.vocab, e)
    return ceil(layer + logits)


def eager_scores_bytes(model: ModelSpec, batch: int, context: int, e: int) -> int:
    """One layer's attention scores at a prefill without a fused kernel, all heads (÷ t by the caller).

    transformers' eager attention (models/llama/modeling_llama.py eager_attention_forward @ d0fed636:
    ``softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)``) holds, per score, the
    16-bit scores (e), their fp32 softmax (4) and its 16-bit copy (e) at once: batch·a·s²·(2e + 4).
    FlashAttention and PyTorch's SDPA kernels (flash, memory-efficient) keep no s×s tensor.
    """
    per_score = e + FP32_BYTES + e if e < FP32_BYTES else 2 * FP32_BYTES
    return batch * model.heads * context * context * per_score
