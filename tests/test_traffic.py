"""The memory-bound bytes and kernels of one layer and of the head (estimate/traffic.py, op_traffic.py), by hand.

Llama 3.1 8B (config.json: hidden_size h = 4,096, intermediate_size f = 14,336, 32 attention heads and 8
key/value heads of head_dim 128, vocab_size v = 128,256), bf16 (2 B a value, the residual stream and the norms'
weights too), a full fine-tune (the norms' weights trainable), FlashAttention, no dropout, fused kernels (each
run of memory-bound ops between two matmuls one kernel: it reads what comes from outside the run, writes what
leaves it; its backward reads each leaving tensor's gradient once per reader and the inputs again, and writes
the inputs' gradients). Bytes per token; q is a·d = 4,096 wide, k and v kv·d = 1,024.

    run (group)  reads                        leaves (readers)                   forward          backward
    norm1        x 2h                         y 2h (q, k, v: 3)                  2h + 2h = 16,384 3·2h + 2·2h = 40,960
    rope         q 2·4,096 + k 2·1,024        q', k' (attention: 1)              10,240 + 10,240  10,240 + 2·10,240 = 30,720
    attn-out     attn 2·4,096                 attn_c (o_proj: 1)                 8,192 + 8,192    8,192 + 2·8,192 = 24,576
    resid1       x 2h, o 2h                   x1 (the last add: 1), y2 (gate, up: 2)  4h + 4h = 32,768   2h + 2·2h + 2·4h = 57,344
    act          gate 2f, up 2f               m 2f (down_proj: 1)                4f + 2f = 86,016 2f + 2·4f = 143,360
    resid2       x1 2h, d 2h                  x2 2h (the next layer: 1)          4h + 2h = 24,576 2h + 2·4h = 40,960
    layer                                                                        196,608          337,920

Kernels: six runs forward; backward one each, and one more for a trainable norm's weight gradient (norm1,
resid1): 8; the seven projections 1 forward and 2 backward (dgrad, wgrad): 7 and 14; cuDNN's attention 1 and 5
(op_traffic.ATTENTION_KERNELS). Forward 6 + 7 + 1 = 14, backward 8 + 14 + 5 = 27.

Outside tensor parallelism's blocks (traffic.OUTSIDE_TENSOR_PARALLEL: whole on every GPU of a tensor-parallel
group without sequence parallelism, Korthikanti et al. 2022 §4.2.2): norm1, resid1 and resid2, forward
16,384 + 32,768 + 24,576 = 73,728 and backward 40,960 + 57,344 + 40,960 = 139,264, kernels 3 and 2 + 2 + 1 = 5.
Inside: the rest, 196,608 − 73,728 = 122,880 and 337,920 − 139,264 = 198,656, kernels 11 and 22.

The head, fused loss (Liger, Cut Cross-Entropy: the 16-bit logits read twice for the row statistics, once for the
gradient it writes, traffic.head_traffic): the final norm's run reads x (2h) and leaves y (2h, one reader, the
output projection): 4h = 16,384 forward, 2h + 2·2h = 24,576 backward; the loss 2·2v = 513,024 each way. Kernels:
norm 1 and 2, the output projection 1 and 2, the loss 1 and 1. The final norm lies outside tensor parallelism's
blocks; the loss is split with the vocabulary (Megatron-LM's vocab-parallel cross-entropy).
"""

from __future__ import annotations

from proposalkit.catalog import models
from proposalkit.estimate.op_traffic import Traffic, eager_traffic, value_bytes
from proposalkit.estimate.traffic import LayerSetup, head_traffic, layer_graph, layer_traffic

LLAMA = models()["llama-3.1-8b"]
BF16_FULL = LayerSetup(e=2, residual=2, weight_bytes=2, trainable_norms=True, autocast=False, flash_attention=True,
                       lora=None)


def test_the_config_is_the_one_counted():
    assert (LLAMA.hidden, LLAMA.ffn_hidden, LLAMA.heads, LLAMA.kv_heads, LLAMA.head_size, LLAMA.vocab) == \
        (4096, 14336, 32, 8, 128, 128256)
    assert not LLAMA.dropout and LLAMA.mlp == "gated" and LLAMA.norm == "rmsnorm"


def test_a_fused_llama_layer_by_hand():
    h, f = 4096, 14336
    forward = [4 * h, 20_480, 16_384, 8 * h, 6 * f, 6 * h]
    backward = [10 * h, 30_720, 24_576, 14 * h, 10 * f, 10 * h]
    assert sum(forward) == 196_608 and sum(backward) == 337_920
    layer = layer_traffic(LLAMA, BF16_FULL, "fused")
    assert layer.total == Traffic(196_608, 337_920, 14, 27)
    assert layer.outside == Traffic(73_728, 139_264, 3, 5)
    assert layer.inside == Traffic(122_880, 198_656, 11, 22)


def test_the_fused_head_by_hand():
    h, v = 4096, 128256
    head = head_traffic(LLAMA, BF16_FULL, "fused", "fused")
    assert head.total == Traffic(4 * h + 4 * v, 6 * h + 4 * v, 3, 5)
    assert head.outside == Traffic(4 * h, 6 * h, 1, 2)
    assert 4 * h + 4 * v == 529_408


def test_a_tensor_names_its_bytes_per_value():
    assert value_bytes("x32_3@4") == 4 and value_bytes("la@b@2") == 2


def test_the_two_regions_partition_the_eager_layer():
    # Every op and every gradient add of the eager graph falls in exactly one region (the layer input's adds with
    # its first reader, norm1: outside): the regions add up to the whole graph's traffic.
    for model in (LLAMA, models()["gpt2"], models()["mixtral-8x7b"]):
        regions = layer_traffic(model, BF16_FULL, "eager")
        assert regions.total == eager_traffic(layer_graph(model, BF16_FULL))
        assert regions.outside.bytes > 0 and regions.inside.bytes > 0
