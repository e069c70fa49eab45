"""Logits of every prompt position: what Hugging Face transformers' generate() holds at the prefill.

Serving engines run the LM head only at the positions they sample (vLLM V1 vllm/v1/worker/gpu_model_runner.py
execute_model: ``hidden_states[logits_indices]``, the last scheduled token of each request, into
compute_logits; TensorRT-LLM's gather_context_logits defaults to off). transformers'
generate() runs each prompt through the model in one forward pass, and a causal-LM head without a
``logits_to_keep`` argument computes a logit for every prompt position:

- GPTBigCodeForCausalLM.forward: ``lm_logits = self.lm_head(hidden_states)`` over all positions
  (huggingface/transformers v4.34.0 and still v4.57.1, src/transformers/models/gpt_bigcode/
  modeling_gpt_bigcode.py); so BLOOM, OPT, MPT, GPT-J, GPT-Neo and CodeGen at v4.57.1.
- generate() asks for the last position only where the model's forward accepts the argument
  (v4.45.0 generation/utils.py ``_supports_num_logits_to_keep`` -> ``num_logits_to_keep = 1``;
  ``logits_to_keep`` at v4.57.1); before v4.45.0 every model computed all of them (v4.44.2
  LlamaForCausalLM: ``logits = self.lm_head(hidden_states)``).
- The prefill's logits outlive its forward pass: v4.34.0's greedy_search keeps ``outputs`` (and
  ``next_token_logits = outputs.logits[:, -1, :]``, a view of it) until the next forward returns, so they
  coexist with the first decode step; v4.57.1's _sample copies the last row and ``del outputs``, its
  comment saying the logits "may be very large for first iteration".

Counted at the model's 16-bit compute dtype (fp32 models: 4 bytes), batch × context × vocab: the context
includes the generated tokens, an upper bound on the prompt. Counted beside one layer's transient
tensors, though those are freed before the head runs: an upper bound, since an under-estimate is the
worst error. Not counted: the fp32 copy of all of them that transformers v4.34-v4.44 made for Llama,
Mistral, Mixtral, Gemma, Qwen2, Phi-3 and StarCoder2 (``logits = logits.float()``; v4.46.0 upcasts only
with labels): current releases compute those models' last position only.
"""

from __future__ import annotations

# The engine that computes the LM head over every prompt position (estimate/engines.py HF).
WHOLE_PROMPT_ENGINE = "hf"


def prompt_logits_bytes(batch: int, context: int, vocab: int, e: int) -> int:
    """The prefill's logits of every prompt position at e bytes each: batch × context × vocab × e."""
    return batch * context * vocab * e


def prompt_logits_note(batch: int, context: int, vocab: int, e: int) -> str:
    """The assumption the plan states beside the count."""
    return (f"Hugging Face generate(): the prefill's logits of every prompt position, {batch} × {context:,} "
            f"tokens × {vocab:,} vocab × {e} bytes, live through the first decode step (transformers "
            "GPTBigCodeForCausalLM and models without logits_to_keep, all models before v4.45; the fp32 copy "
            "v4.34-v4.44 made for Llama-family models is not counted)")
