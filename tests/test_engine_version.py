"""engine_version (issue 22, item 5): vLLM before 0.8.0 runs its V0 engine, whose CPU work between decode steps
is not overlapped with the GPU, so each decode step costs catalog/engines.VLLM_V0_DECODE_STEP_SECONDS more (fitted
on vLLM's CI latency of Llama 3.1 8B at batch 8); the V1 engine (0.8.0 on, and any plan naming no version) is
planned at the calibrated fractions alone. Set in the workload file, refused with file, line and field."""

from __future__ import annotations

import json
import textwrap

import pytest

from proposalkit.catalog import engines
from proposalkit.cli import main

# Llama 3.1 8B in bf16 on one H200 at batch 8, 32 + 128 tokens: 16.06 GB of weights per step at 4.8 TB/s × 0.72.
JOB = """\
    - {{name: b, kind: inference, model: llama-3.1-8b, framework: {framework}, precision: bf16, gpu: h200, gpus: 1,
       requests: 8, batch: 8, input_tokens: 32, output_tokens: 128{extra}}}
    """


def write(tmp_path, framework: str = "vllm", extra: str = "") -> str:
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n" + textwrap.dedent(JOB.format(framework=framework, extra=extra)))
    return str(path)


def plan(path: str, capsys) -> dict:
    assert main(["plan", "--format", "json", path]) == 0
    return json.loads(capsys.readouterr().out)["workloads"][0]


@pytest.mark.parametrize("version", ["v0", "0.5.3", "0.6.0", "'0.7.3'"])
def test_vllm_before_0_8_pays_the_v0_step_cost(tmp_path, capsys, version):
    now = plan(write(tmp_path), capsys)["inference"]
    v0 = plan(write(tmp_path, extra=f", engine_version: {version}"), capsys)["inference"]
    assert v0["tpot_ms"] == pytest.approx(now["tpot_ms"] + engines.VLLM_V0_DECODE_STEP_SECONDS * 1e3, abs=2e-3)
    step = next(d["text"] for d in v0["derivation"] if d["label"] == "Decode step")
    assert f"+ {engines.VLLM_V0_DECODE_STEP_SECONDS * 1e3:.3g} ms the engine's own per step" in step


@pytest.mark.parametrize("version", ["v1", "'0.8.0'", "'0.10.1'"])
def test_vllm_from_0_8_plans_as_today(tmp_path, capsys, version):
    now = plan(write(tmp_path), capsys)
    v1 = plan(write(tmp_path, extra=f", engine_version: {version}"), capsys)
    assert v1["inference"]["tpot_ms"] == now["inference"]["tpot_ms"]
    assert v1["gpu_hours"] == now["gpu_hours"]


def test_another_engines_release_is_stated_and_changes_nothing(tmp_path, capsys):
    now = plan(write(tmp_path, framework="sglang"), capsys)
    named = plan(write(tmp_path, framework="sglang", extra=", engine_version: '0.4.1'"), capsys)
    assert named["inference"]["tpot_ms"] == now["inference"]["tpot_ms"]
    assert "no measured difference between SGLang's releases" in json.dumps(named)


@pytest.mark.parametrize("extra, message", [
    (", engine_version: 0.10", "engine_version: a number, not a release (YAML reads 0.10 as 0.1) (got 0.1, "),
    (", engine_version: latest", "engine_version: not a release (got 'latest', expected a release such as"),
])
def test_a_version_that_is_no_release_is_refused_with_file_line_field(tmp_path, capsys, extra, message):
    path = write(tmp_path, extra=extra)
    assert main(["plan", path]) == 2
    err = capsys.readouterr().err
    assert f"{path}:3: workloads[0]." in err and message in err and "Traceback" not in err


def test_vllm_generations_on_another_engine_are_refused(tmp_path, capsys):
    path = write(tmp_path, framework="trt-llm", extra=", engine_version: v0")
    assert main(["plan", path]) == 2
    err = capsys.readouterr().err
    assert "workloads[0].engine_version: the engine generations v0 and v1 are vLLM's (got v0 with framework " \
           "trt-llm" in err


def test_engine_version_is_an_inference_setting(plan_error):
    err = plan_error("workloads:\n  - {name: t, kind: finetune, method: lora, model: llama-3.1-8b, tokens: 10M, "
                     "gpu: h100-80gb, engine_version: '0.6.3'}\n")
    assert "workloads[0].engine_version: only for inference" in err


# TensorRT-LLM v0.5 builds fp8 models with fp8 GEMMs but its attention plugin, the context FMHA, in fp16
# (catalog/engines.TRT_FP16_CONTEXT_FMHA_THROUGH). Llama-2 7B, one 2,048-token prompt on an H100: the attention is
# 4 × 32 layers × 2048²/2 pairs × 4,096 (32 heads × 128) = 1.0995 TFLOP; at 0.70 × 989 TFLOP/s (16-bit) instead of
# 0.65 × 1,979 (fp8) it takes 1.0995e12 × (1/6.923e14 − 1/1.28635e15) = 0.733 ms more; the GEMMs are unchanged.
PROMPT = """\
    - {{name: p, kind: inference, model: llama-2-7b, framework: trt-llm, precision: {precision}, gpu: h100-80gb,
       gpus: 1, requests: 1, batch: 1, input_tokens: 2048, output_tokens: 1{extra}}}
    """


def prompt(tmp_path, capsys, precision: str = "fp8", extra: str = "") -> dict:
    path = tmp_path / "p.yaml"
    path.write_text("workloads:\n" + textwrap.dedent(PROMPT.format(precision=precision, extra=extra)))
    return plan(str(path), capsys)["inference"]


@pytest.mark.parametrize("version", ["'0.5'", "'0.5.0'"])
def test_trt_llm_0_5_runs_a_prefills_attention_in_16_bits(tmp_path, capsys, version):
    now = prompt(tmp_path, capsys)
    v05 = prompt(tmp_path, capsys, extra=f", engine_version: {version}")
    assert v05["ttft_ms"] - now["ttft_ms"] == pytest.approx(0.733, abs=2e-3)
    line = next(d["text"] for d in v05["derivation"] if d["label"] == "Prefill")
    assert "27.06 TFLOP of GEMMs" in line and "1.10 TFLOP of attention" in line and "context FMHA runs in fp16" in line


def test_trt_llm_after_0_5_and_16_bit_weights_plan_as_today(tmp_path, capsys):
    now = prompt(tmp_path, capsys)
    assert prompt(tmp_path, capsys, extra=", engine_version: '0.6.1'")["ttft_ms"] == now["ttft_ms"]
    bf16 = prompt(tmp_path, capsys, precision="bf16")
    assert prompt(tmp_path, capsys, precision="bf16", extra=", engine_version: '0.5'")["ttft_ms"] == bf16["ttft_ms"]
