"""The checkpoint line counts the parameters and optimizer states as the framework keeps them, through the workload.

Llama 3.2 3B, 3,212,749,824 parameters (meta-llama/Llama-3.2-3B config.json; tied embeddings).
- torchtune (pure bf16, the preset's mixed_precision false): its recipes save the model's bf16 state_dict and the
  optimizer's state_dict (pytorch/torchtune @ bd2a0fc7c recipes/full_finetune_single_device.py save_checkpoint);
  torch's AdamW makes each moment with torch.zeros_like(p), bf16 (pytorch/pytorch @ dc80ccde
  torch/optim/adam.py): 2 + 2 + 2 = 6 B/param = 19,276,498,944 B. With bitsandbytes' paged 8-bit AdamW the
  moments are 1 byte + one fp32 absmax per block of 256: 2 + 2·(1 + 4/256) = 4.03125 B/param = 12,951,397,728 B.
- hf-trainer (autocast over fp32 parameters): the model is saved as it is held, fp32, and the moments are fp32;
  no separate master copy: 4 + 8 = 12 B/param = 38,552,997,888 B; final weights 4 B/param = 12,850,999,296 B.
- hf-trainer under ZeRO (DeepSpeed's 16-bit weights + fp32 master + moments, or FSDP's fp32 parameters): the
  larger checkpoint, 14 B/param, and fp32 final weights, 4 B/param.
- no framework, mixed precision (2 + 4 master + 8) = 14 B/param = 44,978,497,536 B, as before.
"""

from __future__ import annotations

import pytest

from proposalkit.cli import main

P = 3_212_749_824

HEADER = """\
defaults:
  model: llama-3.2-3b
  kind: finetune
  method: full
  tokens: 10M
  seq_len: 2048
  micro_batch: 1
  gpu: a100-80gb
  gpus: 1
workloads:
"""


@pytest.mark.parametrize("fields, checkpoint, final, basis", [
    ("framework: torchtune", 6 * P, 2 * P,
     "2 (bf16 weights) + 4 (adamw state, pure bf16: no master copy) = 6 bytes/param"),
    ("framework: torchtune, optimizer: paged-adamw-8bit", 12_951_397_728, 2 * P,
     "+ 2.03125 (paged-adamw-8bit state, pure bf16: no master copy) = 4.03125 bytes/param"),
    ("mixed_precision: false", 6 * P, 2 * P, "= 6 bytes/param"),
    ("framework: hf-trainer", 12 * P, 4 * P, "4 (fp32 weights) + 8 (adamw state) = 12 bytes/param"),
    ("{}", 14 * P, 2 * P, "2 (bf16 weights) + 4 (fp32 master weights) + 8 (adamw state) = 14 bytes/param"),
    # The Trainer under ZeRO may run DeepSpeed (16-bit weights + fp32 master + moments) or FSDP (fp32
    # parameters): the larger checkpoint and the fp32 final weights.
    ("framework: hf-trainer, gpus: 4, zero_stage: 2", 14 * P, 4 * P, "+ 4 (fp32 master weights) + 8 (adamw state) = 14"),
])
def test_checkpoint_bytes_follow_the_states_kept(plan_workloads, tmp_path, capsys, fields, checkpoint, final, basis):
    line = "  - {name: w}\n" if fields == "{}" else f"  - {{name: w, {fields}}}\n"
    got = plan_workloads(HEADER + line)["w"]
    assert got["storage"]["checkpoint_bytes"] == checkpoint
    assert got["storage"]["final_weights_bytes"] == final
    # The report's line shows the same arithmetic.
    path = tmp_path / "r.yaml"
    path.write_text(HEADER + line, encoding="utf-8")
    capsys.readouterr()
    assert main(["report", str(path), "--format", "md", "-o", str(tmp_path / "out")]) == 0
    assert basis in (tmp_path / "out" / "supplement.md").read_text(encoding="utf-8")


def test_the_hand_counts():
    assert 6 * P == 19_276_498_944 and 12 * P == 38_552_997_888 and 14 * P == 44_978_497_536
    assert P * 2 + P * 2 * (1 + 4 / 256) == 12_951_397_728


@pytest.mark.parametrize("fields, per_param, final_per_param, basis", [
    # torchtune trains pure bf16: memory counts its adapters at 2 B with bf16 moments (speed.adapter_precision),
    # so the checkpoint saves 2 + 4 = 6 B/param and the final adapters 2; it said 12 and 4, PEFT's fp32 adapters.
    ("framework: torchtune", 6, 2, "2 (bf16 weights) + 4 (adamw state, pure bf16: no master copy) = 6 bytes/param"),
    ("framework: hf-trainer", 12, 4, "4 (fp32 weights) + 8 (adamw state) = 12 bytes/param"),
    ("{}", 12, 4, "4 (fp32 weights) + 8 (adamw state) = 12 bytes/param"),
])
def test_a_lora_checkpoint_saves_the_adapters_as_memory_counts_them(plan_workloads, tmp_path, capsys, fields,
                                                                    per_param, final_per_param, basis):
    lora = "method: lora, lora: {rank: 16, targets: [all-linear]}"
    line = f"  - {{name: w, {lora}}}\n" if fields == "{}" else f"  - {{name: w, {lora}, {fields}}}\n"
    got = plan_workloads(HEADER + line)["w"]
    adapters = got["trainable_params"]
    assert got["storage"]["checkpoint_bytes"] == per_param * adapters
    assert got["storage"]["final_weights_bytes"] == final_per_param * adapters
    path = tmp_path / "r.yaml"
    path.write_text(HEADER + line, encoding="utf-8")
    capsys.readouterr()
    assert main(["report", str(path), "--format", "md", "-o", str(tmp_path / "out")]) == 0
    assert "LoRA adapter only (frozen base model not saved): " + basis in (
        tmp_path / "out" / "supplement.md").read_text(encoding="utf-8")
