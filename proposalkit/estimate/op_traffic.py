"""What a graph of ops moves through HBM, eager or fused, and the kernels it launches (traffic.py builds the
graphs of a layer and of the head).

Each op that is not a matrix multiply or attention moves its inputs and outputs through HBM once per kernel,
forward, and its backward moves what autograd's formula for it reads and writes (pytorch/pytorch
tools/autograd/derivatives.yaml); a tensor read by k ops gets k gradients, which autograd adds (k − 1 adds).
Compiled (torch.compile's Inductor) and fused kernels (Megatron's Transformer Engine) run each run of
consecutive pointwise and reduction ops between two matmuls as one kernel: it reads what comes from outside the
run and writes what leaves it, and its backward reads the gradients of what left and the inputs again and
writes the inputs' gradients (the partitioner recomputes cheap pointwise ops instead of saving them, as
activations.py counts for "compiled"). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

from .activations import MASK_BYTES          # a dropout mask: 1 byte per value (Korthikanti et al. 2022 §4.1)

# cuDNN's SDPA as this project's H100 profile runs it (benchmarks/validation/measured/results/
# h100-80gb-hbm3-2026-11-26-profile.json, Llama 3.2 1B: 96 attention kernels over 16 layers): one forward
# kernel and five backward (dot(dO, O), the flash backward, dQ to 16 bits, two head reductions).
ATTENTION_KERNELS = (1, 5)
# A softmax over a row longer than a block keeps in registers reads the row once per pass (pytorch/pytorch
# aten/src/ATen/native/cuda/SoftMax.cu cunn_SoftMaxForward: the max, the sum of exponentials, the write of
# the output; cunn_SoftMaxBackward: the sum of the gradient, then the write): a vocabulary row (128k fp32
# values, 0.5 MB) is such a row, a sequence's attention scores row is not.
SOFTMAX_FORWARD_READS, SOFTMAX_BACKWARD_READS = 3, 3


@dataclass(frozen=True)
class Op:
    """One op of the layer: its kind (the rules below), the tensors it reads and writes, and the run of ops a
    compiler fuses it with (`group`; "" for matmuls and attention, which end a run)."""

    kind: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    group: str = ""
    trainable: bool = False       # a weight the op reads gets a gradient (norm weights of a full fine-tune)


# Kinds that are not memory-bound: their time is FLOPs (flops.py), their kernels (forward, backward) counted.
COMPUTE = ("gemm", "gemm-frozen", "attention")


@dataclass(frozen=True)
class Traffic:
    """Bytes through HBM and kernels launched, per token of one layer (or of the head), one micro-batch."""

    forward_bytes: Fraction | int = 0
    backward_bytes: Fraction | int = 0
    forward_kernels: int = 0
    backward_kernels: int = 0
    per_token_kernels: bool = field(default=False, compare=False)

    @property
    def bytes(self) -> Fraction | int:
        return self.forward_bytes + self.backward_bytes

    @property
    def kernels(self) -> int:
        return self.forward_kernels + self.backward_kernels

    def __add__(self, other: "Traffic") -> "Traffic":
        return Traffic(self.forward_bytes + other.forward_bytes, self.backward_bytes + other.backward_bytes,
                       self.forward_kernels + other.forward_kernels, self.backward_kernels + other.backward_kernels)


def _eager_op(op: Op, size: dict[str, Fraction | int]) -> tuple[Fraction | int, Fraction | int, int, int]:
    """(forward bytes, backward bytes, forward kernels, backward kernels) of one eager op."""
    ins = [size[t] for t in op.inputs]
    out = sum(size[t] for t in op.outputs)
    x = ins[0] if ins else 0
    read = sum(ins)
    kind = op.kind
    if kind == "gemm":
        return 0, 0, 1, 2                        # dgrad and wgrad
    if kind == "gemm-frozen":
        return 0, 0, 1, 1                        # dgrad only: the frozen weight needs no gradient
    if kind == "attention":
        return 0, 0, *ATTENTION_KERNELS
    if kind == "tiny":                           # per-token scalars (add eps, rsqrt): a launch, no bulk bytes
        return 0, 0, 1, 1
    if kind == "view":                           # a slice or transpose: no kernel forward; its backward writes
        return 0, 2 * x, 0, 2                    # a zero-filled input-sized gradient and copies its part in
    if kind in ("cast", "copy", "scale"):        # y = x.to(dtype), x.contiguous(), x·c: backward casts/copies/scales
        return read + out, out + read, 1, 1
    if kind == "unary":                          # silu, gelu: backward reads the gradient and the input
        return read + out, out + 2 * x, 1, 1
    if kind == "pow2":                           # x²: backward grad·(2·x.pow(1)): three kernels
        return read + out, 7 * x, 1, 3
    if kind == "rowmean":                        # mean over the hidden width: backward writes it expanded
        return read, x, 1, 1
    if kind == "rowscale":                       # x · r (r per token): dx = g·r; dr = Σ g·x (mul, then sum)
        return read + out, (out + x) + (out + x + out) + out, 1, 3
    if kind == "weightmul":                      # w ⊙ x (w per channel): dx = g·w; dw = Σ_tokens g·x
        bwd, kernels = out + x, 1
        if op.trainable:
            bwd, kernels = bwd + (out + x + out) + out, 3
        return read + out, bwd, 1, kernels
    if kind == "mul":                            # a·b: da = g·b, db = g·a
        return read + out, 2 * (out + read), 1, 2
    if kind == "add":                            # a + b: the gradient passes; a 16-bit input's is cast down
        promoted = [s for s in ins if s < out]
        return read + out, sum(out + s for s in promoted), 1, len(promoted)
    if kind == "cat":                            # backward: views of the gradient
        return read + out, 0, 1, 0
    if kind == "layernorm":                      # native_layer_norm: one kernel each way (mean and rstd small)
        return read + out, out + x + x + (out if op.trainable else 0), 1, 2 if op.trainable else 1
    if kind == "dropout":                        # writes the output and a 1-byte mask; backward reads it
        mask = Fraction(x) / value_bytes(op.inputs[0]) * MASK_BYTES
        return read + out + mask, out + mask + x, 1, 1
    if kind == "softmax":                        # a row of attention scores: one read, one write
        return read + out, out + out + x, 1, 1
    if kind == "logsoftmax":                     # a vocabulary row: a read per pass (SOFTMAX_*_READS)
        return SOFTMAX_FORWARD_READS * read + out, SOFTMAX_BACKWARD_READS * out + x, 1, 1
    if kind == "nll":                            # nll_loss: forward a gather; backward a zero-filled dense gradient
        return 0, x, 1, 2
    raise ValueError(f"unknown op kind {kind!r}")


def value_bytes(name: str) -> int:
    """Bytes per value of a tensor named "stem@B" (the graph's convention for its dtype, _Builder.t)."""
    return int(name.rsplit("@", 1)[1])


@dataclass(frozen=True)
class Graph:
    ops: tuple[Op, ...]
    size: dict[str, Fraction | int]          # bytes per token of each tensor
    external: tuple[str, ...] = ()           # read by the next layer or the head (outputs of the graph)

    def consumers(self) -> dict[str, int]:
        count: dict[str, int] = {}
        for op in self.ops:
            for t in op.inputs:
                count[t] = count.get(t, 0) + 1
        for t in self.external:
            count[t] = count.get(t, 0) + 1
        return count


def _everything(group: str) -> bool:
    return True


def eager_traffic(g: Graph, keep: Callable[[str], bool] = _everything) -> Traffic:
    """Every op its own kernel(s), forward and backward, and autograd's gradient adds. `keep`: only the ops whose
    group it accepts, and the adds of the tensors they write (the graph's input, which no op writes, goes with its
    first reader)."""
    fb = bb = fk = bk = 0
    for op in g.ops:
        if not keep(op.group):
            continue
        f, b, kf, kb = _eager_op(op, g.size)
        fb, bb, fk, bk = fb + f, bb + b, fk + kf, bk + kb
    group_of: dict[str, str] = {}
    for op in reversed(g.ops):
        group_of.update({t: op.group for t in op.inputs})
    group_of.update({t: op.group for op in g.ops for t in op.outputs})
    for t, k in g.consumers().items():
        if k > 1 and keep(group_of[t]):          # k gradients of t, added in k − 1 kernels of 3 reads/writes
            bb += (k - 1) * 3 * g.size[t]
            bk += k - 1
    return Traffic(fb, bb, fk, bk)


def fused_traffic(g: Graph, keep: Callable[[str], bool] = _everything) -> Traffic:
    """Each run of memory-bound ops (a group) one kernel each way; matmuls and attention as eager. `keep`: only
    the runs (and matmuls) whose group it accepts."""
    fb = bb = fk = bk = 0
    groups: dict[str, list[Op]] = {}
    for op in g.ops:
        if not keep(op.group):
            continue
        if op.kind in COMPUTE:
            f, b, kf, kb = _eager_op(op, g.size)
            fk, bk = fk + kf, bk + kb
        else:
            groups.setdefault(op.group, []).append(op)
    for name, ops in groups.items():
        inside = {t for op in ops for t in op.outputs}
        reads = {t for op in ops for t in op.inputs if t not in inside}
        leaving: dict[str, int] = {}                 # outputs read outside the run: how many readers each
        for op in g.ops:
            if op.group != name or op.kind in COMPUTE:
                for t in op.inputs:
                    if t in inside:
                        leaving[t] = leaving.get(t, 0) + 1
        for t in g.external:
            if t in inside:
                leaving[t] = leaving.get(t, 0) + 1
        out = sum(g.size[t] for t in leaving)
        read = sum(g.size[t] for t in reads)
        fb += read + out
        fk += 1
        # backward: the leaving tensors' gradients (one per reader), the inputs again, the inputs' gradients
        bb += sum(k * g.size[t] for t, k in leaving.items()) + 2 * read
        bk += 1 + any(op.trainable for op in ops)     # a weight's gradient is a reduction over tokens of its own
    return Traffic(fb, bb, fk, bk)
