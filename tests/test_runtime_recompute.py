"""Runtime: the recompute of activation checkpointing is charged as the FLOPs and bytes it reruns.

Through the door users use (workload YAML into the CLI). Hand values for Llama 3.1 8B
(config.json of meta-llama/Llama-3.1-8B: 32 layers, 32 heads of 128; N without the
128,256 × 4,096 input embedding = 7,504,924,672), sequence 4,096:

    model FLOPs/token, full training  = 6·N + 12·L·H·Q·T = 45,029,547,032 + 6,442,450,944 = 51,471,998,976
    recomputed, full checkpointing    = 2·N + 4·L·H·Q·T  (Korthikanti et al. 2022 §5)    = 17,157,332,992

Without a workload MFU the step is timed by its parts (estimate/step_time.py): the matrix multiplies take
hardware FLOPs (model + recomputed) × tokens ÷ (peak × the H100's matmul fraction), so full checkpointing costs them
4/3 (llm-foundry's MPT-7B at 8k: 37.14% MFU ÷ 49.52% HFU = 0.750, mosaicml/llm-foundry @8c8dd48f
scripts/train/benchmarking/README.md), and the rerun forward moves its memory-bound bytes again. A workload's
own MFU keeps the FLOPs rule: GPUs × peak × MFU ÷ model FLOPs.
"""

from __future__ import annotations

import json

import pytest

from conftest import per_run
from proposalkit.catalog import models
from proposalkit.cli import main
from proposalkit.estimate.flops import training_flops_per_token
from proposalkit.estimate.step_time import MAMF_FRACTION

N = 7_504_924_672
MODEL = 6 * N + 12 * 32 * 32 * 128 * 4096          # 51,471,998,976
RECOMPUTE = 2 * N + 4 * 32 * 32 * 128 * 4096       # 17,157,332,992
# The matmuls' share of h100-80gb's 989 TFLOP/s: MAMF_FRACTION of its maximum achievable matmul rate, 794.5 TFLOP/s
# (Bekman's MAMF table, 'NVIDIA H100 SXM').
H100_FRACTION = MAMF_FRACTION * 794.5 / 989


def plan(tmp_path, capsys, fields: str) -> dict:
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n  - {name: ft, kind: finetune, method: full, model: llama-3.1-8b, tokens: 1B, "
                    f"seq_len: 4096, gpu: h100-80gb, gpus: 8, zero_stage: 3, buffer: 0{fields}}}\n", encoding="utf-8")
    code = main(["plan", str(path), "--format", "json"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, ""), err
    return json.loads(out)["workloads"][0]


def _matmuls(w: dict) -> float:
    """Seconds of matrix multiplies per GPU and step, by hand: hardware FLOPs × the step's tokens per GPU ÷ the
    rate (989 TFLOP/s dense bf16 on h100-80gb × H100_FRACTION)."""
    step = w["step"]
    return w["flops_per_token"]["hardware"] * step["tokens"] / 8 / (989e12 * H100_FRACTION)


def test_without_an_mfu_the_step_is_timed_by_its_parts(tmp_path, capsys):
    w = plan(tmp_path, capsys, ", activation_checkpointing: false")
    step = w["step"]
    assert w["flops_per_token"]["model"] == w["flops_per_token"]["hardware"] == MODEL
    assert step["compute_seconds"] == pytest.approx(_matmuls(w), abs=1e-6)
    assert step["seconds"] == pytest.approx(step["compute_seconds"] + step["memory_seconds"] + step["comm_seconds"],
                                            rel=1e-5)
    # The rate is the step's tokens ÷ the step as printed, to 0.1 ms (units.ms_shown).
    assert w["tokens_per_second"] == pytest.approx(step["tokens"] / (round(step["seconds"] * 1e3, 1) / 1e3), rel=1e-5)
    # The MFU reported is the one the parts imply, below the matmuls' own rate.
    assert w["mfu"] == pytest.approx(w["tokens_per_second"] * MODEL / (8 * 989e12), rel=1e-5)
    assert w["mfu"] < H100_FRACTION and w["mfu_without_recompute"] is None


def test_full_checkpointing_charges_one_more_forward_at_the_same_hardware_rate(tmp_path, capsys):
    w = plan(tmp_path, capsys, ", activation_checkpointing: true")
    none = plan(tmp_path, capsys, ", activation_checkpointing: false")
    assert w["flops_per_token"]["recompute"] == RECOMPUTE
    assert w["flops_per_token"]["hardware"] == MODEL + RECOMPUTE
    assert w["step"]["compute_seconds"] == pytest.approx(_matmuls(w), abs=1e-6)
    assert w["step"]["compute_seconds"] / none["step"]["compute_seconds"] == pytest.approx(
        (MODEL + RECOMPUTE) / MODEL, rel=1e-5)
    # The rerun forward moves the layers' forward bytes once more: more than none, less than twice.
    assert none["step"]["memory"]["layers"] < w["step"]["memory"]["layers"] < 2 * none["step"]["memory"]["layers"]
    assert w["runtime_hours"] == per_run(1e9 / w["tokens_per_second"] / 3600)


def test_a_workload_mfu_with_its_own_checkpointing_is_taken_as_measured(tmp_path, capsys):
    # A published or measured MFU already includes its recompute (e.g. llm-foundry's 37.14% with
    # checkpointing), so the workload's own figure is applied to model FLOPs unchanged.
    w = plan(tmp_path, capsys, ", activation_checkpointing: true, mfu: 0.37")
    assert (w["mfu"], w["mfu_without_recompute"]) == (0.37, None)
    assert w["tokens_per_second"] == pytest.approx(8 * 989e12 * 0.37 / MODEL)
    assert "recompute included" in w["mfu_source"] or "includes its recompute" in w["mfu_source"]


def test_checkpointing_the_planner_turns_on_is_charged_on_a_workload_mfu(tmp_path, capsys):
    # A 1.2B GPT block (24 layers of 2,048) at 2 × 8,192 tokens on one A100-40GB: its model states
    # (16 B/param ≈ 20 GB) and stored activations (s·b·h·34 per layer ≈ 27 GB, Korthikanti et al.
    # 2022) do not fit together, so the planner turns full checkpointing on to fit.
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n  - {name: pt, kind: pretrain, model: {name: gpt-1b, layers: 24, hidden: 2048, "
                    "heads: 16, vocab: 32000, max_context: 8192}, tokens: 1B, seq_len: 8192, micro_batch: 2, "
                    "gpu: a100-40gb, gpus: 1, mfu: 0.45, buffer: 0}\n", encoding="utf-8")
    assert main(["plan", str(path), "--format", "json"]) == 0
    w = json.loads(capsys.readouterr().out)["workloads"][0]
    assert w["settings"]["activation_checkpointing"] is True
    fpt = w["flops_per_token"]
    assert w["mfu_without_recompute"] == 0.45
    assert w["mfu"] == pytest.approx(0.45 * fpt["model"] / fpt["hardware"])


def test_selective_checkpointing_of_the_attention_core_reruns_qk_and_av(tmp_path, capsys):
    """Megatron-LM's selective recompute (Korthikanti et al. 2022 §4.2), the default policy:
    the attention core's forward, 4·L·H·Q·T = 4 × 32 × 32 × 128 × 4,096 = 2,147,483,648, compute-bound
    (FlashAttention): no memory-bound bytes rerun."""
    w = plan(tmp_path, capsys, ", activation_checkpointing: selective")
    none = plan(tmp_path, capsys, ", activation_checkpointing: false")
    assert w["flops_per_token"]["recompute"] == 2_147_483_648
    assert w["step"]["compute_seconds"] == pytest.approx(_matmuls(w), abs=1e-6)
    assert w["step"]["memory"]["layers"] == pytest.approx(none["step"]["memory"]["layers"], rel=1e-9)


def test_op_level_selective_checkpointing_reruns_every_second_matmul():
    """torchtitan's op-level policy (pytorch/torchtitan @82010c79 parallelize_llama.py: "Saves output
    of all compute ops, except every second mm"): a Llama block runs wq, wk, wv, wo, w1, w3, w2, so
    wk (4,096 × 1,024), wo (4,096 × 4,096) and w3 (4,096 × 14,336) are rerun, no attention:
    2 × 32 × (4,194,304 + 16,777,216 + 58,720,256) = 5,100,273,664 FLOPs per token."""
    fpt = training_flops_per_token(models()["llama-3.1-8b"], "full", 4096, activation_checkpointing="selective",
                                   selective_policy="op")
    assert (fpt.checkpointing, fpt.recompute) == ("op", 5_100_273_664)
    assert fpt.recompute_formula == "2 × 32 × (4,096 × 1,024 + 4,096 × 4,096 + 4,096 × 14,336)"
    assert fpt.model == MODEL
    # A mixture of experts' routed experts are grouped matmuls the policy does not keep: a whole forward.
    moe = training_flops_per_token(models()["mixtral-8x7b"], "full", 4096, "selective", selective_policy="op")
    assert moe.recompute == 2 * moe.matmul_params


def test_the_report_writes_the_recompute_out(tmp_path, capsys):
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n  - {name: ft, kind: finetune, method: full, model: llama-3.1-8b, tokens: 1B, "
                    "seq_len: 4096, gpu: h100-80gb, gpus: 8, zero_stage: 3, activation_checkpointing: true}\n",
                    encoding="utf-8")
    assert main(["report", str(path), "-o", str(tmp_path / "out"), "--format", "md"]) == 0
    capsys.readouterr()
    md = (tmp_path / "out" / "supplement.md").read_text(encoding="utf-8")
    assert ("**Recomputed:** full activation checkpointing reruns 2·N + 4·L·H·Q·T = 17.16 GFLOP per token on "
            "the GPUs, not model FLOPs (Korthikanti et al. 2022 §5") in md
    assert "**Step time:** step on each of 8 GPUs: matmuls " in md
    assert ("68.63 GFLOP per token at 0.61 × 989 TFLOP/s: 0.76 of the maximum achievable matmul rate, 794.5 "
            "TFLOP/s") in md
    assert "Narayanan et al. 2021" in md
