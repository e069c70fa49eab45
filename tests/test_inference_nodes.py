"""GPUs per node of the pinned resource in tensor-parallel all-reduces (planning/inference.py placements,
estimate/inference.py Replica.node_gpus): NCSA Delta's gpuA100x4 nodes hold 4 A100s (resources.yaml
gpus_per_node: 4), so an 8-way replica there spans two nodes and its all-reduces cross the network; its
gpuA100x8 nodes hold 8, so the same replica stays on NVLink. Before, both were priced on NVLink (a node
was 8 GPUs whatever the resource), so the 4-GPU-node plan was 4× too fast in its first token."""

from __future__ import annotations

import json
import textwrap

from proposalkit.cli import main
from conftest import records

# Llama 3.1 70B: 80 layers, hidden 8,192 (catalog/models.yaml, from its config.json): two all-reduces per
# layer (Shoeybi et al. 2019 §3), 160 per forward pass, each of tokens × 8,192 16-bit values, a ring
# sending 2 × 7/8 of it per GPU (Patarasuk & Yuan 2009), at the engine's 0.46 of the link and 33 µs per
# all-reduce (catalog/engines.py TRT_LINK_FRACTION, TRT_ALLREDUCE_LATENCY, which vLLM shares).
LAYERS, HIDDEN, LINK_FRACTION, LATENCY = 80, 8192, 0.46, 33e-6
NVLINK_A100 = 300e9     # A100 datasheet, SXM: NVLink 600 GB/s both ways
HDR_PORT = 25e9         # DGX A100 user guide: one 200 Gb/s HDR InfiniBand port per GPU (the a100 figure taken)


def allreduces(tokens: int, link: float) -> float:
    """Seconds of one forward pass's 160 all-reduces at 8-way tensor parallelism."""
    return 2 * LAYERS * (LATENCY + 2 * 7 / 8 * tokens * HIDDEN * 2 / (LINK_FRACTION * link))


def write(tmp_path, name: str, body: str):
    path = tmp_path / name
    path.write_text("proposal: {title: t, pi: p, institution: i}\nworkloads:\n" + textwrap.dedent(body))
    return path


def plan(path, capsys) -> dict:
    assert main(["plan", "--format", "json", str(path)]) == 0
    return json.loads(capsys.readouterr().out)["workloads"][0]


def batch_job(tmp_path, resource: str, tp: str = "tensor_parallel: 8, "):
    return write(tmp_path, f"{resource}.yaml", f"""\
        - {{name: b, kind: inference, model: llama-3.1-70b, gpu: a100-40gb, {tp}resource: {resource},
           requests: 10k, input_tokens: 2k, output_tokens: 256}}
        """)


def line(inf: dict, label: str) -> str:
    return next(d["text"] for d in inf["derivation"] if d["label"] == label)


def test_tp8_on_4_gpu_nodes_pays_the_network(tmp_path, capsys):
    four = plan(batch_job(tmp_path, "ncsa-delta-a100"), capsys)
    eight = plan(batch_job(tmp_path, "ncsa-delta-a100x8"), capsys)
    a, b = four["inference"], eight["inference"]
    # A prompt of 2,000 tokens: 160 × (33 µs + 1.75 × 32,768,000 B ÷ (0.46 × link)):
    # across nodes 160 × (33 µs + 4.9864 ms) = 803.1 ms; on NVLink 160 × (33 µs + 0.4155 ms) = 71.8 ms.
    assert f"{allreduces(2000, HDR_PORT) * 1e3:.1f}" == "803.1"
    assert f"{allreduces(2000, NVLINK_A100) * 1e3:.1f}" == "71.8"
    assert "+ 803.1 ms all-reduce across 2 nodes at 25 GB/s per GPU (4 GPUs per node)" in line(a, "Prefill")
    assert "+ 71.8 ms all-reduce =" in line(b, "Prefill") and "across" not in line(b, "Prefill")
    # Everything else is the same replica: the first token differs by the all-reduces alone,
    # 160 × 57,344,000 B × (1 ÷ 11.5e9 − 1 ÷ 138e9) = 731.34 ms (before this change: 0).
    ttft_gap = allreduces(2000, HDR_PORT) - allreduces(2000, NVLINK_A100)
    assert abs(ttft_gap * 1e3 - 731.34) < 0.01
    assert abs((a["ttft_ms"] - b["ttft_ms"]) - ttft_gap * 1e3) < 0.01
    # Decode at the same batch (217 sequences, the KV pool ÷ 2,256 tokens): 217 tokens per all-reduce,
    # 160 × 6,221,824 B × (1 ÷ 11.5e9 − 1 ÷ 138e9) = 79.35 ms more per output token.
    assert a["batch"] == b["batch"] == 217
    tpot_gap = allreduces(217, HDR_PORT) - allreduces(217, NVLINK_A100)
    assert abs(tpot_gap * 1e3 - 79.351) < 0.001
    assert abs((a["tpot_ms"] - b["tpot_ms"]) - tpot_gap * 1e3) < 0.01
    assert "+ all-reduce 91.8 ms (across nodes)" in line(a, "Decode step")
    assert "(across nodes)" not in line(b, "Decode step")
    assert four["gpu_hours"] > 3 * eight["gpu_hours"]
    # The assumptions say where the all-reduces go and which network figure was taken, with its source.
    (spans,) = records(four, "tp-across-nodes")
    assert {k: spans["values"][k] for k in ("tensor_parallel", "node_gpus", "resource", "nodes", "gpu")} == {
        "tensor_parallel": 8, "node_gpus": 4, "resource": "ncsa-delta-a100", "nodes": 2, "gpu": "a100-40gb"}
    assert spans["values"]["link_bytes_per_second"] == 25e9 and spans["values"]["network_bytes_per_second"] * 8 == 200e9
    assert "DGX A100 user guide" in spans["values"]["why"]
    (within,) = records(eight, "tp-within-node")
    assert {k: within["values"][k] for k in ("tensor_parallel", "node_gpus", "resource", "link")} == {
        "tensor_parallel": 8, "node_gpus": 8, "resource": "ncsa-delta-a100x8", "link": "NVLink"}
    assert within["values"]["link_bytes_per_second"] == 300e9


def test_the_planner_keeps_the_replica_within_a_4_gpu_node(tmp_path, capsys):
    # 70B in bf16 (141.1 GB) fits 4 × A100-40GB; with no resource 8 GPUs on one NVLink baseboard run it
    # cheapest, but on 4-GPU nodes the 8-way all-reduces cross the network and 4-way wins.
    unpinned = write(tmp_path, "free.yaml", """\
        - {name: b, kind: inference, model: llama-3.1-70b, gpu: a100-40gb,
           requests: 10k, input_tokens: 2k, output_tokens: 256}
        """)
    free = plan(unpinned, capsys)
    assert free["inference"]["tensor_parallel"] == 8
    (node,) = records(free, "tp-within-node")
    assert (node["values"]["node_gpus"], node["values"]["resource"]) == (8, None)     # no resource pinned
    quad = plan(batch_job(tmp_path, "ncsa-delta-a100", tp=""), capsys)
    assert quad["inference"]["tensor_parallel"] == 4
    assert "across" not in line(quad["inference"], "Prefill")
    assert [(a["count"], a["reason"].split(" but ")[0]) for a in quad["alternatives"]] == [
        (8, "fits on 8× a100-40gb")]
    # The whole system (gpuA100x4 and gpuA100x8): 8-way on an 8-GPU node, charged there (factor 1.5).
    system = plan(batch_job(tmp_path, "ncsa-delta", tp=""), capsys)
    assert system["inference"]["tensor_parallel"] == 8
    assert "across" not in line(system["inference"], "Prefill")
    (node,) = records(system, "tp-within-node")
    assert (node["values"]["node_gpus"], node["values"]["resource"]) == (8, "ncsa-delta-a100x8")


def test_the_report_says_the_all_reduces_cross_nodes(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["report", "-o", str(out), "--format", "md", str(batch_job(tmp_path, "ncsa-delta-a100"))]) == 0
    capsys.readouterr()
    text = (out / "supplement.md").read_text()
    assert "all-reduce across 2 nodes at 25 GB/s per GPU (4 GPUs per node)" in text
    assert "spans 2 of the 4-GPU nodes of ncsa-delta-a100" in text


INFINITY_FABRIC_MI300X = 448e9   # AMD CDNA 3 white paper, Table 2: MI300X P2P ring 896 GB/s (8 GPUs), both ways


def test_mi300x_all_reduces_cross_infinity_fabric_not_pcie(tmp_path, capsys):
    """Issue 22, item 5: MI300X had no link row, so its all-reduces ran at PCIe Gen4's 32 GB/s (628.6 ms for a
    2,000-token prompt at 8-way tensor parallelism) and its throughput came out 4.5× too slow."""
    path = write(tmp_path, "mi300x.yaml", """\
        - {name: b, kind: inference, model: llama-3.1-70b, gpu: mi300x, gpus: 8, tensor_parallel: 8,
           requests: 10k, input_tokens: 2k, output_tokens: 256}
        """)
    inf = plan(path, capsys)["inference"]
    assert f"{allreduces(2000, INFINITY_FABRIC_MI300X) * 1e3:.1f}" == "49.8"
    assert f"{allreduces(2000, 32e9) * 1e3:.1f}" == "628.6"
    assert "+ 49.8 ms all-reduce =" in line(inf, "Prefill")


MI300X_LINK = 64e9   # AMD CDNA 3 white paper: each of the 7 Infinity Fabric links 128 GB/s both ways, 64 GB/s one way


def test_a_smaller_mi300x_group_uses_only_the_links_to_its_members(tmp_path, capsys):
    """Issue 22, item 5: MI300X's node is a full mesh (a link to each of the 7 other GPUs, no switch), so a
    2-way group reaches its one peer over one link, 64 GB/s, not the 448 GB/s of all seven: its all-reduces
    take 7× the bandwidth term. Planned at 448 GB/s, TP 2 would run faster on paper than on the machine."""
    path = write(tmp_path, "mi300x-tp2.yaml", """\
        - {name: b, kind: inference, model: llama-3.1-70b, gpu: mi300x, gpus: 2, tensor_parallel: 2,
           requests: 10k, input_tokens: 2k, output_tokens: 256}
        """)
    inf = plan(path, capsys)["inference"]
    two_way = 2 * LAYERS * (LATENCY + 2 * 1 / 2 * 2000 * HIDDEN * 2 / (LINK_FRACTION * MI300X_LINK))
    assert f"+ {two_way * 1e3:.1f} ms all-reduce =" in line(inf, "Prefill")
    assert MI300X_LINK == INFINITY_FABRIC_MI300X / 7
