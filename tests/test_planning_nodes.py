"""Whole nodes: on a node-hour resource the GPU search fills the node when that costs less.

Workload: LoRA of llama-3.1-8b, 200M tokens at seq_len 2,048, no pilot, its MFU given (0.51: the FLOPs rule,
so that the rate is the same per GPU at every count), on ALCF Polaris (catalog/resources.yaml: a100-40gb, 4 GPUs
per node, node-hours, whole nodes charged).
By hand (estimate/flops.py training_flops_per_token, flops_throughput):

    N (matmul parameters) = 8,030,261,248 params − 128,256 × 4,096 input embedding = 7,504,924,672
    FLOPs/token (LoRA)    = 4·N + 12·L·H·Q·T = 4 × 7,504,924,672 + 12 × 32 × 32 × 128 × 2,048
                          = 30,019,698,688 + 3,221,225,472 = 33,240,924,160
    tokens/s on g GPUs    = g × 312e12 (A100 dense bf16) × 0.51 (the workload's MFU) ÷ 33,240,924,160
                          = g × 4,786.871
    hours on g GPUs       = 200e6 ÷ (g × 4,786.871) ÷ 3,600 = 11.6058 ÷ g
    node-hours requested  = 1 node × hours × 1.3 (30% buffer):
                            g=1: 15.0876   g=2: 7.5438   g=3: 5.0292   g=4: 3.7719
"""

from __future__ import annotations

import json

import pytest

from proposalkit.cli import main
from conftest import records

LORA = ("  - {{name: tune, kind: finetune, method: lora, model: llama-3.1-8b, tokens: 200M, seq_len: 2048, mfu: 0.51"
        "{extra}}}\n")


def plan_json(tmp_path, capsys, resource, extra=""):
    path = tmp_path / "w.yaml"
    path.write_text(f"proposal: {{resource: {resource}}}\nworkloads:\n" + LORA.format(extra=extra), encoding="utf-8")
    code = main(["plan", str(path), "--format", "json"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    return json.loads(out)["workloads"][0]


def test_a_lora_run_on_polaris_fills_the_node(tmp_path, capsys):
    w = plan_json(tmp_path, capsys, "alcf-polaris")
    assert w["gpu"]["count"] == 4
    # g=4 above: 2.9015 h, carried rounded up to 2.91 h, × 1.3 = 3.783 → 3.79 node-hours (rounded up)
    assert w["resource"]["amount"] == 3.79
    assert w["resource"]["arithmetic"] == ("⌈4 GPUs ÷ 4 per node⌉ = 1 node × 2.91 h × (1 + 30% buffer) per run = "
                                           "3.79 node-hours")
    # Each count that lost to the idle GPUs of a whole node says so, with both amounts.
    assert [(a["count"], a["reason"]) for a in w["alternatives"]] == [
        (1, "fits on 1× a100-40gb but costs 15.10 node-hours vs 3.79: a node is charged whole, "
            "so 3 GPUs would sit idle"),
        (2, "fits on 2× a100-40gb but costs 7.56 node-hours vs 3.79: a node is charged whole, "
            "so 2 GPUs would sit idle"),
        (3, "fits on 3× a100-40gb but costs 5.04 node-hours vs 3.79: a node is charged whole, "
            "so 1 GPU would sit idle"),
    ]
    # 11.6058 → 11.61 h, 5.8029 → 5.81 h, 3.8686 → 3.87 h per run, each × 1.3 on one whole node, rounded up:
    # 15.093 → 15.10, 7.553 → 7.56, 5.031 → 5.04
    assert [a["cost"] for a in w["alternatives"]] == [15.10, 7.56, 5.04]
    # The scaling assumption behind the choice is stated.
    (nodes,) = records(w, "whole-nodes")
    assert {k: nodes["values"][k] for k in ("gpus", "fewer", "resource")} == {"gpus": 4, "fewer": 1,
                                                                            "resource": "alcf-polaris"}


def test_a_gpu_hour_resource_keeps_the_smallest_count(tmp_path, capsys):
    # NCSA Delta gpuA100x4 charges GPU-hours (SUs, factor 1): 1 GPU × 11.61 h (11.6058 rounded up) × 1.3 =
    # 15.093 → 15.10 SUs (rounded up), less than 4 GPUs × 2.91 h × 1.3 = 15.132 → 15.14; the search stops there.
    w = plan_json(tmp_path, capsys, "ncsa-delta-a100")
    assert w["gpu"]["count"] == 1
    assert w["resource"]["amount"] == 15.10
    assert w["alternatives"] == []
    assert not records(w, "whole-nodes")


def test_a_pinned_count_is_kept_and_charged_whole(tmp_path, capsys):
    w = plan_json(tmp_path, capsys, "alcf-polaris", ", gpus: 1")
    assert w["gpu"]["count"] == 1
    assert w["resource"]["arithmetic"] == ("⌈1 GPU ÷ 4 per node⌉ = 1 node × 11.61 h × (1 + 30% buffer) per run = "
                                           "15.10 node-hours")


def test_a_measured_pilot_on_one_gpu_is_kept_and_the_full_node_is_named(tmp_path, capsys):
    # Pilot 4,000 tokens/s on 1× a100-40gb: 200e6 ÷ 4,000 ÷ 3,600 = 13.8889 h, carried 13.89 h, × 1.3 = 18.057
    # → 18.06 node-hours.
    # 4 GPUs extrapolated linearly: 16,000 tokens/s → 3.4722 h × 1.3 = 4.5139 node-hours.
    w = plan_json(tmp_path, capsys, "alcf-polaris", ", throughput: {tokens_per_second: 4000, gpu: a100-40gb, gpus: 1}")
    assert w["gpu"]["count"] == 1
    assert w["resource"]["amount"] == 18.06
    assert [(a["count"], a["reason"]) for a in w["alternatives"]] == [
        (4, "fits on 4× a100-40gb and would cost 75% fewer node-hours, but its "
            "throughput would be extrapolated from the pilot; the measured configuration is preferred (it leaves 3 "
            "GPUs of a node that is charged whole idle; a pilot on 4× a100-40gb would settle it)"),
    ]


def test_a_service_is_not_spread_over_the_node(tmp_path, capsys):
    # A service's cost is its hours: 100 h × 1 node × 1.3 = 130 node-hours on 1 GPU or on 4.
    path = tmp_path / "s.yaml"
    path.write_text("proposal: {resource: alcf-polaris}\nworkloads:\n"
                    "  - {name: serve, kind: inference, model: llama-3.1-8b, context: 4096, hours: 100}\n",
                    encoding="utf-8")
    assert main(["plan", str(path), "--format", "json"]) == 0
    w = json.loads(capsys.readouterr().out)["workloads"][0]
    assert (w["gpu"]["count"], w["resource"]["amount"], w["alternatives"]) == (1, 130.0, [])
