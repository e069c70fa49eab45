"""A service's KV pool checked at the TTFT percentile, not only at Little's mean (estimate/serving.py
pool_full_probability): requests in flight are Poisson about the mean (M/G/∞), and one that finds every
place of the pool taken waits for another request to finish, a wait the TTFT figure leaves out."""

from __future__ import annotations

import json
import math
import re
import textwrap

import pytest

from proposalkit.cli import main
from proposalkit.estimate.serving import pool_full_probability


def poisson_at_least(mean: float, k: int) -> float:
    """P(N ≥ k), N Poisson(mean), by the series e^(−m) mᶦ ÷ i! written out independently."""
    term, below = math.exp(-mean), 0.0
    for i in range(k):
        below += term
        term *= mean / (i + 1)
    return 1 - below


# Llama 3.1 70B on 2 × H100 80GB: vLLM's pool holds 13 sequences of 2k + 256 tokens.
SERVICE = """\
    proposal: {{title: t, pi: p, institution: i}}
    workloads:
      - name: svc
        kind: inference
        model: llama-3.1-70b
        gpu: h100-80gb
        tensor_parallel: 2
        request_rate: {rate}
        input_tokens: 2k
        output_tokens: 256
        ttft_ms: 1000
        tpot_ms: 50
        hours: 100
    """


def service_yaml(rate: float = 1, extra: str = "") -> str:
    """The service above at `rate`, with `extra` lines (indented 4) added to the workload."""
    return textwrap.dedent(SERVICE.format(rate=rate)) + extra


def plan(tmp_path, capsys, extra: str = "", rate: float = 1) -> dict:
    path = tmp_path / "w.yaml"
    path.write_text(service_yaml(rate, extra))
    assert main(["plan", "--format", "json", str(path)]) == 0
    return json.loads(capsys.readouterr().out)["workloads"][0]


def test_poisson_tail_against_tabulated_values():
    # Poisson(3): P(N ≤ 7) = 0.9881 (any Poisson table), so P(N ≥ 8) = 0.0119; P(N ≥ 1) = 1 − e^(−m).
    assert pool_full_probability(3.0, 8) == pytest.approx(0.0119, abs=5e-5)
    assert pool_full_probability(0.5, 1) == pytest.approx(1 - math.exp(-0.5))
    assert pool_full_probability(12.6, 13) == pytest.approx(poisson_at_least(12.6, 13), rel=1e-9)
    assert pool_full_probability(0.0, 5) == 0.0


def test_a_pool_of_13_is_not_planned_full_at_p99(tmp_path, capsys):
    # Llama 3.1 70B on 2 × H100 80GB: vLLM's pool holds 13 sequences of 2,256 tokens. Before: one replica
    # at 1 request/s, Little's mean 1 × (0.318 s + 256 × 0.0480 s) = 12.6 in flight, "batch 13 of 13",
    # TTFT p99 742 ms, though P(Poisson(12.6) ≥ 13) = 0.45: nearly half the requests found the pool full
    # and waited for one to finish. After: the pool may be full for at most 1 request in 100.
    w = plan(tmp_path, capsys)
    inf = w["inference"]
    assert inf["max_concurrency"] == 13
    assert poisson_at_least(12.6, 13) > 0.4
    assert inf["replicas"] == 2 and w["gpu"]["count"] == 4
    line = next(d["text"] for d in inf["derivation"] if d["label"] == "Per replica")
    mean = float(re.search(r"= ([\d.]+), rounded up to", line).group(1))
    assert inf["batch"] == math.ceil(mean)
    # Redone by hand from the printed mean (one decimal): P(Poisson(mean) ≥ 13) ≤ 0.01.
    assert poisson_at_least(mean + 0.05, 13) <= 0.01
    chance = float(re.search(r"taken with probability ([\d.e-]+) ≤ 0.01 \(p99\)", line).group(1))
    assert chance == pytest.approx(poisson_at_least(mean, 13), abs=2e-3)
    assert "all 13 places of the pool" in line
    assert "at 0.5 requests/s" in line


def test_a_stricter_percentile_never_fewer_replicas(tmp_path, capsys):
    # p50: half the requests may find the pool full; one replica holds 12.76 in flight on average (each
    # prefill pass now pays its 80 layers' launches), P(Poisson(12.76) ≥ 13) = 0.51 > 0.5: 2 replicas, as at
    # p90 and p99; p99.9: P(Poisson(m) ≥ 13) ≤ 0.001 needs m ≤ 4.9 (about 0.39 requests/s): 3.
    assert poisson_at_least(12.76, 13) > 0.5
    counts = [plan(tmp_path, capsys, f"    ttft_percentile: {q}\n")["inference"]["replicas"]
              for q in (50, 90, 99, 99.9)]
    assert counts == sorted(counts) and counts == [2, 2, 2, 3]


def small_service(tmp_path, capsys, fields: str) -> tuple[dict, str]:
    """Plan a Llama 3.1 8B service on H100s with `fields`; its inference block and Per replica line."""
    path = tmp_path / "small.yaml"
    path.write_text("proposal: {title: t, pi: p, institution: i}\nworkloads:\n"
                    "  - {name: s, kind: inference, model: llama-3.1-8b, gpu: h100-80gb,\n"
                    f"     {fields}, hours: 10}}\n")
    assert main(["plan", "--format", "json", str(path)]) == 0
    inf = json.loads(capsys.readouterr().out)["workloads"][0]["inference"]
    return inf, next(d["text"] for d in inf["derivation"] if d["label"] == "Per replica")


def test_one_request_per_second_is_singular(tmp_path, capsys):
    # Before: "at 1 requests/s prefill keeps the GPUs busy ...".
    _, line = small_service(tmp_path, capsys, "request_rate: 1, input_tokens: 1k, output_tokens: 512")
    assert line.startswith("at 1 request/s prefill")


def test_the_report_lists_the_queueing_sources_it_cites(tmp_path, capsys):
    path = tmp_path / "w.yaml"
    path.write_text(service_yaml())
    assert main(["report", str(path), "-o", str(tmp_path / "out"), "--format", "md"]) == 0
    report = (tmp_path / "out" / "supplement.md").read_text()
    assert "(M/G/∞, Takács 1962)" in report and "(Erlang 1909; Crommelin 1932; Franx 2001)" in report
    appendix = report[report.index("## S.6 References"):]
    assert "**Takács 1962**. L. Takács. Introduction to the Theory of Queues" in appendix
    assert "**Erlang 1909**. A. K. Erlang. The theory of probabilities and telephone conversations" in appendix
    assert "**Crommelin 1932**. C. D. Crommelin. Delay probability formulae" in appendix
    assert "**Franx 2001**. G. J. Franx. A simple solution for the M/D/c waiting time distribution" in appendix
    # Lundberg's bound stands in only past queueing.EXACT_TERMS prefills of wait: not here, nor its source.
    assert "Lundberg" not in report and "Asmussen" not in appendix


def test_without_a_ttft_target_the_pool_is_held_at_the_mean_and_the_wait_is_said(tmp_path, capsys):
    # No ttft_ms: nothing holds the TTFT, so 8,673 one-place replicas for 50 requests/s (what p99 would
    # take) would cost 100 × what the user asked for. The replica is loaded up to Little's mean (≤ 1 in
    # flight: 0.56 requests/s of 1.78 s each, 89 replicas) and the derivation says that a request finds the
    # pool full with probability 1 − e^(−1.0) = 0.63, a wait the p99 TTFT leaves out.
    inf, line = small_service(tmp_path, capsys, "request_rate: 50, input_tokens: 1k, output_tokens: 256, batch: 1")
    assert inf["replicas"] == 89 and inf["max_concurrency"] == 1
    mean = float(re.search(r"= ([\d.]+), rounded up to", line).group(1))
    assert f"finds the pool's one place taken with probability {1 - math.exp(-mean):.2g}, above 0.01" in line
    assert "a wait the p99 TTFT below leaves out (no ttft_ms target holds the pool)" in line
    replicas = next(d["text"] for d in inf["derivation"] if d["label"] == "Replicas")
    assert replicas.endswith("req/s per replica (at most 1 in flight (batch 1))⌉ = 89 replicas of 1 GPU")
