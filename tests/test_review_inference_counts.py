"""Review: an inference replica's GPU count is its tensor-parallel size, so the planner tries only
counts that divide the model's attention heads (vLLM's ModelConfig.verify_with_parallel_config
refuses others). TACC Lonestar6's A100 nodes have 3 GPUs, where 3 and 6 were tried and chosen.
"""

from __future__ import annotations

import json

import pytest

from proposalkit.cli import main

# Attention heads from the published config.json files: meta-llama/Llama-3.1-8B
# num_attention_heads 32; meta-llama/Llama-2-13b-hf num_attention_heads 40.
CASES = [("llama-3.1-8b", "context: 128k, batch: 8", 32), ("llama-2-13b", "context: 4k, batch: 16", 40)]


@pytest.mark.parametrize("model, load, heads", CASES)
def test_an_inference_replica_divides_the_heads(tmp_path, capsys, model, load, heads):
    path = tmp_path / "w.yaml"
    path.write_text("proposal: {title: t, pi: p, institution: i, resource: tacc-lonestar6-a100}\n"
                    f"workloads:\n  - {{name: a, kind: inference, model: {model}, {load}, hours: 10}}\n")
    assert main(["plan", str(path), "--format", "json"]) == 0
    count = json.loads(capsys.readouterr().out)["workloads"][0]["gpu"]["count"]
    assert heads % count == 0, count
