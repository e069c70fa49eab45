"""`compile` and what eager PyTorch saves beyond fused kernels, through the workload file.

Llama 3.2 3B (meta-llama/Llama-3.2-3B config.json: hidden_size 3,072, intermediate_size 8,192,
num_attention_heads 24, num_key_value_heads 8, head_dim 128, num_hidden_layers 28, vocab_size
128,256, SwiGLU, RMSNorm), bf16 (e = 2), seq_len 4,096 × micro_batch 2 = 8,192 tokens.

Eager PyTorch beyond torch.compile, per token and layer (estimate/kernels.py, from the model code):
  two RMSNorms, each its fp32 copy (transformers LlamaRMSNorm @ d0fed636 hidden_states.to(float32);
  torchtune RMSNorm @ bd2a0fc7c x.float()):            2 · 4 · 3,072         = 24,576
  the SiLU output (LlamaMLP / torchtune FeedForward: act(w1(x)) * w3(x) saves both operands):
                                                        2 · 8,192             = 16,384
                                                                        total   40,960 (8·h + 2·f)
Both eager and compiled keep K and V copied to all 24 heads (torchtune MultiHeadAttention @ bd2a0fc7c
expand().flatten(); benchmarks/saved_tensors.py measured it compiled too): 2 · 2 · (24 - 8)·128 = 8,192
beyond Megatron's fused count. The final norm's fp32 copy, 4 · 3,072 per token, is counted eagerly and
under torch.compile alike (torchtune and torchtitan compile each layer, not the final norm), so it
cancels in eager - compiled differences.
"""

from __future__ import annotations

import pytest

from proposalkit.cli import main
from conftest import records

L, H, F, V = 28, 3072, 8192, 128_256
TOKENS = 4096 * 2
EXTRA_PER_TOKEN_LAYER = 2 * 4 * H + 2 * F
HEAD_COPIES = 2 * 2 * (24 - 8) * 128
FINAL_NORM_COPY = 4 * TOKENS * H

HEADER = """\
defaults:
  model: llama-3.2-3b
  kind: finetune
  method: full
  tokens: 10M
  seq_len: 4096
  micro_batch: 2
  gpu: h200
  gpus: 1
  zero_stage: 0
workloads:
"""


def _act(w: dict) -> int:
    return w["memory"]["estimate"]["components"]["activations"]


def test_the_hand_count(plan_workloads):
    assert EXTRA_PER_TOKEN_LAYER == 8 * H + 2 * F == 40_960
    assert HEAD_COPIES == 8_192


def test_eager_keeps_the_fp32_norm_copies_silu_output_and_kv_copies(plan_workloads):
    got = plan_workloads(HEADER + "  - {name: eager, framework: torchtune, loss: standard, activation_checkpointing: false, compile: false}\n"
                                  "  - {name: compiled, framework: torchtune, loss: standard, activation_checkpointing: false, compile: true}\n")
    # No checkpointing: every layer keeps its extras; the standard loss is the same in both.
    assert _act(got["eager"]) - _act(got["compiled"]) == L * EXTRA_PER_TOKEN_LAYER * TOKENS == 9_395_240_960
    assert records(got["eager"], "eager-extras")


def test_full_checkpointing_carries_the_extras_in_the_recomputed_layer_only(plan_workloads):
    # loss: fused keeps the loss below one recomputed layer (Liger: e·N·h + 4·N + 6·256·v = 247,365,632 B
    # against a compiled layer's 90,208 + 8,192 B × 8,192 tokens = 806,092,800 B), so the recomputed layer is
    # the peak.
    got = plan_workloads(HEADER + "  - {name: eager, loss: fused, activation_checkpointing: true, compile: false}\n"
                                  "  - {name: compiled, loss: fused, activation_checkpointing: true, compile: true}\n")
    assert _act(got["eager"]) - _act(got["compiled"]) == EXTRA_PER_TOKEN_LAYER * TOKENS == 335_544_320


def test_compiled_chunked_loss_keeps_16_bit_logits_and_row_statistics(plan_workloads):
    got = plan_workloads(HEADER + "  - {name: standard, framework: torchtune, loss: standard, activation_checkpointing: false, compile: true}\n"
                                  "  - {name: chunked, framework: torchtune, loss: chunked, activation_checkpointing: false, compile: true}\n"
                                  "  - {name: eager-standard, framework: torchtune, loss: standard, activation_checkpointing: false}\n"
                                  "  - {name: eager-chunked, framework: torchtune, loss: chunked, activation_checkpointing: false}\n")
    logits = TOKENS * V
    # Standard: 12 B per logit (its backward peak), compiled or not (torchtune upcasts whole logits
    # outside the compiled layers). Compiled chunked: e + (e + 4)/8 = 2.75 B per logit + 8 B per row...
    (loss,) = records(got["chunked"], "loss")
    assert (loss["values"]["forward_bytes_per_logit"], loss["values"]["backward_bytes_per_logit"]) == (2, 2.75)
    # ...below the instant the output projection's backward adds its second chunk's weight gradient out of place
    # (estimate/loss.py): 3 × v × h × 2 B of gradients (2,364,014,592 B; 1.25 B per logit more than the loss's
    # 2.75 would be 1,313,341,440 B) with 6/8 of the 16-bit logit gradients (1.5 B per logit) and 2/8 of the
    # 16-bit hidden-state gradient (0.5 B per value): the compiled chunked row peaks there.
    assert _act(got["standard"]) - _act(got["chunked"]) == 12 * logits - (3 * logits // 2 + TOKENS * H // 2)
    assert _act(got["standard"]) - _act(got["chunked"]) == 11_019_485_184
    grads = got["chunked"]["memory"]["estimate"]["components"]["gradients"] - got["standard"]["memory"]["estimate"]["components"]["gradients"]
    assert grads == 3 * V * H * 2 == 2_364_014_592
    # Eager chunked: e + 4 + 4/8 = 6.5 B per logit, as before.
    assert _act(got["eager-standard"]) - _act(got["eager-chunked"]) == 12 * logits - 13 * logits // 2


def test_no_framework_and_compile_unset_is_eager(plan_workloads):
    got = plan_workloads(HEADER + "  - {name: unset, activation_checkpointing: false}\n"
                                  "  - {name: eager, activation_checkpointing: false, compile: false}\n"
                                  "  - {name: compiled, activation_checkpointing: false, compile: true}\n")
    assert _act(got["unset"]) == _act(got["eager"])
    assert _act(got["unset"]) - _act(got["compiled"]) == L * EXTRA_PER_TOKEN_LAYER * TOKENS
    assert [r["values"]["compile"] for r in records(got["unset"], "compile-default")] == [False]
    assert not records(got["eager"], "compile-default")


def test_defaults_compile_applies_to_every_workload(plan_workloads):
    got = plan_workloads(HEADER.replace("workloads:\n", "  compile: true\nworkloads:\n")
                         + "  - {name: a, activation_checkpointing: false}\n"
                           "  - {name: b, activation_checkpointing: false, compile: false}\n")
    assert _act(got["b"]) - _act(got["a"]) == L * EXTRA_PER_TOKEN_LAYER * TOKENS


@pytest.mark.parametrize("framework, source", [
    ("torchtune", "pytorch/torchtune @ bd2a0fc7c recipes/configs/llama3_1/8B_full.yaml"),
    ("torchtitan", "pytorch/torchtitan @ 9dec370"),
    ("hf-trainer", "TrainingArguments torch_compile defaults to False"),
    ("axolotl", "torch_compile default None"),
    ("llama-factory", "TrainingArguments torch_compile, default False"),
    ("deepspeed", "only when engine.compile() is called"),
])
def test_framework_presets_default_to_eager(plan_workloads, framework, source):
    got = plan_workloads(HEADER + f"  - {{name: a, framework: {framework}, activation_checkpointing: false}}\n")
    (compile_,) = [r["values"] for r in records(got["a"], "preset-default") if r["values"]["field"] == "compile"]
    assert (compile_["value"], compile_["framework"]) == (False, framework) and source in compile_["why"]
    assert not records(got["a"], "compile-default")


def test_megatron_runs_fused_kernels_without_compile(plan_workloads):
    got = plan_workloads(HEADER + "  - {name: megatron, framework: megatron, activation_checkpointing: false}\n"
                                  "  - {name: compiled, compile: true, activation_checkpointing: false}\n")
    # Megatron's fused RMSNorm (Transformer Engine) and fused SwiGLU (SwiGLUFunction saves its input
    # only), and attention that takes the kv heads as they are: the fused count, also for the final norm,
    # which torch.compile of each layer leaves eager.
    assert _act(got["compiled"]) - _act(got["megatron"]) == L * HEAD_COPIES * TOKENS + FINAL_NORM_COPY
    assert L * HEAD_COPIES * TOKENS + FINAL_NORM_COPY == 1_979_711_488
    (fused,) = records(got["megatron"], "framework-fused-kernels")
    assert fused["values"]["framework"] == "megatron" and "SwiGLUFunction" in fused["values"]["why"]


def test_layernorm_gelu_mha_models_keep_nothing_more(plan_workloads):
    # GPT-2: LayerNorm (native_layer_norm saves its input, mean and rstd), GELU MLP (saves its input),
    # multi-head attention (no K/V copies): eager and compiled keep the same bytes.
    got = plan_workloads("defaults: {model: gpt2, kind: pretrain, tokens: 1B, seq_len: 1024, micro_batch: 4, "
                         "gpu: h100-80gb, gpus: 1, activation_checkpointing: false}\n"
                         "workloads:\n  - {name: eager, compile: false}\n  - {name: compiled, compile: true}\n")
    assert _act(got["eager"]) == _act(got["compiled"])


def test_autocast_counts_the_extras_once(plan_workloads):
    # HF Trainer full fine-tune: autocast over fp32 parameters. autocast_terms() counts the norms' fp32
    # inputs (the residual stream) and the projections' 16-bit copies; eager adds the normalised fp32
    # tensor the weight multiply saves (4 B per value, as the fp32 copy elsewhere) and the SiLU output:
    # the same 40,960 B per token and layer.
    got = plan_workloads(HEADER + "  - {name: eager, framework: hf-trainer, activation_checkpointing: false}\n"
                                  "  - {name: compiled, framework: hf-trainer, activation_checkpointing: false, "
                                  "compile: true}\n")
    assert _act(got["eager"]) - _act(got["compiled"]) == L * EXTRA_PER_TOKEN_LAYER * TOKENS


@pytest.mark.parametrize("line, message", [
    ("compile: maybe", "workloads[0].compile: "),
    ("compile: 1.5", "workloads[0].compile: "),
])
def test_bad_compile_value(tmp_path, capsys, line, message):
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n  - name: a\n    kind: pretrain\n    model: llama-3.2-3b\n    tokens: 1B\n"
                    f"    {line}\n", encoding="utf-8")
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:6: {message}" in err
    assert "Traceback" not in err


def test_compile_on_inference_is_refused(tmp_path, capsys):
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n  - name: a\n    kind: inference\n    model: llama-3.2-3b\n    context: 4096\n"
                    "    hours: 10\n    compile: true\n", encoding="utf-8")
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:7: workloads[0].compile: not used by inference" in err


def _eager_minus_compiled(plan_workloads, model: str) -> int:
    row = (f"kind: pretrain, model: {model}, tokens: 1B, seq_len: 1024, gpus: 2, gpu: h200, "
           "activation_checkpointing: false")
    got = plan_workloads(f"workloads:\n  - {{name: e, {row}, compile: false}}\n  - {{name: c, {row}, compile: true}}\n")
    return _act(got["e"]) - _act(got["c"])


def test_gemma_norms_multiply_in_fp32(plan_workloads):
    # google/gemma-2-2b config.json: hidden 2,304, intermediate 9,216, 8 heads and 4 KV heads of 256, 26 layers,
    # four RMSNorms per layer. GemmaRMSNorm (transformers @ d0fed636) keeps the fp32 copy and the fp32
    # normalised tensor (output * (1.0 + weight.float())): 8 B per value against the counted 16-bit input,
    # 6 more; GeGLU keeps its activation's output (the K/V copies are kept compiled too).
    per_token_layer = 4 * (8 - 2) * 2304 + 2 * 9216
    assert _eager_minus_compiled(plan_workloads, "gemma-2-2b") == per_token_layer * 1024 * 26 == 1_962_934_272


def test_qwen3_query_key_norms_keep_their_fp32_copies(plan_workloads):
    # Qwen/Qwen3-8B config.json: hidden 4,096, intermediate 12,288, 32 heads and 8 KV heads of 128, 36 layers,
    # q_norm and k_norm RMSNorms over every head (Qwen3RMSNorm, as LlamaRMSNorm): 4 B per value of q (4,096)
    # and k (1,024) beside the two layer norms.
    per_token_layer = 2 * 4 * 4096 + 4 * (4096 + 1024) + 2 * 12288
    assert _eager_minus_compiled(plan_workloads, "qwen3-8b") == per_token_layer * 1024 * 36 == 2_868_903_936
