"""The tail TTFT of a service (estimate/serving.py prefill_wait): an upper bound of the M/D/1 wait.

Prompts arrive as a Poisson stream and are prefilled one after another in S seconds each. The bound
is checked against the queue itself, simulated here by Lindley's recursion (Lindley 1952: the next
prompt waits W' = max(0, W + S − A), A the exponential gap between arrivals), and through the CLI.
"""

from __future__ import annotations

import json
import random
import textwrap

import pytest

from proposalkit.cli import main
from proposalkit.estimate.inference import prefill_wait


def simulated_wait(rho: float, quantile: float, arrivals: int = 200_000) -> float:
    """The quantile of the M/D/1 wait with S = 1 and arrival rate ρ, by Lindley's recursion."""
    rng = random.Random(20261123)
    wait, waits = 0.0, []
    for _ in range(arrivals):
        wait = max(0.0, wait + 1.0 - rng.expovariate(rho))
        waits.append(wait)
    waits.sort()
    return waits[int(quantile * arrivals)]


@pytest.mark.parametrize("rho", [0.05, 0.25, 0.5, 0.8])
@pytest.mark.parametrize("percentile", [90, 99])
def test_the_bound_is_above_the_queue_and_close_to_it(rho, percentile):
    bound, _ = prefill_wait(rho, 1.0, percentile)
    simulated = simulated_wait(rho, percentile / 100)
    assert bound >= simulated
    assert bound <= 1.2 * simulated + 0.3    # and not far above it (10.69 against 9.98 at ρ = 0.8, p99)


def test_no_wait_where_the_server_is_idle_often_enough():
    # P(W = 0) = 1 − ρ: at ρ = 0.05 at least 95% of prompts find no prefill ahead, so p90 waits 0
    # and p99 does not.
    assert prefill_wait(0.05, 1.0, 90) == (0.0, 0.0)
    assert prefill_wait(0.05, 1.0, 99)[0] > 0


def test_the_bound_by_hand():
    # ρ = 0.5, S = 1 s: θ solves 0.5(e^θ − 1) = θ; θ = 1.2564 gives 0.5 × (3.5127 − 1) = 1.2564.
    # p99 wait ≤ ln(100) / 1.2564 = 3.665 s.
    wait, theta = prefill_wait(0.5, 1.0, 99)
    assert theta == pytest.approx(1.2564, abs=1e-4)
    assert wait == pytest.approx(3.665, abs=1e-3)
    # Time scales with S: prompts of 0.2 s at 2.5 per second wait 0.2 × as long.
    assert prefill_wait(2.5, 0.2, 99)[0] == pytest.approx(0.2 * wait, rel=1e-9)


SERVICE = """\
workloads:
  - name: chat
    kind: {kind}
    model: llama-3.1-8b
    request_rate: 1
    input_tokens: 1000
    output_tokens: 32
    ttft_ms: 100
    hours: 720
    ttft_percentile: {percentile}
"""


def run(tmp_path, capsys, text: str):
    path = tmp_path / "w.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    code = main(["plan", str(path), "--format", "json"])
    out, err = capsys.readouterr()
    return code, out, err.replace(str(path), "FILE")


def test_a_fraction_for_a_percentile_is_an_input_error(tmp_path, capsys):
    code, out, err = run(tmp_path, capsys, SERVICE.format(kind="inference", percentile=0.99))
    assert code == 2 and out == ""
    assert err.startswith("FILE:10: workloads[0].ttft_percentile: out of range (got 0.99, expected a percentile "
                          "from 50 (the median) to 99.9, e.g. 90 or 99; write 99 for p99, not 0.99)")


def test_a_percentile_without_a_request_rate_is_an_input_error(tmp_path, capsys):
    text = SERVICE.format(kind="inference", percentile=90).replace("    request_rate: 1\n", "").replace(
        "    ttft_ms: 100\n", "").replace("    input_tokens: 1000\n    output_tokens: 32\n",
                                         "    context: 1032\n    batch: 4\n")
    code, _, err = run(tmp_path, capsys, text)
    assert code == 2
    assert "workloads[0].ttft_percentile: a latency target sizes a service by its load" in err


def test_the_percentile_is_in_the_plan_and_the_report(tmp_path, capsys):
    code, out, err = run(tmp_path, capsys, SERVICE.format(kind="inference", percentile=90))
    assert code == 0, err
    i = json.loads(out)["workloads"][0]["inference"]
    assert i["ttft_percentile"] == 90
    (ttft,) = [d["text"] for d in i["derivation"] if d["label"] == "TTFT"]
    assert ttft.startswith("p90 with prompts arriving as a Poisson stream")
    out_dir = tmp_path / "report"
    assert main(["report", str(tmp_path / "w.yaml"), "--format", "md", "--out", str(out_dir)]) == 0
    assert "TTFT p90" in (out_dir / "report.md").read_text(encoding="utf-8")
