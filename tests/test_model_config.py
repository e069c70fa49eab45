"""`model: {config: path}` reads a local Hugging Face config.json; the count is computed from it."""

from __future__ import annotations

import json

from proposalkit.cli import main
from proposalkit.input.configs import model_from_config


def model_from_hf_config(config, name):
    spec, problems = model_from_config(config, name)
    assert not problems, problems
    return spec

# meta-llama/Llama-3.1-8B config.json (published values); published count 8,030,261,248.
LLAMA_31_8B = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
               "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 128256,
               "max_position_embeddings": 131072, "tie_word_embeddings": False, "hidden_act": "silu",
               "attention_bias": False, "mlp_bias": False}
# openai-community/gpt2 config.json; published count 124,439,808.
GPT2 = {"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024, "vocab_size": 50257,
        "activation_function": "gelu_new", "resid_pdrop": 0.1}
# Qwen/Qwen2.5-7B config.json (q/k/v biases); published count 7,615,616,512.
QWEN25_7B = {"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944, "num_attention_heads": 28,
             "num_hidden_layers": 28, "num_key_value_heads": 4, "vocab_size": 152064,
             "max_position_embeddings": 131072, "tie_word_embeddings": False, "hidden_act": "silu"}


def test_published_counts_from_config_files():
    assert model_from_hf_config(LLAMA_31_8B, "llama").params == 8_030_261_248
    assert model_from_hf_config(GPT2, "gpt2").params == 124_439_808
    assert model_from_hf_config(QWEN25_7B, "qwen").params == 7_615_616_512


def test_config_path_is_read_relative_to_the_workload_file(tmp_path, capsys):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "config.json").write_text(json.dumps(LLAMA_31_8B))
    (tmp_path / "w.yaml").write_text("workloads:\n  - name: a\n    kind: finetune\n    method: lora\n"
                                     "    model: {config: models/config.json}\n    tokens: 10M\n"
                                     "    gpu: a100-80gb\n    gpus: 1\n")
    assert main(["plan", str(tmp_path / "w.yaml"), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["workloads"][0]["model"]["params"] == 8_030_261_248


def test_report_to_an_unwritable_folder_is_an_input_error(tmp_path, capsys):
    (tmp_path / "w.yaml").write_text("workloads:\n  - name: a\n    kind: inference\n    model: llama-3.1-8b\n"
                                     "    context: 4k\n    hours: 10\n    gpu: a100-80gb\n    gpus: 1\n")
    blocker = tmp_path / "file"
    blocker.write_text("")
    code = main(["report", str(tmp_path / "w.yaml"), "-o", str(blocker / "out"), "--format", "md"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"proposalkit report: -o {blocker / 'out'}: cannot write ")
    assert "internal error" not in err
