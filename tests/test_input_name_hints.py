"""A framework or GPU spelled as its project writes it gets the catalog's spelling as a hint (exit 2, the
file, line and field on stderr, nothing on stdout)."""

from __future__ import annotations

import pytest

from proposalkit.cli import main


def plan_error(tmp_path, capsys, fields: str) -> str:
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n  - {name: s, kind: inference, model: llama-3.1-8b, context: 4k, batch: 8, "
                    f"hours: 10, {fields}}}\n", encoding="utf-8")
    assert main(["plan", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    return err.replace(str(path), "FILE")


@pytest.mark.parametrize("given, hint", [
    ("TensorRT-LLM", "trt-llm"),      # NVIDIA/TensorRT-LLM
    ("tensorrt_llm", "trt-llm"),      # its Python package
    ("vLLM", "vllm"),
    ("SGLang", "sglang"),
])
def test_an_engine_named_as_its_project_spells_it(tmp_path, capsys, given, hint):
    err = plan_error(tmp_path, capsys, f"framework: {given}")
    assert err.startswith("FILE:2: workloads[0].framework: unknown framework")
    assert f"(got '{given}'," in err and f"did you mean '{hint}'?" in err


@pytest.mark.parametrize("given, hint", [("Megatron-LM", "megatron"), ("LLaMA-Factory", "llama-factory"),
                                         ("trl", "hf-trainer")])
def test_a_training_framework_named_as_its_project_spells_it(tmp_path, capsys, given, hint):
    err = plan_error(tmp_path, capsys, f"framework: {given}")
    assert f"did you mean '{hint}'?" in err


def test_a_gpu_id_in_capitals(tmp_path, capsys):
    err = plan_error(tmp_path, capsys, "gpu: H100-80GB")
    assert "workloads[0].gpu: unknown GPU (got 'H100-80GB'" in err and "did you mean 'h100-80gb'?" in err
