"""Bytes per value and per optimizer state have one home (precision.py), the option lists that
name them another (options.py): memory, storage and the workload schema agree because they import them."""

from __future__ import annotations

from fractions import Fraction

import pytest

from proposalkit import options, precision
from proposalkit.estimate import storage
from proposalkit.estimate.memory import Overhead, TrainingSetup, training_memory
from proposalkit.catalog.shapes import ModelSpec
from proposalkit.input import schema

NO_OVERHEAD = Overhead(cuda_context_bytes=0, allocator_reserve=0.0)
PARAMS = 2**31   # a multiple of 256, so 8-bit Adam's absmax blocks divide it exactly


def test_8bit_adam_state_is_two_bytes_plus_absmax_per_block():
    # bitsandbytes @ 51294d90 bitsandbytes/optim/optimizer.py, Optimizer2State.init_state: state1 and state2
    # uint8 (1 byte per value each), absmax1 and absmax2 float32 of ⌈n / 256⌉ values (256 since 0.44.0).
    assert precision.optimizer_state_bytes("adamw-8bit") == 2 * (1 + Fraction(4, 256)) == Fraction(65, 32)
    assert precision.optimizer_state_bytes("adamw") == 8          # exp_avg + exp_avg_sq, fp32
    assert precision.optimizer_state_bytes("sgd") == 4            # momentum_buffer, fp32


@pytest.mark.parametrize("optimizer", precision.OPTIMIZERS)
def test_memory_and_checkpoint_count_the_same_optimizer_state(optimizer):
    model = ModelSpec(id="p", name="p", params_override=PARAMS)
    setup = TrainingSetup(method="full", seq_len=1, precision="bf16", optimizer=optimizer)
    memory = training_memory(model, setup, NO_OVERHEAD)
    on_gpu = memory.optimizer + memory.paged_bytes   # fp32 master + states (a paged optimizer's in unified memory)
    on_disk = storage.full_checkpoint_bytes(PARAMS, "bf16", optimizer)      # bf16 weights + master + states
    assert on_gpu == PARAMS * (4 + precision.optimizer_state_bytes(optimizer))
    assert on_disk == PARAMS * 2 + on_gpu


def test_8bit_adam_checkpoint_basis_shows_the_absmax():
    size = storage.checkpoint_size(PARAMS, "bf16", "adamw-8bit")
    assert size.basis == ("2 (bf16 weights) + 4 (fp32 master weights) + 2.03125 (adamw-8bit state) "
                          "= 8.03125 bytes/param; gradients are not saved")


def test_schema_offers_the_estimates_option_lists():
    assert schema.OPTIMIZERS is options.OPTIMIZERS
    assert schema.PRECISIONS is options.PRECISIONS
    assert schema.METHODS is options.TRAINING_METHODS


def test_unknown_optimizer_is_refused_the_same_way_everywhere():
    message = "optimizer: expected one of adamw, adamw-8bit, paged-adamw, paged-adamw-8bit, sgd, got 'lion'"
    with pytest.raises(ValueError, match=message):
        storage.full_checkpoint_bytes(10, "bf16", "lion")
    with pytest.raises(ValueError, match=message):
        precision.optimizer_state_bytes("lion")
