"""The loss on the logits, through the workload file: standard, chunked and fused, computed by hand.

A toy Llama-style model (2 layers, hidden 256, 4 heads, gated MLP 1024, vocabulary 32,000) at
seq_len 1,024, micro_batch 1, bf16, FlashAttention, no checkpointing, no dropout. Per layer and
token (Korthikanti et al. 2022 §4.1, generalised in estimate/activations.py): two norm inputs
2·2·256 + QKV input 2·256 + q, k, v 2·768 + fp32 softmax statistics 4·4 + o_proj input 2·256 +
MLP input 2·256 + gate, up, product 3·2·1024 = 10,256 B. The model runs as eager PyTorch (no
framework, compile unset; estimate/kernels.py): each RMSNorm also keeps its fp32 copy (2·4·256) and
the gated MLP its SiLU output (2·1,024), 4,096 B more (4 kv heads of 4: no K/V copies): 14,352 B
× 1,024 tokens × 2 layers = 29,392,896 B; the final norm's fp32 copy adds 4·1,024·256 = 1,048,576.
"""

from __future__ import annotations


import pytest

from proposalkit.cli import main
from conftest import records

LAYERS = (10_256 + 2 * 4 * 256 + 2 * 1024) * 1024 * 2 + 4 * 1024 * 256   # + the final norm's fp32 copy
TOKENS, HIDDEN, VOCAB = 1024, 256, 32_000

WORKLOADS = """\
defaults:
  model: {name: toy, layers: 2, hidden: 256, heads: 4, kv_heads: 4, ffn_hidden: 1024, vocab: 32000, mlp: gated}
  kind: pretrain
  tokens: 1M
  seq_len: 1024
  gpu: h100-80gb
  gpus: 1
  activation_checkpointing: false
workloads:
  - {name: unset}
  - {name: standard, loss: standard}
  - {name: chunked, loss: chunked}
  - {name: fused, loss: fused}
  - {name: held, loss: transformers-4.37}
"""


def _activations(plan_workloads) -> dict:
    return {name: (w["memory"]["estimate"]["components"]["activations"], w) for name, w in plan_workloads(WORKLOADS).items()}


def test_standard_cross_entropy_on_fp32_upcast_logits_keeps_12_bytes_per_logit(plan_workloads):
    # transformers @ d0fed636 loss_utils.ForCausalLMLoss: logits.float(), then cross_entropy
    # (log_softmax saves its fp32 output). Forward peak: bf16 logits 2 + fp32 copy 4 + log-softmax 4
    # = 10 B; backward peak: saved log-softmax 4 + its gradient 4 + the input gradient 4 = 12 B.
    # Last norm's and LM head's inputs: 2 · 2 · 1,024 · 256 = 1,048,576.
    got = _activations(plan_workloads)
    expected = LAYERS + 2 * 2 * TOKENS * HIDDEN + 12 * TOKENS * VOCAB
    assert expected == 424_706_048
    assert got["standard"][0] == got["unset"][0] == expected
    assert got["unset"][1]["settings"]["loss"] == "standard"
    assert [r["values"]["loss"] for r in records(got["unset"][1], "loss-default")] == ["standard"]


def test_transformers_4_37_loss_held_through_the_backward_keeps_16_bytes_per_logit(plan_workloads):
    # transformers 4.37-4.45 LlamaForCausalLM.forward: logits.float() (the bf16 projection output freed),
    # a contiguous fp32 copy of the shifted logits, CrossEntropyLoss; the loop keeps the model's output,
    # whose fp32 logits stay through the backward. Forward: 4 + 4 + 4 = 12 B; backward: the saved
    # log-softmax, its gradient and the input gradient (12) + the held fp32 logits (4) = 16 B per logit,
    # 4 B more than standard's peak.
    got = _activations(plan_workloads)
    assert got["held"][0] - got["standard"][0] == 4 * TOKENS * VOCAB
    (loss,) = records(got["held"][1], "loss")
    assert (loss["values"]["forward_bytes_per_logit"], loss["values"]["backward_bytes_per_logit"]) == (12, 16)


def test_chunked_loss_upcasts_one_chunk_of_eight_at_a_time(plan_workloads):
    # torchtune @ ce5433b0 CEWithChunkedOutputLoss(num_output_chunks=8): all bf16 logit chunks 2 B +
    # every chunk's saved fp32 log-softmax 4 B + one chunk's fp32 copy 4/8 B = 6.5 B per logit.
    got = _activations(plan_workloads)
    expected = LAYERS + 2 * 2 * TOKENS * HIDDEN + 13 * TOKENS * VOCAB // 2
    assert expected == 244_482_048
    assert got["chunked"][0] == expected


def test_fused_linear_cross_entropy_never_materialises_the_logits(plan_workloads):
    # Liger Kernel @ e11c2d6c fused_linear_cross_entropy.py: chunk rows = next_pow2(⌈1,024 / ⌈32,000 / 256⌉⌉)
    # = next_pow2(⌈1,024 / 125⌉ = 9) = 16; one chunk's bf16 and fp32 logits (2 + 4) · 16 · 32,000 =
    # 3,072,000; the LM head's input gradient 2 · 1,024 · 256 = 524,288 and a fp32 loss per token
    # 4 · 1,024 are kept; the last norm's input 2 · 1,024 · 256 (the head's input is not saved).
    got = _activations(plan_workloads)
    expected = LAYERS + 2 * TOKENS * HIDDEN + 2 * TOKENS * HIDDEN + 4 * TOKENS + 6 * 16 * VOCAB
    assert expected == 34_566_144
    assert got["fused"][0] == expected


@pytest.mark.parametrize("line, message", [
    ("loss: chunky", "loss: unknown loss (got 'chunky', expected standard, chunked, fused or transformers-4.37; did you mean 'chunked'?)"),
    ("loss: standard", "workloads[0].loss: not used by inference"),
])
def test_loss_input_errors(tmp_path, capsys, line, message):
    kind = "inference, context: 2048, hours: 10" if "standard" in line else "pretrain, tokens: 1M"
    path = tmp_path / "w.yaml"
    path.write_text(f"workloads:\n  - {{name: a, kind: {kind}, model: llama-3.1-8b, {line}}}\n", encoding="utf-8")
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_diff_names_a_change_of_loss(tmp_path, capsys):
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(WORKLOADS, encoding="utf-8")
    new.write_text(WORKLOADS.replace("{name: chunked, loss: chunked}", "{name: chunked, loss: fused}"),
                   encoding="utf-8")
    assert main(["diff", str(old), str(new)]) == 0
    out = capsys.readouterr().out
    assert "loss chunked → fused" in out
