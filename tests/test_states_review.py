"""Framework optimizers as they run, through `proposalkit plan` (review of issue 12's model states).

- DeepSpeed picks BF16_Optimizer (bf16 .grad + an fp32 gradient buffer of the whole replica) only without
  ZeRO: under ZeRO, grad_accum_dtype defaults to bf16 and DeepSpeedZeroOptimizer runs (microsoft/DeepSpeed
  @ 4be8df721 deepspeed/runtime/engine.py get_data_types, _do_optimizer_sanity_check). At ZeRO stage 1 over
  d GPUs: bf16 weights 2 + bf16 gradients 2 (whole) + (fp32 master 4 + Adam m, v 8) / d.
- DeepSpeed and Megatron-LM keep fp32 main parameters and step after the whole backward over a gradient
  buffer of every parameter: mixed_precision: false and optimizer_in_backward are refused under them.
Llama 3.1 8B: 8,030,261,248 parameters (meta-llama/Llama-3.1-8B safetensors total).
"""

from __future__ import annotations

import json
import textwrap

import pytest

from proposalkit import cli
from conftest import records

P = 8_030_261_248

WORKLOAD = """\
workloads:
  - name: w
    kind: finetune
    method: full
    model: llama-3.1-8b
    tokens: 10M
    seq_len: 2048
    gpus: 8
    activation_checkpointing: true
"""


def _run(tmp_path, capsys, extra: str):
    path = tmp_path / "w.yaml"
    path.write_text(WORKLOAD + textwrap.indent(textwrap.dedent(extra).strip(), "    ") + "\n", encoding="utf-8")
    code = cli.main(["plan", str(path), "--format", "json"])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("stage", ["", "zero_stage: 1"])
def test_deepspeed_zero_1_runs_the_zero_optimizer_with_bf16_gradients(tmp_path, capsys, stage):
    # Before: BF16_Optimizer at stage 1 (2 + 4 B/param of gradients), and with zero_stage unset only stage 0
    # was tried: 8B on 8 H100s 'did not fit' (86.8 GiB) and was sent to 32 GPUs.
    code, out, err = _run(tmp_path, capsys, f"gpu: h100-80gb\nframework: deepspeed\n{stage}")
    assert code == 0, err
    (w,) = json.loads(out)["workloads"]
    components = w["memory"]["estimate"]["components"]
    assert w["settings"]["zero_stage"] == 1
    assert components["weights"] == 2 * P
    assert components["gradients"] == 2 * P
    assert components["optimizer"] == 12 * P // 8


def test_deepspeed_without_zero_keeps_bf16_optimizer_buffer(tmp_path, capsys):
    # stage 0: BF16_Optimizer, 2 (bf16 .grad) + 4 (fp32 buffer) B/param of gradients, its own ZeRO-1 of the states
    code, out, err = _run(tmp_path, capsys, "gpu: h200\nframework: deepspeed\nzero_stage: 0")
    assert code == 0, err
    (w,) = json.loads(out)["workloads"]
    assert w["memory"]["estimate"]["components"]["gradients"] == 6 * P
    assert w["memory"]["estimate"]["components"]["optimizer"] == 12 * P // 8


@pytest.mark.parametrize("extra, message", [
    ("framework: megatron\noptimizer_in_backward: true",
     "workloads[0].optimizer_in_backward: Megatron-LM steps after the whole backward, over a gradient buffer of "
     "every parameter (got optimizer_in_backward with framework megatron, expected false or nothing; the step in "
     "backward is torchtune's optimizer_in_bwd)"),
    ("framework: deepspeed\noptimizer_in_backward: true",
     "workloads[0].optimizer_in_backward: DeepSpeed (its ZeRO and BF16 optimizers) steps after the whole backward"),
    ("framework: deepspeed\nzero_stage: 2\nmixed_precision: false",
     "workloads[0].mixed_precision: DeepSpeed (its ZeRO and BF16 optimizers) keeps fp32 main weights for 16-bit "
     "parameters (got mixed_precision: false with framework deepspeed, expected true or nothing)"),
    ("framework: megatron\nmixed_precision: false",
     "workloads[0].mixed_precision: Megatron-LM keeps fp32 main weights"),
])
def test_framework_state_contradictions_exit_2(tmp_path, capsys, extra, message):
    # Before: accepted; megatron + optimizer_in_backward planned 0.98 GiB of gradients for 8B where Megatron's
    # fp32 main_grad buffer holds 29.9 GiB; deepspeed ZeRO-2 + mixed_precision false dropped the fp32 master.
    code, out, err = _run(tmp_path, capsys, extra)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and lines[0].split(":")[1].isdigit(), lines


def test_torchtitan_preset_shards_with_fsdp_under_pipeline_parallelism(tmp_path, capsys):
    # torchtitan @ 9dec370 config_manager.py: data_parallel_shard_degree -1 (FSDP over the remaining GPUs).
    # Before, with zero_stage unset the planner could choose ZeRO 1-2, which under pipeline parallelism holds
    # less than FSDP's gathered parameters and unsharded fp32 gradients (2 + 2 + 12/8 against 2 + 4 + 16/8 B/param).
    path = tmp_path / "w.yaml"
    path.write_text("""workloads:
  - name: t
    kind: pretrain
    model: llama-3.1-8b
    tokens: 10M
    seq_len: 2048
    gpus: 16
    pipeline_parallel: 2
    framework: torchtitan
""", encoding="utf-8")
    assert cli.main(["plan", str(path), "--format", "json"]) == 0
    (w,) = json.loads(capsys.readouterr().out)["workloads"]
    assert w["settings"]["zero_stage"] == 3
    assert [(r["values"]["value"], r["values"]["framework"]) for r in records(w, "preset-default")
            if r["values"]["field"] == "zero_stage"] == [(3, "torchtitan")]
    # fullest stage, the last: 16 layers × 218,112,000 + the 128,256 × 4,096 LM head + the final norm (4,096)
    stage = 16 * 218_112_000 + 128_256 * 4_096 + 4_096
    c = w["memory"]["estimate"]["components"]
    assert c["weights"] == 2 * stage                         # bf16, gathered across micro-batches
    assert c["gradients"] == 4 * stage + 4 * stage // 8      # unsharded fp32 + the fp32 shard


def test_deepspeed_offload_runs_under_zero(tmp_path, capsys):
    # DeepSpeed's offload_optimizer is a zero_optimization setting; BF16_Optimizer (stage 0) keeps its states on
    # the GPU (engine.py _do_optimizer_sanity_check: "and not self.zero_cpu_offload()"). Before: stage 0 was
    # chosen with BF16_Optimizer and its states offloaded, a run DeepSpeed does not make.
    code, out, err = _run(tmp_path, capsys, "gpu: h100-80gb\nframework: deepspeed\noffload: {optimizer: cpu}")
    assert code == 0, err
    (w,) = json.loads(out)["workloads"]
    assert w["settings"]["zero_stage"] == 1
    c = w["memory"]["estimate"]["components"]
    # bf16 weights whole; the reduce bucket (5e8 values) + the embedding's bf16 gradient; no states on the GPU
    assert (c["weights"], c["gradients"], c["optimizer"]) == (2 * P, 2 * 500_000_000 + 2 * 128_256 * 4_096, 0)
    code, out, err = _run(tmp_path, capsys, "framework: deepspeed\noffload: {optimizer: cpu}\nzero_stage: 0")
    assert code == 2 and out == ""
    assert err.strip().endswith("workloads[0].offload.optimizer: DeepSpeed offloads the optimizer under ZeRO (got "
                                "zero_stage 0 with framework deepspeed, expected zero_stage 1, 2, 3 or nothing)")


def test_activation_offload_needs_checkpointing(tmp_path, capsys):
    # torchtune @ bd2a0fc7c recipes/full_finetune_single_device.py raises "enable_activation_offloading should only
    # be True when enable_activation_checkpointing is True". Before: planned, 139.8 GiB for 8B on one H100.
    path = tmp_path / "w.yaml"
    path.write_text(WORKLOAD.replace("activation_checkpointing: true", "activation_checkpointing: false")
                    + "    activation_offload: true\n", encoding="utf-8")
    code = cli.main(["plan", str(path)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.strip().endswith("workloads[0].activation_offload: torchtune offloads activations only with activation "
                                "checkpointing (got activation_checkpointing: false, expected true, selective or "
                                "nothing)")


def test_deepspeed_tensor_parallel_keeps_whole_layer_inputs(tmp_path, capsys):
    # Megatron-DeepSpeed (BLOOM's tr11-176B-ml.slurm passes no --sequence-parallel): with full checkpointing each
    # layer keeps its whole input, 2 B × s × b × h = 2 × 2048 × 4096 per layer, not ÷ t (Korthikanti Table 2).
    body = WORKLOAD.replace("gpus: 8", "gpus: 2\n    tensor_parallel: 2\n    zero_stage: 1\n    gpu: h100-80gb")
    acts = {}
    for framework in ("deepspeed", "megatron"):
        path = tmp_path / f"{framework}.yaml"
        path.write_text(body + f"    framework: {framework}\n    loss: fused\n", encoding="utf-8")
        assert cli.main(["plan", str(path), "--format", "json"]) == 0
        (w,) = json.loads(capsys.readouterr().out)["workloads"]
        acts[framework] = w["memory"]["estimate"]["components"]["activations"]
        if framework == "deepspeed":
            assert records(w, "framework-no-sequence-parallel")
    # 32 layer inputs (+ the final norm's input) whole instead of halved; the recomputed layer's norm/qkv/mlp
    # inputs whole too: at least 33 × 2 × 2048 × 4096 / 2 more
    assert acts["deepspeed"] - acts["megatron"] >= 33 * 2 * 2048 * 4096 // 2


def test_an_empty_offload_is_refused(tmp_path, capsys):
    # Before: accepted and ignored (a field that silently does nothing).
    code, out, err = _run(tmp_path, capsys, "offload: {}")
    assert code == 2 and out == ""
    assert err.strip().endswith("workloads[0].offload: nothing to offload (got an empty mapping, expected optimizer: "
                                "cpu, params: cpu or both, or leave offload out)")
