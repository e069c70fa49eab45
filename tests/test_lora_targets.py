"""LoRA targets: `all-linear` as PEFT spells it, and module names checked in the model family's own names.

Configs under tests/data/lora_configs/ are published config.json files
(openai-community/gpt2, tiiuae/falcon-7b-instruct, microsoft/Phi-3-mini-4k-instruct;
copies as listed in the issue-11 research notes). A fused module (GPT-2's c_attn,
Falcon's query_key_value, Phi-3's qkv_proj and gate_up_proj) is one matrix, so one
LoRA pair r·(d_in + d_out) (Hu et al. 2021 §4.1), counted by hand below.
"""

from __future__ import annotations

import json
import os

import pytest

from proposalkit.cli import main
from conftest import records

CONFIGS = os.path.join(os.path.dirname(__file__), "data", "lora_configs")


def _workload(tmp_path, model: str, lora: str) -> str:
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n  - name: a\n    kind: finetune\n    method: lora\n    tokens: 1M\n"
                    f"    lora: {lora}\n    model: {model}\n")
    return str(path)


def _config(name: str) -> str:
    return "{config: " + os.path.join(CONFIGS, name, "config.json") + "}"


def _trainable(tmp_path, capsys, model: str, lora: str) -> int:
    code = main(["plan", _workload(tmp_path, model, lora), "--format", "json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)["workloads"][0]["trainable_params"]


def _error(tmp_path, capsys, model: str, lora: str) -> str:
    path = _workload(tmp_path, model, lora)
    assert main(["plan", path]) == 2
    out = capsys.readouterr()
    return out.err.replace(path, "FILE")


# Llama-3.1-8B (catalog), r 16, per layer: q 16·(4096 + 4096) = 131,072; k, v 16·(4096 + 1024) = 81,920
# each; o 131,072; gate, up, down 16·(4096 + 14,336) = 294,912 each → 1,310,720; × 32 layers = 41,943,040.
LLAMA_ALL_LINEAR = 41_943_040


@pytest.mark.parametrize("lora", ["{targets: all-linear}", "{targets: [all-linear]}", "{targets: [q_proj, k_proj, "
                                  "v_proj, o_proj, gate_proj, up_proj, down_proj]}"])
def test_all_linear_as_a_string_or_a_list(tmp_path, capsys, lora):
    assert _trainable(tmp_path, capsys, "llama-3.1-8b", lora) == LLAMA_ALL_LINEAR


def test_a_single_module_as_a_string(tmp_path, capsys):
    # q_proj only: 32 · 131,072 = 4,194,304.
    assert _trainable(tmp_path, capsys, "llama-3.1-8b", "{targets: q_proj}") == 4_194_304


@pytest.mark.parametrize("config,lora,expected", [
    # GPT-2 (12 layers, 768 wide, MLP 3,072), r 8: c_attn fused q, k, v: 8·(768 + 2,304) = 24,576 per layer
    # → 294,912 (three separate matrices would be 3·8·1,536 = 36,864 per layer).
    ("gpt2__gpt2", "{rank: 8, targets: [c_attn]}", 294_912),
    # c_proj is both attn.c_proj 8·(768 + 768) = 12,288 and mlp.c_proj 8·(3,072 + 768) = 30,720 → 12 · 43,008.
    ("gpt2__gpt2", "{rank: 8, targets: c_proj}", 516_096),
    # all-linear r 16: c_attn 16·3,072 = 49,152 + attn.c_proj 24,576 + c_fc 16·3,840 = 61,440 + mlp.c_proj
    # 61,440 = 196,608 per layer; × 12 = 2,359,296.
    ("gpt2__gpt2", "{targets: all-linear}", 2_359_296),
    # Falcon-7B: multi_query, so query_key_value is 4,544 → 71·64 + 2·64 = 4,672; r 16: 16·(4,544 + 4,672)
    # = 147,456 per layer × 32 = 4,718,592.
    ("falcon__falcon-7b-instruct", "{targets: [query_key_value]}", 4_718_592),
    # all-linear: + dense 16·9,088 = 145,408 + dense_h_to_4h and dense_4h_to_h 16·(4,544 + 18,176) = 363,520
    # each → 1,019,904 per layer × 32 = 32,636,928.
    ("falcon__falcon-7b-instruct", "{targets: all-linear}", 32_636_928),
    # Phi-3-mini (3,072 wide, MLP 8,192, 32 layers), r 16: gate_up_proj 16·(3,072 + 16,384) = 311,296 per
    # layer × 32 = 9,961,472.
    ("phi3__Phi-3-mini-4k-instruct", "{targets: [gate_up_proj]}", 9_961_472),
    # all-linear: qkv_proj 16·(3,072 + 9,216) = 196,608 + o_proj 98,304 + gate_up_proj 311,296 + down_proj
    # 16·(8,192 + 3,072) = 180,224 → 786,432 × 32 = 25,165,824.
    ("phi3__Phi-3-mini-4k-instruct", "{targets: all-linear}", 25_165_824),
])
def test_family_module_names_map_onto_the_shape(tmp_path, capsys, config, lora, expected):
    assert _trainable(tmp_path, capsys, _config(config), lora) == expected


@pytest.mark.parametrize("config,target,message", [
    ("gpt2__gpt2", "q_proj",
     "not a module of this model (got 'q_proj': gpt2 names its linear modules as transformers' modeling_gpt2.py "
     "does; expected c_attn, c_proj, c_fc or all-linear; did you mean 'c_attn'?)"),
    ("falcon__falcon-7b-instruct", "up_proj",
     "not a module of this model (got 'up_proj': falcon names its linear modules as transformers' "
     "modeling_falcon.py does; expected query_key_value, dense, dense_h_to_4h, dense_4h_to_h or all-linear; "
     "did you mean 'dense_h_to_4h'?)"),
    ("phi3__Phi-3-mini-4k-instruct", "gate_proj",
     "not a module of this model (got 'gate_proj': phi3 names its linear modules as transformers' "
     "modeling_phi3.py does; expected qkv_proj, o_proj, gate_up_proj, down_proj or all-linear; did you mean "
     "'gate_up_proj'?)"),
])
def test_a_name_of_another_family_is_refused_with_the_right_one(tmp_path, capsys, config, target, message):
    err = _error(tmp_path, capsys, _config(config), f"{{targets: [{target}]}}")
    assert err == f"FILE:6: workloads[0].lora.targets: {message}\n"


def test_a_misspelt_module_gets_the_nearest(tmp_path, capsys):
    err = _error(tmp_path, capsys, "llama-3.1-8b", "{targets: [qproj]}")
    assert err == ("FILE:6: workloads[0].lora.targets: not a module of this model (got 'qproj'; expected q_proj, "
                   "k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj or all-linear; did you mean 'q_proj'?)\n")


def test_all_linear_with_a_module_is_refused(tmp_path, capsys):
    err = _error(tmp_path, capsys, "llama-3.1-8b", "{targets: [all-linear, q_proj]}")
    assert err == ("FILE:6: workloads[0].lora.targets: 'all-linear' already names every linear module (got "
                   "[all-linear, q_proj]; expected all-linear alone, or module names without it)\n")


# ---------------------------------------------------------------- LoRA on a parameter count

PILOT = ("workloads:\n  - name: a\n    kind: finetune\n    method: lora\n    tokens: 100M\n    model: {params: 70B}\n"
         "    throughput: {tokens_per_second: 3000, gpu: h100-80gb, gpus: 1}\n")


def _file(tmp_path, text: str) -> str:
    path = tmp_path / "w.yaml"
    path.write_text(text)
    return str(path)


def test_lora_on_a_parameter_count_sizes_adapters_on_the_assumed_shape(tmp_path, capsys):
    # Before: refused without a pilot, or taken as fitting where the pilot ran with no adapters sized. Now 70B
    # alone takes Megatron-LM's 76.1B shape (Narayanan et al. 2021, Table 1: 60 layers, hidden 10240, 80 heads):
    # rank 16 on q, k, v and o: 60 layers × 4 × 16 × (10,240 + 10,240) = 78,643,200 adapter parameters.
    text = PILOT.replace("    throughput: {tokens_per_second: 3000, gpu: h100-80gb, gpus: 1}\n", "")
    assert main(["plan", _file(tmp_path, text), "--format", "json"]) == 0
    w = json.loads(capsys.readouterr().out)["workloads"][0]
    assert w["trainable_params"] == 78_643_200
    assert any(x.startswith("a: custom: shape assumed from params alone: layers 60, hidden 10240, heads 80")
               for x in w["warnings"])


def test_lora_on_a_parameter_count_with_a_pilot_is_estimated_not_taken_as_fitting(tmp_path, capsys):
    # 70B of bf16 weights alone are 140 GB, more than one 80 GB GPU: the pilot's 1× h100-80gb is no longer
    # taken as fitting; the plan moves to more GPUs and says its rate is extrapolated from the pilot.
    assert main(["plan", _file(tmp_path, PILOT), "--format", "json"]) == 0
    w = json.loads(capsys.readouterr().out)["workloads"][0]
    assert w["gpu"]["count"] > 1 and w["throughput_source"] == "pilot-extrapolated"


def test_default_targets_are_the_families_attention_projections(tmp_path, capsys):
    # GPT-2 without targets: c_attn only (c_proj names the MLP's down projection too), r 16:
    # 12 layers · 16·(768 + 2,304) = 589,824.
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n  - name: a\n    kind: finetune\n    method: lora\n    tokens: 1M\n"
                    f"    lora: {{rank: 16}}\n    model: {_config('gpt2__gpt2')}\n")
    assert main(["plan", str(path), "--format", "json"]) == 0
    w = json.loads(capsys.readouterr().out)["workloads"][0]
    assert w["trainable_params"] == 589_824
    (lora,) = records(w, "lora-default")
    assert lora["values"] == {"rank": 16, "targets": ["c_attn"], "reason": "gpt2"} and lora["sources"] == ["hu-2021"]


@pytest.mark.parametrize("model,lora,expected", [
    # The catalog's gpt2 row is family gpt2: c_attn as for its config.json (294,912 at r 8, above).
    ("gpt2", "{rank: 8, targets: c_attn}", 294_912),
    # phi-3.5-mini (same shape as Phi-3-mini): qkv_proj fused, r 16: 16·(3,072 + 9,216) · 32 = 6,291,456.
    ("phi-3.5-mini", "{targets: qkv_proj}", 6_291_456),
])
def test_catalog_rows_use_their_family_names(tmp_path, capsys, model, lora, expected):
    assert _trainable(tmp_path, capsys, model, lora) == expected
