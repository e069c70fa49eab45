"""The end of the backward with tied embeddings, through the workload file.

A model whose input embeddings and output projection share one weight (Llama 3.2 3B: tie_word_embeddings true,
vocab 128,256 × hidden 3,072) holds that weight's gradient from the output projection's backward on; at the
end of the backward the embedding's backward computes a second v × h gradient and autograd adds it into the
first in place (AccumulateGrad: `variable_grad += new_grad`, pytorch/pytorch @ dc80ccde
torch/csrc/autograd/functions/accumulate_grad.h), both held at once beside every gradient, after the
layers' activations are freed, with the hidden-state gradient the embedding's backward reads.

torchtune preset (pure bf16: weights 2 + gradients 2 + AdamW moments 4 B/param), 3,212,749,824 parameters,
512 tokens, full checkpointing, gradient_accumulation_steps 1:
  weights + gradients + optimizer   8 × 3,212,749,824          = 25,701,998,592 B
  the second gradient               128,256 × 3,072 × 2        =    788,004,864 B
  hidden-state gradient             512 × 3,072 × 2            =      3,145,728 B
  end of the backward                                           = 26,493,149,184 B allocated
The backward moment counted before (every gradient, the checkpointed layer inputs, one layer recomputed)
was 25,874,014,208 B, 619 MB below it.
"""

from __future__ import annotations
from conftest import records

from proposalkit.units import memory_carried

P = 3_212_749_824
TIED = 128_256 * 3_072 * 2
HIDDEN = 512 * 3_072 * 2
AT_END = 8 * P + TIED + HIDDEN

HEADER = """\
defaults:
  kind: finetune
  method: full
  tokens: 10M
  seq_len: 512
  micro_batch: 1
  gpu: a100-80gb
  gpus: 1
  zero_stage: 0
  activation_checkpointing: true
  framework: torchtune
  gradient_accumulation_steps: 1
workloads:
"""



def test_the_hand_count():
    assert AT_END == 26_493_149_184


def test_tied_embeddings_peak_at_the_end_of_the_backward(plan_workloads):
    got = plan_workloads(HEADER + "  - {name: w, model: llama-3.2-3b}\n")["w"]
    mem = got["memory"]["estimate"]
    assert mem["allocated_bytes"] == AT_END
    assert mem["components"]["gradients"] == 2 * P + TIED
    assert mem["components"]["activations"] == HIDDEN
    assert mem["phases"]["peak"] == "backward" and mem["phases"]["backward_allocated_bytes"] == AT_END
    assert sum(mem["components"].values()) == mem["per_gpu_bytes"]
    (tied,) = records(got, "tied-embeddings-end")
    # As printed: each figure rounded up to 0.01 GiB, the moment counted the printed allocated figure.
    assert tied["values"] == {"second_gradient_bytes": memory_carried(TIED),
                              "allocated_bytes": got["memory"]["allocated_bytes"]}
    assert [r["values"]["peak"] for r in records(got, "peak-phase")] == ["end"]


def test_untied_and_in_backward_steps_have_no_second_gradient(plan_workloads):
    got = plan_workloads(HEADER + "  - {name: untied, model: llama-3.1-8b}\n"
                                  "  - {name: in-bwd, model: llama-3.2-3b, optimizer_in_backward: true}\n")
    for name in ("untied", "in-bwd"):
        assert not records(got[name], "tied-embeddings-end"), name
