"""Activations under torch.autocast with fp32 parameters (Hugging Face Trainer's fp16/bf16 AMP).

Hand counts from PyTorch's autocast op lists ("Automatic Mixed Precision package - torch.amp": linear and
matmul autocast to 16 bits, layer_norm and softmax to fp32; an out-of-place add of a 16-bit and an fp32
tensor promotes to fp32) and transformers' BertLayer (BertSelfAttention: three nn.Linear q, k, v; the
extended attention mask in the parameters' dtype; LayerNorm(dropout(dense(x)) + input_tensor)).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import yaml

from proposalkit.cli import main
from proposalkit.estimate.activations import activation_terms_per_layer
from proposalkit.catalog.shapes import ModelSpec
from conftest import records

ROOT = Path(__file__).resolve().parent.parent

# google-bert/bert-large-uncased config.json: num_hidden_layers 24, hidden_size 1024, num_attention_heads 16,
# intermediate_size 4096, vocab_size 30522, hidden_act gelu, hidden_dropout_prob 0.1.
BERT_LARGE = ModelSpec(
    id="bert-large", name="BERT large", layers=24, hidden=1024, heads=16, kv_heads=16, ffn_hidden=4096,
    vocab=30522, mlp="plain", norm="layernorm", tied_embeddings=True, dropout=True,
    source="google-bert/bert-large-uncased config.json",
)
S, B, H, A = 512, 4, 1024, 16
SBH = S * B * H


def _per_layer(autocast: bool, e: int = 2) -> int:
    terms = activation_terms_per_layer(BERT_LARGE, S, B, flash_attention=False, bytes_per_value=e,
                                       softmax_fp32=True, autocast_fp32_params=autocast)
    return sum(terms.values())


def test_bert_layer_under_fp16_autocast_by_hand():
    # Per layer, fp16 autocast over fp32 parameters, eager attention with dropout:
    #   two LayerNorm inputs, fp32 (residual + 16-bit sublayer output promotes)   2 · 4 sbh =  8 sbh
    #   q, k, v each cast the fp32 hidden states to their own fp16 copy           3 · 2 sbh =  6 sbh
    #   q, k (QKᵀ) and v (probabilities · V), fp16                                3 · 2 sbh =  6 sbh
    #   scores: fp32 (fp32 mask added) softmax output 4, dropout mask 1, the fp16 copy the V matmul takes 2
    #                                                                             7 · a·s²·b
    #   o_proj input, fp16                                                        2 sbh
    #   MLP input: the intermediate dense's fp16 copy of the fp32 LayerNorm output 2 sbh
    #   GELU input and output dense input, fp16 (GELU is on neither list)        2 · 2 · 4 sbh = 16 sbh
    #   two hidden dropout masks                                                  2 · 1 sbh =  2 sbh
    #   = 42 sbh + 7 a s² b
    expected = 42 * SBH + 7 * A * S * S * B
    assert expected == 205_520_896
    assert _per_layer(True) == expected


def test_without_autocast_the_16_bit_count_returns():
    # Autocast off (16-bit parameters, or the flag left out): Korthikanti's count with the fp32 softmax,
    # 2·2 + 2 + 6 + 2 + 2 + 16 + 2 = 34 sbh + 7 a s² b.
    assert _per_layer(False) == 34 * SBH + 7 * A * S * S * B == 188_743_680
    # fp32 compute has nothing to autocast: the flag changes nothing.
    assert _per_layer(True, e=4) == _per_layer(False, e=4)


def _plan(tmp_path: Path, capsys, framework: str | None) -> dict:
    doc = yaml.safe_load((ROOT / "benchmarks/validation/memory/A-HFBERT-4.yaml").read_text())
    workload = copy.deepcopy(doc["workloads"][0])
    if framework is None:
        workload.pop("framework")
    path = tmp_path / f"{framework}.yaml"
    path.write_text(yaml.safe_dump({"workloads": [workload]}))
    assert main(["plan", str(path), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["workloads"][0]


def test_hf_trainer_fp16_bert_adds_the_autocast_bytes(tmp_path, capsys):
    # A-HFBERT-4 (bert-large, 512 × 4, fp16, eager attention, no checkpointing) with the hf-trainer preset
    # against the same file without it (16-bit weights with an fp32 master: the same 16 B/param of states).
    # The preset sets nothing else here (mixed_precision true and loss standard are the planner's defaults,
    # flash_attention is given), so the activations differ by what autocast over fp32 parameters adds:
    #   24 layers · 8 sbh (LayerNorm inputs 2·(4 − 2), q/k/v copies 3·2 − 2)
    #   + 2 sbh (the final norm's input in fp32, the LM head's own fp16 copy beside it)
    #   + 2 B · (24 · 12 h² block weights + v·h output projection), autocast's cached fp16 weights.
    amp = _plan(tmp_path, capsys, "hf-trainer")
    plain = _plan(tmp_path, capsys, None)
    extra = 24 * 8 * SBH + 2 * SBH + 2 * (24 * 12 * H * H + 30522 * H)
    assert extra == 1_073_336_320
    assert amp["memory"]["estimate"]["components"]["activations"] - plain["memory"]["estimate"]["components"]["activations"] == extra
    assert amp["memory"]["estimate"]["components"]["weights"] == plain["memory"]["estimate"]["components"]["weights"]
    assert records(amp, "autocast-fp32-params") and not records(plain, "autocast-fp32-params")
