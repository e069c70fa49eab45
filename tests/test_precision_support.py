"""Precision support: a precision is planned only on a GPU whose tensor cores run it (issue 21, part 3).

The GPU catalog says which formats each row's datasheet lists (gpus.yaml: bf16, peak_fp8_flops,
peak_fp4_flops); the automatic choice never places a precision on a GPU without it, and a pinned GPU
without it is an input error (exit 2) naming the precision it does run, never a plan at another peak.
Everything below goes through the command line, as a user's workload file does.
"""

from __future__ import annotations

import pytest

from proposalkit.catalog import gpus
from proposalkit.cli import main

# The generations whose datasheets list each format (NVIDIA V100, A100, H100/H200/GH200, L40S,
# RTX 6000 Ada, HGX B200; AMD MI250X, MI300X; Intel Max 1550: gpus.yaml cites each).
FP8_GENERATIONS = {"Hopper", "Ada Lovelace", "Blackwell", "CDNA3"}
FP4_GENERATIONS = {"Blackwell"}


def test_bf16_is_every_row_but_volta():
    assert {i for i, g in gpus().items() if not g.supports("bf16")} == \
        {i for i, g in gpus().items() if g.architecture == "Volta"} == {"v100-32gb"}


def test_fp8_is_hopper_ada_blackwell_and_cdna3_only():
    have = {i for i, g in gpus().items() if g.supports("fp8")}
    assert have == {i for i, g in gpus().items() if g.architecture in FP8_GENERATIONS}
    assert {"h100-80gb", "h100-96gb-500w", "h100-pcie", "h200", "gh200", "l40s", "rtx-6000-ada", "b200",
            "mi300x"} == have


def test_native_fp4_is_blackwell_only():
    assert {i for i, g in gpus().items() if g.supports("fp4")} == \
        {i for i, g in gpus().items() if g.architecture in FP4_GENERATIONS} == {"b200"}


def test_published_b200_fp4_peak():
    # HGX B200: FP4 Tensor Core 144 PFLOPS per 8 GPUs, with sparsity: 144 / 8 / 2 = 9 PFLOP/s dense per GPU,
    # twice the FP8 figure (72 / 8 / 2 = 4.5), as FP8 is twice BF16.
    assert gpus()["b200"].peak_fp4_flops == 9.0e15 == 2 * gpus()["b200"].peak_fp8_flops


@pytest.mark.parametrize("precision", ["fp32", "fp16", "int8", "int4"])
def test_other_precisions_run_everywhere(precision):
    assert all(g.supports(precision) for g in gpus().values())


def test_every_row_names_its_generation():
    assert all(g.architecture for g in gpus().values())


# ------------------------------------------------------------------ through the command line

SERVE = "workloads:\n  - {name: s, kind: inference, model: llama-3.1-8b, context: 4k, hours: 10%s}\n"
LORA = "workloads:\n  - {name: l, kind: finetune, method: lora, model: llama-3.1-8b, tokens: 10M%s}\n"


def test_unpinned_bf16_service_is_not_placed_on_a_v100(plan_workloads):
    # A service by hours costs its hours on any one GPU, and ties go to the smaller GPU: the V100's 31.75 GiB
    # won before; it has no bf16, so the next smallest that holds it, a100-40gb (39.39 GiB), is chosen.
    w = plan_workloads(SERVE % "")["s"]
    assert w["gpu"]["type"] == "a100-40gb"
    assert all(a["gpu"] != "v100-32gb" for a in w["alternatives"])


def test_unpinned_fp16_service_may_use_a_v100(plan_workloads):
    w = plan_workloads(SERVE % ", precision: fp16")["s"]
    assert w["gpu"]["type"] == "v100-32gb"


def test_unpinned_fp8_goes_to_a_gpu_with_fp8(plan_workloads):
    w = plan_workloads(SERVE % ", precision: fp8")["s"]
    assert gpus()[w["gpu"]["type"]].supports("fp8")
    assert all(gpus()[a["gpu"]].supports("fp8") for a in w["alternatives"])


def test_pinned_bf16_lora_on_a_v100_is_refused_with_fp16(plan_error):
    err = plan_error(LORA % ", gpu: v100-32gb")
    assert err == ("FILE:2: workloads[0].gpu: v100-32gb (Volta) has no bfloat16 tensor cores (got precision bf16, "
                   "the default; expected precision: fp16 on v100-32gb, or a GPU with bf16 such as a100-40gb)\n")


def test_pinned_fp16_lora_on_a_v100_is_planned_at_the_fp16_peak(plan_workloads):
    w = plan_workloads(LORA % ", gpu: v100-32gb, precision: fp16")["l"]
    assert w["gpu"]["type"] == "v100-32gb"
    # V100 SXM2 datasheet: 125 TFLOPS tensor (fp16), the figure the step's matrix multiplies run at a share of: Bekman's
    # MAMF table measures no V100, so NVIDIA's lowest efficiency in it, GB200's 1822.0 / 2500 = 72.9%, × 125 = 91.1
    # TFLOP/s, and 0.76 of that = 69.2 TFLOP/s = 0.55 of the peak.
    assert (" at 0.55 × 125 TFLOP/s: 0.76 of the maximum achievable matmul rate, 91.1 TFLOP/s (not measured: the "
            "table's lowest NVIDIA efficiency, 72.9%, taken; Bekman's MAMF table)") in w["derivation"]["throughput"]


def test_pinned_fp8_on_an_a100_is_refused_with_int8(plan_error):
    err = plan_error(SERVE % ", precision: fp8, gpu: a100-40gb")
    assert err == ("FILE:2: workloads[0].gpu: a100-40gb (Ampere) has no FP8 tensor cores (got precision fp8; "
                   "expected precision: int8 on a100-40gb, or a GPU with fp8 such as h100-80gb)\n")


def test_a_resource_with_only_v100s_refuses_bf16(plan_error):
    err = plan_error("proposal: {resource: sdsc-expanse}\n" + LORA % "")
    assert err == ("FILE:3: workloads[0].precision: no GPU of sdsc-expanse runs bf16: v100-32gb (Volta) has no "
                   "bfloat16 tensor cores (got precision bf16, the default; expected precision: fp16, or another "
                   "resource)\n")


def test_a_resource_with_only_v100s_plans_fp16(plan_workloads):
    w = plan_workloads("proposal: {resource: psc-bridges2}\n" + LORA % ", precision: fp16")["l"]
    assert w["gpu"]["type"] in ("v100-32gb", "h100-80gb")
    w = plan_workloads("proposal: {resource: psc-bridges2}\n" + LORA % "")["l"]
    assert w["gpu"]["type"] == "h100-80gb"      # Bridges-2's H100 nodes run bf16; its V100s are not tried


def test_a_pilot_on_a_v100_needs_fp16(plan_error):
    err = plan_error(LORA % ", throughput: {tokens_per_second: 1000, gpu: v100-32gb, gpus: 1}")
    assert err == ("FILE:2: workloads[0].precision: the pilot ran on v100-32gb (Volta), which has no bfloat16 "
                   "tensor cores (got precision bf16, the default; expected precision: fp16, as the pilot did, or "
                   "pin a GPU with bf16 such as a100-40gb)\n")
