"""config.json's quantization_config sets the weight bits of a quantized checkpoint (inference), unless the
workload's precision says otherwise; each format's bits derived by hand from its storage layout.

The model is Llama-3.1-8B's shape (meta-llama/Llama-3.1-8B config.json). Its block matrices, what
weight-only quantization converts, per layer: q and o 4096·4096 each, k and v 4096·1024 each, gate, up
and down 3·4096·14336 = 218,103,808; × 32 layers = 6,979,321,856. The rest (embeddings 128,256·4096,
LM head the same, norms) stays 16-bit: 8,030,261,248 − 6,979,321,856 = 1,050,939,392 at 2 bytes.
"""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from proposalkit.cli import main
from conftest import records

LLAMA = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
         "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 128256,
         "max_position_embeddings": 131072, "tie_word_embeddings": False}
LINEAR = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336)
REST_BYTES = (8_030_261_248 - LINEAR) * 2
assert LINEAR == 6_979_321_856


def weights(bits) -> Fraction:
    return LINEAR * Fraction(bits) / 8 + REST_BYTES


CASES = {
    # bitsandbytes Params4bit: 4-bit codes + one fp32 absmax per 64 weights (QLoRA §3): 4 + 32/64.
    "bnb nf4": ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"},
                "int4", Fraction(9, 2)),
    # double quantization: the absmax as 8 bits + one fp32 per 256 of them: 4 + 8/64 + 32/(64·256).
    "bnb nf4 double": ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
                        "bnb_4bit_use_double_quant": True}, "int4", 4 + Fraction(8, 64) + Fraction(32, 64 * 256)),
    # an older config without quant_method.
    "bnb 4-bit, no quant_method": ({"load_in_4bit": True}, "int4", Fraction(9, 2)),
    # LLM.int8(): int8 weights; the per-row fp32 scale (32 bits per 4,096+ weights) is not counted.
    "bnb 8-bit": ({"quant_method": "bitsandbytes", "load_in_8bit": True}, "int8", 8),
    # GPTQ: 4-bit weights, per group of 128 an fp16 scale and a 4-bit packed zero: 4 + (16 + 4)/128.
    "gptq 4-bit group 128": ({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False},
                             "int4", 4 + Fraction(20, 128)),
    "gptq 8-bit group 32": ({"quant_method": "gptq", "bits": 8, "group_size": 32}, "int8", 8 + Fraction(24, 32)),
    "gptq 4-bit, no groups": ({"quant_method": "gptq", "bits": 4, "group_size": -1}, "int4", 4),
    # AWQ GEMM: the same three tensors (qweight, fp16 scales, packed qzeros).
    "awq 4-bit group 128": ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True,
                             "version": "gemm"}, "int4", 4 + Fraction(20, 128)),
    "awq without zero points": ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": False},
                                "int4", 4 + Fraction(16, 128)),
    # FP8 with DeepSeek-V3's block scales: one fp32 weight_scale_inv per 128×128 block.
    "fp8 block 128x128": ({"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]},
                          "fp8", 8 + Fraction(32, 128 * 128)),
    "fp8 per tensor": ({"quant_method": "fp8"}, "fp8", 8),
    # llm-compressor W4A16: int4 weights, symmetric, a 16-bit scale per group of 128.
    "compressed-tensors w4a16": ({"quant_method": "compressed-tensors", "format": "pack-quantized",
                                  "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
                                      "num_bits": 4, "type": "int", "symmetric": True, "strategy": "group",
                                      "group_size": 128}}}}, "int4", 4 + Fraction(16, 128)),
    "compressed-tensors fp8": ({"quant_method": "compressed-tensors", "format": "float-quantized",
                                "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
                                    "num_bits": 8, "type": "float", "symmetric": True, "strategy": "channel"}}}},
                               "fp8", 8),
}


# The paper each format's record cites (Appendix B lists it), by case or the first word of its name: bitsandbytes
# 4-bit (QLoRA), LLM.int8(), GPTQ, AWQ; FP8 and compressed-tensors none.
PAPERS = {"bnb": ["dettmers-2023"], "bnb 8-bit": ["dettmers-2022"], "gptq": ["frantar-2023"], "awq": ["lin-2024"]}


def plan(tmp_path, capsys, quantization: dict, precision: str | None = None, kind: str = "inference"):
    (tmp_path / "m").mkdir(exist_ok=True)
    (tmp_path / "m" / "config.json").write_text(json.dumps({**LLAMA, "quantization_config": quantization}))
    job = ("    kind: inference\n    hours: 10\n    context: 4k\n" if kind == "inference" else
           "    kind: finetune\n    method: lora\n    tokens: 10M\n")
    (tmp_path / "w.yaml").write_text("workloads:\n  - name: a\n" + job + "    model: {config: m/config.json}\n"
                                     "    gpu: h100-80gb\n" + (f"    precision: {precision}\n" if precision else ""))
    code = main(["plan", str(tmp_path / "w.yaml"), "--format", "json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out)["workloads"][0] if code == 0 else err)


@pytest.mark.parametrize("case", CASES)
def test_the_checkpoints_format_sets_the_weight_bits(tmp_path, capsys, case):
    quantization, precision, bits = CASES[case]
    code, w = plan(tmp_path, capsys, quantization)
    assert code == 0, w
    assert w["settings"]["precision"] == precision
    assert abs(w["memory"]["estimate"]["components"]["weights"] - weights(bits)) <= 1
    assert [r["values"] for r in records(w, "precision-checkpoint")] == [{"precision": precision}]
    [stated] = records(w, "quantized-checkpoint")
    assert (stated["values"]["precision"], stated["values"]["bits_per_param"]) == (precision, float(bits))
    assert stated["sources"] == PAPERS.get(case, PAPERS.get(case.split()[0], []))


def test_the_workloads_precision_overrides_the_checkpoint(tmp_path, capsys):
    code, w = plan(tmp_path, capsys, CASES["gptq 4-bit group 128"][0], precision="bf16")
    assert code == 0, w
    assert w["memory"]["estimate"]["components"]["weights"] == 8_030_261_248 * 2
    (given,) = records(w, "precision-given")
    assert given["values"] == {"precision": "bf16", "checkpoint_method": "GPTQ 4-bit, group 128"}


def test_training_loads_the_quantized_checkpoint_in_16_bit(tmp_path, capsys):
    code, w = plan(tmp_path, capsys, CASES["awq 4-bit group 128"][0], kind="finetune")
    assert code == 0, w
    assert w["settings"]["precision"] == "bf16"
    (loaded,) = records(w, "precision-training-dequantized")
    assert loaded["values"] == {"precision": "bf16", "checkpoint_method": "AWQ 4-bit, group 128", "qlora": False}


def test_an_unread_quant_method_is_warned(tmp_path, capsys):
    code, w = plan(tmp_path, capsys, {"quant_method": "hqq", "nbits": 4})
    assert code == 0, w
    assert w["settings"]["precision"] == "bf16"
    assert any("quantization_config quant_method 'hqq' is not read (bitsandbytes, gptq, awq, fp8 and "
               "compressed-tensors are); weights planned at the workload's precision" in x for x in w["warnings"])


@pytest.mark.parametrize("quantization, message", [
    ({"quant_method": "gptq", "bits": True, "group_size": 128},
     "quantization_config.bits: not a number (got true, expected a positive integer)"),
    ({"quant_method": "gptq", "bits": 4, "group_size": 0},
     "quantization_config.group_size: not a positive integer (got 0, expected a positive integer)"),
    ({"quant_method": "fp8", "weight_block_size": [128]},
     "quantization_config.weight_block_size: not a block shape (got [128], expected two positive integers, "
     "e.g. [128, 128])"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": "yes"},
     'quantization_config.load_in_4bit: not a boolean (got "yes", expected true or false)'),
])
def test_a_bad_quantization_value_is_an_input_error(tmp_path, capsys, quantization, message):
    code, err = plan(tmp_path, capsys, quantization)
    assert code == 2
    assert err == f"{tmp_path / 'w.yaml'}:6: workloads[0].model.config: {tmp_path / 'm' / 'config.json'}: {message}\n"
