"""Inference `attention`: eager attention holds a layer's s×s scores at the prefill; fused kernels do not.

A toy model (2 layers, hidden 256, 4 heads, 4 kv heads, gated MLP 1,024, vocabulary 32,000),
bf16, context 1,024, batch 2, one GPU. The forward pass's workspace (estimate/activations.py):
n = 2 × 1,024 = 2,048 tokens; the residual and its normalised copy 2·2·n·256, then the larger of
the attention phase (q, k, v, o: 2·n·1,024) and the MLP (gate, up, product: 2·n·3·1,024);
plus fp32 logits of the 2 sampled positions, 4 · 2 · 32,000 = 256,000, plus the 16-bit logits of every
prompt position that transformers' generate() keeps (no logits_to_keep; estimate/prompt_logits.py),
2 · 1,024 · 32,000 · 2 = 131,072,000.
Under transformers (framework: hf), which allocates as the batch runs: a pre-allocating engine (vLLM)
holds its profiled workspace and whole KV pool instead (estimate/reservation.py).
"""

from __future__ import annotations


import pytest

from proposalkit.cli import main
from conftest import records

N = 2 * 1024
RESIDUAL = 2 * N * 2 * 256
LOGITS = 4 * 2 * 32_000 + 2 * 1024 * 32_000 * 2

HEADER = """\
defaults:
  model: {name: toy, layers: 2, hidden: 256, heads: 4, kv_heads: 4, ffn_hidden: 1024, vocab: 32000, mlp: gated}
  kind: inference
  framework: hf
  context: 1024
  batch: 2
  hours: 10
  gpu: a100-80gb
  gpus: 1
workloads:
"""


def _plan(plan_workloads, rows: str) -> dict:
    return plan_workloads(HEADER + rows)


def test_eager_attention_holds_the_scores_their_fp32_softmax_and_a_16_bit_copy(plan_workloads):
    got = _plan(plan_workloads, "  - {name: default}\n  - {name: flash, attention: flash}\n"
                                  "  - {name: sdpa, attention: sdpa}\n  - {name: eager, attention: eager}\n"
                                  "  - {name: no-flash, flash_attention: false}\n")
    fused = RESIDUAL + 2 * N * 3 * 1024 + LOGITS
    assert fused == 14_936_064 + 131_072_000
    for name in ("default", "flash", "sdpa"):
        assert got[name]["memory"]["estimate"]["components"]["activations"] == fused
    # transformers eager_attention_forward: bf16 scores 2 + fp32 softmax 4 + bf16 copy 2 = 8 B per score,
    # 2 sequences × 4 heads × 1,024² scores = 67,108,864 B, in the attention phase with q, k, v, o.
    scores = 2 * 4 * 1024 * 1024 * 8
    eager = RESIDUAL + max(2 * N * 1024 + scores, 2 * N * 3 * 1024) + LOGITS
    assert eager == 73_656_320 + 131_072_000
    assert got["eager"]["memory"]["estimate"]["components"]["activations"] == eager
    assert got["no-flash"]["memory"]["estimate"]["components"]["activations"] == eager
    assert got["eager"]["settings"]["attention"] == "eager"
    assert records(got["no-flash"], "inference-attention-eager")
    (acts,) = records(got["no-flash"], "inference-activations-eager")
    assert (acts["values"]["batch"], acts["values"]["heads"], acts["values"]["context"]) == (2, 4, 1024)


@pytest.mark.parametrize("text, message", [
    ("{name: a, kind: inference, model: llama-3.1-8b, context: 2048, hours: 10, attention: naive}",
     "workloads[0].attention: unknown attention (got 'naive', expected flash, sdpa or eager)"),
    ("{name: a, kind: inference, model: llama-3.1-8b, context: 2048, hours: 10, attention: flash, "
     "flash_attention: false}",
     "workloads[0].attention: flash_attention: false says no fused kernel (got attention: flash; expected eager, "
     "or one of the two fields)"),
    ("{name: a, kind: pretrain, model: llama-3.1-8b, tokens: 1B, attention: eager}",
     "workloads[0].attention: an inference setting (for training, flash_attention: true or false)"),
])
def test_attention_input_errors(tmp_path, capsys, text, message):
    path = tmp_path / "w.yaml"
    path.write_text(f"workloads:\n  - {text}\n", encoding="utf-8")
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
