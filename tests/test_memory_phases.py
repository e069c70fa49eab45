"""`gradient_accumulation_steps` and the gradients that do not coexist with the loss peak, through the workload file.

Llama 3.2 3B (meta-llama/Llama-3.2-3B config.json: hidden_size 3,072, num_hidden_layers 28, vocab_size 128,256,
tie_word_embeddings true; 3,212,749,824 parameters), torchtune preset: pure bf16, so weights and gradients
2 B/param and AdamW moments 2 + 2 (torchtune docs, memory_optimizations.rst). seq_len 4,096 × micro_batch 2 =
8,192 tokens, bf16 activations (e = 2).

With gradient_accumulation_steps 1 and the gradients freed after each step (zero_grad(set_to_none=True):
pytorch/pytorch @ 002d2f0b torch/optim/optimizer.py; torchtune @ 01067f61 recipes/full_finetune_single_device.py),
the loss peaks when only the output projection's gradient exists:
  output projection (tied embedding) gradient   128,256 · 3,072 · 2   =   788,004,864 B
  hidden-state gradient it writes               8,192 · 3,072 · 2     =    50,331,648 B
  every gradient                                3,212,749,824 · 2     = 6,425,499,648 B
so the loss phase is the summed plan minus 6,425,499,648 − 788,004,864 − 50,331,648 = 5,587,163,136 B, and the
backward phase is the summed plan minus the loss's peak (no checkpointing: nothing recomputed):
  standard loss (fp32-upcast cross-entropy, 12 B per logit)   12 · 8,192 · 128,256 = 12,608,077,824 B
  compiled chunked loss (2.75 B per logit + 8 B per row)      2,889,351,168 + 65,536 = 2,889,416,704 B
"""

from __future__ import annotations

import pytest

from proposalkit.cli import main
from proposalkit.units import memory_carried
from conftest import records

P = 3_212_749_824
GRADIENTS = 2 * P                                   # 6,425,499,648
HEAD_GRADIENT = 128_256 * 3_072 * 2                 # 788,004,864
HIDDEN_GRADIENT = 4096 * 2 * 3_072 * 2              # 50,331,648
STANDARD_LOSS = 12 * 4096 * 2 * 128_256             # 12,608,077,824
COMPILED_CHUNKED_LOSS = 11 * 4096 * 2 * 128_256 // 4 + 8 * 4096 * 2   # 2,889,416,704
LOGITS = 4096 * 2 * 128_256
AT_HEAD = 3 * HEAD_GRADIENT + 6 * 2 * LOGITS // 8 + 2 * HIDDEN_GRADIENT // 8   # the chunked loss's head backward

HEADER = """\
defaults:
  model: llama-3.2-3b
  kind: finetune
  method: full
  tokens: 10M
  seq_len: 4096
  micro_batch: 2
  gpu: h200
  gpus: 1
  zero_stage: 0
  framework: torchtune
  compile: true
  activation_checkpointing: false
workloads:
"""


def _mem(w: dict) -> dict:
    return w["memory"]["estimate"]



def test_the_hand_counts():
    assert GRADIENTS - HEAD_GRADIENT - HIDDEN_GRADIENT == 5_587_163_136
    assert STANDARD_LOSS == 12_608_077_824 and COMPILED_CHUNKED_LOSS == 2_889_416_704


def test_ga_1_on_one_gpu_peaks_at_the_loss_without_the_other_gradients(plan_workloads):
    got = plan_workloads(HEADER + "  - {name: summed, loss: standard}\n"
                                  "  - {name: stepped, loss: standard, gradient_accumulation_steps: 1}\n")
    summed, stepped = _mem(got["summed"]), _mem(got["stepped"])
    assert "phases" not in summed
    assert stepped["phases"] == {
        "peak": "loss",
        "loss_allocated_bytes": summed["allocated_bytes"] - 5_587_163_136,
        "backward_allocated_bytes": summed["allocated_bytes"] - STANDARD_LOSS,
        "gradients_bytes": GRADIENTS,
    }
    assert stepped["allocated_bytes"] == summed["allocated_bytes"] - 5_587_163_136
    # The components are those of the peak: the output projection's gradient, the hidden-state gradient with
    # the activations; they still add up to the total.
    assert stepped["components"]["gradients"] == HEAD_GRADIENT
    assert stepped["components"]["activations"] == summed["components"]["activations"] + HIDDEN_GRADIENT
    assert sum(stepped["components"].values()) == stepped["per_gpu_bytes"]
    assert got["stepped"]["settings"]["gradient_accumulation_steps"] == 1
    assert "gradient_accumulation_steps" not in got["summed"]["settings"]
    (phase,) = records(got["stepped"], "peak-phase")
    # The note's figures as printed: rounded up to 0.01 GiB (estimate/breakdown.as_printed).
    assert phase["values"]["peak"] == "loss" and phase["values"]["gradient_bytes"] == memory_carried(GRADIENTS)


def test_ga_1_peaks_later_in_the_backward_when_the_loss_is_small(plan_workloads):
    got = plan_workloads(HEADER + "  - {name: summed, loss: chunked}\n"
                                  "  - {name: stepped, loss: chunked, gradient_accumulation_steps: 1}\n")
    summed, stepped = _mem(got["summed"]), _mem(got["stepped"])
    # The loss moment's largest instant is the output projection's backward adding its second chunk's weight
    # gradient out of place (estimate/loss.py): three v × h gradients, 6/8 of the 16-bit logit gradients and 2/8
    # of the hidden-state gradient, 3,952,607,232 B, above the loss's own 2,889,416,704 + 788,004,864 + 50,331,648
    # = 3,727,753,216 B; the summed plan (gradients persist) peaks there too, every gradient beside it.
    assert AT_HEAD == 3 * HEAD_GRADIENT + 6 * 2 * LOGITS // 8 + HIDDEN_GRADIENT // 4 == 3_952_607_232
    assert AT_HEAD > COMPILED_CHUNKED_LOSS + HEAD_GRADIENT + HIDDEN_GRADIENT
    # 3,952,607,232 < 6,425,499,648: every gradient outweighs the loss moment.
    assert stepped["phases"]["peak"] == "backward"
    assert stepped["allocated_bytes"] == summed["allocated_bytes"] - AT_HEAD
    assert stepped["phases"]["loss_allocated_bytes"] == summed["allocated_bytes"] - GRADIENTS
    assert stepped["components"]["gradients"] == GRADIENTS
    assert sum(stepped["components"].values()) == stepped["per_gpu_bytes"]
    (phase,) = records(got["stepped"], "peak-phase")
    # The note's figures as printed: the moment counted is the printed allocated figure (as_printed).
    printed = got["stepped"]["memory"]
    assert phase["values"] == {"peak": "backward", "loss_bytes": printed["phases"]["loss_allocated_bytes"],
                               "backward_bytes": printed["allocated_bytes"],
                               "gradient_bytes": memory_carried(GRADIENTS)}
    assert printed["phases"]["loss_allocated_bytes"] == memory_carried(stepped["phases"]["loss_allocated_bytes"])


def test_unset_and_accumulating_keep_the_sum(plan_workloads):
    got = plan_workloads(HEADER + "  - {name: unset, loss: standard}\n"
                                  "  - {name: four, loss: standard, gradient_accumulation_steps: 4}\n")
    unset, four = _mem(got["unset"]), _mem(got["four"])
    assert four["allocated_bytes"] == unset["allocated_bytes"]
    assert four["components"]["gradients"] == unset["components"]["gradients"] == GRADIENTS
    assert "phases" not in four and "phases" not in unset
    # Unset, where 1 would change the figure, the assumption says how to state it.
    assert [r["values"]["why"] for r in records(got["unset"], "gradients-beside-loss")] == [None]   # unset
    (four_why,) = records(got["four"], "gradients-beside-loss")
    assert "4 micro-batches" in four_why["values"]["why"]


@pytest.mark.parametrize("fields, reason", [
    # DDP over 2 GPUs: the reducer's buckets persist (torch/csrc/distributed/c10d/reducer.cpp).
    ("framework: hf-trainer, gpus: 2, zero_stage: 0, mixed_precision: false", "reducer buckets"),
    ("framework: deepspeed, zero_stage: 1, gpus: 2", "DeepSpeed keeps gradient buffers"),
    ("framework: deepspeed, zero_stage: 0", "DeepSpeed keeps gradient buffers"),
    ("framework: megatron", "Megatron-LM's contiguous main-gradient buffer"),
    ("pipeline_parallel: 2, gpus: 2", "pipeline schedule accumulates"),
    ("optimizer_in_backward: true", "optimizer step in backward"),
    ("method: lora", "adapters' gradients are small"),
])
def test_where_gradients_persist_the_sum_stays(plan_workloads, fields, reason):
    got = plan_workloads(HEADER + f"  - {{name: unset, loss: standard, {fields}}}\n"
                                  f"  - {{name: one, loss: standard, gradient_accumulation_steps: 1, {fields}}}\n")
    assert _mem(got["one"])["allocated_bytes"] == _mem(got["unset"])["allocated_bytes"]
    assert "phases" not in _mem(got["one"])
    (why,) = records(got["one"], "gradients-beside-loss")
    assert reason in why["values"]["why"]


def test_torchtune_fsdp_frees_its_sharded_gradients(plan_workloads):
    got = plan_workloads(HEADER + "  - {name: summed, loss: standard, gpus: 2, zero_stage: 3}\n"
                                  "  - {name: stepped, loss: standard, gpus: 2, zero_stage: 3, "
                                  "gradient_accumulation_steps: 1}\n")
    # FSDP over 2: the gradient shard P/2 · 2 B plus the largest unit's unsharded gradient before its
    # reduce-scatter (the 128,256 × 3,072 embedding, 788,004,864 B) and FSDP2's reduce-scatter input it is
    # copied into, in the gradients' bf16 (torchtune gives no mixed-precision policy; pytorch/pytorch @ 415cc262
    # _fsdp_collectives.py foreach_reduce), another 788,004,864 B = 4,788,759,552 B.
    sharded = P + 2 * HEAD_GRADIENT
    summed, stepped = _mem(got["summed"]), _mem(got["stepped"])
    assert summed["components"]["gradients"] == sharded == 4_788_759_552
    assert stepped["phases"]["peak"] == "loss" and stepped["phases"]["gradients_bytes"] == sharded
    assert stepped["allocated_bytes"] == summed["allocated_bytes"] - (sharded - HEAD_GRADIENT - HIDDEN_GRADIENT)
    assert stepped["components"]["gradients"] == HEAD_GRADIENT


def test_defaults_set_it_for_every_workload(plan_workloads):
    got = plan_workloads(HEADER.replace("workloads:\n", "  gradient_accumulation_steps: 1\nworkloads:\n")
                         + "  - {name: a, loss: standard}\n")
    assert _mem(got["a"])["phases"]["peak"] == "loss"


@pytest.mark.parametrize("value, message", [
    ("0", "gradient_accumulation_steps: not a positive integer (got 0"),
    ("1.5", "gradient_accumulation_steps: not a positive integer (got 1.5"),
    ("two", "gradient_accumulation_steps: not a number (got 'two'"),
    ("200k", "gradient_accumulation_steps: implausibly large (got '200k', expected at most 100,000"),
])
def test_bad_values_are_input_errors(tmp_path, capsys, value, message):
    path = tmp_path / "w.yaml"
    path.write_text(HEADER + f"  - name: a\n    loss: standard\n    gradient_accumulation_steps: {value}\n",
                    encoding="utf-8")
    assert main(["plan", str(path), "--format", "json"]) == 2
    err = capsys.readouterr().err
    # The line of the field (17: the header's 15 lines, the name, the field); long lines are shortened in the middle.
    assert err.startswith(f"{path}:17: workloads[0].gradient_accumulation_steps: ")
    assert message.split(": ", 1)[1][:25] in err


def test_accumulating_under_the_step_in_backward_is_refused(tmp_path, capsys):
    path = tmp_path / "w.yaml"
    path.write_text(HEADER + "  - name: a\n    optimizer_in_backward: true\n    gradient_accumulation_steps: 8\n",
                    encoding="utf-8")
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:17: workloads[0].gradient_accumulation_steps: ")
    assert "(got 8 with optimizer_in_backward, expected 1 or nothing)" in err


def test_inference_refuses_it(tmp_path, capsys):
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n  - {name: s, kind: inference, model: llama-3.2-3b, context: 4k, hours: 10,\n"
                    "     gradient_accumulation_steps: 1}\n", encoding="utf-8")
    assert main(["plan", str(path)]) == 2
    assert "gradient_accumulation_steps: not used by inference" in capsys.readouterr().err


def test_autocast_over_fp32_parameters_has_an_fp32_output_gradient(plan_workloads):
    # hf-trainer full fine-tune under bf16 AMP: fp32 parameters, so the output projection's gradient the loss's
    # backward writes is fp32: 128,256 · 3,072 · 4 = 1,576,009,728 B (estimate/phases.py head_gradient_bytes).
    got = plan_workloads(HEADER + "  - {name: hf, framework: hf-trainer, loss: standard, mixed_precision: true, "
                                  "gradient_accumulation_steps: 1}\n")
    memory = _mem(got["hf"])
    assert memory["phases"]["peak"] == "loss"
    assert memory["components"]["gradients"] == 2 * HEAD_GRADIENT == 1_576_009_728


def test_the_report_says_which_moment_is_counted(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text("proposal: {title: T, pi: A, institution: U}\n"
                    + HEADER.replace("defaults:\n", "defaults:\n  gradient_accumulation_steps: 1\n")
                    + "  - {name: loss-peak, loss: standard}\n  - {name: backward-peak, loss: chunked}\n",
                    encoding="utf-8")
    assert main(["report", str(path), "-o", str(tmp_path / "out")]) == 0
    text = (tmp_path / "out" / "supplement.md").read_text(encoding="utf-8")
    # The body's memory line of each workload, and the assumption with both phases.
    assert "0.74 gradients" in text and "; at the loss peak, before the other gradients exist)" in text
    assert "5.99 gradients" in text and "; later in the backward, the loss's buffers freed)" in text
    assert "all 5.99 GiB of gradients exist only later in the backward" in text
