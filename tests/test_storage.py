"""Checkpoint, dataset and scratch sizes (bytes), with the published cross-checks.

Expected values are computed here from the published inputs, source beside each.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from proposalkit.estimate import storage as S
from proposalkit.units import bytes_of_gib

GiB, TiB = 2**30, 2**40

# Llama-2-7B: 6,738,415,616 parameters (meta-llama/Llama-2-7b-hf, safetensors metadata).
LLAMA2_7B_PARAMS = 6_738_415_616
# BLOOM-176B: 176,247,271,424 parameters (bigscience/bloom model card).
BLOOM_PARAMS = 176_247_271_424


def test_published_llama2_7b_full_finetune_storage():
    size = S.checkpoint_size(LLAMA2_7B_PARAMS, precision="bf16", optimizer="adamw")
    assert size.weights_bytes == LLAMA2_7B_PARAMS * 2 == 13_476_831_232
    # mixed-precision AdamW: 2 (bf16) + 4 (fp32 master) + 4 + 4 (Adam moments) = 14
    assert size.full_state_bytes == LLAMA2_7B_PARAMS * 14 == 94_337_818_624
    assert size.full_state_bytes_per_param == 14
    assert size.basis == ("2 (bf16 weights) + 4 (fp32 master weights) + 8 (adamw state) "
                          "= 14 bytes/param; gradients are not saved")
    # 3 checkpoints retained × 2 concurrent runs
    assert S.peak_scratch_bytes(size.full_state_bytes, retained=3, concurrency=2) == \
        94_337_818_624 * 3 * 2 == 566_026_911_744


def test_published_bloom_checkpoint_sizes_are_binary_units_rounded_up():
    # bigscience/bloom model card: "Bf16 weights: 329GB"; "Full checkpoint with optimizer
    # states: 2.3TB". 2 B/param in GiB, rounded up as `du -h` prints, is 329; in decimal
    # GB it would be 352 — the card's units are binary.
    weights = S.weights_checkpoint_bytes(BLOOM_PARAMS, "bf16")
    assert weights == BLOOM_PARAMS * 2
    assert math.ceil(weights / GiB) == 329
    assert round(weights / 1e9) == 352
    # 14 B/param = 2.244 TiB, rounded up to one decimal: 2.3 (decimal TB would give 2.5).
    full = S.full_checkpoint_bytes(BLOOM_PARAMS, "bf16", "adamw")
    assert full == BLOOM_PARAMS * 14
    assert math.ceil(full / TiB * 10) / 10 == 2.3
    assert round(full / 1e12, 1) == 2.5


def test_fp32_training_state_has_no_master_copy():
    assert S.training_state_bytes_per_param("fp32", "adamw") == 4 + 8
    # bitsandbytes 8-bit AdamW saves two uint8 moments and one fp32 absmax per block of
    # 256 for each (bitsandbytes @ 51294d90 optim/optimizer.py, Optimizer2State.init_state): 2 + 8/256 bytes.
    assert S.training_state_bytes_per_param("bf16", "adamw-8bit") == 2 + 4 + 2 + Fraction(8, 256)
    assert S.training_state_bytes_per_param("bf16", "sgd") == 2 + 4 + 4


def test_lora_checkpoint_is_the_adapter_alone():
    # LoRA r=8 on q_proj and v_proj of a 32-layer, 4096-wide Llama-7B:
    # 2 matrices × 32 layers × r × (4096 + 4096) = 4,194,304 adapter params
    # (PEFT's print_trainable_parameters for this configuration).
    adapter = 2 * 32 * 8 * (4096 + 4096)
    assert adapter == 4_194_304
    size = S.lora_checkpoint_size(adapter)
    assert size.weights_bytes == adapter * 4          # fp32 adapters (PEFT autocast)
    assert size.full_state_bytes == adapter * (4 + 8)  # + AdamW moments, no master copy
    assert size.basis.startswith("LoRA adapter only")


def test_int4_weights_are_half_a_byte_never_zero():
    assert S.weights_checkpoint_bytes(3, "int4") == 2          # ⌈1.5⌉
    assert S.weights_checkpoint_bytes(1_000, "int4") == 500


@pytest.mark.parametrize("vocab, width", [
    (50_257, 2),     # GPT-2: nanoGPT stores np.uint16 "since enc.max_token_value == 50256 is < 2**16"
    (32_000, 2),     # Llama-2
    (65_536, 2),     # ids 0..65,535 all fit in uint16
    (65_537, 4),
    (128_256, 4),    # Llama-3
])
def test_token_id_width(vocab, width):
    assert S.token_id_bytes(vocab) == width


def test_dataset_size_tokenized_and_raw():
    # 200M tokens: uint16 ids = 400 MB; raw English text ≈ 4 bytes/token = 800 MB
    # (OpenAI: "1 token ~= 4 chars in English").
    d = S.dataset_size(200_000_000, vocab_size=32_000)
    assert d.tokenized_bytes == 200_000_000 * 2
    assert d.raw_text_bytes == 200_000_000 * 4
    assert S.dataset_size(200_000_000, vocab_size=128_256).tokenized_bytes == 200_000_000 * 4


def test_storage_totals():
    ft = S.WorkloadStorage(
        checkpoint_bytes=94_337_818_624, final_weights_bytes=13_476_831_232,
        dataset_bytes=400_000_000, dataset_raw_bytes=800_000_000,
        retained=3, concurrency=2, variants=4,
    )
    lora = S.WorkloadStorage(checkpoint_bytes=50_331_648, final_weights_bytes=16_777_216, variants=10)
    t = S.storage_totals([ft, lora])
    # Worked from the sizes as printed, GiB to 0.01 (units.gib_shown): checkpoint 94,337,818,624 B = 87.86 GiB,
    # final weights 13,476,831,232 B = 12.55, tokenized 400 MB = 0.37, raw 800 MB = 0.75; LoRA's checkpoint
    # 50,331,648 B = 0.05 and adapter 16,777,216 B = 0.02 GiB.
    ft_scratch = bytes_of_gib(Decimal("87.86") * 3 * 2 + Decimal("0.37"))              # 527.53 GiB
    # The workloads run one after another (the calendar's assumption): scratch is the largest peak, not the sum.
    assert t.scratch_bytes == max(ft_scratch, lora.peak_scratch_bytes) == ft_scratch
    assert lora.peak_scratch_bytes == bytes_of_gib(Decimal("0.05"))
    ft_project = Decimal("0.75") + Decimal("0.37") + 4 * Decimal("12.55")                # 51.32 GiB
    ft_archive = 4 * Decimal("12.55") + Decimal("0.75")                                  # 50.95 GiB
    assert t.project_bytes == bytes_of_gib(ft_project + 10 * Decimal("0.02"))           # 51.52 GiB
    assert t.archive_bytes == bytes_of_gib(ft_archive + 10 * Decimal("0.02"))           # 51.15 GiB
    assert (ft.project_bytes, ft.peak_scratch_bytes, ft.archive_bytes) == (
        bytes_of_gib(ft_project), ft_scratch, bytes_of_gib(ft_archive))


def test_a_model_file_several_workloads_start_from_is_counted_once():
    """Equal model_weights_key: one file, stored by the first workload; no key (pretraining) or no bytes: never
    shared. Project space counts the weights once; the shared record keeps its size (what it reads)."""
    tune = S.WorkloadStorage(checkpoint_bytes=0, final_weights_bytes=16_777_216, model_weights_bytes=16_060_522_496,
                             model_weights_key=("llama-3.1-8b", "bf16"))
    serve = S.WorkloadStorage(0, 0, model_weights_bytes=16_060_522_496, model_weights_key=("llama-3.1-8b", "bf16"))
    fp8 = S.WorkloadStorage(0, 0, model_weights_bytes=8_030_261_248, model_weights_key=("llama-3.1-8b", "fp8"))
    scratch = S.WorkloadStorage(1, 1, dataset_bytes=GiB)
    shared = S.share_model_weights([("tune", tune), ("serve", serve), ("fp8", fp8), ("pretrain", scratch),
                                    ("serve-again", serve)])
    assert [s.model_weights_shared_with for s in shared] == [None, "tune", None, None, "tune"]
    assert shared[1].model_weights_bytes == serve.model_weights_bytes and shared[1].project_bytes == 0
    t = S.storage_totals(shared)
    # 14.96 GiB once + 7.48 GiB (the fp8 file) + the adapter 0.02 + pretrain's 1.00 GiB tokenized
    assert t.project_bytes == bytes_of_gib(Decimal("14.96") + Decimal("7.48") + Decimal("0.02") + Decimal("1.00"))
    assert t.model_weights_bytes == bytes_of_gib(Decimal("14.96") + Decimal("7.48"))
    assert (t.final_weights_bytes, t.raw_data_bytes) == (bytes_of_gib(Decimal("0.02")), 0)


@pytest.mark.parametrize("bad", [-1, 1.5, float("nan"), True, "7B"])
def test_bad_counts_are_rejected(bad):
    with pytest.raises(ValueError):
        S.weights_checkpoint_bytes(bad)


@given(params=st.integers(0, 10**12))
def test_halving_bytes_per_param_halves_weights(params):
    assert S.weights_checkpoint_bytes(params, "bf16") == 2 * S.weights_checkpoint_bytes(params, "int8")
    assert S.weights_checkpoint_bytes(2 * params, "int8") == 2 * S.weights_checkpoint_bytes(2 * params, "int4")
    assert S.weights_checkpoint_bytes(params, "fp32") == 2 * S.weights_checkpoint_bytes(params, "bf16")


@given(params=st.integers(0, 10**12),
       precision=st.sampled_from(["fp32", "bf16", "fp16", "fp8", "int8", "int4"]),
       optimizer=st.sampled_from(["adamw", "adamw-8bit", "sgd"]))
def test_full_state_is_never_smaller_than_weights(params, precision, optimizer):
    size = S.checkpoint_size(params, precision, optimizer)
    assert size.full_state_bytes >= size.weights_bytes
    assert isinstance(size.weights_bytes_per_param, (int, Fraction))  # exact, never a float


@given(ckpt=st.integers(0, 10**13), retained=st.integers(1, 10), concurrency=st.integers(1, 16))
def test_peak_scratch_scales_with_retained_and_concurrency(ckpt, retained, concurrency):
    one = S.peak_scratch_bytes(ckpt, 1, 1)
    assert S.peak_scratch_bytes(ckpt, retained, concurrency) == one * retained * concurrency
