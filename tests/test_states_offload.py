"""CPU offload through the YAML: what leaves the GPU and what remains, by hand.

- ZeRO-Offload (Ren et al. 2021, "ZeRO-Offload", §3-4): the fp16/bf16 parameters stay on the GPU; the
  gradients go to the host as they are produced (DeepSpeed stage_1_and_2.py frees param.grad after the
  copy; one reduce bucket of 5e8 values, the runtime/zero/config.py default, stays); the fp32 master
  weights, Adam moments and fp32 gradients live in host memory, where the step runs.
- Parameter offload (DeepSpeed ZeRO-3 offload_param; PyTorch FSDP CPUOffload(offload_params=True)):
  parameter and gradient shards in host memory; the GPU holds the all-gathered working set (the largest
  unit twice, for the prefetch, and its unsharded gradient: PyTorch FSDP notes, prefetching).
Llama 3.1 8B: 8,030,261,248 parameters. Llama 3.1 70B: 70,553,706,496 parameters; its largest FSDP unit
is the embedding table, 128,256 × 8,192 = 1,050,673,152 (a layer is 855,654,400: q and o 8192², k and v
8192 × 1024, MLP 3 × 8192 × 28672, two norms of 8192) (meta-llama/Llama-3.1-70B config.json).
"""

from __future__ import annotations

import json

from proposalkit.cli import main

P_8B = 8_030_261_248
P_70B = 70_553_706_496
EMBED_70B = 128_256 * 8_192
LAYER_70B = 2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192


def _plan(tmp_path, capsys, body: str) -> dict:
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n" + body, encoding="utf-8")
    assert main(["plan", str(path), "--format", "json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)["workloads"][0]


def test_zero_offload_moves_master_and_moments_to_the_host(tmp_path, capsys):
    w = _plan(tmp_path, capsys, """  - name: zo
    kind: finetune
    method: full
    model: llama-3.1-8b
    tokens: 10M
    seq_len: 2048
    activation_checkpointing: true
    gpu: h100-80gb
    gpus: 1
    offload: {optimizer: cpu}
""")
    m = w["memory"]["estimate"]
    c = m["components"]
    # the bf16 gradients stream to the host through one reduce bucket of 5e8 values (DeepSpeed default), beside
    # the autograd gradient of the parameter being copied in: the largest, the 128,256 × 4,096 embeddings
    # (DeepSpeed @ 38327e07 stage_1_and_2.py: new_grad_tensor.copy_(grad_reduc); extra_large_param_to_reduce)
    assert (c["weights"], c["gradients"], c["optimizer"]) == (2 * P_8B, 500_000_000 * 2 + 128_256 * 4_096 * 2, 0)
    assert m["host_bytes"] == 16 * P_8B          # fp32 master 4 + m 4 + v 4 + fp32 gradients 4, in host memory


def test_fsdp_cpu_offload_keeps_only_the_gathered_working_set(tmp_path, capsys):
    # torchtune llama3_1/70B_full with fsdp_cpu_offload (A-TT31-6): 8 GPUs, full shard, pure bf16.
    assert LAYER_70B == 855_654_400 < EMBED_70B
    w = _plan(tmp_path, capsys, """  - name: offload-70b
    kind: finetune
    method: full
    model: llama-3.1-70b
    tokens: 10M
    seq_len: 2048
    micro_batch: 2
    activation_checkpointing: true
    gpu: a100-80gb
    gpus: 8
    zero_stage: 3
    mixed_precision: false
    offload: {optimizer: cpu, params: cpu}
""")
    m = w["memory"]["estimate"]
    c = m["components"]
    assert c["weights"] == 2 * EMBED_70B * 2         # the embedding unit gathered, twice for the prefetch
    assert c["gradients"] == EMBED_70B * 2            # its unsharded bf16 gradient
    assert c["optimizer"] == 0
    # host: bf16 weight and gradient shards (2 + 2) and bf16 AdamW moments (2 + 2), each ÷ 8 GPUs
    assert m["host_bytes"] == P_70B * 8 // 8


def test_parameter_offload_chooses_full_sharding(tmp_path, capsys):
    w = _plan(tmp_path, capsys, """  - name: offload-70b
    kind: finetune
    method: full
    model: llama-3.1-70b
    tokens: 10M
    seq_len: 2048
    activation_checkpointing: true
    gpu: a100-80gb
    gpus: 8
    offload: {optimizer: cpu, params: cpu}
""")
    assert w["memory"]["estimate"]["components"]["optimizer"] == 0
    assert w["memory"]["estimate"]["host_bytes"] == P_70B * 16 // 8     # mixed precision: 2 + 2 + 12 per parameter, ÷ 8


ZERO_OFFLOAD_13B = """  - name: zero-offload-13b
    kind: pretrain
    model: {layers: 40, hidden: 5120, heads: 40, vocab: 50257, max_context: 1024}
    tokens: 10M
    seq_len: 1024
    precision: fp16
    activation_checkpointing: true
    gpu: v100-32gb
"""


def test_published_zero_offload_trains_13b_on_one_v100(tmp_path, capsys):
    # Ren et al. 2021 (ZeRO-Offload), abstract: "train models with over 13 billion parameters on a single
    # GPU" (a V100 32 GB). A GPT-2-style shape of 40 layers × 5120 (12·L·h² + embeddings ≈ 13.1B) with the
    # optimizer offloaded fits one V100; without offload its 16 B/param of model states cannot.
    w = _plan(tmp_path, capsys, ZERO_OFFLOAD_13B + "    offload: {optimizer: cpu}\n")
    assert w["model"]["params"] > 13 * 10**9
    assert w["gpu"]["count"] == 1
    assert w["memory"]["estimate"]["components"]["weights"] == 2 * w["model"]["params"]     # fp16 weights stay
    without = _plan(tmp_path, capsys, ZERO_OFFLOAD_13B)
    assert without["gpu"]["count"] > 1


def test_report_states_host_and_paged_bytes_beside_the_measured_statistics(tmp_path, capsys):
    plan = _plan(tmp_path, capsys, ZERO_OFFLOAD_13B + "    offload: {optimizer: cpu}\n")
    assert main(["report", str(tmp_path / "w.yaml"), "-o", str(tmp_path / "out"), "--format", "md"]) == 0
    text = (tmp_path / "out" / "supplement.md").read_text(encoding="utf-8")
    gib = plan["memory"]["host_bytes"] / 2**30
    assert f"host memory for the offloaded states {gib:.2f} GiB per GPU" in text
