"""Mixture of experts through the CLI: total and active parameters in the plan JSON and the
report, expert_parallel planned and refused where it cannot apply (exit 2, file:line: field)."""

from __future__ import annotations

import json
import textwrap

from proposalkit.cli import main
from conftest import records

# mistralai/Mixtral-8x7B-v0.1: 46,702,792,704 parameters (HF safetensors total, PUBLISHED.md);
# active per token, worked out by hand from its config.json: the total minus 32 layers × 6
# unvisited experts × 3·4096·14336 = 12,879,925,248 (Mistral AI: "12.9B active parameters").
MIXTRAL_TOTAL = 46_702_792_704
MIXTRAL_ACTIVE = MIXTRAL_TOTAL - 32 * 6 * 3 * 4096 * 14336


def _write(tmp_path, text: str):
    path = tmp_path / "w.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_plan_json_gives_total_and_active_and_expert_parallel_splits_the_experts(tmp_path, capsys):
    path = _write(tmp_path, """\
        workloads:
          - name: moe-pretrain
            kind: pretrain
            model: mixtral-8x7b
            tokens: 1B
            gpu: h100-80gb
            expert_parallel: 8
            zero_stage: 1
        """)
    assert main(["plan", str(path), "--format", "json"]) == 0
    w = json.loads(capsys.readouterr().out)["workloads"][0]
    assert w["model"] == {"id": "mixtral-8x7b", "params": MIXTRAL_TOTAL, "active_params": MIXTRAL_ACTIVE}
    assert MIXTRAL_ACTIVE == 12_879_925_248
    assert w["gpu"]["count"] % 8 == 0
    [split] = records(w, "expert-parallel-states")
    assert (split["values"]["expert_parallel"], split["values"]["expert_params"], split["values"]["params"]) == (
        8, 45_097_156_608, 46_702_792_704)
    # 6·N with N the active parameters less the input embedding lookup (32000·4096)
    assert w["flops_per_token"]["model"] == 6 * (MIXTRAL_ACTIVE - 32000 * 4096) + 12 * 32 * 32 * 128 * 4096


def test_report_shows_total_and_active(tmp_path, capsys):
    path = _write(tmp_path, """\
        workloads:
          - name: moe-lora
            kind: finetune
            method: lora
            model: mixtral-8x7b
            tokens: 100M
            gpu: h100-80gb
        """)
    assert main(["report", str(path), "--format", "md", "-o", str(tmp_path / "out")]) == 0
    report = (tmp_path / "out" / "supplement.md").read_text(encoding="utf-8")
    assert ("46,702,792,704 total, 12,879,925,248 active per token (mixture of experts: 2 of 8 routed experts; "
            "weights use the total, FLOPs the active)") in report


def _errors(tmp_path, capsys, body: str) -> tuple[int, str]:
    path = _write(tmp_path, "workloads:\n" + textwrap.indent(textwrap.dedent(body), "  "))
    code = main(["plan", str(path)])
    return code, capsys.readouterr().err.replace(str(path), "FILE")


def test_expert_parallel_on_a_dense_model_is_refused(tmp_path, capsys):
    code, err = _errors(tmp_path, capsys, """\
        - name: dense
          kind: pretrain
          model: llama-3.1-8b
          tokens: 1B
          expert_parallel: 4
        """)
    assert code == 2
    assert err == ("FILE:6: workloads[0].expert_parallel: the model has no routed experts (got 4; expert "
                   "parallelism splits a mixture of experts, expected 1 or nothing for a dense model)\n")


def test_expert_parallel_must_divide_the_experts_and_the_gpus(tmp_path, capsys):
    code, err = _errors(tmp_path, capsys, """\
        - name: moe
          kind: pretrain
          model: mixtral-8x7b
          tokens: 1B
          expert_parallel: 3
          gpus: 4
        """)
    assert code == 2
    assert err == (
        "FILE:6: workloads[0].expert_parallel: does not divide the 8 routed experts (got 3; each rank holds "
        "the same number of experts)\n"
        "FILE:7: workloads[0].gpus: not a whole number of model copies (got 4; expert_parallel 3 puts one copy on "
        "3 GPUs, expected a multiple of 3, e.g. 3 or 6)\n")


def test_expert_parallel_on_inference_is_refused(tmp_path, capsys):
    code, err = _errors(tmp_path, capsys, """\
        - name: serve
          kind: inference
          model: mixtral-8x7b
          context: 4k
          hours: 10
          expert_parallel: 2
        """)
    assert code == 2
    assert err == ("FILE:7: workloads[0].expert_parallel: not used by inference (got expert_parallel; an inference "
                   "replica already splits every weight, the experts included, over its GPUs; expected it only on "
                   "finetune or pretrain)\n")
