"""Training's runtime is FLOPs at an MFU (estimate/flops.py), which prices no communication, so tensor
parallelism beyond one node is warned of (planning/planner.py _tensor_parallel_nodes): the node is the charged
partition's gpus_per_node (NCSA Delta gpuA100x4: 4, gpuA100x8: 8; catalog/resources.yaml), 8 where no
resource is pinned. Megatron-LM's rule: "tensor model parallelism should generally be used up to degree g
when using g-GPU servers" (Narayanan et al. 2021 §3.2, Takeaway #1)."""

from __future__ import annotations

import json
import textwrap

from proposalkit.cli import main


def warnings_of(tmp_path, capsys, resource: str, tp: int) -> list[str]:
    path = tmp_path / "w.yaml"
    pin = f", resource: {resource}" if resource else ""
    path.write_text("proposal: {title: t, pi: p, institution: i}\nworkloads:\n" + textwrap.dedent(f"""\
        - {{name: ft, kind: finetune, method: full, model: llama-3.1-8b, tokens: 100M, seq_len: 4096,
           gpu: a100-40gb, gpus: 16, tensor_parallel: {tp}{pin}}}
        """))
    assert main(["plan", "--format", "json", str(path)]) == 0
    return [x for x in json.loads(capsys.readouterr().out)["warnings"] if "tensor_parallel" in x]


def test_tp8_on_4_gpu_nodes_is_warned_of(tmp_path, capsys):
    assert warnings_of(tmp_path, capsys, "ncsa-delta-a100", 8) == [
        "ft: tensor_parallel 8 exceeds the 4 GPUs per node of ncsa-delta-a100: its all-reduces cross the network, "
        "which the runtime (FLOPs at an MFU) does not price; keep tensor parallelism within a node and pipeline "
        "parallelism across nodes (Narayanan et al. 2021 §3.2, Takeaway #1)"]
    assert warnings_of(tmp_path, capsys, "ncsa-delta-a100x8", 8) == []
    assert warnings_of(tmp_path, capsys, "ncsa-delta-a100", 4) == []


def test_without_a_resource_a_node_is_8(tmp_path, capsys):
    assert warnings_of(tmp_path, capsys, "", 8) == []
    (text,) = warnings_of(tmp_path, capsys, "", 16)
    assert text.startswith("ft: tensor_parallel 16 exceeds a node of 8 GPUs (no resource pinned)")
