"""Legacy config.json files whose keys are all there are read (issue 21, item 5), through the CLI.

microsoft/phi-2 shipped with model_type phi-msft and GPT-2 key names (n_embd, n_head, n_layer, n_inner,
n_positions, rotary_dim, n_head_kv) before its config moved to transformers' phi: the same model. The four
keys transformers' attribute_map renames (GPT2Config, GPTJConfig, GPTBigCodeConfig, CodeGenConfig: hidden_size
↔ n_embd, num_attention_heads ↔ n_head, num_hidden_layers ↔ n_layer, max_position_embeddings ↔ n_positions)
are read under either name in every family. And rope_scaling that stretches the context (Qwen2.5's cards:
yarn, factor 4 on 32,768 positions for 131,072) is read, so a valid long context is not refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proposalkit.cli import main
from conftest import records

CONFIGS = Path(__file__).parent / "data" / "configs"
# Qwen/Qwen2.5-7B-Instruct config.json (the keys read): 32,768 positions, and the rope_scaling its model card
# ("Processing Long Texts") says to add for up to 131,072 tokens.
QWEN_INSTRUCT = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
                 "intermediate_size": 18944, "max_position_embeddings": 32768, "num_attention_heads": 28,
                 "num_hidden_layers": 28, "num_key_value_heads": 4, "rope_theta": 1000000.0,
                 "sliding_window": 131072, "use_sliding_window": False, "tie_word_embeddings": False,
                 "vocab_size": 152064}
QWEN_YARN = {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"}


def fixture(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text(encoding="utf-8"))


def plan(tmp_path, capsys, config: dict, workload: str) -> tuple[int, str, str]:
    (tmp_path / "m").mkdir(exist_ok=True)
    (tmp_path / "m" / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (tmp_path / "w.yaml").write_text("workloads:\n  - name: a\n    model: {config: m/config.json}\n" + workload,
                                     encoding="utf-8")
    code = main(["plan", str(tmp_path / "w.yaml"), "--format", "json"])
    out, err = capsys.readouterr()
    return code, out, err.replace(str(tmp_path / "m" / "config.json"), "CONFIG").replace(str(tmp_path / "w.yaml"),
                                                                                           "FILE")


LORA = "    kind: finetune\n    method: lora\n    tokens: 200M\n    gpu: h100-80gb\n"
FULL = "    kind: finetune\n    method: full\n    tokens: 200M\n    gpu: h100-80gb\n"


def workload_of(out: str) -> dict:
    return json.loads(out)["workloads"][0]


def test_phi_2_in_its_legacy_phi_msft_config_is_planned_as_in_its_phi_config(tmp_path, capsys):
    code, legacy, err = plan(tmp_path, capsys, fixture("phi-msft"), FULL)
    assert code == 0, err
    code, current, err = plan(tmp_path, capsys, fixture("phi"), FULL)
    assert code == 0, err
    legacy, current = workload_of(legacy), workload_of(current)
    assert legacy["model"]["params"] == current["model"]["params"] == 2_779_683_840   # microsoft/phi-2, HF total
    for key in ("memory", "gpu_hours", "runtime_hours"):
        assert legacy[key] == current[key], key
    [read] = records(legacy, "config-read-as")
    assert read["values"]["model_type"] == "phi-msft"


def test_lora_on_phi_msft_targets_its_own_module_names(tmp_path, capsys):
    """Its remote-code modeling_phi.py fuses q, k and v (mixer.Wqkv): one adapter pair where phi has three."""
    code, out, err = plan(tmp_path, capsys, fixture("phi-msft"), LORA)
    assert code == 0, err
    w = workload_of(out)
    [default] = records(w, "lora-default")
    assert (default["values"]["targets"], default["values"]["reason"]) == (["Wqkv", "out_proj"], "phi-msft")
    # 32 layers × rank 16 × ((2,560 + 7,680) for Wqkv + (2,560 + 2,560) for out_proj)
    [adapters] = records(w, "lora-adapters")
    assert adapters["values"]["adapters"] == 32 * 16 * (2560 + 7680 + 2560 + 2560)


def test_phixtral_a_mixture_of_phi_2_mlps_is_refused_by_its_key(tmp_path, capsys):
    code, out, err = plan(tmp_path, capsys, {**fixture("phi-msft"), "num_local_experts": 4, "num_experts_per_tok": 2},
                          LORA)
    assert (code, out) == (2, "")
    assert err == ("FILE:3: workloads[0].model.config: CONFIG: num_local_experts: a mixture of experts in a phi-msft "
                   "config (Phixtral) is not read (expected a dense phi-msft or phi config)\n")


@pytest.mark.parametrize("family", ["gpt2", "llama", "phi-msft"])
def test_either_name_of_a_renamed_key_is_read(tmp_path, capsys, family):
    """Each key of transformers' attribute_map written under its other name: the same plan."""
    renames = {"hidden_size": "n_embd", "num_attention_heads": "n_head", "num_hidden_layers": "n_layer",
               "max_position_embeddings": "n_positions"}
    renames.update({v: k for k, v in list(renames.items())})
    original = fixture(family)
    renamed = {renames.get(k, k): v for k, v in original.items()}
    assert renamed != original
    code, first, err = plan(tmp_path, capsys, original, LORA)
    assert code == 0, err
    code, second, err = plan(tmp_path, capsys, renamed, LORA)
    assert code == 0, err
    assert workload_of(first)["model"]["params"] == workload_of(second)["model"]["params"]
    assert workload_of(first)["memory"] == workload_of(second)["memory"]


def test_codegen_is_read_as_gpt_j_s_block(tmp_path, capsys):
    """CodeGenConfig has GPT-J's keys, and modeling_codegen.py's CodeGenBlock is 'Copied from GPTJBlock' (q, k
    and v fused in qkv_proj, without biases; fc_in/fc_out and the LM head with biases)."""
    gptj = fixture("gptj")
    code, as_gptj, err = plan(tmp_path, capsys, gptj, LORA)
    assert code == 0, err
    code, as_codegen, err = plan(tmp_path, capsys, {**gptj, "model_type": "codegen"}, LORA)
    assert code == 0, err
    assert workload_of(as_codegen)["model"]["params"] == workload_of(as_gptj)["model"]["params"]
    [default] = records(workload_of(as_codegen), "lora-default")
    assert (default["values"]["targets"], default["values"]["reason"]) == (["qkv_proj", "out_proj"], "codegen")


SERVE_128K = "    kind: inference\n    context: 128k\n    batch: 1\n    hours: 10\n    gpu: h100-80gb\n"


def test_yarn_rope_scaling_lets_a_32k_model_serve_128k(tmp_path, capsys):
    code, out, err = plan(tmp_path, capsys, {**QWEN_INSTRUCT, "rope_scaling": QWEN_YARN}, SERVE_128K)
    assert code == 0, err
    [stretched] = records(workload_of(out), "context-stretched")
    assert stretched["values"] == {"model": "m", "max_context": 131_072, "rope_type": "yarn", "factor": 4,
                                   "base_key": "rope_scaling.original_max_position_embeddings", "base": 32_768,
                                   "stated": 32_768}


def test_without_rope_scaling_the_same_context_is_refused(tmp_path, capsys):
    code, out, err = plan(tmp_path, capsys, QWEN_INSTRUCT, SERVE_128K)
    assert (code, out) == (2, "")
    assert "workloads[0].context" in err and "32,768" in err


@pytest.mark.parametrize("rope, context", [
    ({"type": "linear", "factor": 2.0}, 65_536),                      # factor × max_position_embeddings
    ({"rope_type": "dynamic", "factor": 4}, 131_072),
    ({"type": "yarn", "factor": 4.0}, 131_072),                       # no original: max_position_embeddings
    ({"type": "yarn", "factor": 2.0, "original_max_position_embeddings": 8192}, 32_768),   # shorter: kept
    ({"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}, 32_768),  # stated already
    ({"type": "longrope", "short_factor": [1.0], "long_factor": [4.0]}, 32_768),
    ({"type": "default"}, 32_768),
])
def test_the_rope_scaling_types_that_stretch_the_context(tmp_path, capsys, rope, context):
    code, out, err = plan(tmp_path, capsys, {**QWEN_INSTRUCT, "rope_scaling": rope},
                          "    kind: inference\n    context: 4k\n    batch: 1\n    hours: 10\n    gpu: h100-80gb\n")
    assert code == 0, err
    from proposalkit.input.configs import model_from_config

    spec, problems = model_from_config({**QWEN_INSTRUCT, "rope_scaling": rope}, "m")
    assert problems == [] and spec.max_context == context


def test_a_gemma_3_linear_factor_is_already_in_its_max_position_embeddings():
    """Gemma 3's 131,072 positions are the stretched ones (vLLM skips its factor for gemma3)."""
    from proposalkit.input.configs import model_from_config

    config = {**fixture("gemma3_text"), "max_position_embeddings": 131072,
              "rope_scaling": {"factor": 8.0, "rope_type": "linear"}}
    spec, problems = model_from_config(config, "gemma")
    assert problems == [] and spec.max_context == 131_072


@pytest.mark.parametrize("factor, message", [
    ("4", 'not a scaling factor (got "4", expected a number of at least 1)'),
    (0.5, "not a scaling factor (got 0.5, expected a number of at least 1)"),
    (1e300, "implausibly large (got 1e+300: the context it stretches 32,768 tokens to is expected at most 10^8 "
            "tokens per sequence, 10× the longest published context window)"),
])
def test_a_rope_scaling_factor_that_cannot_be_is_named(tmp_path, capsys, factor, message):
    code, out, err = plan(tmp_path, capsys, {**QWEN_INSTRUCT, "rope_scaling": {"type": "yarn", "factor": factor,
                                                                               "original_max_position_embeddings":
                                                                               32768}}, SERVE_128K)
    assert (code, out) == (2, "")
    assert err == f"FILE:3: workloads[0].model.config: CONFIG: rope_scaling.factor: {message}\n"
