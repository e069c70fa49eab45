"""The optimizer step as a moment of its own, through the workload file.

torch.optim.AdamW given neither foreach nor fused runs the foreach implementation on CUDA, and
_multi_tensor_adam allocates `exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)`, one tensor the size
and dtype of each second moment, before `_foreach_addcdiv_` applies the update (pytorch/pytorch @ dc80ccde
torch/optim/adam.py). torchtitan's AdamW is foreach unless --optimizer.fused is given (torchtitan @ 5cffd5ac
optimizer.py); the Hugging Face Trainer's default is the fused AdamW where torch >= 2.8 (transformers PR #37358),
which updates in place. By then the backward has freed every activation; weights, gradients and optimizer states
are live.

Llama 3.2 1B (meta-llama/Llama-3.2-1B config.json: hidden 2,048, 16 layers, vocab 128,256, tied embeddings;
1,235,814,400 parameters), torchtitan preset on one GPU: fp32 parameters (FSDP2's mixed precision over fp32
shards), so weights 4 + gradients 4 + Adam moments 8 B/param, and the temporary 4 B/param (fp32 second moments):
  step moment   1,235,814,400 × (4 + 4 + 8 + 4) = 1,235,814,400 × 20 = 24,716,288,000 B allocated.
With full checkpointing at 512 tokens the activations (the layer inputs and the loss) come to less than the 4,943,257,600 B temporary, so the step is the peak.
"""

from __future__ import annotations

import pytest
from conftest import records

from proposalkit.units import memory_carried

P = 1_235_814_400
TEMPORARY = 4 * P                       # 4,943,257,600: fp32 exp_avg_sq's square roots
AT_STEP = (4 + 4 + 8) * P + TEMPORARY   # 24,716,288,000

HEADER = """\
defaults:
  model: llama-3.2-1b
  kind: finetune
  method: full
  tokens: 10M
  seq_len: 512
  micro_batch: 1
  gpu: a100-80gb
  gpus: 1
  zero_stage: 0
  activation_checkpointing: true
workloads:
"""



def test_the_hand_count():
    assert AT_STEP == 24_716_288_000


def test_a_foreach_adamw_peaks_at_its_step(plan_workloads):
    got = plan_workloads(HEADER + "  - {name: stepped, framework: torchtitan, gradient_accumulation_steps: 1}\n"
                                  "  - {name: summed, framework: torchtitan, gradient_accumulation_steps: 4}\n")
    for name in ("stepped", "summed"):
        mem = got[name]["memory"]["estimate"]
        assert mem["allocated_bytes"] == AT_STEP, name
        assert mem["phases"]["peak"] == "step" and mem["phases"]["step_allocated_bytes"] == AT_STEP
        # At the step the activations are freed; the temporary is shown within the optimizer figure.
        assert mem["components"]["activations"] == 0
        assert mem["components"]["weights"] + mem["components"]["gradients"] + mem["components"]["optimizer"] == AT_STEP
        assert sum(mem["components"].values()) == mem["per_gpu_bytes"]
        (step,) = records(got[name], "optimizer-step")
        # The note states the moment counted as printed: the allocated figure, the sum of the printed components.
        assert step["values"]["allocated_bytes"] == got[name]["memory"]["allocated_bytes"] >= AT_STEP
        assert step["values"]["counted"]
        assert step["values"]["why"].startswith("torchtitan's AdamW with foreach")
    # The phase rule's own line says the step outweighs the two moments it compares.
    assert [r["values"]["peak"] for r in records(got["stepped"], "peak-phase")] == ["step"]
    # Without the step the phase rule had the backward moment, 2.3 GB less: an under-estimate.
    assert got["stepped"]["memory"]["estimate"]["phases"]["backward_allocated_bytes"] < AT_STEP - 2 * 10**9


@pytest.mark.parametrize("fields", [
    "framework: axolotl",                      # its schema's default optimizer is adamw_torch_fused
    "framework: hf-trainer",                   # the Trainer's default with torch >= 2.8: adamw_torch_fused
    "framework: llama-factory",                # trains through the Trainer, its default optimizer
    "framework: hf-trainer, optimizer: adamw-8bit",   # bitsandbytes updates in place
    "framework: torchtune",                    # fused: True / foreach: False in its configs
    "framework: deepspeed",                    # DeepSpeed's FusedAdam
])
def test_in_place_steps_add_no_temporary(plan_workloads, fields):
    got = plan_workloads(HEADER + f"  - {{name: w, gradient_accumulation_steps: 1, {fields}}}\n")
    mem = got["w"]["memory"]["estimate"]
    assert mem.get("phases", {}).get("peak") != "step"
    assert "step_allocated_bytes" not in mem.get("phases", {})
    assert not records(got["w"], "optimizer-step")


def test_a_step_below_the_peak_is_stated_not_counted(plan_workloads):
    # 8,192 tokens without checkpointing: the activations outweigh the 4.9 GB temporary.
    got = plan_workloads(HEADER + "  - {name: w, framework: torchtitan, gradient_accumulation_steps: 1, "
                                  "seq_len: 8192, activation_checkpointing: false}\n")
    mem = got["w"]["memory"]["estimate"]
    assert mem["phases"]["peak"] != "step"
    assert mem["phases"]["step_allocated_bytes"] == AT_STEP < mem["allocated_bytes"]
    (step,) = records(got["w"], "optimizer-step")
    # A moment not counted is stated as printed: its exact bytes rounded up to 0.01 GiB.
    assert step["values"]["allocated_bytes"] == memory_carried(AT_STEP) and not step["values"]["counted"]


def test_torchtitan_foreach_step_on_its_shards(plan_workloads):
    # torchtitan (@ 5cffd5ac optimizer.py: foreach = not --optimizer.fused, off unless given), Llama 3.1 8B FSDP
    # over 8 GPUs, fp32 sharded moments: the temporary is 4 B per sharded parameter. With the ZeRO accounting of
    # the shard (2 + 2 + 12 B per P/8) and the FSDP working set (two gathered 525,336,576-value units at 2 B, the
    # unit's gradient at 2 B and its fp32 reduce-scatter input at 4 B):
    #   8,030,261,248 / 8 × (2 + 2 + 12 + 4) + 525,336,576 × (4 + 2 + 4) = 25,329,018,880 B.
    got = plan_workloads("workloads:\n  - {name: t, kind: pretrain, model: llama-3.1-8b, tokens: 1B, seq_len: 512, "
                         "micro_batch: 1, gpu: h100-80gb, gpus: 8, framework: torchtitan, "
                         "activation_checkpointing: true, gradient_accumulation_steps: 1}\n")["t"]
    assert got["memory"]["estimate"]["allocated_bytes"] == 8_030_261_248 // 8 * 20 + 525_336_576 * 10 == 25_329_018_880
    assert got["memory"]["estimate"]["phases"]["peak"] == "step"
