"""Hugging Face transformers' generate() (framework: hf) prefills each prompt in one forward pass and keeps the
logits of every prompt position; serving engines compute logits only at the sampled positions.

Sources (estimate/prompt_logits.py): huggingface/transformers v4.34.0 and v4.57.1
src/transformers/models/gpt_bigcode/modeling_gpt_bigcode.py, GPTBigCodeForCausalLM.forward:
``lm_logits = self.lm_head(hidden_states)`` over all positions (no logits_to_keep argument); v4.34.0
generation/utils.py greedy_search keeps ``outputs`` until the next forward pass returns.

OctoCoder (bigcode/octocoder config.json: 40 layers, hidden 6,144, 48 heads, one kv head (MQA), MLP 24,576,
vocabulary 49,152), bf16, a 4,060-token context, batch 1: the B-OCTO-5 row of docs/validation.md, its
shape given in the workload file (no model_type: counted as a family without logits_to_keep).
"""

from __future__ import annotations

from pathlib import Path

from proposalkit.catalog import models as catalog_models
from proposalkit.estimate.prompt_logits import family_of, keeps_prompt_logits
from conftest import records

OCTO = ("  model: {name: OctoCoder, layers: 40, hidden: 6144, heads: 48, kv_heads: 1, ffn_hidden: 24576, "
        "vocab: 49152, max_context: 8192, tied_embeddings: true, mlp: plain}\n")
TOY = "{name: toy, layers: 2, hidden: 256, heads: 4, kv_heads: 4, ffn_hidden: 1024, vocab: 32000, mlp: gated}"

HEADER = """\
defaults:
{model}  kind: inference
  context: 4060
  batch: 1
  hours: 1
  gpus: 1
  attention: sdpa
workloads:
"""


def _octocoder_layer(tokens: int) -> int:
    """One layer's transient tensors (estimate/activations.py): the residual and its normalised copy
    2 B · n · 2 · 6,144, then the wider of the attention projections (q and o 6,144 each, k and v 128 each:
    12,544) and the plain MLP's two inner tensors (2 · 24,576 = 49,152): the MLP."""
    return 2 * tokens * 2 * 6144 + 2 * tokens * 2 * 24576


def test_hf_generate_keeps_the_16_bit_logits_of_every_prompt_position(plan_workloads):
    got = plan_workloads(HEADER.format(model=OCTO) + "  - {name: hf, framework: hf}\n")["hf"]
    sampled = 4 * 1 * 49152                  # fp32 logits of the one sampled position
    prompt = 1 * 4060 * 49152 * 2            # bf16 logits of all 4,060 positions: 0.37 GiB
    assert prompt == 399_114_240
    assert got["memory"]["estimate"]["components"]["activations"] == _octocoder_layer(4060) + sampled + prompt == 898_203_648
    (logits,) = records(got, "prompt-logits")
    assert logits["values"] == {"family": "", "kept": True, "batch": 1, "context": 4060, "vocab": 49_152,
                                "value_bytes": 2}


def test_a_serving_engine_counts_only_the_sampled_positions(plan_workloads):
    # vLLM's profiled workspace: one 8,192-token chunk (max_num_batched_tokens) and the sampled logits, no
    # logits of prompt positions (vLLM's LogitsProcessor runs on the positions it samples).
    got = plan_workloads(HEADER.format(model=OCTO) + "  - {name: vllm, framework: vllm, gpu: a100-80gb}\n")["vllm"]
    assert got["memory"]["estimate"]["components"]["activations"] == _octocoder_layer(8192) + 4 * 49152 == 1_006_829_568


def test_hf_prefills_the_whole_batch_in_one_pass_without_chunking(plan_workloads):
    # 4 prompts of 4,096 tokens: n = 16,384 tokens in one forward pass (a chunking engine would take 8,192).
    # Toy: residual 2 · n · 2 · 256; the gated MLP's three inner tensors 2 · n · 3 · 1,024 (wider than q, k,
    # v, o at 4 · 256); sampled fp32 logits 4 · 4 · 32,000; every prompt position's logits 4 · 4,096 · 32,000
    # at 2 bytes (bf16), 4 (fp32).
    rows = (f"  - {{name: bf16, framework: hf, model: {TOY}, context: 4096, batch: 4}}\n"
            f"  - {{name: fp32, framework: hf, precision: fp32, model: {TOY}, context: 4096, batch: 4}}\n")
    got = plan_workloads(HEADER.format(model="") + rows)
    n = 4 * 4096
    for name, e in (("bf16", 2), ("fp32", 4)):
        expected = e * n * 2 * 256 + e * n * 3 * 1024 + 4 * 4 * 32000 + 4 * 4096 * 32000 * e
        assert got[name]["memory"]["estimate"]["components"]["activations"] == expected
    assert got["bf16"]["memory"]["estimate"]["components"]["activations"] == 1_166_528_512
    assert got["fp32"]["memory"]["estimate"]["components"]["activations"] == 2_332_545_024


CONFIGS = Path(__file__).resolve().parent / "data" / "configs"


def test_only_families_without_logits_to_keep_keep_every_position(plan_workloads):
    # transformers v4.57.1: GPTBigCodeForCausalLM.forward takes no logits_to_keep (every prompt position's
    # logits); LlamaForCausalLM.forward does, and generate() passes logits_to_keep=1 (the last position only).
    rows = (f"  - {{name: bigcode, model: {{config: {CONFIGS / 'gpt_bigcode.json'}}}}}\n"
            f"  - {{name: llama, model: {{config: {CONFIGS / 'llama.json'}}}}}\n"
            "  - {name: catalog, model: llama-3.1-8b}\n")
    got = plan_workloads(HF_HEADER + rows)
    # bigcode/starcoderbase-1b's config.json: 24 layers, hidden 2,048, 16 heads, one kv head, MLP 8,192,
    # vocabulary 49,280. 2 prompts × 1,024 tokens = 2,048 tokens in one pass: residual 2·n·2·2,048; the
    # plain MLP 2·n·2·8,192 (wider than q, k, v, o: 2,048 + 128 + 128 + 2,048); sampled 4·2·49,280;
    # every position's bf16 logits 2·1,024·49,280·2 = 201,850,880.
    n = 2 * 1024
    assert got["bigcode"]["memory"]["estimate"]["components"]["activations"] == (
        2 * n * 2 * 2048 + 2 * n * 2 * 8192 + 4 * 2 * 49280 + 2 * 1024 * 49280 * 2) == 286_131_200
    # Llama-3.1-8B's config.json: hidden 4,096, gated MLP 14,336, vocabulary 128,256: no prompt logits.
    llama = 2 * n * 2 * 4096 + 2 * n * 3 * 14336 + 4 * 2 * 128256
    assert llama == 210_741_248
    assert got["llama"]["memory"]["estimate"]["components"]["activations"] == llama
    assert got["catalog"]["memory"]["estimate"]["components"]["activations"] == llama
    assert [(r["values"]["family"], r["values"]["kept"]) for r in records(got["catalog"], "prompt-logits")] == [
        ("llama", False)]
    assert [(r["values"]["family"], r["values"]["kept"]) for r in records(got["bigcode"], "prompt-logits")] == [
        ("gpt_bigcode", True)]


def test_every_catalog_model_has_a_known_family():
    # A catalog row the logits rule cannot place would be counted as unknown (every position): a new row
    # without a model_type needs its family in prompt_logits.CATALOG_FAMILIES.
    for model_id, model in catalog_models().items():
        assert family_of(model), model_id
    assert not keeps_prompt_logits(catalog_models()["gemma-3-1b"])    # gemma3_text: Gemma3ForCausalLM


HF_HEADER = """\
defaults:
  kind: inference
  framework: hf
  context: 1024
  batch: 2
  hours: 1
  gpus: 1
  gpu: a100-80gb
workloads:
"""
