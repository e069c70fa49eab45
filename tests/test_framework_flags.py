"""Frameworks reach the estimates as behaviour flags, never as names.

input/frameworks.py resolves a workload's `framework` once, when the file is loaded, into the
knobs only a preset sets (proposalkit/knobs.py flags); catalog/engines.py describes each inference
engine by what it does. The estimate layer, and the planner above it, read those and hold no
framework or engine id: a string literal equal to one in proposalkit/estimate/ or
proposalkit/planning/ fails here, with the file and line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from proposalkit.input.frameworks import FLAGS, FRAMEWORKS, PRESETS, Behaviour, behaviour, kernels
from proposalkit.input.schema import Workload
from proposalkit.knobs import KNOBS, flags

ESTIMATE = Path(__file__).resolve().parent.parent / "proposalkit" / "estimate"


def framework_literals(folder: Path, names=FRAMEWORKS) -> list[str]:
    """file:line: 'id' for every string constant in the folder's modules that is a framework or engine id."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
                found.append(f"{path.name}:{node.lineno}: {node.value!r}")
    return found


def test_the_estimate_layer_names_no_framework():
    assert framework_literals(ESTIMATE) == []


def test_nor_does_the_planner():
    # planning/ reads the same flags (Settings) and engine rows: the framework is named only in input/.
    assert framework_literals(ESTIMATE.parent / "planning") == []


def test_the_check_finds_a_framework_name(tmp_path):
    (tmp_path / "phases.py").write_text('PERSISTENT = {"deepspeed": "keeps its buffers"}\n'
                                        'def f(setup):\n    return setup.engine == "vllm"\n')
    assert framework_literals(tmp_path) == ["phases.py:1: 'deepspeed'", "phases.py:3: 'vllm'"]


def test_every_flag_a_framework_sets_is_a_knob_only_presets_set():
    names = {k.name for k in flags()}
    for framework, rows in FLAGS.items():
        assert framework in FRAMEWORKS
        for row in rows:
            assert row.field in names, (framework, row.field)
            assert row.value != KNOBS[row.field].default, (framework, row.field)   # a flag that changes nothing
            assert row.source
    for framework, rows in PRESETS.items():
        assert all(row.field in Workload.model_fields for row in rows), framework


def _workload(**fields) -> Workload:
    return Workload(name="w", kind="finetune", method="full", model="llama-3.1-8b", **fields)


def test_behaviour_is_resolved_from_the_workload_alone():
    plain = behaviour(_workload())              # no framework: the planner's defaults, and the compile note
    assert (plain.flags, plain.sources) == ((), ())
    assert plain.notes == (kernels(_workload())[1],)
    assert (plain.notes[0].kind, plain.notes[0]["compile"]) == ("compile-default", False)
    titan = behaviour(_workload(framework="torchtitan"))
    assert dict(titan.flags) == {"optimizer_step_temporary": "foreach", "data_parallel_impl": "fsdp2",
                                 "fsdp_fp32_params": True}
    assert "torchtitan" in dict(titan.sources)["optimizer_step_temporary"]
    megatron = dict(behaviour(_workload(framework="megatron", precision="bf16")).flags)
    assert megatron == {"optimizer_impl": "fp32-main-gradients", "kernels": "fused",
                        "frees_gradients_between_steps": False}
    assert behaviour(Workload(name="w", kind="inference", model="llama-3.1-8b", framework="vllm", context=8,
                              hours=1)) == Behaviour()


@pytest.mark.parametrize("framework", sorted(FLAGS))
def test_a_flag_reaches_the_estimate_with_its_source(framework, tmp_path):
    from proposalkit.input.loading import load_files
    from proposalkit.planning.planner import plan_files

    path = tmp_path / "w.yaml"
    path.write_text(f"workloads:\n- {{name: w, kind: finetune, method: full, model: llama-3.2-1b, tokens: 1M, "
                    f"framework: {framework}, gpu: h100-80gb, gpus: 1}}\n")
    s = plan_files(load_files([str(path)])).workloads[0].settings
    for row in FLAGS[framework]:
        assert getattr(s, row.field) == row.value
        assert dict(s.flag_sources)[row.field] == row.source
