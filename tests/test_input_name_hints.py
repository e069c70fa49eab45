"""A framework or GPU spelled as its project writes it gets the catalog's spelling as a hint (exit 2, the
file, line and field on stderr, nothing on stdout)."""

from __future__ import annotations

import pytest

from proposalkit import catalog
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


# GPU and model ids written as people say them (issue 21, item 5): the catalog ids each could mean, from
# the ids themselves, the rows' names (with and without the vendor) and their Hub ids.
ID_HINTS = {
    "H100": ("gpu", "did you mean 'h100-80gb' or 'h100-96gb-500w' or 'h100-pcie'?"),
    "A100": ("gpu", "did you mean 'a100-40gb' or 'a100-40gb-pcie' or 'a100-80gb'?"),
    "a100": ("gpu", "did you mean 'a100-40gb' or 'a100-40gb-pcie' or 'a100-80gb'?"),
    "H200": ("gpu", "did you mean 'h200'?"),
    "'A100 80GB'": ("gpu", "did you mean 'a100-80gb'?"),
    "A100_80GB": ("gpu", "did you mean 'a100-80gb'?"),
    "'NVIDIA H100 80GB SXM5'": ("gpu", "did you mean 'h100-80gb'?"),       # the row's name
    "'H100 PCIe 80GB'": ("gpu", "did you mean 'h100-pcie'?"),              # its name without the vendor
    "'H100 SXM'": ("gpu", "did you mean 'h100-80gb'?"),
    "MI300": ("gpu", "did you mean 'mi300x'?"),
    "Llama-3.1-8B": ("model", "did you mean 'llama-3.1-8b'?"),
    "'Llama 3.1 8B'": ("model", "did you mean 'llama-3.1-8b'?"),
    "llama3.1-8b": ("model", "did you mean 'llama-3.1-8b'?"),
    "Llama-3.1-8B-Instruct": ("model", "did you mean 'llama-3.1-8b' (the same shape)?"),
    "gemma-3-1b-it": ("model", "did you mean 'gemma-3-1b'?"),              # its Hub id's name
    "Phi-3.5-mini-instruct": ("model", "did you mean 'phi-3.5-mini'?"),
    "OLMo-2-1124-7B": ("model", "did you mean 'olmo-2-7b'?"),
    "qwen2.5": ("model", "did you mean 'qwen2.5-0.5b' or 'qwen2.5-72b' or 'qwen2.5-7b'?"),
    "llama": ("model", "did you mean one of the {n} ids that start with 'llama' ('llama-2-13b', 'llama-2-70b', "
                       "'llama-2-7b', ...)?"),
}


@pytest.mark.parametrize("given, field_hint", ID_HINTS.items(), ids=ID_HINTS.keys())
def test_a_gpu_or_model_as_people_name_it(tmp_path, capsys, given, field_hint):
    field, hint = field_hint
    hint = hint.format(n=sum(m.startswith("llama-") for m in catalog.models()))   # as many as the catalog has
    path = tmp_path / "w.yaml"
    model = given if field == "model" else "llama-3.1-8b"
    gpu = f", gpu: {given}" if field == "gpu" else ""
    path.write_text("workloads:\n  - {name: s, kind: inference, model: " + model + ", context: 4k, batch: 8, "
                    f"hours: 10{gpu}}}\n", encoding="utf-8")
    assert main(["plan", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    what = "GPU" if field == "gpu" else "model"
    assert err.startswith(f"{path}:2: workloads[0].{field}: unknown {what} (got ")
    assert f"expected a catalog id; {hint} — see 'proposalkit catalog " in err
    assert err.count("\n") == 1
