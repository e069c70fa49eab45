"""Inference fields through the CLI: each slip an input error (exit 2) with FILE:LINE: field and what to give.

The forms (input/inference_rules.py): a batch job (requests, input_tokens, output_tokens), a service
sized by load (request_rate, input_tokens, output_tokens, hours, optional ttft_ms/tpot_ms), a service
as declared (hours, context, batch), or tokens with a measured throughput.
"""

from __future__ import annotations

import textwrap

import pytest

from proposalkit.cli import main

HEAD = """\
workloads:
  - name: a
    kind: inference
    model: llama-3.1-8b
"""

CASES = {
    "tokens alone says which fields to give": (
        HEAD + "    tokens: 1B\n",
        "FILE:5: workloads[0].tokens: batch inference by tokens needs a measured rate or the requests (expected "
        "requests: 200k, input_tokens: 1k, output_tokens: 256 for an estimate, or throughput: {tokens_per_second, "
        "gpu, gpus} from a pilot run)\n"),
    "requests without lengths": (
        HEAD + "    requests: 200k\n",
        "FILE:2: workloads[0].input_tokens: required for a batch job of requests (expected prompt tokens per "
        "request, e.g. 1k)\n"
        "FILE:2: workloads[0].output_tokens: required for a batch job of requests (expected generated tokens per "
        "request, e.g. 256)\n"),
    "batch job and service mixed": (
        HEAD + "    requests: 200k\n    input_tokens: 1k\n    output_tokens: 256\n    request_rate: 5\n"
               "    hours: 100\n",
        "FILE:8: workloads[0].request_rate: a batch job (requests) and a service (request_rate) in one workload "
        "(expected one of them; plan the two as separate workloads)\n"
        "FILE:9: workloads[0].hours: a batch job's runtime is computed from its requests (got hours too; expected "
        "hours only for a service)\n"),
    "requests with tokens": (
        HEAD + "    requests: 200k\n    input_tokens: 1k\n    output_tokens: 256\n    tokens: 1B\n",
        "FILE:8: workloads[0].tokens: given twice (expected requests, input_tokens and output_tokens, or tokens "
        "with a measured throughput, not both)\n"),
    "context beside input and output tokens": (
        HEAD + "    requests: 200k\n    input_tokens: 1k\n    output_tokens: 256\n    context: 8k\n",
        "FILE:8: workloads[0].context: given twice: a batch job of requests runs input_tokens + output_tokens per "
        "sequence (expected context only for a service by hours and batch)\n"),
    # Llama 3.1's max_position_embeddings is 131072 (meta-llama/Llama-3.1-8B config.json):
    # 130,000 + 2,000 = 132,000 > 131,072.
    "beyond the context window": (
        HEAD + "    requests: 10\n    input_tokens: 130k\n    output_tokens: 2k\n",
        "FILE:7: workloads[0].output_tokens: input_tokens + output_tokens = 130,000 + 2,000 = 132,000 tokens "
        "exceeds llama-3.1-8b's maximum context of 131,072 (expected at most 131,072 tokens per request)\n"),
    "context beyond the window (service by hours)": (
        HEAD + "    context: 200k\n    hours: 10\n",
        "FILE:5: workloads[0].context: 200,000 tokens exceeds llama-3.1-8b's maximum context of 131,072 "
        "(expected at most 131,072)\n"),
    "request_rate without hours": (
        HEAD + "    request_rate: 5\n    input_tokens: 1k\n    output_tokens: 256\n",
        "FILE:2: workloads[0].hours: required for a service sized by request_rate (expected the hours it is kept "
        "up, e.g. 720 for a month)\n"),
    "latency target without request_rate": (
        HEAD + "    context: 8k\n    hours: 10\n    ttft_ms: 500\n",
        "FILE:7: workloads[0].ttft_ms: a latency target sizes a service by its load (expected request_rate beside "
        "it, e.g. request_rate: 5, input_tokens: 1k, output_tokens: 256, hours: 720)\n"),
    "lengths without requests or request_rate": (
        HEAD + "    context: 8k\n    hours: 10\n    input_tokens: 1k\n",
        "FILE:7: workloads[0].input_tokens: applies to a batch job or a service sized by load (expected requests "
        "beside it, e.g. requests: 200k, input_tokens: 1k, output_tokens: 256; or request_rate, e.g. "
        "request_rate: 5, input_tokens: 1k, output_tokens: 256, hours: 720)\n"),
    "requests with a pilot": (
        HEAD + "    requests: 200k\n    input_tokens: 1k\n    output_tokens: 256\n"
               "    throughput: {tokens_per_second: 2000, gpu: a100-80gb}\n",
        "FILE:8: workloads[0].throughput: the rate of a batch job by requests or a service by request_rate is "
        "estimated (expected throughput only with tokens)\n"),
    "nothing to plan": (
        HEAD,
        "FILE:2: workloads[0].hours: required for inference (expected a batch job, e.g. requests: 200k, "
        "input_tokens: 1k, output_tokens: 256; a service by load, e.g. request_rate: 5, input_tokens: 1k, "
        "output_tokens: 256, hours: 720; or hours with context and batch)\n"
        "FILE:2: workloads[0].context: required for inference (expected tokens per sequence, e.g. 8k)\n"),
    "inference fields on training": (
        "workloads:\n  - name: a\n    kind: finetune\n    method: lora\n    model: llama-3.1-8b\n"
        "    tokens: 1M\n    request_rate: 5\n",
        "FILE:7: workloads[0].request_rate: only for inference (got request_rate on finetune; expected it only on "
        "kind: inference)\n"),
    "the vLLM benchmark's name": (
        HEAD + "    num_prompts: 1000\n",
        "FILE:5: workloads[0].num_prompts: unknown field 'num_prompts'; did you mean 'requests'?\n"),
    # Bounds (proposalkit/bounds.py), each with its reason.
    "request_rate a slip of the unit": (
        HEAD + "    request_rate: 5M\n    input_tokens: 1k\n    output_tokens: 256\n    hours: 10\n",
        "FILE:5: workloads[0].request_rate: implausibly large (got '5M', expected from 10^-6 to 10^6 requests per "
        "second (35× the ~29,000/s of ChatGPT's reported 2.5 billion prompts a day); check the unit is requests "
        "per second)\n"),
    "ttft in seconds": (
        HEAD + "    request_rate: 5\n    input_tokens: 1k\n    output_tokens: 256\n    hours: 10\n"
               "    ttft_ms: 0.5\n",
        "FILE:9: workloads[0].ttft_ms: implausibly small (got 0.5, expected from 1 ms to 3,600,000 ms (one hour) "
        "to the first token; check the unit is milliseconds)\n"),
    "requests beyond the token bound": (
        HEAD + "    requests: 1T\n    input_tokens: 100k\n    output_tokens: 10k\n",
        "FILE:5: workloads[0].requests: implausibly large (got 1,000,000,000,000 requests × 110,000 tokens = "
        "1.1e+17 tokens, expected at most 10^15 tokens, 64× the 15.6T Llama 3 was pretrained on)\n"),
}


@pytest.mark.parametrize("content, expected", CASES.values(), ids=CASES.keys())
def test_input_error(tmp_path, capsys, content, expected):
    path = tmp_path / "w.yaml"
    path.write_text(textwrap.dedent(content), encoding="utf-8")
    assert main(["plan", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.err.replace(str(path), "FILE") == expected
    assert captured.out == ""
