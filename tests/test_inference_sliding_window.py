"""Sliding-window attention caps the windowed layers' KV cache at the window.

Mistral-7B-v0.1 config.json: sliding_window 4096 on all 32 layers, 8 kv heads × 128 (2 × 32 × 8 ×
128 × 2 B = 131,072 B per token in bf16). Gemma 2 (modeling_gemma2.py): every other layer windowed;
Gemma 3 (sliding_window_pattern 6): five local layers per global one. The config files are the ones
under tests/data/configs (copies of the published config.json files).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proposalkit.catalog import gpus, models
from proposalkit.cli import main
from proposalkit.estimate.inference import decode_step, prefill_flops_per_sequence, replica
from proposalkit.estimate.memory import kv_layer_tokens
from proposalkit.catalog.shapes import matmul_params
from proposalkit.input.configs import model_from_config

CONFIGS = Path(__file__).parent / "data" / "configs"
KV_MISTRAL = 2 * 32 * 8 * 128 * 2


def read(name):
    spec, problems = model_from_config(json.loads((CONFIGS / f"{name}.json").read_text()), name)
    assert problems == []
    return spec


@pytest.mark.parametrize("name, window, windowed, layers", [
    ("gemma2", 4096, 21, 42),        # gemma-2-9b: layers 0, 2, ..., 40
    ("gemma3", 1024, 29, 34),        # gemma-3-4b: 34 − 34 // 6 global
    ("gemma3-27b", 1024, 52, 62),
    ("phi3", 2047, 32, 32),          # Phi-3-mini-4k: every layer
    ("starcoder2", 4096, 32, 32),
])
def test_config_readers_take_the_window_and_its_layers(name, window, windowed, layers):
    spec = read(name)
    assert (spec.sliding_window, spec.sliding_window_layers, spec.layers) == (window, windowed, layers)


def test_layer_types_when_the_config_lists_them():
    config = json.loads((CONFIGS / "gemma2.json").read_text())
    config["layer_types"] = ["sliding_attention"] * 40 + ["full_attention"] * 2
    spec, _ = model_from_config(config, "g")
    assert spec.sliding_window_layers == 40


def test_kv_layer_tokens_caps_windowed_layers():
    m = models()["gemma-2-9b"]                  # 42 layers, 21 windowed at 4,096
    assert kv_layer_tokens(m, 1000) == 42 * 1000
    assert kv_layer_tokens(m, 8192) == 21 * 8192 + 21 * 4096


def test_a_long_mistral_service_holds_the_window_only(tmp_path, capsys):
    path = tmp_path / "w.yaml"
    path.write_text("proposal: {title: t}\nworkloads:\n"
                    "  - {name: chat, kind: inference, framework: hf, model: mistral-7b, context: 16k, batch: 4, hours: 10,\n"
                    "     gpu: h100-80gb, gpus: 1, precision: bf16}\n", encoding="utf-8")
    assert main(["plan", str(path), "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    # 4 sequences × 4,096 windowed tokens × 131,072 B, not × 16,384 tokens (transformers: no KV pool,
    # the batch's own cache; a pre-allocating engine's kv_cache is its whole pool).
    assert plan["workloads"][0]["memory"]["components"]["kv_cache"] == 4 * 4096 * KV_MISTRAL


def test_inference_reads_and_reserves_the_window():
    rep = replica(models()["mistral-7b"], gpus()["h100-80gb"], precision="bf16", engine="vllm")
    assert rep.kv_bytes_per_sequence(16384) == 4096 * KV_MISTRAL
    assert rep.max_concurrency(12288, 4096) == min(rep.kv_pool_bytes // (4096 * KV_MISTRAL), rep.max_batch)
    assert decode_step(rep, 8, 10_000).bytes_read == rep.weights_bytes + 8 * 4096 * KV_MISTRAL


def test_windowed_prefill_attention_is_the_band_not_the_triangle():
    m = models()["mistral-7b"]                  # 32 heads × 128 = 4,096 wide attention products
    s, w = 16384, 4096
    band = 32 * (w * s - w * w / 2)             # query-key pairs within the window, all layers
    assert prefill_flops_per_sequence(m, s) == pytest.approx(2 * matmul_params(m) * s + 4 * 4096 * band)
    assert band < 32 * s * s / 2                # less than the causal triangle
