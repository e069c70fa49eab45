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

Counted where the model's family computes them at v4.57.1 (no ``logits_to_keep`` in its forward) and
where the family is unknown (a shape given in the workload file: counted, an under-estimate being the
worst error); not for the families whose forward takes ``logits_to_keep``. Current releases are assumed:
before v4.45 those families computed every position too, and v4.34-v4.44 also made an fp32 copy of them
for Llama, Mistral, Mixtral, Gemma, Qwen2, Phi-3 and StarCoder2 (``logits = logits.float()``), neither
counted. At the model's 16-bit compute dtype (fp32 models: 4 bytes), batch × context × vocab: the context
includes the generated tokens, an upper bound on the prompt. Counted beside one layer's transient
tensors, though those are freed before the head runs: an upper bound.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..notes import Note, note

if TYPE_CHECKING:
    from ..catalog.shapes import ModelSpec

# config.json model_types whose *ForCausalLM.forward takes logits_to_keep at huggingface/transformers v4.57.1
# (src/transformers/models/<type>/modeling_<type>.py), the decoder families proposalkit reads; gemma3_text is
# Gemma3ForCausalLM's own config type (models/gemma3).
LOGITS_TO_KEEP_FAMILIES = frozenset({
    "cohere", "cohere2", "dbrx", "deepseek_v2", "deepseek_v3", "falcon", "gemma", "gemma2", "gemma3", "gemma3_text",
    "glm", "glm4", "gpt2", "gpt_neox", "gpt_oss", "granite", "granitemoe", "jamba", "llama", "llama4",
    "mistral", "mixtral", "nemotron", "olmo", "olmo2", "olmoe", "phi", "phi3", "phimoe", "qwen2", "qwen2_moe", "qwen3",
    "qwen3_moe", "stablelm", "starcoder2",
})
# Catalog rows (catalog/models.yaml) that carry no model_type, by id prefix: the model_type of each row's
# config.json (tests/test_inference_prompt_logits.py checks that every catalog row resolves).
CATALOG_FAMILIES = (
    ("tinyllama", "llama"), ("llama", "llama"), ("deepseek-r1-distill-llama", "llama"), ("mistral", "mistral"),
    ("qwen2.5", "qwen2"), ("qwen3-30b-a3b", "qwen3_moe"), ("qwen3", "qwen3"), ("gemma-2", "gemma2"),
    ("gemma-3", "gemma3_text"), ("olmo-2", "olmo2"), ("stable-code", "stablelm"),
)


def family_of(model: ModelSpec) -> str:
    """The model's config.json model_type: its own, else a catalog row's by id prefix, else '' (unknown)."""
    if model.family:
        return model.family
    if model.hf_id:
        return next((family for prefix, family in CATALOG_FAMILIES if model.id.startswith(prefix)), "")
    return ""


def keeps_prompt_logits(model: ModelSpec) -> bool:
    """Whether generate() computes the logits of every prompt position for this model (unknown: yes)."""
    return family_of(model) not in LOGITS_TO_KEEP_FAMILIES


def prompt_logits_bytes(batch: int, context: int, vocab: int, e: int) -> int:
    """The prefill's logits of every prompt position at e bytes each: batch × context × vocab × e."""
    return batch * context * vocab * e


def prompt_logits_note(model: ModelSpec, batch: int, context: int, e: int) -> Note:
    """The assumption the plan states for the hf engine, counted or not (render/notes.py words it)."""
    return note("prompt-logits", family=family_of(model), kept=keeps_prompt_logits(model), batch=batch,
                context=context, vocab=model.vocab, value_bytes=e)
