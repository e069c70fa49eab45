"""`framework:` presets through the door users use: workload YAML into `proposalkit plan`.

A preset fills only what the workload leaves unset (the workload's own field, then `defaults:`, then
the preset, then the planner's default), and states each default it fills as an assumption with its
source. The values pinned here are the recipes' own settings, read at the commits named in
proposalkit/input/frameworks.py.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from proposalkit import cli
from conftest import records

# meta-llama/Llama-3.1-8B safetensors total (catalog llama-3.1-8b).
LLAMA_31_8B_PARAMS = 8_030_261_248


def _plan(tmp_path, capsys, body: str):
    path = tmp_path / "w.yaml"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    code = cli.main(["plan", str(path), "--format", "json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


BASE = """
    kind: finetune
    model: llama-3.1-8b
    tokens: 10M
    seq_len: 2048
"""


def _workload(name: str, extra: str) -> str:
    return f"  - name: {name}\n" + textwrap.indent(textwrap.dedent(BASE).strip() + "\n" + textwrap.dedent(extra).strip(),
                                                   "    ") + "\n"


def test_torchtune_turns_checkpointing_on_and_says_where_from(tmp_path, capsys):
    code, plan, err = _plan(tmp_path, capsys, "workloads:\n" + _workload("a", """
        method: lora
        gpus: 1
        framework: torchtune
    """))
    assert code == 0, err
    (w,) = plan["workloads"]
    # torchtune @ bd2a0fc7c recipes/configs/llama3_1/8B_lora_single_device.yaml: enable_activation_checkpointing: True
    assert w["settings"]["activation_checkpointing"] is True
    assert w["settings"]["framework"] == "torchtune"
    (note,) = [r for r in records(w, "preset-default") if r["values"]["field"] == "activation_checkpointing"]
    assert (note["values"]["value"], note["values"]["framework"]) == (True, "torchtune")
    assert "pytorch/torchtune @ bd2a0fc7c" in note["values"]["why"]
    assert "enable_activation_checkpointing: True" in note["values"]["why"]


def test_the_workload_and_its_defaults_override_the_preset(tmp_path, capsys):
    body = "defaults:\n  activation_checkpointing: false\nworkloads:\n" + _workload("from-defaults", """
        method: lora
        gpus: 1
        framework: torchtune
    """) + _workload("own-field", """
        method: lora
        gpus: 1
        framework: axolotl
        flash_attention: false
    """)
    code, plan, err = _plan(tmp_path, capsys, body)
    assert code == 0, err
    by = {w["name"]: w for w in plan["workloads"]}
    assert by["from-defaults"]["settings"]["activation_checkpointing"] is False
    assert not [r for r in records(by["from-defaults"], "preset-default") if r["values"]["field"] == "activation_checkpointing"]
    own = by["own-field"]
    assert own["settings"]["flash_attention"] is False
    assert own["settings"]["activation_checkpointing"] is False      # defaults: beats axolotl's gradient_checkpointing
    assert not [r for r in records(own, "preset-default") if r["values"]["field"] == "flash_attention"]


def test_megatron_distributed_optimizer_shards_the_optimizer_states(tmp_path, capsys):
    code, plan, err = _plan(tmp_path, capsys, "workloads:\n" + _workload("m", """
        method: full
        gpus: 8
        activation_checkpointing: true
        framework: megatron
    """))
    assert code == 0, err
    (w,) = plan["workloads"]
    assert w["settings"]["zero_stage"] == 1
    # Megatron-LM docs/distrib_optimizer.md, "bf16 param, fp32 grads": 6 + 12/d bytes per parameter with the
    # distributed optimizer: bf16 weights (2) and fp32 main gradients (4) whole on each rank, the fp32 main
    # params and Adam moments (12) over d = 8 data-parallel ranks.
    components = w["memory"]["estimate"]["components"]
    assert components["weights"] == 2 * LLAMA_31_8B_PARAMS
    assert components["gradients"] == 4 * LLAMA_31_8B_PARAMS
    assert components["optimizer"] == pytest.approx(12 * LLAMA_31_8B_PARAMS / 8, abs=8)
    assert [r["values"]["impl"] for r in records(w, "framework-optimizer")] == ["fp32-main-gradients"]


def test_deepspeed_bf16_optimizer_keeps_an_fp32_gradient_buffer(tmp_path, capsys):
    code, plan, err = _plan(tmp_path, capsys, "workloads:\n" + _workload("d", """
        method: full
        gpus: 8
        activation_checkpointing: true
        framework: deepspeed
    """))
    assert code == 0, err
    (w,) = plan["workloads"]
    # DeepSpeed deepspeed/runtime/bf16_optimizer.py: the bf16 .grad (2) and the flat fp32 accumulation buffer
    # (4) of the whole replica; fp32 master + Adam moments (12) partitioned over the 8 ranks (its own ZeRO-1).
    components = w["memory"]["estimate"]["components"]
    assert w["settings"]["zero_stage"] == 0
    assert components["gradients"] == 6 * LLAMA_31_8B_PARAMS
    assert components["optimizer"] == pytest.approx(12 * LLAMA_31_8B_PARAMS / 8, abs=8)


def test_torchtune_trains_in_pure_bf16(tmp_path, capsys):
    body = "workloads:\n" + _workload("tt", """
        method: full
        gpus: 1
        framework: torchtune
    """) + _workload("explicit", """
        method: full
        gpus: 1
        framework: torchtune
        mixed_precision: true
    """)
    code, plan, err = _plan(tmp_path, capsys, body)
    assert code == 0, err
    by = {w["name"]: w["memory"]["estimate"]["components"] for w in plan["workloads"]}
    # full_finetune_single_device.py @ bd2a0fc7c: bf16 weights, gradients and AdamW moments, no fp32 master:
    # 2 + 2 + 4 bytes per parameter; with mixed_precision: true the workload's field wins (2 + 2 + 12).
    assert by["tt"]["optimizer"] == 4 * LLAMA_31_8B_PARAMS
    assert by["explicit"]["optimizer"] == 12 * LLAMA_31_8B_PARAMS


def test_a_preset_equal_to_the_planners_default_is_still_stated(tmp_path, capsys):
    code, plan, err = _plan(tmp_path, capsys, "workloads:\n" + _workload("t", """
        method: full
        gpus: 8
        zero_stage: 3
        activation_checkpointing: true
        framework: torchtitan
    """))
    assert code == 0, err
    (w,) = plan["workloads"]
    (mixed,) = [r for r in records(w, "preset-default") if r["values"]["field"] == "mixed_precision"]
    assert mixed["values"]["value"] is True and "9dec370" in mixed["values"]["why"]


def test_no_framework_changes_nothing(tmp_path, capsys):
    body = "workloads:\n" + _workload("plain", "method: lora\ngpus: 1\n")
    code, plan, err = _plan(tmp_path, capsys, body)
    assert code == 0, err
    (w,) = plan["workloads"]
    assert "framework" not in w["settings"]
    assert not records(w, "preset-default") and not records(w, "framework-recipe")


@pytest.mark.parametrize("framework, expected", [
    ("torchtunes", "unknown framework (got 'torchtunes', expected hf-trainer, torchtune, torchtitan, deepspeed, "
                   "megatron, axolotl, llama-factory, vllm, sglang, trt-llm or hf; did you mean 'torchtune'?)"),
    ("vllm", "an inference engine on a finetune workload (got 'vllm', expected a training framework: hf-trainer, "
             "torchtune, torchtitan, deepspeed, megatron, axolotl, llama-factory)"),
])
def test_a_framework_that_is_not_one_is_an_input_error(tmp_path, capsys, framework, expected):
    code, plan, err = _plan(tmp_path, capsys, "workloads:\n" + _workload("x", f"method: lora\nframework: {framework}\n"))
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line.startswith(f"{tmp_path / 'w.yaml'}:") and "workloads[0].framework: " in line
    assert expected in line


def test_a_training_framework_on_inference_is_an_input_error(tmp_path, capsys):
    body = """
    workloads:
      - name: serve
        kind: inference
        model: llama-3.1-8b
        context: 4k
        hours: 10
        framework: torchtune
    """
    code, plan, err = _plan(tmp_path, capsys, body)
    assert code == 2
    (line,) = err.strip().splitlines()
    assert ":8: workloads[0].framework: a training framework on an inference workload (got 'torchtune'" in line


def test_the_schema_lists_the_frameworks(capsys):
    assert cli.main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    enum = schema["$defs"]["Workload"]["properties"]["framework"]["anyOf"][0]["enum"]
    assert enum == ["hf-trainer", "torchtune", "torchtitan", "deepspeed", "megatron", "axolotl", "llama-factory",
                    "vllm", "sglang", "trt-llm", "hf"]


@pytest.mark.parametrize("framework, loss", [
    ("torchtune", "chunked"),       # torchtune @ bd2a0fc7c llama3_1 configs: LinearCrossEntropyLoss, 8 chunks
    ("torchtitan", "standard"),     # torchtitan @ 9dec370 train.py: cross_entropy(pred.float(), labels)
    ("hf-trainer", "standard"),     # transformers ForCausalLMLoss: logits.float() then cross_entropy
    ("axolotl", "standard"),
    ("llama-factory", "standard"),
])
def test_each_preset_names_its_loss(tmp_path, capsys, framework, loss):
    code, plan, err = _plan(tmp_path, capsys, "workloads:\n" + _workload("l", f"""
        method: lora
        gpus: 1
        activation_checkpointing: true
        framework: {framework}
    """))
    assert code == 0, err
    (w,) = plan["workloads"]
    assert w["settings"]["loss"] == loss
    assert [(r["values"]["value"], r["values"]["framework"]) for r in [r for r in records(w, "preset-default") if r["values"]["field"] == "loss"]] == [(loss, framework)]


def test_torchtunes_chunked_loss_keeps_less_than_the_standard_one(tmp_path, capsys):
    # Same run, the loss named explicitly against the preset's: the workload's own field wins.
    body = "workloads:\n" + _workload("preset", """
        method: lora
        gpus: 1
        activation_checkpointing: true
        framework: torchtune
    """) + _workload("standard", """
        method: lora
        gpus: 1
        activation_checkpointing: true
        framework: torchtune
        loss: standard
    """)
    code, plan, err = _plan(tmp_path, capsys, body)
    assert code == 0, err
    by = {w["name"]: w for w in plan["workloads"]}
    assert by["standard"]["settings"]["loss"] == "standard"
    assert by["preset"]["memory"]["estimate"]["components"]["activations"] < by["standard"]["memory"]["estimate"]["components"]["activations"]


def test_torchtitan_checkpoints_selectively_by_its_op_policy(tmp_path, capsys):
    body = "workloads:\n" + _workload("preset", """
        method: full
        gpus: 8
        zero_stage: 3
        framework: torchtitan
    """) + _workload("full", """
        method: full
        gpus: 8
        zero_stage: 3
        framework: torchtitan
        activation_checkpointing: true
    """)
    code, plan, err = _plan(tmp_path, capsys, body)
    assert code == 0, err
    by = {w["name"]: w for w in plan["workloads"]}
    # torchtitan @ 9dec370 train_configs/llama3_8b.toml: mode = 'selective', selective_ac_option = 'op'
    assert by["preset"]["settings"]["activation_checkpointing"] == "selective"
    assert records(by["preset"], "framework-selective-policy")
    assert by["full"]["settings"]["activation_checkpointing"] is True
    assert not records(by["full"], "framework-selective-policy")
    # The op policy keeps every other matmul's output per layer: more than the layer input full checkpointing keeps.
    assert by["preset"]["memory"]["estimate"]["components"]["activations"] > by["full"]["memory"]["estimate"]["components"]["activations"]


def test_megatrons_unfused_softmax_stays_16_bit(tmp_path, capsys):
    body = "workloads:\n" + _workload("fused", """
        method: full
        gpus: 8
        activation_checkpointing: false
        framework: megatron
    """) + _workload("local", """
        method: full
        gpus: 8
        activation_checkpointing: false
        framework: megatron
        flash_attention: false
    """) + _workload("eager", """
        method: full
        gpus: 8
        activation_checkpointing: false
        zero_stage: 1
        flash_attention: false
    """)
    code, plan, err = _plan(tmp_path, capsys, body)
    assert code == 0, err
    by = {w["name"]: w for w in plan["workloads"]}
    # Megatron's attention_backend auto (flash/fused) keeps no s×s scores; its unfused path runs the
    # softmax in 16-bit unless --attention-softmax-in-fp32, where eager PyTorch under autocast runs it in fp32.
    assert by["fused"]["settings"]["flash_attention"] is True
    acts = {name: w["memory"]["estimate"]["components"]["activations"] for name, w in by.items()}
    assert acts["fused"] < acts["local"] < acts["eager"]
    (softmax,) = records(by["local"], "framework-softmax-16bit")
    assert "--attention-softmax-in-fp32" in softmax["values"]["why"]
