"""Batch jobs whose request lengths vary (issue 22, item 5): input_tokens / output_tokens as {mean, p50, p99}, read
as a lognormal (input/lengths.py), and what the spread costs continuous batching (estimate/lengths.py): slots hold
length-biased sequences, prompts' attention grows with their square, and the batch drains at the end."""

from __future__ import annotations

import json
import math
import textwrap

import pytest

from proposalkit.cli import main
from proposalkit.estimate.lengths import Spread
from proposalkit.input.lengths import LENGTH_POINTS, LengthError, LengthStats

JOB = """\
    - {{name: b, kind: inference, model: llama-3.1-8b, framework: vllm, precision: bf16, gpu: h100-80gb, gpus: 1,
       requests: 10000, input_tokens: {i}, output_tokens: {o}}}
    """


def plan(tmp_path, capsys, i, o) -> dict:
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n" + textwrap.dedent(JOB.format(i=i, o=o)))
    assert main(["plan", "--format", "json", str(path)]) == 0
    return json.loads(capsys.readouterr().out)["workloads"][0]


def test_the_lognormal_keeps_the_mean_and_the_median():
    s = LengthStats(200, 120)
    assert s.sigma == pytest.approx(math.sqrt(2 * math.log(200 / 120)))
    points = s.points()
    assert len(points) == LENGTH_POINTS and sum(points) / len(points) == pytest.approx(200)
    assert sorted(points)[LENGTH_POINTS // 2] == pytest.approx(120, rel=0.05)
    # From the mean and the p99 alone: the p99 it implies is the one given.
    t = LengthStats(200, p99=1500)
    mu = math.log(200) - t.sigma ** 2 / 2
    assert math.exp(mu + 2.3263 * t.sigma) == pytest.approx(1500, rel=1e-3)
    assert LengthStats(200).points() == (200.0,)


def test_the_slots_hold_length_biased_sequences():
    # Two equally likely outputs, 100 and 300: a slot is held 3 times as long by the longer one, so its output is
    # E[o²] ÷ E[o] = (100² + 300²) / 2 / 200 = 250 tokens, not 200.
    spread = Spread(inputs=(50.0,), outputs=(100.0, 300.0))
    assert spread.held_output == 250
    assert spread.held_context == 50 + (250 + 1) / 2
    # Residual lives: P(R > 200) = E[(o − 200)⁺] ÷ E[o] = (0 + 100) / 2 / 200.
    assert spread.residual_beyond(200) == pytest.approx(0.25)
    assert spread.longest_residual(3) == pytest.approx(200, abs=1e-6)   # P(R > r) = 1/4
    assert spread.longest_output(1) == 300


@pytest.mark.parametrize("error, stats", [("median (300) above the mean", LengthStats(200, 300)),
                                          ("p99 (150) below the mean", LengthStats(200, p99=150))])
def test_statistics_no_lognormal_has_are_refused(error, stats):
    with pytest.raises(LengthError, match=error.replace("(", r"\(").replace(")", r"\)")):
        stats.sigma


def test_a_spread_costs_throughput_against_the_means(tmp_path, capsys):
    means = plan(tmp_path, capsys, 220, 200)
    spread = plan(tmp_path, capsys, "{mean: 220, p50: 120}", "{mean: 200, p50: 120, p99: 1500}")
    a, b = means["inference"]["output_tokens_per_second"], spread["inference"]["output_tokens_per_second"]
    assert 0.6 < b / a < 0.95
    # the run takes longer: more hours, carried to 0.01 h (a run this small rounds the two to one figure)
    assert spread["gpu_hours"] >= means["gpu_hours"]
    assert spread["tokens_per_second"] < means["tokens_per_second"]
    line = next(d["text"] for d in spread["inference"]["derivation"] if d["label"] == "Lengths that vary")
    assert "E[o²] ÷ E[o] = 506 tokens" in line and "drains for" in line
    # A distribution with no spread is its mean.
    same = plan(tmp_path, capsys, "{mean: 220}", "{mean: 200}")
    assert same["inference"]["output_tokens_per_second"] == pytest.approx(a, rel=0.02)


def test_a_distribution_outside_a_batch_job_or_without_a_lognormal_is_an_input_error(plan_error):
    err = plan_error("workloads:\n  - {name: s, kind: inference, model: llama-3.1-8b, gpu: h100-80gb, request_rate: 2, "
                     "hours: 10,\n     input_tokens: {mean: 200, p50: 100}, output_tokens: 100}\n")
    assert "FILE:3: workloads[0].input_tokens: a length distribution applies to a batch job" in err
    err = plan_error("workloads:\n  - {name: s, kind: inference, model: llama-3.1-8b, gpu: h100-80gb, requests: 100,"
                     "\n     input_tokens: {mean: 200, p50: 300}, output_tokens: 100}\n")
    assert "FILE:3: workloads[0].input_tokens: a median (300) above the mean (200)" in err and "Traceback" not in err


def test_a_median_at_the_mean_with_a_p99_is_read_as_uniform():
    # SGLang bench_serving's random lengths, uniform from 1 to 1,024: mean and median 512.5, p99 1,014.
    s = LengthStats(512.5, 512.5, 1014)
    assert s.symmetric and s.uniform_top == pytest.approx(1024, abs=0.5)
    points = sorted(s.points())
    assert points[0] == pytest.approx(1 + 1024 / LENGTH_POINTS / 2, abs=3) and points[-1] < 1024
    assert Spread(points, points).held_output == pytest.approx(2 * 1024 / 3, rel=0.01)    # E[o²] ÷ E[o] = 2L/3


def test_a_tail_beyond_the_models_context_is_cut_there(tmp_path, capsys):
    # σ = √(2 ln 100) ≈ 3: the top lengths are past Llama 3.1's 131,072 tokens; such requests cannot exist, so the
    # tail is cut at the context (the job is planned, not refused for a sequence no one sends).
    w = plan(tmp_path, capsys, "{mean: 2000, p50: 20}", "{mean: 200, p99: 2500}")
    assert w["inference"]["output_tokens_per_second"] > 0


@pytest.mark.parametrize("stats, message", [
    ("{mean: 1000, p50: 800, p99: 500}", "FILE:3: workloads[0].input_tokens: a p99 (500) below the median (800) "
                                         "(expected p99 at least p50)"),
    ("{mean: 9000, p50: 800, p99: 3000}", "FILE:3: workloads[0].input_tokens: a p99 (3000) below the mean (9000) "
                                          "(expected p99 at least the mean)"),
])
def test_a_p99_below_the_median_or_the_mean_is_refused_not_ignored(plan_error, stats, message):
    err = plan_error("workloads:\n  - {name: s, kind: inference, model: llama-3.1-8b, gpu: h100-80gb, requests: 100,"
                     f"\n     input_tokens: {stats}, output_tokens: 100}}\n")
    assert err.strip() == message


@pytest.mark.parametrize("value, message", [
    ("{mean: 0, p50: 800}", "input_tokens.mean: not a positive integer (got 0, "),
    ("{mean: 1k, p95: 3k}", "input_tokens.p95: unknown field 'p95'"),
    ("[1, 2]", "input_tokens: not a number (got a list, "),
])
def test_a_wrong_length_names_only_the_form_given(plan_error, value, message):
    """A mapping is read as a distribution, anything else as one number: one error, not one per form."""
    err = plan_error("workloads:\n  - {name: s, kind: inference, model: llama-3.1-8b, gpu: h100-80gb, requests: 100,"
                     f"\n     input_tokens: {value}, output_tokens: 100}}\n")
    assert f"FILE:3: workloads[0].{message}" in err and len(err.strip().splitlines()) == 1
    assert "function-before" not in err and "Lengths" not in err
