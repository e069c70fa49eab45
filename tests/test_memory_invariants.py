"""Hypothesis invariants of proposalkit.estimate.memory over random architectures and setups."""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from proposalkit.catalog.modules import LoraSpec
from proposalkit.estimate.lora import lora_trainable_params
from proposalkit.estimate.memory import (
    InferenceSetup,
    TrainingSetup,
    inference_memory,
    kv_cache_bytes_per_token,
    training_memory,
    zero3_gathered_bytes,
)
from proposalkit.catalog.shapes import ModelSpec, linear_weight_params
from proposalkit.estimate.breakdown import Overhead, as_printed
from proposalkit.units import GiB, gib_up

FAST = settings(max_examples=60, deadline=None)


@st.composite
def architectures(draw) -> ModelSpec:
    heads = draw(st.sampled_from([1, 2, 4, 8, 16]))
    head_dim = draw(st.sampled_from([8, 16, 64, 128]))
    kv_heads = draw(st.sampled_from([k for k in (1, 2, 4, 8, 16) if heads % k == 0]))
    hidden = heads * head_dim
    experts = draw(st.sampled_from([1, 1, 4]))
    return ModelSpec(
        id="random", name="random",
        layers=draw(st.integers(1, 12)), hidden=hidden, heads=heads, kv_heads=kv_heads,
        ffn_hidden=draw(st.integers(1, 4 * hidden)), vocab=draw(st.integers(2, 50_000)),
        mlp=draw(st.sampled_from(["gated", "plain"])), dropout=draw(st.booleans()),
        experts=experts, experts_per_token=2 if experts > 1 else 1,
    )


params_only = st.integers(1, 10**12).map(lambda p: ModelSpec(id="p", name="p", params_override=p))


@st.composite
def training_setups(draw) -> TrainingSetup:
    method = draw(st.sampled_from(["full", "lora", "qlora"]))
    zero_stage = draw(st.integers(0, 3))
    return TrainingSetup(
        method=method,
        seq_len=draw(st.integers(1, 4096)),
        micro_batch=draw(st.integers(1, 8)),
        precision=draw(st.sampled_from(["fp32", "bf16", "fp16"])),
        optimizer=draw(st.sampled_from(["adamw", "adamw-8bit", "sgd"])),
        data_parallel=draw(st.integers(1, 16)),
        zero_stage=zero_stage,
        tensor_parallel=draw(st.sampled_from([1, 2, 4])),
        pipeline_parallel=draw(st.sampled_from([1, 2, 3])),
        activation_checkpointing=draw(st.booleans()),
        flash_attention=draw(st.booleans()),
        sequence_parallel=draw(st.booleans()),
        mixed_precision=draw(st.booleans()),
        lora=LoraSpec(rank=draw(st.sampled_from([1, 8, 64])),
                      targets=draw(st.sampled_from([("q_proj", "v_proj"), ("all-linear",)])))
        if method != "full" else None,
    )


def _replace(setup, **changes):
    return type(setup)(**{**setup.__dict__, **changes})


@FAST
@given(architectures(), training_setups(), st.integers(1, 8), st.integers(0, 4096))
def test_training_memory_never_falls_as_batch_or_sequence_grows(model, setup, more_batch, more_seq):
    before = training_memory(model, setup)
    bigger_batch = training_memory(model, _replace(setup, micro_batch=setup.micro_batch + more_batch))
    longer = training_memory(model, _replace(setup, seq_len=setup.seq_len + more_seq))
    assert bigger_batch.total >= before.total
    assert longer.total >= before.total
    assert bigger_batch.activations >= before.activations
    assert longer.activations >= before.activations


@FAST
@given(architectures(), st.integers(1, 32_768), st.integers(1, 64), st.integers(1, 4096), st.integers(1, 16),
       st.sampled_from(["fp32", "bf16", "fp8", "int8", "int4"]), st.sampled_from([1, 2, 4, 8]))
def test_inference_memory_never_falls_as_batch_or_context_grows(model, context, batch, more_ctx, more_batch,
                                                                 precision, tp):
    setup = InferenceSetup(context=context, batch=batch, precision=precision, tensor_parallel=tp)
    before = inference_memory(model, setup)
    assert inference_memory(model, _replace(setup, context=context + more_ctx)).total >= before.total
    assert inference_memory(model, _replace(setup, batch=batch + more_batch)).total >= before.total


@FAST
@given(architectures(), st.integers(1, 100_000), st.integers(1, 64), st.integers(2, 16))
def test_kv_cache_is_linear_in_context_and_batch(model, context, batch, k):
    def kv(c, b):
        return inference_memory(model, InferenceSetup(context=c, batch=b)).kv_cache

    assert kv(context, batch) == kv_cache_bytes_per_token(model) * context * batch
    assert kv(k * context, batch) == k * kv(context, batch)
    assert kv(context, k * batch) == k * kv(context, batch)


@FAST
@given(params_only | architectures())
def test_halving_bytes_per_parameter_halves_the_weights(model):
    def weights(precision):
        return inference_memory(model, InferenceSetup(context=1, precision=precision)).weights

    # fp32 → bf16: every tensor goes from 4 to 2 bytes
    assert weights("bf16") * 2 == weights("fp32")
    if model.has_architecture:
        # bf16 → fp8: the block matrices halve; embeddings, head and norms stay 16-bit
        assert weights("bf16") - weights("fp8") == linear_weight_params(model)
    else:
        assert weights("fp8") * 2 == weights("bf16")


@FAST
@given(params_only | architectures(), st.integers(1, 512),
       st.sampled_from(["fp32", "bf16"]), st.sampled_from(["adamw", "adamw-8bit", "sgd"]))
def test_zero3_model_states_fall_as_one_over_n(model, n, precision, optimizer):
    def states(gpus):
        setup = TrainingSetup(method="full", seq_len=1, precision=precision, optimizer=optimizer,
                              data_parallel=gpus, zero_stage=3)
        m = training_memory(model, setup)
        # the all-gathered unit being computed on (and the prefetched one) does not shard
        working_set = sum(zero3_gathered_bytes(model, setup))
        return m.weights + m.gradients + m.optimizer - working_set

    one = states(1)
    # each of the three components is rounded up once: within 3 bytes of exact
    assert abs(states(n) - Fraction(one, n)) < 3


@FAST
@given(architectures(), training_setups())
def test_components_are_non_negative_integers_that_sum_to_total(model, setup):
    m = training_memory(model, setup)
    values = m.components().values()
    assert all(isinstance(v, int) and v >= 0 for v in values)
    assert m.total == sum(values)
    if setup.method != "full" and setup.zero_stage < 2:
        # frozen base: the only gradients are the adapters' (fp32 by default), split by t, and the
        # fullest pipeline stage holds ⌈L/p⌉ of the L layers' adapters
        adapters = lora_trainable_params(model, setup.lora)
        stage_layers = -(-model.layers // setup.pipeline_parallel)
        assert m.gradients == -(-adapters * 4 * stage_layers // (model.layers * setup.tensor_parallel))


@FAST
@given(architectures(), training_setups(), st.sampled_from([0.10, 0.15]), st.sampled_from([0.0, 0.38]))
def test_a_breakdown_as_printed_adds_up_and_is_never_below_the_estimate(model, setup, reserve, ample):
    """estimate/breakdown.as_printed: each component rounded up to 0.01 GiB, the reserve the share of the printed
    allocated figure rounded up; the totals are sums of the printed components, never below the exact ones."""
    overhead = Overhead(cuda_context_bytes=GiB, allocator_reserve=reserve, ample_reserve=ample)
    exact = training_memory(model, setup, overhead)
    m = as_printed(exact, overhead)
    cents = {k: gib_up(v) for k, v in m.components().items()}
    assert all(gib_up(v) == gib_up(getattr(exact, k)) for k, v in vars(m).items()
               if k in ("weights", "gradients", "optimizer", "activations", "kv_cache"))
    assert sum(cents.values()) == Decimal(f"{m.total / GiB:.2f}") == gib_up(m.total)
    allocated = sum(v for k, v in cents.items() if k != "overhead")
    assert gib_up(m.allocated_bytes) == allocated
    assert gib_up(m.reserved_bytes - m.allocated_bytes) == (allocated * Decimal(repr(reserve))).quantize(
        Decimal("0.01"), ROUND_CEILING)
    for key in ("allocated_bytes", "reserved_bytes", "device_bytes"):
        assert getattr(m, key) >= getattr(exact, key)
    assert m.estimated is exact and as_printed(m, overhead).total == m.total
