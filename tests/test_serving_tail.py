"""The tail TTFT of a service: its percentile through the CLI (ttft_percentile), and Lundberg's bound
of the M/D/1 wait (estimate/queueing.py), which stands in for the exact distribution past
EXACT_TERMS prefills of wait (the exact one: tests/test_serving_exact.py).
"""

from __future__ import annotations

import json
import math
import re
import textwrap

import pytest

from proposalkit.cli import main
from proposalkit.estimate.queueing import lundberg_theta, prefill_wait


def test_no_wait_where_the_server_is_idle_often_enough():
    # P(W = 0) = 1 − ρ: at ρ = 0.05 at least 95% of prompts find no prefill ahead, so p90 waits 0
    # and p99 does not.
    assert prefill_wait(0.05, 1.0, 90).seconds == 0.0 and prefill_wait(0.05, 1.0, 90).method == "idle"
    assert prefill_wait(0.05, 1.0, 99).seconds > 0


def test_the_bound_by_hand():
    # ρ = 0.5, S = 1 s: θ solves 0.5(e^θ − 1) = θ; θ = 1.2564 gives 0.5 × (3.5127 − 1) = 1.2564.
    # p99 wait ≤ ln(100) / 1.2564 = 3.665 s, above the exact 3.336 s.
    theta = lundberg_theta(0.5, 1.0)
    assert theta == pytest.approx(1.2564, abs=1e-4)
    assert math.log(100) / theta == pytest.approx(3.665, abs=1e-3)
    assert prefill_wait(0.5, 1.0, 99).seconds == pytest.approx(3.3363, abs=1e-4)
    # Time scales with S: prompts of 0.2 s at 2.5 per second wait 0.2 × as long.
    assert prefill_wait(2.5, 0.2, 99).seconds == pytest.approx(0.2 * prefill_wait(0.5, 1.0, 99).seconds, rel=1e-9)
    assert lundberg_theta(2.5, 0.2) == pytest.approx(theta / 0.2, rel=1e-9)


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
    assert "TTFT p90" in (out_dir / "supplement.md").read_text(encoding="utf-8")


FAR = """\
workloads:
  - name: chat
    kind: inference
    model: llama-3.1-8b
    gpu: h100-80gb
    tensor_parallel: 1
    request_rate: 88.4
    input_tokens: 64
    output_tokens: 1
    ttft_ms: 20000
    hours: 10
"""


def test_past_the_limit_of_terms_the_plan_says_it_uses_the_bound(tmp_path, capsys):
    # 88.4 requests/s of 64-token prompts (S ≈ 11.3 ms: the weight read and the launches) on one H100:
    # u ≈ 0.996 and the p99 wait is about 570 prefills, past EXACT_TERMS = 300. The plan gives Lundberg's
    # bound, an upper bound, with θ solving 88.4 (e^{θS} − 1) = θ (Newton's method here, from the right),
    # and says so in the derivation and the report's references.
    code, out, err = run(tmp_path, capsys, FAR)
    assert code == 0, err
    i = json.loads(out)["workloads"][0]["inference"]
    (ttft,) = [d["text"] for d in i["derivation"] if d["label"] == "TTFT"]
    assert "past 300 prefills, where the exact M/D/1 sum is not evaluated" in ttft
    assert "(Lundberg's inequality, Asmussen & Albrecher 2010)" in ttft
    wait_ms = float(re.search(r"= ([\d,.]+) ms, θ", ttft).group(1).replace(",", ""))
    theta = float(re.search(r"θ = ([\d.]+)/s", ttft).group(1))
    assert wait_ms == pytest.approx(math.log(100) / theta * 1e3, rel=5e-3)   # θ is printed to 3 digits

    def root(S: float) -> float:
        x = 20.0                               # x = θS: f(x) = ρ(eˣ − 1) − x, convex, positive at 20
        for _ in range(100):
            x -= (88.4 * S * math.expm1(x) - x) / (88.4 * S * math.exp(x) - 1)
        return x / S

    # S is printed to 4 digits (0.01127 s); at u ≈ 0.996 θ moves ~10% within that rounding: bracket it.
    S = float(re.search(r"× \(e\^\(θ × ([\d.]+) s\)", ttft).group(1))
    assert root(S + 5e-6) * 0.999 <= theta <= root(S - 5e-6) * 1.001
    assert wait_ms / 1e3 / S > 300
    out_dir = tmp_path / "report"
    assert main(["report", str(tmp_path / "w.yaml"), "--format", "md", "--out", str(out_dir)]) == 0
    assert "**Asmussen \\& Albrecher 2010**" in (out_dir / "supplement.md").read_text(encoding="utf-8")
