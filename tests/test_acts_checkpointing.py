"""Selective checkpointing, activation offloading and context parallelism, through the workload file.

Llama 3.1 8B (config: 32 layers, hidden 4,096, 32 heads, 8 kv heads of 128, gated MLP 14,336,
vocabulary 128,256), bf16, FlashAttention, no dropout, seq_len 8,192, micro_batch 1, on 8
h100-80gb GPUs under ZeRO-3. Per token and layer (Korthikanti et al. 2022 §4.1, generalised in
estimate/activations.py): two norm inputs 2·2·4,096 + QKV input 2·4,096 + q, k, v
2·(4,096 + 1,024 + 1,024) + fp32 softmax statistics 4·32 + o_proj input 2·4,096 + MLP input
2·4,096 + gate, up, product 3·2·14,336 = 139,392 B. The loss (estimate/loss.py, standard):
12 B × 8,192 × 128,256 logits = 12,608,077,824 B, larger than any recomputed layer here, so
the total is what is kept + the last norm's and head's inputs (2·2·8,192·4,096) + the loss.
The workloads say compile: true (these tests are about checkpointing): the layers keep the fused
count above and K and V copied to all 32 heads, 2·2·(32 - 8)·128 = 12,288 B (the model code expands
them before attention, kept compiled too: estimate/kernels.py head_copy_terms): 151,680 B; the final
norm, which torch.compile of each layer leaves eager, its fp32 copy (4·8,192·4,096; final_norm_extra).
"""

from __future__ import annotations

import json

import pytest

from proposalkit.cli import main
from proposalkit.catalog import models
from proposalkit.estimate.activations import training_activation_bytes
from proposalkit.estimate.memory import TrainingSetup
from conftest import records

L, S, H, V = 32, 8192, 4096, 128_256
PER_TOKEN_LAYER = 139_392 + 12_288
HEAD_INPUTS = 2 * 2 * S * H + 4 * S * H
LOSS = 12 * S * V
LAYER_INPUT = 2 * S * H

HEADER = """\
defaults:
  model: llama-3.1-8b
  kind: pretrain
  tokens: 1B
  seq_len: 8192
  micro_batch: 1
  gpu: h100-80gb
  gpus: 8
  zero_stage: 3
  compile: true
workloads:
"""


def _plan(plan_workloads, rows: str) -> dict:
    return plan_workloads(HEADER + rows)


def _activations(w: dict) -> int:
    return w["memory"]["estimate"]["components"]["activations"]


def test_no_full_and_selective_checkpointing(plan_workloads):
    got = _plan(plan_workloads, "  - {name: none, activation_checkpointing: false}\n"
                                  "  - {name: full, activation_checkpointing: true}\n"
                                  "  - {name: selective, activation_checkpointing: selective}\n")
    none = L * PER_TOKEN_LAYER * S + HEAD_INPUTS + LOSS
    assert _activations(got["none"]) == none == 52_638_515_200
    # Full: each layer's input, 2·8,192·4,096 B (Korthikanti Table 2).
    assert _activations(got["full"]) == L * LAYER_INPUT + HEAD_INPUTS + LOSS == 15_023_996_928
    # Selective without a framework: Megatron-LM's attention-core recomputation (Korthikanti §4.2)
    # keeps everything but the attention core, here FlashAttention's fp32 statistics 4·32 per token.
    assert _activations(got["selective"]) == none - L * 4 * 32 * S == 52_604_960_768
    assert got["selective"]["settings"]["activation_checkpointing"] == "selective"
    assert [r["values"]["policy"] for r in records(got["selective"], "selective-policy")] == ["attention"]


def test_activation_offloading_leaves_a_stash_of_five_tensors(plan_workloads):
    # torchtune OffloadActivations (@ e511d5a2, max_fwd_stash_size 5): with full checkpointing the saved
    # tensors are the 32 layer inputs; at most 5 stay on the GPU: 5 · 2·8,192·4,096 = 335,544,320 B.
    got = _plan(plan_workloads, "  - {name: offload, activation_checkpointing: true, activation_offload: true}\n")
    assert _activations(got["offload"]) == 5 * LAYER_INPUT + HEAD_INPUTS + LOSS == 13_212_057_600
    assert got["offload"]["settings"]["activation_offload"] is True


def test_context_parallel_splits_the_sequence_and_multiplies_the_gpus_of_a_copy(plan_workloads):
    # CP 2: each GPU holds 4,096 of the 8,192 tokens; layer inputs 32·2·4,096·4,096, head inputs
    # 2·2·4,096·4,096 and the final norm's fp32 copy 4·4,096·4,096, loss 12 · 4,096 · 128,256.
    got = _plan(plan_workloads, "  - {name: cp2, activation_checkpointing: true, context_parallel: 2}\n")
    s = S // 2
    assert _activations(got["cp2"]) == L * 2 * s * H + 2 * 2 * s * H + 4 * s * H + 12 * s * V == 7_511_998_464
    assert got["cp2"]["settings"]["context_parallel"] == 2


def test_context_parallel_gpu_count_is_a_multiple_of_tp_pp_cp(tmp_path, capsys):
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n  - {name: a, kind: pretrain, model: llama-3.1-8b, tokens: 1B, seq_len: 8192, "
                    "gpus: 6, tensor_parallel: 2, context_parallel: 4}\n", encoding="utf-8")
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert ("workloads[0].gpus: fewer GPUs than one model copy takes (got 6; tensor_parallel 2 × context_parallel 4 "
            "puts one copy on 8 GPUs, expected a multiple of 8, e.g. 8 or 16)") in err


def test_the_unpinned_search_tries_multiples_of_the_context_parallel_degree(tmp_path, capsys):
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n  - {name: a, kind: pretrain, model: llama-3.1-8b, tokens: 1B, seq_len: 8192, "
                    "context_parallel: 4, gpu: h100-80gb}\n", encoding="utf-8")
    assert main(["plan", str(path), "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)["workloads"][0]
    assert plan["gpu"]["count"] % 4 == 0
    assert all(c["count"] % 4 == 0 for c in plan["alternatives"])


@pytest.mark.parametrize("fields, message", [
    ("activation_checkpointing: partial",
     "workloads[0].activation_checkpointing: not a checkpointing setting (got 'partial', expected true (full), "
     "false or selective)"),
    ("context_parallel: 3, seq_len: 8192",
     "workloads[0].context_parallel: does not divide the sequence length (got 3 for seq_len 8,192; expected a "
     "divisor: each GPU holds the same number of the sequence's tokens)"),
    ("context_parallel: 2, flash_attention: false",
     "workloads[0].context_parallel: ring attention needs a fused attention kernel (got context_parallel 2 with "
     "flash_attention: false; expected flash_attention: true or nothing)"),
    ("context_parallel: 2000", "workloads[0].context_parallel: implausibly large"),
])
def test_checkpointing_and_context_parallel_input_errors(tmp_path, capsys, fields, message):
    path = tmp_path / "w.yaml"
    path.write_text(f"workloads:\n  - {{name: a, kind: pretrain, model: llama-3.1-8b, tokens: 1B, {fields}}}\n",
                    encoding="utf-8")
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("field", ["activation_offload: true", "context_parallel: 2"])
def test_training_only_fields_are_refused_on_inference(tmp_path, capsys, field):
    path = tmp_path / "w.yaml"
    path.write_text(f"workloads:\n  - {{name: a, kind: inference, model: llama-3.1-8b, context: 2048, hours: 10, "
                    f"{field}}}\n", encoding="utf-8")
    assert main(["plan", str(path)]) == 2
    name = field.split(":")[0]
    assert f"workloads[0].{name}: not used by inference" in capsys.readouterr().err


def test_torchtitan_op_policy_keeps_about_64_kb_per_token_and_layer():
    # torchtitan @ 82010c79 parallelize_llama.py: every other mm's output and the attention kernel's
    # output. Llama block mms in order wq, wk, wv, wo, w1, w3, w2: kept wq (4,096), wv (1,024),
    # w1 (14,336), w2 (4,096) at 2 B, the SDPA output 2·4,096 and fp32 log-sum-exp 4·32, and the
    # checkpoint's input 2·4,096: 63,616 B per token and layer (DESIGN: ≈ 64 KB).
    per_token = 2 * (4096 + 1024 + 14336 + 4096) + 2 * 4096 + 4 * 32 + 2 * 4096
    assert per_token == 63_616
    model = models()["llama-3.1-8b"]
    setup = TrainingSetup(method="full", seq_len=S, activation_checkpointing="selective", selective_policy="op",
                          kernels="fused")
    got, notes = training_activation_bytes(model, setup)
    # The recomputed layer (139,392 B per token) is smaller than the loss: phases, not a sum. Fused kernels
    # (torchtitan's count above; no eager final-norm copy).
    assert got == L * per_token * S + 2 * 2 * S * H + LOSS
    (policy,) = [n for n in notes if n.kind == "selective-policy"]
    assert policy["policy"] == "op" and policy.sources == ("torchtitan-sac",)
