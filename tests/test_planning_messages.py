"""The planner's messages fit the workload: MFU warnings, workloads that fit nowhere,
and why there is no GPU configuration to consider. Exact text, through the CLI."""

from __future__ import annotations

import re
from decimal import ROUND_FLOOR, Decimal

import pytest

from proposalkit.cli import main
from proposalkit.planning.ranges import memory_margins


def run(tmp_path, capsys, *workloads, head=""):
    path = tmp_path / "w.yaml"
    path.write_text(head + "workloads:\n" + "".join(f"  - {{{w}}}\n" for w in workloads), encoding="utf-8")
    code = main(["plan", str(path)])
    out, err = capsys.readouterr()
    return code, out, err, str(path)


LORA_8B = "name: tune, kind: finetune, method: lora, model: llama-3.1-8b, tokens: 10M, seq_len: 2048, gpu: h100-80gb"


# ---------------------------------------------------------------- MFU

def test_mfu_above_the_highest_published_result_is_warned(tmp_path, capsys):
    # Korthikanti et al. 2022 Table 3: 56.3% MFU (GPT 1T on 512 A100), the highest we know of.
    code, out, err, _ = run(tmp_path, capsys, LORA_8B + ", mfu: 0.57")
    assert (code, err) == (0, "")
    assert ("warning: tune: MFU 0.57 is above the highest published achieved MFU "
            "(0.563: Korthikanti et al. 2022 Table 3, GPT 1T on 512 A100)\n") in out


@pytest.mark.parametrize("mfu", ["0.563", "0.5"])
def test_mfu_at_or_below_the_published_maximum_is_not_warned(tmp_path, capsys, mfu):
    code, out, err, _ = run(tmp_path, capsys, LORA_8B + f", mfu: {mfu}")
    assert (code, err) == (0, "")
    assert "MFU" not in out.replace("at an assumed MFU", "").replace("at MFU", "")


# ---------------------------------------------------------------- fits nowhere: what to change
# TACC Lonestar6 H100 partition (catalog/resources.yaml): h100-pcie, 2 GPUs per node, 1 node per job,
# so at most 2 GPUs; h100-pcie has 79.1 GiB usable (catalog/gpus.yaml). A workload that fits in no job of
# the target names its largest job and, where one exists, the fewest GPUs that would hold it elsewhere.
H100 = "resource: tacc-lonestar6-h100"
SERVE_405B = f"name: serve, kind: inference, model: llama-3.1-405b, context: 8192, hours: 10, {H100}"


def test_inference_dominated_by_weights_suggests_quantization_with_the_numbers(tmp_path, capsys):
    # Weights on 2 GPUs (tensor parallel 2): 405,853,388,800 params × 2 bytes ÷ 2 = 377.98 GiB.
    # KV cache: 8,192 tokens × 126 layers × (8 KV heads ÷ 2) × 128 × 2 (K, V) × 2 bytes = 1.97 GiB.
    # The int4 figure is the same estimate with precision int4 (precision.py INT4_BITS).
    code, out, err, path = run(tmp_path, capsys, SERVE_405B)
    assert (code, out) == (1, "")
    assert err == (f"{path}:2: workloads[0]: serve does not fit in any job tacc-lonestar6-h100 takes: on 2× "
                   "h100-pcie (tacc-lonestar6-h100 allows 1 node of 2 GPUs per job) it needs 420.85 GiB per GPU, which has 79.11 GiB usable; "
                   "it would fit on 16× h100-pcie, more than tacc-lonestar6-h100 takes in one job: target another resource; or per GPU the KV cache of context 8,192 × batch 1 takes 1.97 GiB and the bf16 "
                   "weights 377.99 GiB: quantize the weights (precision: int8, fp8 or int4; with int4 it needs "
                   "118.67 GiB per GPU)\n")


def test_quantized_inference_suggests_int4_and_a_pinned_count_more_gpus(tmp_path, capsys):
    code, out, err, path = run(tmp_path, capsys, SERVE_405B + ", precision: int8",
                               SERVE_405B.replace("serve", "one") + ", gpus: 1")
    assert (code, out) == (1, "")
    # int8 weights: 405,853,388,800 × 1 byte ÷ 2 GPUs = 189.0 GiB, plus the bf16 embedding and head kept
    # unquantized; on 1 GPU everything doubles (no relaxed fit: the partition takes 2 GPUs at most).
    assert err.splitlines() == [
        f"{path}:2: workloads[0]: serve does not fit in any job tacc-lonestar6-h100 takes: on 2× h100-pcie "
        "(tacc-lonestar6-h100 allows 1 node of 2 GPUs per job) it needs 215.11 GiB per GPU, which has 79.11 GiB usable; it would fit on 8× h100-pcie, more than tacc-lonestar6-h100 takes in one job: target another resource; or per GPU the KV cache of context 8,192 × batch 1 takes 1.97 GiB and the int8 weights 190.95 GiB: "
        "quantize the weights (precision: int4; with int4 it needs 118.67 GiB per GPU)",
        f"{path}:3: workloads[1]: one does not fit: it needs 840.14 GiB per GPU on 1× h100-pcie, which has 79.11 GiB "
        "usable; per GPU the KV cache of context 8,192 × batch 1 takes 3.94 GiB and the bf16 weights 755.97 GiB: "
        "quantize the weights (precision: int8, fp8 or int4; with int4 it needs 235.79 GiB per GPU), or raise gpus, "
        "the tensor-parallel degree (now 1)",
    ]


def test_inference_dominated_by_the_kv_cache_suggests_context_or_batch(tmp_path, capsys):
    # KV cache: 131,072 tokens × 64 sequences × 32 layers × (8 KV heads ÷ 2 GPUs) × 128 × 2 × 2 bytes = 512 GiB;
    # weights 8,030,261,248 × 2 bytes ÷ 2 = 7.5 GiB, under a tenth of the total: no quantization hint.
    code, out, err, path = run(tmp_path, capsys, "name: long, kind: inference, model: llama-3.1-8b, context: 131072, "
                                                 f"batch: 64, hours: 10, {H100}")
    assert (code, out) == (1, "")
    assert err == (f"{path}:2: workloads[0]: long does not fit in any job tacc-lonestar6-h100 takes: on 2× h100-pcie "
                   "(tacc-lonestar6-h100 allows 1 node of 2 GPUs per job) it needs 572.97 GiB per GPU, which has 79.11 GiB usable; per GPU the KV cache of context 131,072 × batch 64 takes 512.00 GiB and "
                   "the bf16 weights 7.48 GiB: lower context or batch\n")


def test_training_suggestions_fit_the_larger_part_and_the_settings_given(tmp_path, capsys):
    full = f"kind: finetune, method: full, model: llama-3.1-70b, tokens: 10M, seq_len: 4096, {H100}"
    code, out, err, path = run(tmp_path, capsys, "name: states, " + full,
                               "name: pinned, " + full + ", gpus: 1, zero_stage: 2, activation_checkpointing: false, "
                               "micro_batch: 4")
    assert (code, out) == (1, "")
    # Model states dominate (16 bytes per parameter of mixed-precision Adam, Rajbhandari et al. 2020):
    # 70,553,706,496 × 16 B ÷ 2 GPUs (ZeRO-3) = 525.6 GiB, plus buffers; LoRA is the first suggestion,
    # activation settings are left out when activations are under a tenth of the total.
    # Activations of "states" (checkpointed to fit): 80 layer inputs 2·4096·8192 B + the last norm's and
    # head's inputs 4·4096·8192 + the loss's peak 12 B × 4096 × 128,256 logits (estimate/loss.py; larger than
    # one recomputed layer) + the last norm's eager fp32 copy 4·4096·8192 (estimate/kernels.py; the recomputed
    # layer's eager extras stay under the loss) = 11,940,986,880 B = 11.1 GiB. "pinned" (micro_batch 4, no
    # checkpointing) holds 8 B per logit more than the 4 once counted: 343.6 + 8·4·4096·128,256/2^30 = 359.3 GiB,
    # plus eager PyTorch's extras (compile unset): per token and layer two fp32 norm copies 2·4·8,192, the SiLU
    # output 2·28,672 and K/V copied to 64 heads 2·2·(64 - 8)·128 = 151,552 B × 16,384 tokens × 80 layers +
    # the final norm's copy 4·16,384·8,192 = 185.5 GiB: 544.8 GiB; the total 1,552.7 + 185.5 × 1.1 (reserve).
    # "states" on 2 GPUs: (531.5 + 11.1 GiB + buffers) × 1.15, the reserve of more than one GPU (estimate/breakdown.py).
    # A pinned configuration is refused only where the memory's p10 does not fit (planning/ranges.py memory_margins,
    # from the validation rows): the message says that figure, which moves with them.
    # The message works it from the printed figures: the GiB × the factor as printed, rounded down to 0.01 GiB.
    needs, factor, low = (Decimal(x.replace(",", "")) for x in re.search(
        r"pinned does not fit: it needs ([\d,.]+) GiB per GPU \(× ([\d.]+) = ([\d,.]+) GiB at the memory p10\)",
        err).groups())
    assert float(factor) == memory_margins()[0]
    assert low == (needs * factor).quantize(Decimal("0.01"), ROUND_FLOOR)
    err = re.sub(r"\(× [\d.]+ = [\d,.]+ GiB at the memory p10\)", "(P10 GiB at the memory p10)", err)
    assert err.splitlines() == [
        f"{path}:2: workloads[0]: states does not fit in any job tacc-lonestar6-h100 takes: on 2× h100-pcie "
        "(tacc-lonestar6-h100 allows 1 node of 2 GPUs per job) it needs 625.09 GiB per GPU, which has 79.11 GiB usable; it would fit on 32× h100-pcie, more than tacc-lonestar6-h100 takes in one job: target another resource; or per GPU the model states take 531.55 GiB and the activations 11.13 GiB: try method: lora or qlora, "
        "or a larger tensor_parallel or pipeline_parallel (now 1 × 1)",
        f"{path}:3: workloads[1]: pinned does not fit: it needs 1,756.76 GiB per GPU (P10 GiB at the memory p10) on "
        "1× h100-pcie, which has "
        "79.11 GiB usable; per GPU the model states take 1,051.34 GiB and the activations 544.80 GiB: try method: lora "
        "or qlora, zero_stage: 3 (now 2), more GPUs (gpus: now 1), activation_checkpointing: true, a smaller "
        "micro_batch (now 4), a shorter seq_len (now 4,096), or a larger tensor_parallel or pipeline_parallel "
        "(now 1 × 1)",
    ]


def test_training_dominated_by_activations_leads_with_them(tmp_path, capsys):
    code, out, err, path = run(tmp_path, capsys, "name: long, kind: finetune, method: lora, model: llama-3.1-8b, "
                                                 f"tokens: 10M, seq_len: 131072, micro_batch: 8, {H100}")
    assert (code, out) == (1, "")
    assert "the activations" in err and ": try a smaller micro_batch (now 8), a shorter seq_len (now 131,072)" in err


# ---------------------------------------------------------------- no GPU configuration to consider: why

LORA_ON_H100 = f"kind: finetune, method: lora, model: llama-3.1-8b, tokens: 10M, seq_len: 4096, {H100}"


def test_a_model_copy_larger_than_any_job_is_an_input_error(tmp_path, capsys):
    code, out, err, path = run(tmp_path, capsys, "name: tp, " + LORA_ON_H100 + ", tensor_parallel: 4",
                               "name: pp, " + LORA_ON_H100 + ", pipeline_parallel: 4")
    assert (code, out) == (2, "")
    limit = "at most 2 h100-pcie GPUs: tacc-lonestar6-h100 allows 1 node of 2 GPUs per job"
    assert err.splitlines() == [
        f"{path}:2: workloads[0].tensor_parallel: no GPU configuration to consider: one model copy takes "
        f"tensor_parallel × pipeline_parallel = 4 × 1 = 4 GPUs, more than any tacc-lonestar6-h100 job takes ({limit}); "
        "lower them, or target another resource",
        f"{path}:3: workloads[1].pipeline_parallel: no GPU configuration to consider: one model copy takes "
        f"tensor_parallel × pipeline_parallel = 1 × 4 = 4 GPUs, more than any tacc-lonestar6-h100 job takes ({limit}); "
        "lower them, or target another resource",
    ]


def test_a_pinned_count_no_job_takes_is_an_input_error(tmp_path, capsys):
    # Lonestar6 A100 (system tacc-lonestar6): 3 GPUs per node, at most 8 nodes per job = 24 GPUs.
    code, out, err, path = run(tmp_path, capsys, "name: big, kind: finetune, method: lora, model: llama-3.1-8b, "
                                                 "tokens: 10M, seq_len: 4096, gpus: 64, resource: tacc-lonestar6")
    assert (code, out) == (2, "")
    assert err == (f"{path}:2: workloads[0].gpus: no GPU configuration to consider: no tacc-lonestar6 job takes "
                   "64 GPUs (at most 24 a100-40gb-pcie GPUs: tacc-lonestar6-a100 allows 8 nodes of 3 GPUs per job); "
                   "pin at most 24, or target another resource\n")


def test_a_tensor_parallel_degree_that_is_no_power_of_two_is_tried(tmp_path, capsys):
    # gpt2 has 12 heads, so tensor_parallel 3 is a valid split; the counts tried are 3, 6, 12, ...
    # (before, only 1, 2, 4, 8, ... were tried, none a multiple of 3: "no GPU configuration to consider").
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n  - {name: tp3, kind: finetune, method: full, model: gpt2, tokens: 10M, "
                    "seq_len: 1024, tensor_parallel: 3, gpu: h100-80gb}\n", encoding="utf-8")
    assert main(["plan", str(path), "--format", "json"]) == 0
    import json
    assert json.loads(capsys.readouterr().out)["workloads"][0]["gpu"]["count"] == 3


# ---------------------------------------------------------------- inference: tensor_parallel is the replica's GPU count

def test_inference_tensor_parallel_is_the_count_planned(tmp_path, capsys):
    # Before, the planner ignored it: 1 GPU planned while the settings said tensor_parallel 4.
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n  - {name: s, kind: inference, model: llama-3.1-8b, context: 8192, hours: 10, "
                    "tensor_parallel: 4, gpu: h100-80gb}\n", encoding="utf-8")
    assert main(["plan", str(path), "--format", "json"]) == 0
    import json
    w = json.loads(capsys.readouterr().out)["workloads"][0]
    assert (w["gpu"]["count"], w["settings"]["tensor_parallel"]) == (4, 4)
    assert w["gpu_hours"] == 40.0                     # 10 h × 4 GPUs


def test_inference_tensor_parallel_mistakes_are_input_errors(tmp_path, capsys):
    serve = "kind: inference, model: llama-3.1-8b, context: 8192, hours: 10"
    code, out, err, path = run(tmp_path, capsys, f"name: heads, {serve}, tensor_parallel: 64",
                               f"name: both, {serve}, tensor_parallel: 2, gpus: 4",
                               f"name: job, {serve}, tensor_parallel: 4, {H100}")
    assert (code, out) == (2, "")
    # llama-3.1-8b has 32 attention heads (catalog/models.yaml).
    assert err.splitlines() == [
        f"{path}:2: workloads[0].tensor_parallel: no GPU configuration to consider: an inference replica on 64 GPUs "
        "is 64-way tensor parallel, more ranks than llama-3.1-8b has attention heads (expected at most 32: each "
        "tensor-parallel rank holds at least one head)",
        f"{path}:3: workloads[1].tensor_parallel: an inference replica runs on tensor_parallel GPUs (got 2, and "
        "gpus: 4; expected the same number, or only one of them)",
        f"{path}:4: workloads[2].tensor_parallel: no GPU configuration to consider: no tacc-lonestar6-h100 job takes "
        "4 GPUs (at most 2 h100-pcie GPUs: tacc-lonestar6-h100 allows 1 node of 2 GPUs per job); pin at most 2, or "
        "target another resource",
    ]


def test_a_pinned_inference_degree_that_fits_nowhere_suggests_raising_it(tmp_path, capsys):
    code, out, err, path = run(tmp_path, capsys, SERVE_405B + ", tensor_parallel: 2")
    assert (code, out) == (1, "")
    assert err.endswith("quantize the weights (precision: int8, fp8 or int4; with int4 it needs 118.67 GiB per GPU), "
                        "or raise tensor_parallel, the tensor-parallel degree (now 2)\n")
