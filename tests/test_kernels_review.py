"""What the kernel assumptions say where eager PyTorch adds nothing, and compile under Megatron-LM.

GPT-2 (openai-community/gpt2 config.json: LayerNorm, a plain GELU MLP, multi-head attention): eager
native_layer_norm saves its input, mean and rstd, as the fused count has them, and GELU saves its input
only, so eager and compiled plans keep the same activation bytes, and the eager assumption says nothing
is added rather than naming RMSNorm copies and gated-MLP outputs the model does not have. Megatron-LM runs
its own fused kernels (Transformer Engine): compile: true is stated as changing nothing, not dropped
silently.
"""

from __future__ import annotations
from conftest import records

HEADER = """\
defaults:
  kind: finetune
  method: full
  tokens: 10M
  gpus: 1
workloads:
"""



def test_gpt2_eager_adds_nothing_and_says_so(plan_workloads):
    got = plan_workloads(HEADER + "  - {name: eager, model: gpt2, seq_len: 1024, micro_batch: 8, compile: false}\n"
                                  "  - {name: compiled, model: gpt2, seq_len: 1024, micro_batch: 8, compile: true}\n")
    assert (got["eager"]["memory"]["components"]["activations"]
            == got["compiled"]["memory"]["components"]["activations"])
    assert records(got["eager"], "eager-no-extras") and not records(got["eager"], "eager-extras")


def test_llama_eager_names_its_extras(plan_workloads):
    got = plan_workloads(HEADER + "  - {name: w, model: llama-3.2-1b, seq_len: 1024, micro_batch: 1, compile: false}\n")
    assert records(got["w"], "eager-extras")


def test_compile_under_megatron_is_stated(plan_workloads):
    got = plan_workloads(HEADER + "  - {name: stated, model: llama-3.1-8b, kind: pretrain, gpus: 8, seq_len: 4096, "
                                  "micro_batch: 1, framework: megatron, compile: true}\n"
                                  "  - {name: unset, model: llama-3.1-8b, kind: pretrain, gpus: 8, seq_len: 4096, "
                                  "micro_batch: 1, framework: megatron}\n")
    assert got["stated"]["memory"]["allocated_bytes"] == got["unset"]["memory"]["allocated_bytes"]
    assert [r["values"]["compile"] for r in records(got["stated"], "framework-fused-kernels")] == [True]
    assert [r["values"]["compile"] for r in records(got["unset"], "framework-fused-kernels")] == [False]
