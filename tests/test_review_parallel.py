"""Review: a tensor-parallel degree the engines refuse is an input error (exit 2), for training and inference.

Llama 3.1 8B (meta-llama/Llama-3.1-8B config.json: num_attention_heads 32) splits its heads
evenly over the tensor-parallel ranks: vLLM (ModelConfig.verify_with_parallel_config) and
Megatron-LM (arguments.py) refuse a size that does not divide the attention heads.
"""

from __future__ import annotations

import textwrap

import pytest

from proposalkit.cli import main

FILES = {
    "finetune": "kind: finetune\n    method: full\n    tokens: 200M",
    "inference": "kind: inference\n    context: 8k\n    hours: 10",
}


def _run(tmp_path, capsys, kind: str, extra: str):
    path = tmp_path / "w.yaml"
    path.write_text(f"workloads:\n  - name: a\n    {FILES[kind]}\n    model: llama-3.1-8b\n{extra}")
    code = main(["plan", str(path)])
    out, err = capsys.readouterr()
    return code, out, err.replace(str(path), "FILE")


@pytest.mark.parametrize("kind", ["finetune", "inference"])
def test_tensor_parallel_must_divide_the_heads(tmp_path, capsys, kind):
    code, out, err = _run(tmp_path, capsys, kind, "    tensor_parallel: 3\n    gpus: 3\n")
    assert (code, out) == (2, "")
    assert err == textwrap.dedent(f"""\
        FILE:7: workloads[0].tensor_parallel: does not divide the model's 32 attention heads (got 3, expected a \
divisor of 32: each tensor-parallel rank holds the same number of heads)
        """)



def test_an_inference_replica_pinned_on_gpus_must_divide_the_heads(tmp_path, capsys):
    # gpus on an inference workload is the replica's tensor-parallel size (planning/search.py).
    code, out, err = _run(tmp_path, capsys, "inference", "    gpus: 3\n")
    assert (code, out) == (2, "")
    assert err == ("FILE:7: workloads[0].gpus: an inference replica on 3 GPUs is 3-way tensor parallel, which does "
                   "not divide the model's 32 attention heads (expected a divisor of 32: each tensor-parallel rank "
                   "holds the same number of heads)\n")
