"""Review of the prefill pass's launch cost (1377aa4) through the CLI: every prefill pays its launches once per
pass, a lone prompt longer than the engine's chunk too; the derivation's figures redo by hand to the plan's own;
an engine whose speed is refused claims no speed constants; the engine factors name where the launch cost was
fitted.

Hand inputs: Llama 3.1 8B and 70B (meta-llama config.json: 32 / 80 layers, hidden 4,096 / 8,192, vocab 128,256,
untied LM head, so 8,030,261,248 − 128,256 × 4,096 = 7,504,924,672 matrix-multiply parameters of the 8B); H100
SXM dense bf16 989 TFLOP/s (NVIDIA H100 datasheet); the engines' constants by name (catalog/engines.py, each
sourced there); prefill chunk 8,192 tokens (TensorRT-LLM max_num_tokens, vLLM max_num_batched_tokens).
"""

from __future__ import annotations

import json
import math
import re
import textwrap

import pytest

from proposalkit.cli import main
from proposalkit.catalog.engines import TRT_COMPUTE_FRACTION_16BIT, TRT_PREFILL_LAYER_SECONDS
from conftest import records

H100_BF16 = 989e12
CHUNK = 8192


def plan(tmp_path, capsys, text: str) -> list[dict]:
    path = tmp_path / "w.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    code = main(["plan", str(path), "--format", "json"])
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)["workloads"]


def line(w: dict, label: str) -> str:
    return next(d["text"] for d in w["inference"]["derivation"] if d["label"] == label)


def prefill_8b(tokens: int) -> float:
    """Seconds of compute of one Llama 3.1 8B prompt on one H100 in bf16: 2·P_matmul·s + causal attention
    4·a·d × L·s²/2 pairs (a·d = 4,096), at TensorRT-LLM's fitted 16-bit fraction."""
    flops = 2 * 7_504_924_672 * tokens + 4 * 4096 * 32 * tokens**2 / 2
    return flops / (H100_BF16 * TRT_COMPUTE_FRACTION_16BIT)


def test_a_lone_prompt_longer_than_the_chunk_pays_the_launches_of_each_pass(tmp_path, capsys):
    # 20,000 tokens run in ⌈20,000 ÷ 8,192⌉ = 3 passes: the service's ride already counted 3 passes and a
    # batch job 3, but the lone prefill (TTFT, the M/D/1 service time) paid the launches of one.
    passes = math.ceil(20_000 / CHUNK)
    assert passes == 3
    (job, svc) = plan(tmp_path, capsys, """\
        workloads:
          - {name: job, kind: inference, model: llama-3.1-8b, framework: trt-llm, precision: bf16, requests: 1,
             input_tokens: 20000, output_tokens: 100, gpu: h100-80gb, gpus: 1}
          - {name: svc, kind: inference, model: llama-3.1-8b, framework: sglang, precision: bf16, request_rate: 0.5,
             input_tokens: 20000, output_tokens: 100, hours: 10, gpu: h100-80gb, gpus: 1}
        """)
    lone = prefill_8b(20_000) + passes * 32 * TRT_PREFILL_LAYER_SECONDS    # 585.1 + 3 × 4.58 = 598.8 ms
    assert lone * 1e3 == pytest.approx(598.8, abs=0.05)
    assert job["inference"]["ttft_ms"] == pytest.approx(lone * 1e3, rel=1e-4)
    assert job["inference"]["prefill_tokens_per_second"] == pytest.approx(20_000 / lone, rel=1e-4)
    assert svc["inference"]["prefill_tokens_per_second"] == pytest.approx(20_000 / lone, rel=1e-4)
    assert "a lone prompt's 3 passes of ≤ 8,192 tokens: 585.1 ms + 3 × 32 layers × 143 µs" in line(svc, "Prefill")
    ttft = line(svc, "TTFT")
    assert "S = 0.5988 s" in ttft and "TTFT = 598.8 ms prefill" in ttft and "3 × (" in ttft


def test_the_prefill_line_prints_the_rate_the_plan_reports(tmp_path, capsys):
    # Before: ': 45,331 prompt tokens/s' right after '= 26.7 ms', the packed rate 1,000 ÷ 22.1 ms, where the
    # plan's prefill_tokens_per_second is the lone prompt's 1,000 ÷ 26.7 ms.
    (svc,) = plan(tmp_path, capsys, """\
        workloads:
          - {name: svc, kind: inference, model: llama-3.1-8b, framework: vllm, precision: bf16, request_rate: 1,
             input_tokens: 1000, output_tokens: 100, hours: 10, gpu: h100-80gb, gpus: 1}
        """)
    lone = prefill_8b(1000) + 32 * TRT_PREFILL_LAYER_SECONDS    # compute-bound: 16.06 GB ÷ 2.41 TB/s = 6.7 ms
    rate = svc["inference"]["prefill_tokens_per_second"]
    assert rate == pytest.approx(1000 / lone, rel=1e-4)
    assert line(svc, "Prefill").endswith(f"= {lone * 1e3:,.1f} ms: 1,000 ÷ {lone * 1e3:,.1f} ms = {rate:,.0f} "
                                         "prompt tokens/s alone")


def _numbers(text: str) -> list[float]:
    return [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.?\d*", text)]


def test_the_batch_job_line_redoes_by_hand(tmp_path, capsys):
    # 200,000 prompts of 1,000 tokens on Llama 3.1 70B over 2 H200 (docs/inference.md's example): the printed
    # prompts × compute + passes × launches, and requests × output ÷ batch × step, give the printed hours.
    (job,) = plan(tmp_path, capsys, """\
        workloads:
          - {name: job, kind: inference, model: llama-3.1-70b, requests: 200k, input_tokens: 1k,
             output_tokens: 512, gpu: h200, gpus: 2, tensor_parallel: 2}
        """)
    text = line(job, "Batch job")
    m = re.match(r"prefill ([\d,]+) prompts × ([\d.]+) ms \+ ([\d,]+) passes of ≤ 8,192 tokens × ([\d.]+) ms of "
                 r"launches = ([\d.]+) h \(([\d,]+) prompt tokens/s\); decode ([\d,]+) × ([\d,]+) ÷ ([\d,]+) × "
                 r"([\d.]+) ms = ([\d.]+) h; ([\d.]+) h(?:, ([\d.]+) h rounded up,)? per run", text)
    assert m, text
    n, compute, passes, launch, prefill_h, rate, n2, out, batch, step, decode_h, total, carried = (
        float(g.replace(",", "")) if g else None for g in m.groups())
    assert passes == math.ceil(200_000 * 1000 / CHUNK) == 24_415
    assert launch == pytest.approx(80 * TRT_PREFILL_LAYER_SECONDS * 1e3, abs=0.05)       # 11.5 ms
    assert (n * compute + passes * launch) / 3.6e6 == pytest.approx(prefill_h, abs=0.01)
    assert rate == pytest.approx(200_000 * 1000 / (prefill_h * 3600), rel=2e-3)
    assert n2 * out / batch * step / 3.6e6 == pytest.approx(decode_h, abs=0.01)
    assert prefill_h + decode_h == pytest.approx(total, abs=0.011)
    # the plan carries the sum rounded up to a hundredth of an hour, and the line says so where that differs
    assert job["runtime_hours"] == (carried if carried is not None else total)
    assert carried is None or total < carried <= total + 0.01 + 1e-9
    assert job["inference"]["prefill_tokens_per_second"] == pytest.approx(rate, abs=0.5)


def test_a_read_bound_batch_job_shows_the_read_and_the_launches_of_its_pass(tmp_path, capsys):
    # 2 prompts of 100 tokens on Llama 3.1 70B over 4 H100: their compute (2 × 5.02 ms) is shorter than one
    # read of the weights (14.6 ms), so the pass costs the read + its launches, beside each prompt's all-reduces.
    (job,) = plan(tmp_path, capsys, """\
        workloads:
          - {name: job, kind: inference, model: llama-3.1-70b, framework: vllm, precision: bf16, requests: 2,
             input_tokens: 100, output_tokens: 10, gpu: h100-80gb, gpus: 4, tensor_parallel: 4}
        """)
    text = line(job, "Batch job")
    m = re.match(r"prefill 2 × ([\d.]+) ms all-reduce \+ 1 pass of ≤ 8,192 tokens × \(([\d.]+) ms one read of the "
                 r"weights, longer than 2 × ([\d.]+) ms compute, \+ ([\d.]+) ms of launches\) = ([\d.]+) s", text)
    assert m, text
    link, read, compute, launch, seconds = (float(g) for g in m.groups())
    compute_hand = (2 * 69_503_033_344 * 100 + 4 * 8192 * 80 * 100**2 / 2) / 4 / (H100_BF16 * TRT_COMPUTE_FRACTION_16BIT)
    assert compute == pytest.approx(compute_hand * 1e3, abs=0.005)
    assert read > 2 * compute
    assert launch == pytest.approx(80 * TRT_PREFILL_LAYER_SECONDS * 1e3, abs=0.05)
    assert (2 * link + read + launch) / 1e3 == pytest.approx(seconds, rel=2e-3)


def test_a_service_by_hours_shows_the_prefill_it_reports(tmp_path, capsys):
    # The hours form reported prefill_tokens_per_second (a lone full context, launches included) with no line
    # to redo it from.
    (svc,) = plan(tmp_path, capsys, """\
        workloads:
          - {name: svc, kind: inference, model: llama-3.1-8b, framework: trt-llm, precision: bf16, hours: 10,
             concurrency: 4, context: 4096, gpu: h100-80gb, gpus: 1}
        """)
    lone = prefill_8b(4096) + 32 * TRT_PREFILL_LAYER_SECONDS
    rate = svc["inference"]["prefill_tokens_per_second"]
    assert rate == pytest.approx(4096 / lone, rel=1e-4)
    assert line(svc, "Prefill").endswith(f"4,096 ÷ {lone * 1e3:,.1f} ms = {rate:,.0f} prompt tokens/s alone")


def test_an_engine_whose_speed_is_refused_claims_no_speed_constants(tmp_path, capsys):
    (svc,) = plan(tmp_path, capsys, """\
        workloads:
          - {name: svc, kind: inference, model: llama-3.1-8b, framework: hf, hours: 10, concurrency: 4,
             context: 4096}
        """)
    assert [r["values"]["engine"] for r in records(svc, "engine-speed-not-modelled")] == [
        "Hugging Face transformers (generate)"]
    assert not records(svc, "engine-speed")     # no bandwidth fraction or launch time claimed
    assert "Prefill" not in {d["label"] for d in svc["inference"]["derivation"]}


def test_the_engine_factors_name_where_the_launch_cost_was_fitted(tmp_path, capsys):
    (svc,) = plan(tmp_path, capsys, """\
        workloads:
          - {name: svc, kind: inference, model: llama-3.1-8b, framework: trt-llm, hours: 10, concurrency: 4,
             context: 4096, gpu: h100-80gb, gpus: 1}
        """)
    source = svc["inference"]["engine_source"]
    assert "perf-overview.md @00f37686" in source
    assert "GPT-J 6B and Falcon-180B" in source and "performance.md @77d24b5f" in source
