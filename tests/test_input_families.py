"""config.json read by family: encoders refused by name, an unknown model_type read only when its keys
suffice (warned), and each family's keys checked, every message naming the file and the key (exit 2).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proposalkit.cli import main

CONFIGS = Path(__file__).parent / "data" / "configs"
WORKLOAD = ("workloads:\n  - name: a\n    kind: finetune\n    method: lora\n    tokens: 200M\n"
            "    model: {config: m/config.json}\n    gpu: h100-80gb\n")
WHERE = "FILE:6: workloads[0].model.config: CONFIG: "


def fixture(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text(encoding="utf-8"))


def run(tmp_path, capsys, config: dict, *args: str):
    (tmp_path / "m").mkdir(exist_ok=True)
    (tmp_path / "m" / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (tmp_path / "w.yaml").write_text(WORKLOAD, encoding="utf-8")
    code = main(["plan", str(tmp_path / "w.yaml"), *args])
    captured = capsys.readouterr()
    err = captured.err.replace(str(tmp_path / "m" / "config.json"), "CONFIG").replace(str(tmp_path / "w.yaml"), "FILE")
    return code, captured.out, err


@pytest.mark.parametrize("name, what", [
    ("bert", "'bert' is an encoder (BERT)"),
    ("t5", "'t5' is an encoder-decoder (T5)"),
])
def test_encoders_are_refused_by_name(tmp_path, capsys, name, what):
    code, out, err = run(tmp_path, capsys, fixture(name))
    assert (code, out) == (2, "")
    assert err == (WHERE + f"model_type: {what}, not a decoder-only language model; proposalkit plans decoders "
                           "(expected a causal LM's config.json, or give the model as params)\n")


# A made-up model_type with every key a Llama-style decoder needs.
UNKNOWN = {"model_type": "brandnew", "hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 24,
           "intermediate_size": 5632, "vocab_size": 32000}
UNKNOWN_NOTE = ("m: model_type 'brandnew' is not an architecture proposalkit knows; read as a Llama-style "
                "decoder: gated MLP (SwiGLU), RMSNorm, no biases, untied embeddings unless tie_word_embeddings "
                "is true")


def test_unknown_model_type_with_the_keys_is_planned_with_a_warning(tmp_path, capsys):
    code, out, err = run(tmp_path, capsys, UNKNOWN, "--format", "json")
    assert (code, err) == (0, "")
    plan = json.loads(out)
    # 32,000 × 2,048 × 2 (untied) + 24 × (4 × 2,048² + 3 × 2,048 × 5,632 + 2 × 2,048) + 2,048
    assert plan["workloads"][0]["model"]["params"] == 131_072_000 + 24 * (16_777_216 + 34_603_008 + 4096) + 2048
    assert f"a: {UNKNOWN_NOTE}" in plan["workloads"][0]["warnings"]


def test_unknown_model_type_without_the_keys_names_them(tmp_path, capsys):
    config = {k: v for k, v in UNKNOWN.items() if k not in ("intermediate_size", "vocab_size")}
    assert run(tmp_path, capsys, config) == (
        2, "", WHERE + "model_type: model_type 'brandnew' is not an architecture proposalkit knows, and the keys "
                       "to read it as a Llama-style decoder are missing: intermediate_size, vocab_size\n")


def test_unknown_model_type_with_experts_is_not_read_as_dense(tmp_path, capsys):
    assert run(tmp_path, capsys, {**UNKNOWN, "num_experts": 64}) == (
        2, "", WHERE + "model_type: model_type 'brandnew' is not an architecture proposalkit knows, and "
                       "num_experts (mixture of experts or latent attention) cannot be read as a Llama-style "
                       "decoder\n")


def test_known_family_missing_a_key(tmp_path, capsys):
    config = {k: v for k, v in fixture("llama").items() if k != "vocab_size"}
    assert run(tmp_path, capsys, config) == (
        2, "", WHERE + "vocab_size: missing (expected vocab_size for a llama config)\n")


CASES = {
    # Llama-3.1-8B with 8,192 heads on 4,096: each head would be 0 wide (the example).
    "heads not dividing hidden": (
        "llama", {"num_attention_heads": 8192},
        "num_attention_heads: does not divide hidden_size (got 8192 heads of 4096; each head is hidden_size / "
        "num_attention_heads wide: expected a divisor of 4096, or head_dim)"),
    "falcon-40b kv heads not dividing heads": (
        "falcon-40b", {"num_kv_heads": 7},
        "num_kv_heads: does not divide num_attention_heads (got 7 key/value heads for 128 heads; grouped-query "
        "attention shares each key/value head among a whole number of query heads: expected a divisor of 128)"),
    "falcon multi_query as text": (
        "falcon", {"multi_query": "true"}, 'multi_query: not a boolean (got "true", expected true or false)'),
    "gpt_bigcode n_head true": (
        "gpt_bigcode", {"n_head": True}, "n_head: not a number (got true, expected a positive integer)"),
    "gemma3 text_config layers 0": (
        "gemma3", {"text_config": {**fixture("gemma3")["text_config"], "num_hidden_layers": 0}},
        "text_config.num_hidden_layers: not a positive integer (got 0, expected a positive integer)"),
    "gemma3 vision_config patch_size text": (
        "gemma3", {"vision_config": {**fixture("gemma3")["vision_config"], "patch_size": "14"}},
        'vision_config.patch_size: not a number (got "14", text; expected a positive integer without quotes)'),
    "llava text_config not an object": (
        "llava", {"text_config": [1]}, "text_config: not an object (got a list, expected a JSON object)"),
    "phi partial_rotary_factor 1.5": (
        "phi", {"partial_rotary_factor": 1.5},
        "partial_rotary_factor: not a rotary share (got 1.5, expected a number from 0 to 1)"),
    "gptj rotary_dim -64": (
        "gptj", {"rotary_dim": -64}, "rotary_dim: not a positive integer (got -64, expected a positive integer)"),
    "opt ffn_dim 8192.5": (
        "opt", {"ffn_dim": 8192.5}, "ffn_dim: not a positive integer (got 8192.5, expected a positive integer)"),
    "qwen3 head_dim false": (
        "qwen3", {"head_dim": False}, "head_dim: not a number (got false, expected a positive integer)"),
}


@pytest.mark.parametrize("name, change, message", CASES.values(), ids=CASES.keys())
def test_family_keys_checked(tmp_path, capsys, name, change, message):
    assert run(tmp_path, capsys, {**fixture(name), **change}) == (2, "", WHERE + message + "\n")


def test_gemma_ties_by_default(tmp_path, capsys):
    # google/gemma-2b's config has no tie_word_embeddings key; an explicit false unties: + 256,000 × 2,048.
    code, out, _ = run(tmp_path, capsys, fixture("gemma"), "--format", "json")
    tied = json.loads(out)["workloads"][0]["model"]["params"]
    code, out, _ = run(tmp_path, capsys, {**fixture("gemma"), "tie_word_embeddings": False}, "--format", "json")
    assert json.loads(out)["workloads"][0]["model"]["params"] - tied == 256_000 * 2048 == 524_288_000


def test_the_docs_name_every_family_read():
    from proposalkit.input.configs.families import ENCODERS
    from proposalkit.input.configs.read import MULTIMODAL, READERS
    page = (Path(__file__).parent.parent / "docs" / "models.md").read_text(encoding="utf-8")
    listed = page[page.index("Read by `model_type`"):page.index("are refused")]
    words = set(listed.replace(",", " ").replace("`", " ").split())
    assert set(READERS) | set(MULTIMODAL) | {"bert", "t5"} <= words
    assert {"bert", "t5"} <= set(ENCODERS)


def test_gemma3_vision_config_not_an_object(tmp_path, capsys):
    assert run(tmp_path, capsys, {**fixture("gemma3"), "vision_config": 7}) == (
        2, "", WHERE + "vision_config: not an object (got 7, expected a JSON object)\n")


def test_unknown_model_type_with_a_vision_tower_says_it_is_not_counted(tmp_path, capsys):
    # A Qwen2-VL-style config: the language keys at the top level beside a vision_config.
    code, out, err = run(tmp_path, capsys, {**UNKNOWN, "vision_config": {"depth": 32}}, "--format", "json")
    assert (code, err) == (0, "")
    assert f"a: {UNKNOWN_NOTE}; its vision_config is not counted" in json.loads(out)["workloads"][0]["warnings"]
