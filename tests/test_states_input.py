"""The model-state fields' input checks: exit 2, one line per problem, nothing planned."""

from __future__ import annotations

import pytest

from proposalkit.cli import main

BASE = """workloads:
  - name: w
    kind: finetune
    method: full
    model: llama-3.1-8b
    tokens: 10M
"""


@pytest.mark.parametrize("extra, message", [
    ("    offload: {params: cpu}\n    zero_stage: 2\n",
     "workloads[0].offload.params: parameters are offloaded only under full sharding (got zero_stage 2, "
     "expected zero_stage 3 or nothing)"),
    ("    offload: {optimizer: cpu}\n    optimizer: paged-adamw\n",
     "workloads[0].offload.optimizer: a paged optimizer (paged-adamw) already pages its states to host memory "
     "(expected offload.optimizer or a paged optimizer, not both)"),
    ("    precision: fp32\n    mixed_precision: false\n",
     "workloads[0].mixed_precision: fp32 training has no 16-bit compute to mix (got precision fp32, expected "
     "mixed_precision with bf16 or fp16, or leave it out)"),
    ("    offload: {optimizer: nvme}\n",
     "workloads[0].offload.optimizer: unknown optimizer (got 'nvme', expected cpu)"),
    ("    mixed_precision: maybe\n",
     "workloads[0].mixed_precision: not a boolean (got 'maybe', expected true or false)"),
])
def test_model_state_fields_refused_with_one_line(tmp_path, capsys, extra, message):
    path = tmp_path / "w.yaml"
    path.write_text(BASE + extra, encoding="utf-8")
    assert main(["plan", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith(message), lines


def test_inference_refuses_training_state_fields(tmp_path, capsys):
    path = tmp_path / "w.yaml"
    path.write_text("""workloads:
  - name: serve
    kind: inference
    model: llama-3.1-8b
    context: 4k
    hours: 10
    mixed_precision: false
    optimizer_in_backward: true
    offload: {optimizer: cpu}
""", encoding="utf-8")
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    for name in ("mixed_precision", "optimizer_in_backward", "offload"):
        assert f"workloads[0].{name}: not used by inference (got {name}, expected it only on finetune or pretrain)" in err
