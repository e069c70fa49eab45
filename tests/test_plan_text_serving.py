"""`plan`'s text table says how inference is served (issue 21, item 5): replicas × tensor-parallel GPUs per
replica, and a service's latency (TTFT, p99 for a service by load, and TPOT), the same numbers as the plan's
JSON. Columns that would say nothing (training only; every replica one GPU; no latency target) are left out."""

from __future__ import annotations

import json

from proposalkit.cli import main

SERVICE = """\
  - name: assistant
    kind: inference
    model: llama-3.1-70b
    request_rate: 5
    input_tokens: 2k
    output_tokens: 256
    ttft_ms: 1000
    tpot_ms: 50
    hours: 720
    gpu: h200
"""
BATCH = """\
  - name: generations
    kind: inference
    model: llama-3.1-70b
    requests: 200k
    input_tokens: 1k
    output_tokens: 512
"""
TRAINING = """\
  - name: tune
    kind: finetune
    method: lora
    model: llama-3.1-8b
    tokens: 200M
"""


def plan(tmp_path, capsys, workloads: str, *args: str) -> str:
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n" + workloads, encoding="utf-8")
    assert main(["plan", str(path), *args]) == 0
    return capsys.readouterr().out


def table(text: str) -> list[dict[str, str]]:
    """The table's rows as header → cell, read by the columns of the dashed rule under the header."""
    lines = text.splitlines()
    spans, start = [], 0
    for dashes in lines[1].split("  "):
        spans.append((start, start + len(dashes)))
        start += len(dashes) + 2
    header = [lines[0][a:b].strip() for a, b in spans]
    body = lines[2:lines.index(lines[1], 2)]
    return [dict(zip(header, (line.ljust(start)[a:b].strip() for a, b in spans))) for line in body]


def test_a_service_shows_replicas_tensor_parallel_and_latency_as_in_the_json(tmp_path, capsys):
    rows = table(plan(tmp_path, capsys, SERVICE + BATCH + TRAINING))
    workloads = {w["name"]: w for w in json.loads(plan(tmp_path, capsys, SERVICE + BATCH + TRAINING,
                                                       "--format", "json"))["workloads"]}
    service = workloads["assistant"]["inference"]
    assert service["replicas"] > 1 and service["tensor_parallel"] > 1     # the case the columns are for
    by_name = {r["workload"]: r for r in rows}
    assert by_name["assistant"]["replicas × TP"] == f"{service['replicas']} × {service['tensor_parallel']}"
    assert by_name["assistant"]["GPUs"] == f"{service['replicas'] * service['tensor_parallel']}× h200"
    assert by_name["assistant"]["TTFT / TPOT ms"] == f"{service['ttft_ms']:,.1f} (p99) / {service['tpot_ms']:,.1f}"  # as the supplement
    batch = workloads["generations"]["inference"]
    assert by_name["generations"]["replicas × TP"] == f"1 × {batch['tensor_parallel']}"
    assert by_name["generations"]["TTFT / TPOT ms"] == "—"      # a batch job has no latency target
    assert by_name["tune"]["replicas × TP"] == by_name["tune"]["TTFT / TPOT ms"] == "—"


def test_training_alone_keeps_the_table_it_had(tmp_path, capsys):
    out = plan(tmp_path, capsys, TRAINING)
    assert out.splitlines()[0].split() == ["workload", "kind", "model", "GPUs", "mem/GPU", "tokens", "h/run",
                                           "runs", "GPU-h", "+buffer"]


def test_the_total_stays_under_gpu_hours(tmp_path, capsys):
    """With the latency column after +buffer, the total row still ends under +buffer."""
    lines = plan(tmp_path, capsys, SERVICE + TRAINING).splitlines()
    total = lines[lines.index(lines[1], 2) + 1]
    assert total.startswith("total")
    assert len(total) == lines[0].index("+buffer") + len("+buffer")
