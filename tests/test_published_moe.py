"""Mixture-of-experts families read from their published config.json (tests/data/configs/), held to
the published parameter counts, and their config values checked (exit 2, file and key named).

Totals: the Hugging Face API's safetensors total, as recorded in /work/wt/issue11-data/PUBLISHED.md
(source beside each); active counts are published rounded, so each is held to its rounding.
"""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import pytest

from proposalkit.cli import main
from proposalkit.estimate.memory import kv_cache_bytes_per_token
from proposalkit.catalog.shapes import matmul_params
from proposalkit.input.configs import model_from_config

CONFIGS = Path(__file__).parent / "data" / "configs"


def read(name: str, **changes):
    config = {**json.loads((CONFIGS / name).read_text(encoding="utf-8")), **changes}
    return model_from_config(config, name)


# config file → (published total, its source)
TOTALS = {
    # mistralai/Mixtral-8x7B-Instruct-v0.1 (same shape as v0.1): HF safetensors total [ATLAS], [LLMFIT]
    "mixtral.json": (46_702_792_704, "HF API safetensors.total, Mixtral-8x7B-Instruct-v0.1"),
    # Qwen/Qwen1.5-MoE-A2.7B: HF safetensors total [LLMFIT]
    "qwen2_moe.json": (14_315_784_192, "HF API safetensors.total, Qwen1.5-MoE-A2.7B"),
    # Qwen/Qwen3-30B-A3B: HF safetensors total [ATLAS], [KVFIT]
    "qwen3_moe.json": (30_532_122_624, "HF API safetensors.total, Qwen3-30B-A3B"),
    # deepseek-ai/DeepSeek-V2-Lite: HF safetensors total [LLMFIT]
    "deepseek_v2-lite.json": (15_706_484_224, "HF API safetensors.total, DeepSeek-V2-Lite"),
}


@pytest.mark.parametrize("name", TOTALS)
def test_total_is_the_published_count(name):
    spec, problems = read(name)
    assert problems == []
    published, _source = TOTALS[name]
    assert abs(spec.params - published) <= 0.005 * published
    assert spec.params == published          # in fact exact: every tensor of these checkpoints is a parameter


def test_deepseek_v3_is_the_papers_671b_main_model_without_the_mtp_module():
    # DeepSeek-V3 technical report: "671B total parameters" for the main model, "+14B" for the
    # multi-token-prediction (MTP) module; the config (DeepSeek-R1's, same architecture) has
    # num_nextn_predict_layers 1. params counts the main model, as transformers builds it.
    spec, problems = read("deepseek_v3.json")
    assert problems == []
    assert 670_500_000_000 <= spec.params < 671_500_000_000     # "671B" to its rounding
    # The HF safetensors total, 684,531,386,000 [ATLAS], is the main model + the MTP module + the
    # FP8 weights' fp32 scale_inv (one per 128×128 block); worked out by hand from the config:
    h, v, a, e = 7168, 129280, 128, 256
    attention = (h * 1536 + 1536 + 1536 * a * 192        # q_a_proj, q_a_layernorm, q_b_proj
                 + h * 576 + 512 + 512 * a * 256 + a * 128 * h)   # kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj
    moe_layer = attention + e * 3 * h * 2048 + 3 * h * 2048 + h * e + e + 2 * h   # experts, shared, router + bias, norms
    mtp = moe_layer + 2 * h * h + 3 * h + 2 * v * h      # eh_proj, enorm/hnorm/head norm, its embedding and head copies
    assert mtp == 13_463_426_304                          # the paper's "14B MTP module"

    def blocks(d_in, d_out):
        return math.ceil(d_in / 128) * math.ceil(d_out / 128)
    attention_blocks = (blocks(h, 1536) + blocks(1536, a * 192) + blocks(h, 576) + blocks(512, a * 256)
                        + blocks(a * 128, h))
    dense_blocks = attention_blocks + 3 * blocks(h, 18432)
    moe_blocks = attention_blocks + (e + 1) * 3 * blocks(h, 2048)
    scale_inv = 3 * dense_blocks + (58 + 1) * moe_blocks  # 3 dense + 58 MoE layers, + the MTP layer
    assert spec.params + mtp + scale_inv == 684_531_386_000


# config file → (published active, the unit it is published to, source, counted the publisher's way:
# "active" every parameter a token passes through, "matmul" the same without the input embedding table)
ACTIVE = {
    "mixtral.json": (12.9e9, 0.1e9, "Mistral AI / Azure model card: 12.9B active", "active"),
    "qwen2_moe.json": (2.7e9, 0.1e9, "Qwen1.5-MoE-A2.7B model card: 2.7B activated", "active"),
    "qwen3_moe.json": (3.3e9, 0.1e9, "Qwen3-30B-A3B model card: 3.3B activated", "active"),
    # DeepSeek counts activated parameters without the input embedding table (a lookup): with it,
    # V2-Lite would be 2.66B against the published 2.4B.
    "deepseek_v2-lite.json": (2.4e9, 0.1e9, "DeepSeek-V2 paper, Appendix B: 2.4B activated", "matmul"),
    "deepseek_v3.json": (37e9, 1e9, "DeepSeek-V3 technical report: 37B activated", "matmul"),
}


@pytest.mark.parametrize("name", ACTIVE)
def test_active_is_the_published_figure_to_its_rounding(name):
    spec, _ = read(name)
    published, unit, _source, way = ACTIVE[name]
    active = spec.active_params if way == "active" else matmul_params(spec)
    # a figure published to one unit is that figure rounded, or cut, to the unit
    assert published - unit / 2 <= active < published + unit
    assert spec.active_params < spec.params


def test_deepseek_v2_lite_latent_kv_cache():
    spec, _ = read("deepseek_v2-lite.json")
    # (kv_lora_rank 512 + qk_rope_head_dim 64) values × 27 layers × 2 bytes (bf16) per token
    assert kv_cache_bytes_per_token(spec, "bf16") == (512 + 64) * 27 * 2 == 31_104
    assert spec.q_lora_rank is None and spec.dense_layers == 1 and spec.shared_experts == 2


def test_qwen_sparse_step_and_dense_only_layers_make_dense_layers():
    # layer i is sparse when (i + 1) % decoder_sparse_step == 0 and i is not in mlp_only_layers
    spec, problems = read("qwen3_moe.json", decoder_sparse_step=2, mlp_only_layers=[1, 2])
    assert problems == []
    assert spec.dense_layers == 24 + 1          # 24 odd-numbered steps dense, + layer 2 (layer 1 already dense)


def _plan(tmp_path, capsys, config: Path) -> tuple[int, str, str]:
    path = tmp_path / "w.yaml"
    path.write_text(textwrap.dedent(f"""\
        workloads:
          - name: moe
            kind: finetune
            method: lora
            tokens: 100M
            gpu: h100-80gb
            model: {{config: {config}}}
        """), encoding="utf-8")
    code = main(["plan", str(path), "--format", "json"])
    out = capsys.readouterr()
    return code, out.out, out.err.replace(str(path), "FILE").replace(str(config), "CONFIG")


def test_cli_plan_json_gives_total_and_active_from_a_config(tmp_path, capsys):
    code, out, err = _plan(tmp_path, capsys, CONFIGS / "qwen2_moe.json")
    assert code == 0, err
    model = json.loads(out)["workloads"][0]["model"]
    # Qwen1.5-MoE-A2.7B: 14,315,784,192 total; active worked out by hand: the total less 24 layers ×
    # (60 − 4) unvisited experts × 3·2048·1408
    assert model["params"] == 14_315_784_192
    assert model["active_params"] == 14_315_784_192 - 24 * 56 * 3 * 2048 * 1408 == 2_689_173_504


def _bad(tmp_path, name: str, **changes) -> Path:
    config = {**json.loads((CONFIGS / name).read_text(encoding="utf-8")), **changes}
    path = tmp_path / "m" / "config.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


@pytest.mark.parametrize("name, changes, message", [
    ("mixtral.json", {"num_experts_per_tok": 16},
     "num_experts_per_tok: more experts per token than experts (got 16 of 8 num_local_experts; expected at most 8)"),
    ("qwen2_moe.json", {"num_experts_per_tok": 61},
     "num_experts_per_tok: more experts per token than experts (got 61 of 60 num_experts; expected at most 60)"),
    ("deepseek_v2-lite.json", {"n_routed_experts": True},
     "n_routed_experts: not a number (got true, expected a positive integer)"),
    ("deepseek_v2-lite.json", {"kv_lora_rank": "512"},
     'kv_lora_rank: not a number (got "512", text; expected a positive integer without quotes)'),
    ("qwen3_moe.json", {"moe_intermediate_size": 0},
     "moe_intermediate_size: not a positive integer (got 0, expected a positive integer)"),
    ("qwen3_moe.json", {"mlp_only_layers": [48]},
     "mlp_only_layers: not a list of layer indices (expected integers from 0 to 47)"),
])
def test_bad_moe_values_name_the_file_and_key(tmp_path, capsys, name, changes, message):
    config = _bad(tmp_path, name, **changes)
    code, out, err = _plan(tmp_path, capsys, config)
    assert code == 2
    assert out == ""
    assert err == f"FILE:7: workloads[0].model.config: CONFIG: {message}\n"
