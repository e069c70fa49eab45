"""Runtime: MFU is applied to model FLOPs; the cost of activation checkpointing's recompute is charged separately.

Through the door users use (workload YAML into the CLI). Hand values for Llama 3.1 8B
(config.json of meta-llama/Llama-3.1-8B: 32 layers, 32 heads of 128; N without the
128,256 × 4,096 input embedding = 7,504,924,672), sequence 4,096:

    model FLOPs/token, full training  = 6·N + 12·L·H·Q·T = 45,029,547,032 + 6,442,450,944 = 51,471,998,976
    recomputed, full checkpointing    = 2·N + 4·L·H·Q·T  (Korthikanti et al. 2022 §5)    = 17,157,332,992
    MFU with full checkpointing       = 0.51 × 51,471,998,976 ÷ 68,629,331,968 = 0.51 × 3/4 = 0.3825
      (llm-foundry's MPT-7B at 8k: 37.14% MFU ÷ 49.52% HFU = 0.750, mosaicml/llm-foundry
      @8c8dd48f scripts/train/benchmarking/README.md)
    tokens/s on 8× h100-80gb          = 8 × 989e12 × 0.3825 ÷ 51,471,998,976 = 58,795.85
"""

from __future__ import annotations

import json

import pytest

from proposalkit.catalog import models
from proposalkit.cli import main
from proposalkit.estimate.flops import DEFAULT_MFU, training_flops_per_token

N = 7_504_924_672
MODEL = 6 * N + 12 * 32 * 32 * 128 * 4096          # 51,471,998,976
RECOMPUTE = 2 * N + 4 * 32 * 32 * 128 * 4096       # 17,157,332,992


def plan(tmp_path, capsys, fields: str) -> dict:
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n  - {name: ft, kind: finetune, method: full, model: llama-3.1-8b, tokens: 1B, "
                    f"seq_len: 4096, gpu: h100-80gb, gpus: 8, zero_stage: 3, buffer: 0{fields}}}\n", encoding="utf-8")
    code = main(["plan", str(path), "--format", "json"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, ""), err
    return json.loads(out)["workloads"][0]


def test_the_default_mfu_applies_to_model_flops_when_nothing_is_recomputed(tmp_path, capsys):
    w = plan(tmp_path, capsys, ", activation_checkpointing: false")
    assert DEFAULT_MFU == 0.51
    assert (w["mfu"], w["mfu_without_recompute"]) == (0.51, None)
    assert w["flops_per_token"]["model"] == w["flops_per_token"]["hardware"] == MODEL
    assert w["tokens_per_second"] == pytest.approx(8 * 989e12 * 0.51 / MODEL)


def test_full_checkpointing_charges_one_more_forward_at_the_same_hardware_rate(tmp_path, capsys):
    w = plan(tmp_path, capsys, ", activation_checkpointing: true")
    assert w["flops_per_token"]["recompute"] == RECOMPUTE
    assert w["flops_per_token"]["hardware"] == MODEL + RECOMPUTE
    assert w["mfu_without_recompute"] == 0.51
    assert w["mfu"] == pytest.approx(0.3825)                       # 0.51 × 3/4
    assert w["tokens_per_second"] == pytest.approx(58_795.85, abs=0.01)
    assert w["runtime_hours"] == pytest.approx(1e9 / 58_795.85134 / 3600)
    # The old model charged the recompute at the published MFU: 0.40 on hardware FLOPs.
    assert w["tokens_per_second"] > 8 * 989e12 * 0.40 / (MODEL + RECOMPUTE)


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
    the attention core's forward, 4·L·H·Q·T = 4 × 32 × 32 × 128 × 4,096 = 2,147,483,648."""
    w = plan(tmp_path, capsys, ", activation_checkpointing: selective")
    assert w["flops_per_token"]["recompute"] == 2_147_483_648
    assert w["mfu"] == pytest.approx(0.51 * MODEL / (MODEL + 2_147_483_648))


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
    assert "**MFU:** 0.51 with nothing recomputed (S.2.1) × 51.47 ÷ (51.47 + 17.16) GFLOP = 0.383" in md
    assert "**Throughput:** 8 GPUs × 989 TFLOP/s × MFU 0.383 ÷ 51.47 GFLOP (model FLOPs) = 58,796 tokens/s" in md
    assert "Narayanan et al. 2021" in md and "llm-foundry" in md
