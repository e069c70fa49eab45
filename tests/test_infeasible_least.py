"""The infeasible-plan message names the fewest GPUs that hold the workload (planning/planner.py
_least_fit), not the cheapest plan's count: before, a 70B batch job pinned to 2 × A100-40GB was told
"it would fit on 8× a100-40gb", where 4 hold it (8 were suggested because 8 run it cheapest)."""

from __future__ import annotations

import textwrap

from proposalkit.cli import main

# Llama 3.1 70B: 70,553,706,496 parameters (catalog/models.yaml, HF safetensors total) × 2 B in bf16
# = 141.1 GB of weights: 70.55 GB per GPU on 2 A100-40GB (39.5 GiB = 42.4 GB usable: no fit), 35.3 GB
# on 4, under vLLM's gpu_memory_utilization 0.9 × 42.3 = 38.1 GB (catalog/engines.py), leaving room for
# the workspace and a KV cache of 80 layers × 2 × 2 kv heads × 128 × 2 B = 81,920 B per token per GPU.
WEIGHTS = 70_553_706_496 * 2


def run(tmp_path, capsys, body: str) -> list[str]:
    path = tmp_path / "w.yaml"
    path.write_text("proposal: {title: t, pi: p, institution: i}\nworkloads:\n" + textwrap.dedent(body))
    # CONTRACT.md: exit 1 when a pinned GPU/count cannot hold a workload; the message on stderr, nothing out.
    assert main(["plan", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert all(x.startswith(f"{path}:") for x in lines)
    return lines


def test_a_70b_batch_job_pinned_to_2_a100s_is_told_4_fit(tmp_path, capsys):
    assert WEIGHTS / 2 > 39.5 * 2**30 and WEIGHTS / 4 < 0.9 * 39.5 * 2**30
    (err,) = run(tmp_path, capsys, """\
        - {name: b, kind: inference, model: llama-3.1-70b, gpu: a100-40gb, tensor_parallel: 2,
           requests: 10k, input_tokens: 2k, output_tokens: 256}
        """)
    assert "b does not fit: it needs 73.96 GiB per GPU on 2× a100-40gb, which has 39.50 GiB usable" in err
    assert err.endswith("it would fit on 4× a100-40gb (remove the gpu/gpus/tensor_parallel pin, or pin that)")


def test_a_service_is_told_the_replica_size_and_the_replicas(tmp_path, capsys):
    (err,) = run(tmp_path, capsys, """\
        - {name: s, kind: inference, model: llama-3.1-70b, gpu: a100-40gb, gpus: 2, request_rate: 1,
           input_tokens: 2k, output_tokens: 256, hours: 100}
        """)
    assert err.endswith("it would fit on 4× a100-40gb per replica (2 replicas) (remove the gpu/gpus pin, or pin that)")


def test_where_4_do_not_hold_it_8_are_named(tmp_path, capsys):
    # A service of batch 8 at 4,096 tokens: 8 × 4,096 × 81,920 B = 2.68 GB of KV cache per GPU beside
    # 35.3 GB of weights does not fit 4 × A100-40GB (40.49 GiB needed); 8 hold it.
    (err,) = run(tmp_path, capsys, """\
        - {name: h, kind: inference, model: llama-3.1-70b, gpu: a100-40gb, tensor_parallel: 4, hours: 100,
           batch: 8, context: 4k}
        """)
    assert "it needs 40.49 GiB per GPU on 4× a100-40gb" in err
    assert err.endswith("it would fit on 8× a100-40gb (remove the gpu/gpus/tensor_parallel pin, or pin that)")


def test_the_fewest_that_fit_is_itself_a_plan(tmp_path, capsys):
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n  - {name: b, kind: inference, model: llama-3.1-70b, gpu: a100-40gb, "
                    "tensor_parallel: 4, requests: 10k, input_tokens: 2k, output_tokens: 256}\n")
    assert main(["plan", str(path)]) == 0


def test_a_replica_with_no_room_for_a_kv_cache_is_told_a_degree_that_divides_the_heads(tmp_path, capsys):
    # SGLang on 4 × A100-40GB takes 0.708 of the memory (catalog/engines.py, its reserve rule at TP 4):
    # 35.28 GB of weights + 1.70 GB of workspace per GPU leave no pool. 4 × 36.98 GB ÷ (0.708 × 42.29 GB)
    # = 4.94, so at least 5 GPUs' worth; tensor parallelism must divide the 64 heads, so 8. Before: "(at
    # least 5)", a degree no engine runs, and no count that would fit.
    assert 4 * (35.28 + 1.70) / (0.708 * 42.29) > 4 and 64 % 5 and 64 % 6 and 64 % 7
    (err,) = run(tmp_path, capsys, """\
        - {name: c, kind: inference, model: llama-3.1-70b, gpu: a100-40gb, gpus: 4, framework: sglang,
           requests: 10k, input_tokens: 1k, output_tokens: 256}
        """)
    assert ("weights 35.28 GB + workspace 1.70 GB per GPU leave no room for a KV cache under SGLang's memory "
            "rule; use more tensor-parallel GPUs (at least 8), a smaller precision or a larger GPU; "
            "it would fit on 8× a100-40gb (remove the gpu/gpus pin, or pin that)") in err
