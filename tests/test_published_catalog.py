"""Published facts behind the built-in catalogs (proposalkit/catalog/*.yaml).

Every number written literally here has its source on the same line or the
line above. Two kinds of check:

* identities: the parameter count computed from each model's config.json shape
  equals the count its publisher states (exactly, unless the only published
  figure is rounded; then within that rounding, said in a comment);
* datasheet pins: the GPU figures are the DENSE 16-bit tensor numbers, never
  the 2:4-sparsity figures printed beside them.
"""

from __future__ import annotations

import pytest

from proposalkit.catalog import gpus, models
from proposalkit.units import GB, GiB

MODEL_IDS = list(models())
GPU_IDS = list(gpus())

REQUIRED_MODELS = {
    "gpt2", "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3.1-8b", "llama-3.1-70b",
    "llama-3.1-405b", "mistral-7b", "mixtral-8x7b", "qwen2.5-7b", "stable-code-3b",
}
REQUIRED_GPUS = {
    "a100-40gb", "a100-40gb-pcie", "a100-80gb", "h100-80gb", "h100-pcie", "h200", "gh200",
    "l40s", "a40", "v100-32gb", "mi250x", "mi300x", "max-1550",
}


# --------------------------------------------------------------------------- models


def test_required_models_present():
    assert REQUIRED_MODELS <= set(MODEL_IDS)


@pytest.mark.parametrize("model_id", MODEL_IDS)
def test_computed_params_equal_published(model_id):
    """Identity: shape from config.json -> parameter count == publisher's count, exactly."""
    m = models()[model_id]
    assert m.has_architecture
    assert m.published_params is not None
    assert m.params == m.published_params


@pytest.mark.parametrize(
    "model_id, published",
    [
        # Hugging Face safetensors parameter totals (the model page's "Model size").
        ("gpt2", 124_439_808),            # openai-community/gpt2 (paper's "117M" miscounts)
        ("gpt2-xl", 1_557_611_200),       # openai-community/gpt2-xl
        ("llama-2-7b", 6_738_415_616),    # meta-llama/Llama-2-7b-hf
        ("llama-2-70b", 68_976_648_192),  # meta-llama/Llama-2-70b-hf
        ("llama-3.1-8b", 8_030_261_248),  # meta-llama/Llama-3.1-8B
        ("llama-3.1-405b", 405_853_388_800),  # meta-llama/Llama-3.1-405B
        ("mixtral-8x7b", 46_702_792_704),     # mistralai/Mixtral-8x7B-v0.1
        ("qwen2.5-7b", 7_615_616_512),        # Qwen/Qwen2.5-7B
        ("stable-code-3b", 2_795_443_200),    # stabilityai/stable-code-3b; = StableLM-3B-4E1T card table
        ("pythia-1b", 1_011_781_632),         # EleutherAI/pythia README table, "1B" total params
        ("llama-65b", 65_285_660_672),        # juncongmoo/pyllama docs/quant/README.md printout
        # Mistral Nemo: embeddings and untied head 2 × 131,072 × 5,120 = 1,342,177,280; per layer
        # q 5,120×4,096 + k,v 2 × 5,120×1,024 + o 4,096×5,120 = 52,428,800, MLP 3 × 5,120×14,336 =
        # 220,200,960, norms 10,240 → 272,640,000 × 40 = 10,905,600,000; + final norm 5,120.
        ("mistral-nemo-12b", 12_247_782_400),  # HF safetensors total (kvfit build_registry.py)
        ("deepseek-r1-distill-llama-8b", 8_030_261_248),  # HF safetensors total (llmfit hf_models.json)
    ],
)
def test_published_param_counts_literal(model_id, published):
    assert models()[model_id].params == published


def test_llama_65b_within_llama_paper_rounding():
    # Touvron et al. 2023 (LLaMA), Table 2 prints "65.2B"; the table truncates
    # (6.738B -> 6.7B, 13.016B -> 13.0B), so the count lies in [65.2e9, 65.3e9).
    assert 65.2e9 <= models()["llama-65b"].params < 65.3e9


@pytest.mark.parametrize(
    "model_id, billions",
    [
        ("llama-3.1-8b", 8),      # Llama 3.1 model card: 8B
        ("llama-3.1-70b", 70),    # Llama 3.1 model card: 70B
        ("llama-3.1-405b", 405),  # Llama 3.1 model card: 405B
    ],
)
def test_llama_3_1_within_model_card_size(model_id, billions):
    # Meta's size names truncate (8.03B -> "8B", 405.85B -> "405B"): count in [N, N+1) billion.
    assert billions * 1e9 <= models()[model_id].params < (billions + 1) * 1e9


def test_mixtral_total_and_active_params():
    # Mistral AI, "Mixtral of experts" (Jiang et al. 2024): 46.7B total, 12.9B active per token
    # (rounded to 0.1B).
    m = models()["mixtral-8x7b"]
    assert abs(m.params - 46.7e9) < 0.05e9
    assert abs(m.active_params - 12.9e9) < 0.05e9
    assert m.active_params == 12_879_925_248  # 2 of 8 experts per layer, computed


def test_pythia_1b_non_embedding_params():
    # EleutherAI/pythia README table: 1B has 805,736,448 non-embedding parameters
    # (total minus embed_in and embed_out, 2 x 50304 x 2048).
    m = models()["pythia-1b"]
    assert m.params - 2 * m.vocab * m.hidden == 805_736_448


def test_gqa_shapes_from_config():
    # config.json num_key_value_heads: Llama 3.1 8B 8 of 32, Qwen2.5-7B 4 of 28, Llama 2 7B MHA.
    assert (models()["llama-3.1-8b"].heads, models()["llama-3.1-8b"].kv_heads) == (32, 8)
    assert (models()["qwen2.5-7b"].heads, models()["qwen2.5-7b"].kv_heads) == (28, 4)
    assert models()["llama-2-7b"].kv_head_count == models()["llama-2-7b"].heads == 32
    # Llama 3.2 1B config.json: head_dim 64, tie_word_embeddings true.
    assert models()["llama-3.2-1b"].head_size == 64
    assert models()["llama-3.2-1b"].tied_embeddings


def test_architecture_flags_from_config():
    # Qwen2: q/k/v biases, no o_proj bias, untied (config.json tie_word_embeddings false).
    qwen = models()["qwen2.5-7b"]
    assert qwen.attention_bias and not qwen.attention_out_bias and not qwen.tied_embeddings
    # StableLM (stable-code-3b): LayerNorm with bias, use_qkv_bias false, SwiGLU.
    stable = models()["stable-code-3b"]
    assert (stable.norm, stable.attention_bias, stable.mlp) == ("layernorm", False, "gated")


def test_only_gpt2_family_trained_with_dropout():
    # GPT-2 config.json: resid_pdrop = embd_pdrop = attn_pdrop = 0.1; the others train without.
    assert {i for i, m in models().items() if m.dropout} == {"gpt2", "gpt2-xl"}


@pytest.mark.parametrize("model_id", MODEL_IDS)
def test_model_row_names_its_sources(model_id):
    source = models()[model_id].source
    assert source.strip()
    assert "config.json" in source
    assert "parameter count: " in source


# --------------------------------------------------------------------------- GPUs

TFLOPS = 1e12


def test_required_gpus_present():
    assert REQUIRED_GPUS <= set(GPU_IDS)


@pytest.mark.parametrize(
    "gpu_id, dense_16bit",
    [
        ("a100-40gb", 312 * TFLOPS),    # A100 datasheet: BF16 Tensor Core 312 | 624* TFLOPS
        ("a100-80gb", 312 * TFLOPS),    # A100 datasheet: same die, same 312 dense
        ("h100-80gb", 989 * TFLOPS),    # H100 datasheet, SXM: BF16 1,979* (sparse) / 2
        ("h100-pcie", 756 * TFLOPS),    # H100 datasheet, PCIe: BF16 1,513* (sparse) / 2
        ("h200", 989 * TFLOPS),         # H200 datasheet: BF16 1,979* (sparse) / 2
        ("gh200", 990 * TFLOPS),        # GH200 datasheet: BF16 Tensor Core 990 TFLOPS dense (1,979*)
        ("l40s", 362.05 * TFLOPS),      # L40S datasheet: BF16 Tensor Core 362.05 | 733*
        ("a40", 149.7 * TFLOPS),        # A40 datasheet: BF16 Tensor 149.7 | 299.4*
        ("v100-32gb", 125 * TFLOPS),    # V100 datasheet, SXM2: Tensor Performance 125 TFLOPS (fp16)
        ("mi250x", 191.5 * TFLOPS),     # MI250X datasheet: 383.0 TFLOPS BF16 per card / 2 GCDs
        ("mi300x", 1307.4 * TFLOPS),    # MI300X datasheet: BF16 1307.4 (2614.9 with sparsity)
        ("b200", 2250 * TFLOPS),        # HGX B200: BF16 36 PFLOPS* per 8 GPUs (sparse) / 8 / 2
    ],
)
def test_dense_16bit_peak_from_datasheet(gpu_id, dense_16bit):
    assert gpus()[gpu_id].peak_16bit_flops == pytest.approx(dense_16bit, rel=1e-9)


@pytest.mark.parametrize(
    "gpu_id, sparse_16bit",
    [
        ("a100-40gb", 624 * TFLOPS),    # A100 datasheet, the "*" (sparsity) column
        ("h100-80gb", 1979 * TFLOPS),   # H100 datasheet: the figure many tables wrongly list as dense
        ("h100-pcie", 1513 * TFLOPS),   # H100 datasheet, PCIe, sparse
        ("h200", 1979 * TFLOPS),        # H200 datasheet, sparse
        ("mi300x", 2614.9 * TFLOPS),    # MI300X datasheet, with sparsity
    ],
)
def test_peak_is_never_the_sparsity_figure(gpu_id, sparse_16bit):
    peak = gpus()[gpu_id].peak_16bit_flops
    assert peak != pytest.approx(sparse_16bit)
    assert peak == pytest.approx(sparse_16bit / 2, rel=1e-3)  # 2:4 sparsity doubles the dense rate


@pytest.mark.parametrize("gpu_id", [g for g in GPU_IDS if gpus()[g].peak_fp8_flops is not None])
def test_fp8_is_twice_dense_16bit(gpu_id):
    # Hopper, Ada, Blackwell and CDNA3 tensor cores run FP8 at twice their 16-bit rate; a row where
    # the ratio is 4 or 1 has mixed a sparse and a dense figure. 2% covers the L40S datasheet,
    # which prints BF16 362.05 beside FP8 733 (= 2 x 366.5).
    g = gpus()[gpu_id]
    assert g.peak_fp8_flops / g.peak_16bit_flops == pytest.approx(2.0, rel=0.02)


@pytest.mark.parametrize(
    "gpu_id, bandwidth",
    [
        ("a100-40gb", 1.555e12),   # A100 datasheet, 40GB SXM: 1,555 GB/s
        ("a100-80gb", 2.039e12),   # A100 datasheet, 80GB SXM: 2,039 GB/s
        ("h100-80gb", 3.35e12),    # H100 datasheet, SXM: 3.35 TB/s
        ("h100-pcie", 2.0e12),     # H100 datasheet, PCIe: 2 TB/s
        ("h200", 4.8e12),          # H200 datasheet: 4.8 TB/s
        ("gh200", 4.0e12),         # GH200 datasheet, 96GB HBM3: 4 TB/s
        ("l40s", 864e9),           # L40S datasheet: 864 GB/s
        ("a40", 696e9),            # A40 datasheet: 696 GB/s
        ("v100-32gb", 900e9),      # V100 datasheet, SXM2: 900 GB/s
        ("mi250x", 1.6384e12),     # MI250X datasheet: 3.2768 TB/s per card / 2 GCDs
        ("mi300x", 5.3e12),        # MI300X datasheet: 5.3 TB/s
        ("max-1550", 3.2768e12),   # Intel ark 232873: 3.2768 TB/s
    ],
)
def test_memory_bandwidth_from_datasheet(gpu_id, bandwidth):
    assert gpus()[gpu_id].memory_bandwidth == pytest.approx(bandwidth, rel=1e-9)


@pytest.mark.parametrize(
    "gpu_id, nominal_gb",
    [
        ("a100-40gb", 40), ("a100-80gb", 80), ("h100-80gb", 80), ("h200", 141),  # NVIDIA datasheets
        ("gh200", 96),       # GH200 datasheet, HBM3 variant
        ("l40s", 48), ("a40", 48), ("v100-32gb", 32),
        ("mi250x", 64),      # MI250X datasheet: 128 GB per card, 64 GB per GCD
        ("mi300x", 192),     # MI300X datasheet: 192 GB HBM3
        ("max-1550", 128),   # Intel ark: 128 GB HBM2e per GPU (2 stacks x 64 GB)
    ],
)
def test_nominal_memory_from_datasheet(gpu_id, nominal_gb):
    assert gpus()[gpu_id].memory_bytes == nominal_gb * GB


def test_usable_memory_pins():
    g = gpus()
    # deviceQuery totalGlobalMem, A100-SXM4-80GB, driver 12.2 (maximilianmbeck/vlstm_cuda README)
    assert g["a100-80gb"].usable_memory_bytes == 84_987_740_160
    # deviceQuery totalGlobalMem, L40S, ECC on (thamada/nvidia-smi nvsim/L40S_deviceQuery.py)
    assert g["l40s"].usable_memory_bytes == 47_803_596_800
    # PyTorch "total capacity of 79.11 GiB" on H100 80GB (public OOM messages)
    assert g["h100-80gb"].usable_memory_bytes == round(79.11 * GiB)
    # torch total_memory=143156MB (MiB) on NVIDIA H200
    assert g["h200"].usable_memory_bytes == 143_156 * 2**20


@pytest.mark.parametrize("gpu_id", GPU_IDS)
def test_usable_memory_within_physical(gpu_id):
    # The marketed "N GB" of HBM/GDDR is N GiB of physical memory (stacks are binary-sized: the
    # A100 40GB is 5 x 8 GiB), so usable bytes are compared with N GiB, not N * 10^9 bytes.
    # ECC on GDDR6 (L40S, A40) costs 1/16, and drivers reserve a few hundred MiB: >= 90% remains.
    g = gpus()[gpu_id]
    physical = round(g.memory_bytes / GB) * GiB
    assert g.usable_memory_bytes <= physical
    assert g.usable_memory_bytes >= 0.90 * physical


def test_usable_memory_is_not_the_nvidia_smi_total():
    # nvidia-smi shows 46,068 MiB total on L40S (modal-labs/modal-client PR #2797); PyTorch can
    # allocate 45,589 MiB of it (deviceQuery). The catalog holds the PyTorch figure.
    assert gpus()["l40s"].usable_memory_bytes < 46_068 * 2**20


def test_bf16_support():
    # V100 (Volta) tensor cores are fp16-only: the catalog's 16-bit peak is fp16 there.
    assert {i for i, g in gpus().items() if not g.bf16} == {"v100-32gb"}


def test_per_device_rows_say_so():
    # MI250X rows are per GCD (2 per card); Max 1550 rows are per GPU (2 stacks).
    assert "GCD" in gpus()["mi250x"].notes
    assert "stack" in gpus()["max-1550"].notes


@pytest.mark.parametrize("gpu_id", GPU_IDS)
def test_gpu_row_names_its_sources(gpu_id):
    g = gpus()[gpu_id]
    assert g.source.strip()
    assert g.usable_memory_source.strip()
    assert g.name.strip() and g.vendor in {"NVIDIA", "AMD", "Intel"}


@pytest.mark.parametrize("gpu_id", ["a100-40gb-pcie", "h100-pcie", "gh200", "rtx-6000-ada", "max-1550"])
def test_derived_usable_memory_says_derived(gpu_id):
    assert "derived" in gpus()[gpu_id].usable_memory_source
