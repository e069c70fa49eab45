"""A config.json that cannot be a model's shape is an input error naming the workload line, the file and the key.

Each case ended in exit 3 ("a bug in proposalkit") before config.json values were
checked; values are quoted as the JSON file wrote them ("4096", NaN, true).
"""

from __future__ import annotations

import json

import pytest

from proposalkit.cli import main

# meta-llama/Llama-3.1-8B config.json (the keys read).
LLAMA = ('{"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32, '
         '"num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 128256, '
         '"max_position_embeddings": 131072}')
# openai-community/gpt2 config.json (the keys read).
GPT2 = '{"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024, "vocab_size": 50257}'

WORKLOAD = ("workloads:\n  - name: a\n    kind: finetune\n    method: lora\n    tokens: 200M\n"
            "    model: {config: m/config.json}\n")
WHERE = "FILE:6: workloads[0].model.config: CONFIG: "
DIMENSION = "at most 10^7, 40× the largest dimension of a published model (Gemma's 256,000-token vocabulary)"

CASES = {
    "hidden_size as text": (LLAMA.replace('"hidden_size": 4096', '"hidden_size": "4096"'),
                            'hidden_size: not a number (got "4096", text; expected a positive integer without '
                            'quotes)'),
    "hidden_size 4096.5": (LLAMA.replace('"hidden_size": 4096', '"hidden_size": 4096.5'),
                           "hidden_size: not a positive integer (got 4096.5, expected a positive integer)"),
    "hidden_size NaN": (LLAMA.replace('"hidden_size": 4096', '"hidden_size": NaN'),
                        "hidden_size: not a finite number (got NaN, expected a positive integer)"),
    "hidden_size true": (LLAMA.replace('"hidden_size": 4096', '"hidden_size": true'),
                         "hidden_size: not a number (got true, expected a positive integer)"),
    "hidden_size 1e400 as an integer": (LLAMA.replace('"hidden_size": 4096', '"hidden_size": 1' + "0" * 400),
                                        f"hidden_size: implausibly large (got 1e+400, expected {DIMENSION})"),
    "hidden_size of 5000 digits": (LLAMA.replace('"hidden_size": 4096', '"hidden_size": 1' + "0" * 5000),
                                   "malformed JSON: a number of more than 4,300 digits"),
    "num_attention_heads 0": (LLAMA.replace('"num_attention_heads": 32', '"num_attention_heads": 0'),
                              "num_attention_heads: not a positive integer (got 0, expected a positive integer)"),
    "num_hidden_layers -32": (LLAMA.replace('"num_hidden_layers": 32', '"num_hidden_layers": -32'),
                              "num_hidden_layers: not a positive integer (got -32, expected a positive integer)"),
    "head_dim as text": (LLAMA.replace("}", ', "head_dim": "128"}'),
                         'head_dim: not a number (got "128", text; expected a positive integer without quotes)'),
    "GPT-2 n_head 0": (GPT2.replace('"n_head": 12', '"n_head": 0'),
                       "n_head: not a positive integer (got 0, expected a positive integer)"),
    "tie_word_embeddings as text": (LLAMA.replace("}", ', "tie_word_embeddings": "false"}'),
                                    'tie_word_embeddings: not a boolean (got "false", expected true or false)'),
    "not an object": ("[1, 2]", "not a config (got a list, expected a JSON object)"),
    "nested too deeply": ("[" * 100_000, "malformed JSON: values nested too deeply"),
}


def run(tmp_path, capsys, config: str):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(config, encoding="utf-8")
    (tmp_path / "w.yaml").write_text(WORKLOAD, encoding="utf-8")
    code = main(["plan", str(tmp_path / "w.yaml")])
    captured = capsys.readouterr()
    assert captured.out == "" or code == 0
    err = captured.err.replace(str(tmp_path / "m" / "config.json"), "CONFIG").replace(str(tmp_path / "w.yaml"), "FILE")
    return code, err


@pytest.mark.parametrize("config, message", CASES.values(), ids=CASES.keys())
def test_config_error(tmp_path, capsys, config, message):
    assert run(tmp_path, capsys, config) == (2, WHERE + message + "\n")


def test_malformed_json_names_its_line(tmp_path, capsys):
    assert run(tmp_path, capsys, '{\n  "hidden_size": 4096,\n}\n') == (
        2, "FILE:6: workloads[0].model.config: CONFIG:3: malformed JSON: Expecting property name enclosed in "
           "double quotes\n")


def test_every_bad_key_is_reported_at_once(tmp_path, capsys):
    config = LLAMA.replace('"hidden_size": 4096', '"hidden_size": "4096"').replace(
        '"num_attention_heads": 32', '"num_attention_heads": 0')
    assert run(tmp_path, capsys, config) == (
        2, WHERE + 'hidden_size: not a number (got "4096", text; expected a positive integer without quotes)\n'
           + WHERE + "num_attention_heads: not a positive integer (got 0, expected a positive integer)\n")


def test_grouped_query_heads_must_divide(tmp_path, capsys):
    code, err = run(tmp_path, capsys, LLAMA.replace('"num_key_value_heads": 8', '"num_key_value_heads": 5'))
    assert (code, err) == (2, WHERE + "num_key_value_heads: does not divide num_attention_heads (got 5 key/value "
                                      "heads for 32 heads; grouped-query attention shares each key/value head "
                                      "among a whole number of query heads: expected a divisor of 32)\n")


def test_shape_beyond_the_parameter_bound(tmp_path, capsys):
    # 9,000,000 Llama-3.1-8B layers: 9e6 × 218,112,000 per layer ≈ 1.96e15 parameters (> 10^14).
    code, err = run(tmp_path, capsys, LLAMA.replace('"num_hidden_layers": 32', '"num_hidden_layers": 9000000'))
    assert (code, err) == (2, "FILE:6: workloads[0].model: implausibly large (got 1.96e+15 parameters from its "
                              "shape, expected at most 10^14 parameters, 50× the largest published models)\n")


def test_config_that_is_a_folder_is_refused(tmp_path, capsys):
    (tmp_path / "m" / "config.json").mkdir(parents=True)
    (tmp_path / "w.yaml").write_text(WORKLOAD, encoding="utf-8")
    assert main(["plan", str(tmp_path / "w.yaml")]) == 2
    err = capsys.readouterr().err.replace(str(tmp_path / "m" / "config.json"), "CONFIG")
    assert err == f"{tmp_path / 'w.yaml'}:6: workloads[0].model.config: CONFIG: not a regular file (got a folder, " \
                  "expected a config.json)\n"


def test_config_over_1_mib_is_refused(tmp_path, capsys):
    size = 2**20 + 1
    code, err = run(tmp_path, capsys, LLAMA + " " * (size - len(LLAMA)))
    assert (code, err) == (2, WHERE + "file too large (1,048,577 bytes, expected a config.json of at most 1 MiB, "
                                      "1,000× a Hugging Face model's config)\n")


def test_good_config_still_plans(tmp_path, capsys):
    code, err = run(tmp_path, capsys, LLAMA)
    assert (code, err) == (0, "")
