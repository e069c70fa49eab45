"""Bounds and cross-field rules: each slip is an input error (exit 2) with its reason, never exit 3.

Every case here ended in exit 3 ("a bug in proposalkit") or printed a 300-digit
number before the bounds table (proposalkit/bounds.py). Numbers are quoted
as the user wrote them ('1e300' is text to YAML 1.1, which needs a dot in a
float), or compactly (1e+300) when YAML read them as numbers.
"""

from __future__ import annotations

import textwrap

import pytest

from proposalkit.cli import main

TRAIN = """\
workloads:
  - name: a
    kind: finetune
    method: lora
    model: llama-3.1-8b
    tokens: 200M
"""

INFERENCE = """\
workloads:
  - name: a
    kind: inference
    model: llama-3.1-8b
    context: 8k
"""

# A GPT-2-shaped model given in the file: a GELU MLP (no gate_proj), 12 heads, 12 layers.
GELU_MODEL = """\
workloads:
  - name: a
    kind: finetune
    method: lora
    tokens: 200M
    model: {layers: 12, hidden: 768, heads: 12, ffn_hidden: 3072, vocab: 50257, mlp: plain}
"""

SEQUENCES = "50× the 2,048-sequence global batch of Llama 3.1 405B"
CASES = {
    "lora targets empty": (
        TRAIN + "    lora: {targets: []}\n",
        "FILE:7: workloads[0].lora.targets: empty list (expected at least one module: q_proj, k_proj, v_proj, "
        "o_proj, gate_proj, up_proj, down_proj, or all-linear)\n"),
    "lora all-linear with a module": (
        TRAIN + "    lora: {targets: [all-linear, q_proj]}\n",
        "FILE:7: workloads[0].lora.targets: 'all-linear' already names every linear module (got [all-linear, "
        "q_proj]; expected all-linear alone, or module names without it)\n"),
    "lora gate_proj on a GELU model": (
        GELU_MODEL + "    lora: {targets: [q_proj, gate_proj]}\n",
        "FILE:7: workloads[0].lora.targets: not a module of this model (got 'gate_proj': a GELU MLP has up_proj "
        "and down_proj only; expected q_proj, k_proj, v_proj, o_proj, up_proj, down_proj or all-linear)\n"),
    "tensor_parallel above gpus": (
        TRAIN + "    gpus: 1\n    tensor_parallel: 2\n",
        "FILE:7: workloads[0].gpus: fewer GPUs than one model copy takes (got 1; tensor_parallel 2 puts one copy "
        "on 2 GPUs, expected a multiple of 2, e.g. 2 or 4)\n"),
    "tp × pp above gpus": (
        TRAIN + "    gpus: 4\n    tensor_parallel: 2\n    pipeline_parallel: 4\n",
        "FILE:7: workloads[0].gpus: fewer GPUs than one model copy takes (got 4; tensor_parallel 2 × "
        "pipeline_parallel 4 puts one copy on 8 GPUs, expected a multiple of 8, e.g. 8 or 16)\n"),
    "tp not dividing gpus": (
        TRAIN + "    gpus: 6\n    tensor_parallel: 4\n",
        "FILE:7: workloads[0].gpus: not a whole number of model copies (got 6; tensor_parallel 4 puts one copy "
        "on 4 GPUs, expected a multiple of 4, e.g. 4 or 8)\n"),
    "tensor_parallel above the model's heads": (
        GELU_MODEL + "    tensor_parallel: 16\n",   # the model above has 12 heads
        "FILE:7: workloads[0].tensor_parallel: more ranks than the model has attention heads (got 16, expected "
        "at most 12: each tensor-parallel rank holds at least one head)\n"),
    "pipeline_parallel above the model's layers": (
        GELU_MODEL + "    pipeline_parallel: 13\n",   # the model above has 12 layers
        "FILE:7: workloads[0].pipeline_parallel: more stages than the model has layers (got 13, expected at most "
        "12: each pipeline stage holds at least one layer)\n"),
    "expert_parallel on a parameter count alone": (
        # {params} names no experts: was exit 3 from the memory model's divisor check.
        TRAIN.replace("model: llama-3.1-8b", "model: {params: 7B}").replace("method: lora", "method: full")
        + "    expert_parallel: 2\n",
        "FILE:7: workloads[0].expert_parallel: the model has no routed experts (got 2; expert parallelism splits a "
        "mixture of experts, expected 1 or nothing for a dense model)\n"),
    "micro_batch 1e300": (
        TRAIN + "    micro_batch: 1e300\n",
        "FILE:7: workloads[0].micro_batch: implausibly large (got '1e300', expected at most 100,000 sequences per "
        f"GPU per step, {SEQUENCES})\n"),
    "micro_batch of 301 digits": (
        TRAIN + "    micro_batch: 1" + "0" * 300 + "\n",
        "FILE:7: workloads[0].micro_batch: implausibly large (got 1e+300, expected at most 100,000 sequences per "
        f"GPU per step, {SEQUENCES})\n"),
    "batch": (
        INFERENCE + "    hours: 10\n    batch: 200k\n",
        "FILE:7: workloads[0].batch: implausibly large (got '200k', expected at most 100,000 concurrent sequences, "
        f"{SEQUENCES})\n"),
    "tokens_per_second 1e-300": (
        TRAIN + "    throughput: {tokens_per_second: 1.0e-300, gpu: a100-80gb}\n",
        "FILE:7: workloads[0].throughput.tokens_per_second: implausibly small (got 1e-300, expected at least 0.1 "
        "tokens per second, one token every 10 s: check the unit is tokens per second, for all GPUs together)\n"),
    "tokens_per_second 1e300 per GPU": (
        TRAIN + "    throughput: {tokens_per_second: 1.0e300, gpu: a100-80gb}\n",
        "FILE:7: workloads[0].throughput.tokens_per_second: implausibly large (got 1e+300 on 1 GPU, expected at "
        "most 10^7 tokens per second per GPU: training even a 10M-parameter model that fast takes 6·10^14 "
        "FLOP/s, most of an H100's dense 16-bit peak)\n"),
    "tokens_per_second too slow for the tokens": (
        # 10^15 tokens at 0.1 tokens/s per GPU, scaled to 10^6 GPUs: 10^15 / 10^5 / 3600 = 2.78e+06 hours.
        TRAIN.replace("tokens: 200M", "tokens: 1000T") + "    throughput: {tokens_per_second: 0.1, gpu: a100-80gb}\n",
        "FILE:7: workloads[0].throughput.tokens_per_second: implausibly small for the tokens (got 0.1: even on "
        "1,000,000 GPUs, 1e+15 tokens would take 2.78e+06 hours, expected a run of at most 100,000 hours (11 "
        "years); check the unit is tokens per second, for all GPUs together)\n"),
    "mfu 1e-300": (
        TRAIN + "    mfu: 1.0e-300\n",
        "FILE:7: workloads[0].mfu: out of range (got 1e-300, expected a fraction from 0.01 to 1, e.g. 0.40 "
        "(Llama 3 measured 0.38–0.43; write 40% as 0.40))\n"),
    "variants": (
        TRAIN + "    variants: 1e300\n",
        "FILE:7: workloads[0].variants: implausibly large (got '1e300', expected at most 100,000 variants, each a "
        "whole run: 100× a large hyperparameter sweep)\n"),
    "concurrency": (
        TRAIN + "    concurrency: 2M\n",
        "FILE:7: workloads[0].concurrency: implausibly large (got '2M', expected at most 10^6 runs at once: each "
        "run holds at least one GPU, and 10^6 GPUs is 10× the largest clusters)\n"),
    "checkpoints_retained": (
        TRAIN + "    storage: {checkpoints_retained: 5000}\n",
        "FILE:7: workloads[0].storage.checkpoints_retained: implausibly large (got 5000, expected at most 1,000 "
        "checkpoints on scratch per run; keep the last few on scratch and archive the rest)\n"),
    "lora rank": (
        TRAIN + "    lora: {rank: 32768}\n",
        "FILE:7: workloads[0].lora.rank: implausibly large (got 32768, expected at most 16,384, the hidden size "
        "of the widest published models (Llama 3.1 405B); a rank at a layer's width is no longer low-rank)\n"),
    "tensor_parallel": (
        TRAIN + "    tensor_parallel: 1e300\n",
        "FILE:7: workloads[0].tensor_parallel: implausibly large (got '1e300', expected at most 128: each "
        "tensor-parallel rank holds at least one attention head, and no published model has more than 128 "
        "(Llama 3.1 405B))\n"),
    "pipeline_parallel": (
        TRAIN + "    pipeline_parallel: 1000\n",
        "FILE:7: workloads[0].pipeline_parallel: implausibly large (got 1000, expected at most 256: each "
        "pipeline stage holds at least one layer, and the deepest published models have about 126 "
        "(Llama 3.1 405B))\n"),
    "zero_stage": (
        TRAIN.replace("method: lora", "method: full") + "    zero_stage: 1e300\n",
        "FILE:7: workloads[0].zero_stage: out of range (got '1e300', expected an integer from 0 to 3, the stages "
        "of DeepSpeed ZeRO (0: none))\n"),
    "model shape dimension": (
        GELU_MODEL.replace("layers: 12", "layers: 1e300"),
        "FILE:6: workloads[0].model.layers: implausibly large (got '1e300', expected at most 10^7, 40× the "
        "largest dimension of a published model (Gemma's 256,000-token vocabulary))\n"),
    "data below one token": (
        TRAIN.replace("tokens: 200M", "data: {samples: 1, seq_len: 1, epochs: 0.1}"),
        "FILE:6: workloads[0].data: implausibly small (got 1 samples × 1 tokens × 0.1 epochs = 0.1 tokens, "
        "expected at least 1 token)\n"),
    "long text is quoted by its start": (
        TRAIN.replace("kind: finetune", "kind: " + "x" * 1000),
        "FILE:3: workloads[0].kind: unknown kind (got '" + "x" * 60 + "'… (1,000 characters), expected finetune, "
        "pretrain or inference)\n"),
    "batch inference by tokens without a pilot": (
        INFERENCE + "    tokens: 1B\n",
        "FILE:6: workloads[0].tokens: batch inference by tokens needs a measured rate or the requests (expected "
        "requests: 200k, input_tokens: 1k, output_tokens: 256 for an estimate, or throughput: {tokens_per_second, "
        "gpu, gpus} from a pilot run)\n"),
}


@pytest.mark.parametrize("content, expected", CASES.values(), ids=CASES.keys())
def test_input_error(tmp_path, capsys, content, expected):
    path = tmp_path / "w.yaml"
    path.write_text(textwrap.dedent(content), encoding="utf-8")
    assert main(["plan", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.err.replace(str(path), "FILE") == expected
    assert captured.out == ""


ACCEPTED = {
    "tp × pp dividing gpus": TRAIN + "    gpus: 8\n    tensor_parallel: 2\n    pipeline_parallel: 2\n",
    "bounds themselves": TRAIN + "    micro_batch: 1\n    variants: 100000\n    storage: {checkpoints_retained: 1000}\n",
    "pilot at the lower rate bound": TRAIN + "    throughput: {tokens_per_second: 0.1, gpu: a100-80gb}\n",
    "batch inference by tokens with a pilot": INFERENCE + "    tokens: 1B\n"
                                              "    throughput: {tokens_per_second: 2000, gpu: a100-80gb}\n",
}


@pytest.mark.parametrize("content", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_accepted(tmp_path, capsys, content):
    path = tmp_path / "w.yaml"
    path.write_text(textwrap.dedent(content), encoding="utf-8")
    code = main(["plan", str(path)])
    assert code == 0, capsys.readouterr().err


def test_every_bound_has_its_reason():
    """One table: each bound states its range in its message, and its source comment sits above it."""
    import inspect

    from proposalkit import bounds

    source = inspect.getsource(bounds)
    for name, bound in bounds.BOUNDS.items():
        assert bound.low <= bound.high, name
        assert bound.reason, name
        line = next(i for i, text in enumerate(source.splitlines()) if text.strip().startswith(f'"{name}": Bound('))
        assert source.splitlines()[line - 1].strip().startswith("#"), f"{name}: no comment with its reason"
