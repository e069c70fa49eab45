"""A service's TTFT counts the running batch's decode work inside the prompt's own prefill passes
(estimate/serving.py Ride): under chunked prefill each pass carries every running sequence's next token
beside up to a chunk of prompt tokens, so a prompt of ⌈input ÷ chunk⌉ passes waits for that work in each."""

from __future__ import annotations

import json
import re

import pytest

from proposalkit.cli import main
from proposalkit.catalog.engines import TRT_BANDWIDTH_FRACTION as BW_FRACTION
from proposalkit.catalog.engines import TRT_COMPUTE_FRACTION_16BIT as FLOP_FRACTION

# Llama 3.1 8B (config.json: 32 layers, 8 KV heads × 128, bf16): 131,072 B of KV per token; its matmul
# parameters (the embedding lookup left out, the LM head in) 7,504,924,672. H100 SXM: 989 TFLOP/s dense
# bf16, 3.35 TB/s (datasheet).
KV_PER_TOKEN, MATMUL_PARAMS = 131_072, 7_504_924_672
H100_FLOPS, H100_BANDWIDTH = 989e12, 3.35e12


def ttft_line(tmp_path, capsys, fields: str) -> tuple[dict, str]:
    """Plan a Llama 3.1 8B service on one H100 with `fields`; its inference block and TTFT line."""
    path = tmp_path / "w.yaml"
    path.write_text("proposal: {title: t, pi: p, institution: i}\nworkloads:\n"
                    "  - {name: s, kind: inference, model: llama-3.1-8b, gpu: h100-80gb, tensor_parallel: 1,\n"
                    f"     {fields}, hours: 100}}\n")
    assert main(["plan", "--format", "json", str(path)]) == 0
    inf = json.loads(capsys.readouterr().out)["workloads"][0]["inference"]
    return inf, next(d["text"] for d in inf["derivation"] if d["label"] == "TTFT")


def test_a_long_prompt_waits_for_the_batch_in_each_of_its_four_passes(tmp_path, capsys):
    inf, line = ttft_line(tmp_path, capsys, "request_rate: 2, input_tokens: 32k, output_tokens: 512, ttft_ms: 3000")
    batch = inf["batch"]
    # ⌈32,000 ÷ 8,192⌉ = 4 passes (vLLM's chunk); in each, the batch's attention reads its KV cache at the
    # mean context 32,000 + 256 (memory-bound: 4·L·c·a·d FLOPs per sequence take 1/70 of the read) and
    # its tokens' matmuls take 2·P·batch FLOPs.
    attention = batch * 32_256 * KV_PER_TOKEN / (H100_BANDWIDTH * BW_FRACTION)
    linear = 2 * MATMUL_PARAMS * batch / (H100_FLOPS * FLOP_FRACTION)
    running = f"{batch} running sequence{'s' if batch > 1 else ''}"
    assert (f"+ 4 × ({attention * 1e3:.3g} ms attention + {linear * 1e3:.3g} ms matrix multiplies of the "
            f"{running}) in its prefill passes (chunks of 8,192 tokens) = ") in line
    # The TTFT is the sum of the parts printed (before: without the 4 × (…) term, 14.2 ms less here).
    parts = re.search(r"TTFT = ([\d,.]+) ms prefill \+ ([\d,.]+) ms \+ ([\d,.]+) ms decode step under way", line)
    prefill, wait, step = (float(x.replace(",", "")) for x in parts.groups())
    assert inf["ttft_ms"] == pytest.approx(prefill + wait + step + 4 * (attention + linear) * 1e3, abs=0.1)
    assert inf["ttft_ms"] <= 3000


def test_a_prompt_within_one_chunk_waits_once(tmp_path, capsys):
    _, line = ttft_line(tmp_path, capsys, "request_rate: 10, input_tokens: 8192, output_tokens: 256, ttft_ms: 2000")
    assert "decode step under way + (" in line and "in its prefill pass (chunks of 8,192 tokens)" in line
