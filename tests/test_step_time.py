"""The training step timed by its parts (estimate/step_time.py), through the door users use (workload YAML into
the CLI), and its constants held to their fits (benchmarks/calibrate_step_time.py --check).

Tensor-parallel collectives by hand, Llama 3.1 8B (config.json: 32 layers, hidden 4,096) at seq_len 8,192 and
micro-batch 2 on 8 GPUs of h100-80gb, tensor_parallel 8, no checkpointing:

    one collective    = s·b·h values × 2 B = 8,192 × 2 × 4,096 × 2 = 134,217,728 B
    ring over 8 GPUs  = 33 µs + 2 × 7/8 × 134,217,728 B ÷ (0.46 × 450e9 B/s)   (Patarasuk & Yuan 2009)
    per step          = 32 layers × 2 passes (forward, backward) × 2 (attention's, the MLP's; Shoeybi et al. 2019)
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from proposalkit.catalog import gpus, models
from proposalkit.cli import main
from proposalkit.estimate import links, step_time

ROOT = Path(__file__).resolve().parent.parent


def plan(tmp_path, capsys, fields: str, model: str = "llama-3.1-8b") -> dict:
    path = tmp_path / "w.yaml"
    path.write_text(f"workloads:\n  - {{name: t, kind: pretrain, model: {model}, tokens: 1B, " + fields + "}\n",
                    encoding="utf-8")
    assert main(["plan", str(path), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    return json.loads(out)["workloads"][0]


def ring(size: float, group: int, link: float) -> float:
    return step_time.COLLECTIVE_LATENCY + 2 * (group - 1) / group * size / (step_time.LINK_FRACTION * link)


TP8 = "seq_len: 8192, micro_batch: 2, tensor_parallel: 8, gpu: h100-80gb, gpus: 8, activation_checkpointing: false"


def test_tensor_parallel_collectives_are_rings_per_layer_and_pass(tmp_path, capsys):
    w = plan(tmp_path, capsys, TP8)
    step = w["step"]
    size = 8192 * 2 * 4096 * 2
    assert size == 134_217_728
    assert step["comm_seconds"] == pytest.approx(32 * 2 * 2 * ring(size, 8, 450e9), abs=1e-6)
    # Not overlapped: the step adds them to the matmuls and the memory-bound kernels.
    assert step["seconds"] == pytest.approx(step["compute_seconds"] + step["memory_seconds"] + step["comm_seconds"],
                                            rel=1e-5)
    assert "tensor-parallel collectives" in w["derivation"]["throughput"]
    assert any(r["kind"] == "step-time" and r["values"]["tensor_parallel"] == 8 for r in w["assumption_records"])


def test_the_collectives_make_tensor_parallelism_slower_per_gpu_than_data_parallelism(tmp_path, capsys):
    # Issue 22: the planner's throughput did not change with the TP degree. On a small model the collectives
    # are a large share of the step: the same 8 GPUs run faster as 8 data-parallel copies.
    full = TP8.replace("activation_checkpointing: false", "activation_checkpointing: true")
    tp = plan(tmp_path, capsys, full)
    dp = plan(tmp_path, capsys, full.replace("tensor_parallel: 8", "tensor_parallel: 1, zero_stage: 3"))
    assert dp["step"]["comm_seconds"] == 0
    assert tp["tokens_per_second"] < 0.8 * dp["tokens_per_second"]


def test_full_checkpointing_reruns_the_forward_collectives(tmp_path, capsys):
    none = plan(tmp_path, capsys, TP8)
    full = plan(tmp_path, capsys, TP8.replace("activation_checkpointing: false", "activation_checkpointing: true"))
    assert full["step"]["comm_seconds"] == pytest.approx(none["step"]["comm_seconds"] * 3 / 2, abs=2e-6)


def test_a_group_across_nodes_goes_at_the_network_share():
    assert links.tensor_parallel_link("h100-80gb", 8) == 450e9
    assert links.tensor_parallel_link("h100-80gb", 16) == links.network_per_gpu("h100-80gb")[0] == 50e9
    assert links.tensor_parallel_link("no-such-gpu", 2) == links.PCIE4_X16
    assert links.ring_allreduce_seconds(1e9, 1, 1e9, 1.0) == 0.0


def test_a_small_eager_step_is_bound_by_the_hosts_launches(tmp_path, capsys):
    # Qwen2.5 0.5B at 512 tokens on one H100: thousands of small kernels, each costing the host
    # HOST_SECONDS_PER_KERNEL; the GPU waits for them.
    w = plan(tmp_path, capsys, "seq_len: 512, micro_batch: 1, gpu: h100-80gb, gpus: 1", model="qwen2.5-0.5b")
    step = w["step"]
    assert step["bound"] == "host"
    assert step["seconds"] == pytest.approx(step["kernels"] * step_time.HOST_SECONDS_PER_KERNEL, rel=1e-5)
    assert step["seconds"] > step["compute_seconds"] + step["memory_seconds"]


def test_the_power_capped_96gb_h100_row():
    g = gpus()["h100-96gb-500w"]
    # H100 datasheet, H100 NVL column: BF16 1,671 and FP8 3,341 TFLOPS with sparsity, halved (the lower end of
    # torchtitan's "between SXM and NVL"); torchtitan's benchmark page: 96GB HBM2e at 2.4 TB/s.
    assert (g.peak_16bit_flops, g.peak_fp8_flops, g.memory_bandwidth) == (835e12, 1670e12, 2.4e12)
    assert g.peak_16bit_flops < gpus()["h100-80gb"].peak_16bit_flops
    assert links.INTERCONNECT["h100-96gb-500w"] == links.INTERCONNECT["h100-80gb"]


def test_the_matmuls_run_at_a_share_of_each_gpus_maximum_achievable_matmul_rate(tmp_path, capsys):
    # Issue 22: one fraction of the datasheet peak on every GPU planned the H100 rows faster than measured. By hand,
    # from Bekman's MAMF table (compute/accelerator/README.md @744d01e18b79, BF16): A100 SXM 271.2 of 312 TFLOP/s
    # (86.9%), H100 SXM 794.5 of 989 (80.3%). The calibration (A100 SXM runs) fits 0.76 of the achievable rate:
    #   a100-80gb  0.76 × 271.2 / 312 = 0.6606 of the peak
    #   h100-80gb  0.76 × 794.5 / 989 = 0.6105 of the peak
    # and the 500 W H100, which the table does not measure, takes NVIDIA's lowest efficiency in it (GB200 SXM
    # 1822.0 of 2500, 72.9%): 0.76 × 1822.0 / 2500 = 0.5539.
    fields = "seq_len: 4096, micro_batch: 1, gpus: 8, activation_checkpointing: false, gpu: "
    a100 = plan(tmp_path, capsys, fields + "a100-80gb")
    h100 = plan(tmp_path, capsys, fields + "h100-80gb")
    capped = plan(tmp_path, capsys, fields + "h100-96gb-500w")
    assert step_time.MAMF_FRACTION == 0.76
    assert a100["step"]["compute_fraction"] == pytest.approx(0.6606, abs=1e-4)
    assert h100["step"]["compute_fraction"] == pytest.approx(0.6105, abs=1e-4)
    assert capped["step"]["compute_fraction"] == pytest.approx(0.5539, abs=1e-4)
    # The matmuls' seconds are the same FLOPs at those rates.
    for w, peak in ((a100, 312e12), (h100, 989e12)):
        flops = w["flops_per_token"]["hardware"] * w["step"]["tokens"] / 8
        assert w["step"]["compute_seconds"] == pytest.approx(flops / (peak * w["step"]["compute_fraction"]), rel=1e-6)
    # The plan says where the rate is from: measured on the H100, the vendor's lowest for the capped part.
    [note] = [r for r in h100["assumption_records"] if r["kind"] == "step-time"]
    assert note["values"]["mamf_flops"] == 794.5e12 and note["values"]["mamf_measured"] is True
    assert "bekman-mamf" in note["sources"]
    assert "794.5 TFLOP/s (measured; Bekman's MAMF table)" in h100["derivation"]["throughput"]
    [note] = [r for r in capped["assumption_records"] if r["kind"] == "step-time"]
    assert note["values"]["mamf_measured"] is False
    assert "608.5 TFLOP/s (not measured: the table's lowest NVIDIA efficiency, 72.9%, taken" in \
        capped["derivation"]["throughput"]


def test_a_workload_mfu_keeps_the_flops_rule(tmp_path, capsys):
    w = plan(tmp_path, capsys, "seq_len: 4096, mfu: 0.4, gpu: h100-80gb, gpus: 8, activation_checkpointing: false")
    assert w["step"] is None and w["mfu"] == 0.4
    assert w["tokens_per_second"] == pytest.approx(8 * 989e12 * 0.4 / w["flops_per_token"]["model"])


def test_the_constants_are_their_fits():
    spec = importlib.util.spec_from_file_location("calibrate_step_time", ROOT / "benchmarks" / "calibrate_step_time.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module         # its dataclasses look their module up
    spec.loader.exec_module(module)
    assert module.main(["--check"]) == 0


def test_a_lora_model_with_dropout_and_fractional_widths_plans(tmp_path, capsys):
    # Found by tests/test_schema_property.py: dropout's mask on a LoRA width that is not whole per layer.
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n  - {kind: finetune, name: t, method: lora, tokens: 1, model: {params: 1, layers: 1, "
                    "hidden: 1, heads: 1, vocab: 1, ffn_hidden: 1, dropout: 0.05, mlp: gated}}\n", encoding="utf-8")
    assert main(["plan", str(path), "--format", "json"]) == 0
    w = json.loads(capsys.readouterr().out)["workloads"][0]
    assert w["step"]["memory"]["layers"] > 0


# Tensor parallelism without sequence parallelism (issue 22, item 5; Korthikanti et al. 2022 §4.2.2): the norms,
# dropouts and residual adds around the attention and MLP blocks run whole on every GPU of the group. Llama 3.1 8B,
# framework deepspeed (Megatron-DeepSpeed: no --sequence-parallel, input/frameworks.py) with compile: true (each
# run of memory-bound ops one kernel), bf16, FlashAttention, tensor_parallel 8, 8,192 × 2 tokens, one micro-batch,
# no checkpointing. Per token of one layer (tests/test_traffic.py counts them): inside the blocks 122,880 B forward
# + 198,656 B backward, shared by the 8 GPUs; outside 73,728 + 139,264 B, whole on each:
#     321,536 / 8 + 212,992 = 253,184 B per token and layer on one GPU (with sequence parallelism 534,528 / 8 = 66,816)
#     × 16,384 tokens × 32 layers = 132,741,332,992 B ÷ (0.68 × 3.35e12 B/s) = 58.27 ms
DEEPSPEED_TP8 = ("framework: deepspeed, compile: true, seq_len: 8192, micro_batch: 2, gradient_accumulation_steps: 1, "
                 "tensor_parallel: 8, gpu: h100-80gb, gpus: 8, activation_checkpointing: false")


def test_without_sequence_parallelism_the_norms_and_residual_adds_run_whole_on_each_gpu(tmp_path, capsys):
    w = plan(tmp_path, capsys, DEEPSPEED_TP8)
    assert any(r["kind"] == "framework-no-sequence-parallel" for r in w["assumption_records"])
    assert w["step"]["memory"]["layers"] == pytest.approx(132_741_332_992 / (step_time.MEMORY_FRACTION * 3.35e12),
                                                          abs=2e-6)
    assert 253_184 * 16_384 * 32 == 132_741_332_992


def test_with_sequence_parallelism_the_whole_layer_divides_by_t(tmp_path, capsys):
    # The planner's default without a framework: sequence parallel, 66,816 B per token and layer on one GPU,
    # × 16,384 × 32 = 35,030,827,008 B: 253,184 / 66,816 = 3.79 times less.
    w = plan(tmp_path, capsys, DEEPSPEED_TP8.replace("framework: deepspeed, ", ""))
    assert w["step"]["memory"]["layers"] == pytest.approx(35_030_827_008 / (step_time.MEMORY_FRACTION * 3.35e12),
                                                          abs=2e-6)


# A pipeline's step goes at its slowest stage's pace, the last, which holds the LM head (Narayanan et al. 2021
# §2.2). Llama 3.2 1B (config.json: 16 layers, hidden 2,048, 32 heads of 64, vocab 128,256, tied embeddings, so
# N = all 1,235,814,400 parameters: the table is the head) at 4,096 tokens: hardware FLOPs per token 6·N +
# 12·L·H·Q·T = 7,414,886,400 + 12 × 16 × 32 × 64 × 4,096 = 9,025,499,136, of which the head's 6 × 128,256 ×
# 2,048 = 1,575,985,152. On 2 stages the last runs 8 of the 16 layers and the head: (9,025,499,136 −
# 1,575,985,152) / 2 + 1,575,985,152 = 5,300,742,144 per token, not the average 4,512,749,568; its head's
# memory-bound kernels are not divided over the stages.
PP = "seq_len: 4096, micro_batch: 1, gradient_accumulation_steps: 8, gpu: h100-80gb, activation_checkpointing: false"


def test_the_last_pipeline_stage_carries_the_head(tmp_path, capsys):
    one = plan(tmp_path, capsys, PP + ", gpus: 1", model="llama-3.2-1b")
    two = plan(tmp_path, capsys, PP + ", gpus: 2, pipeline_parallel: 2", model="llama-3.2-1b")
    assert one["flops_per_token"]["hardware"] == 9_025_499_136
    stage_flops = two["step"]["compute_seconds"] * 989e12 * two["step"]["compute_fraction"] / (4096 * 8)
    assert stage_flops == pytest.approx(5_300_742_144, rel=1e-5)
    assert two["step"]["memory"]["head"] == pytest.approx(one["step"]["memory"]["head"], abs=2e-6)
    assert two["step"]["memory"]["layers"] == pytest.approx(one["step"]["memory"]["layers"] / 2, abs=2e-6)


# Kernels per weight tensor (catalog/modules.weight_tensors), from the modeling files' module lists. Under gradient
# accumulation each trainable tensor's gradient gets an add per extra micro-batch: Llama 3.2 1B (modeling_llama.py
# LlamaDecoderLayer: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, input_layernorm,
# post_attention_layernorm: 9 per layer; embed_tokens and norm, lm_head tied to embed_tokens: 2) has 9 × 16 + 2 =
# 146. A step of ga micro-batches launches ga × (per micro-batch) + (ga − 1) × 146 + the optimizer's, so
# k(2) − k(1) = k(3) − k(2) = per micro-batch + 146, and k(1) = per micro-batch + the optimizer's.
def test_accumulation_adds_one_kernel_per_trainable_tensor(tmp_path, capsys):
    base = "seq_len: 512, micro_batch: 1, gpu: h100-80gb, gpus: 1, activation_checkpointing: false"
    k = {ga: plan(tmp_path, capsys, base + f", gradient_accumulation_steps: {ga}", model="llama-3.2-1b")["step"]["kernels"]
         for ga in (1, 2, 3)}
    assert k[3] - k[2] == k[2] - k[1]
    optimizer = k[1] - (k[2] - k[1] - 146)
    # torch's fused AdamW: 3 kernels per 320 × 65,536 values, ⌈1,235,814,400 / 20,971,520⌉ = 59 launches each.
    assert optimizer == 3 * 59


def test_weight_tensors_follow_the_modeling_files():
    from proposalkit.catalog.modules import weight_tensors

    m = models()
    # modeling_llama.py: 7 linear weights, 2 RMSNorm weights per layer; embed_tokens, norm; lm_head (untied).
    assert weight_tensors(m["llama-3.1-8b"]) == (7, 2, 1, 3)
    # modeling_qwen2.py: q_proj, k_proj, v_proj carry biases (attention_bias): 7 + 3; lm_head tied to embed_tokens.
    assert weight_tensors(m["qwen2.5-0.5b"]) == (10, 2, 1, 2)
    # modeling_gpt2.py GPT2Block: ln_1, attn.c_attn (q, k, v fused), attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj, each
    # a weight and a bias: 4 + 4 linear, 2 + 2 norm; wte, wpe, ln_f (weight, bias); the head is wte.
    assert weight_tensors(m["gpt2"]) == (8, 4, 1, 4)
    # modeling_mixtral.py: q, k, v, o; block_sparse_moe.gate and 8 experts × w1, w2, w3: 4 + 1 + 24.
    assert weight_tensors(m["mixtral-8x7b"]) == (29, 2, 1, 3)
