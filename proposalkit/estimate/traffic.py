"""The memory-bound work of a training step: bytes the non-GEMM kernels move through HBM, and kernels launched.

A transformer layer as eager PyTorch runs it is a small graph of tensors (bytes per token) and ops, whose
bytes and kernels op_traffic.py counts, eager (each op its own kernels) or compiled and fused (each run of
memory-bound ops between two matmuls one kernel).

The graph is the model code the activation count reads (kernels.py cites it): transformers' LlamaRMSNorm
(fp32 upcast, pow, mean, rsqrt, scale, downcast, weight), RoPE's q·cos + rotate_half(q)·sin, SDPA's
transposed output made contiguous, the residual adds, act(gate)·up; under autocast over fp32 parameters
the fp32 residual stream (AUTOCAST_RESIDUAL_BYTES) and one 16-bit cast per projection a norm feeds
(AUTOCAST_QKV_COPIES); PEFT's LoRA forward (peft/tuners/lora/layer.py Linear.forward: the input cast to the
adapter's dtype, lora_B(lora_A(x)) · scaling added to the base output). Widths from catalog/shapes.py.

Pure: no I/O. Bytes and kernels per token of one layer (÷ nothing: the caller divides them over a
tensor-parallel group, each of the two Regions by its share), for one micro-batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..catalog.modules import LoraSpec, default_lora
from ..catalog.shapes import (
    ModelSpec, expert_ffn_hidden, is_mla, is_moe, mlp_matrices, projection_widths, routed_experts,
    shared_expert_ffn_hidden,
)
from ..precision import FP32_BYTES
from .arith import memo
from .kernels import AUTOCAST_QKV_COPIES, AUTOCAST_RESIDUAL_BYTES
from .lora import lora_matrices
from .op_traffic import Graph, Op, Traffic, eager_traffic, fused_traffic, value_bytes

# ------------------------------------------------------------------------------- the layer as eager code runs it

class _Builder:
    """Tensors are named "name@bytes" (bytes per value); sizes are width × bytes per token."""

    def __init__(self):
        self.ops: list[Op] = []
        self.size: dict[str, Fraction | int] = {}
        self.n = 0

    def t(self, stem: str, width, nbytes: int) -> str:
        self.n += 1
        name = f"{stem}{self.n}@{nbytes}"
        self.size[name] = width * nbytes
        return name

    def op(self, kind: str, inputs, outputs, group: str = "", trainable: bool = False) -> None:
        self.ops.append(Op(kind, tuple(inputs), tuple(outputs), group, trainable))

    def norm(self, x: str, width, norm: str, weight_bytes: int, trainable: bool, group: str, gemma: bool = False) -> str:
        """An eager norm of x; returns its output. RMSNorm as transformers' LlamaRMSNorm: fp32 copy, x², mean,
        rsqrt, x·rstd, back to x's dtype, weight ⊙; LayerNorm: the native kernel."""
        xb = value_bytes(x)
        if norm != "rmsnorm":
            y = self.t("ln", width, xb)
            self.op("layernorm", [x], [y], group, trainable)
            return y
        x32 = x
        if xb != FP32_BYTES:
            x32 = self.t("x32_", width, FP32_BYTES)
            self.op("cast", [x], [x32], group)
        sq = self.t("sq", width, FP32_BYTES)
        self.op("pow2", [x32], [sq], group)
        var = self.t("var", 1, FP32_BYTES)
        self.op("rowmean", [sq], [var], group)
        rs = self.t("rs", 1, FP32_BYTES)
        self.op("tiny", [var], [rs], group)
        self.op("tiny", [rs], [rs], group)
        xn = self.t("xn", width, FP32_BYTES)
        self.op("rowscale", [x32, rs], [xn], group)
        if not gemma and xb != FP32_BYTES:
            down = self.t("xnd", width, xb)
            self.op("cast", [xn], [down], group)
            xn = down
        yb = FP32_BYTES if gemma else max(xb, weight_bytes)
        y = self.t("y", width, yb)
        self.op("weightmul", [xn], [y], group, trainable)
        if gemma and xb != FP32_BYTES:
            down = self.t("yd", width, xb)
            self.op("cast", [y], [down], group)
            y = down
        return y

    def linear_input(self, x: str, width, e: int, group: str) -> str:
        """What a linear reads: under autocast an fp32 input is cast to 16 bits (one copy per linear)."""
        if value_bytes(x) == e:
            return x
        c = self.t("c", width, e)
        self.op("cast", [x], [c], group)
        return c


def _lora_linear(b: _Builder, x: str, d_in, d_out, e: int, adapter_bytes: int, autocast: bool,
                 base_out: str, group: str) -> str:
    """PEFT's LoRA around one linear: x cast to the adapter's dtype (and back to 16 bits by autocast for the
    matmul), A then B, · scaling, added to the base output; returns the sum."""
    xa = x
    if adapter_bytes != value_bytes(x):
        xa = b.t("xa", d_in, adapter_bytes)
        b.op("cast", [x], [xa], group)
    if autocast and adapter_bytes != e:
        xe = b.t("xae", d_in, e)
        b.op("cast", [xa], [xe], group)
        xa = xe
    out_dtype = e if autocast else adapter_bytes
    a = b.t("la", 0, out_dtype)             # rank-wide: negligible bytes per token
    b.op("gemm", [xa], [a])
    bo = b.t("lb", d_out, out_dtype)
    b.op("gemm", [a], [bo])
    sc = b.t("ls", d_out, out_dtype)
    b.op("scale", [bo], [sc], group)
    s = b.t("lsum", d_out, max(out_dtype, value_bytes(base_out)))
    b.op("add", [base_out, sc], [s], group)
    return s


@dataclass(frozen=True)
class LayerSetup:
    """What the layer's eager graph depends on (a hashable key for memo)."""

    e: int                      # bytes per 16-bit (or fp32) compute value
    residual: int               # bytes per value of the residual stream (4 under autocast over fp32 weights)
    weight_bytes: int           # the norms' weights
    trainable_norms: bool
    autocast: bool
    flash_attention: bool
    lora: LoraSpec | None
    adapter_bytes: int = FP32_BYTES
    seq_len: int = 0            # keys per query row of unfused attention's scores (flash_attention false)
    softmax_fp32: bool = True   # unfused attention's softmax in fp32 (activations.py softmax_fp32)


@memo
def layer_graph(model: ModelSpec, ls: LayerSetup) -> Graph:
    """One transformer layer of `model` as eager PyTorch runs it (module docstring), per token."""
    b = _Builder()
    e, h = ls.e, model.hidden
    q_w, k_w, v_w, o_w = projection_widths(model)
    adapted = {}
    if ls.lora is not None:
        for m in lora_matrices(model, ls.lora):
            adapted[m.module] = adapted.get(m.module, 0) + m.per_token / model.layers
    frozen = ls.lora is not None

    def linear(name: str, x: str, d_in, d_out, group: str) -> str:
        xin = b.linear_input(x, d_in, e, group)
        out = b.t(name, d_out, e)
        b.op("gemm-frozen" if frozen else "gemm", [xin], [out])
        visits = adapted.get(name, 0)
        if visits:
            out = _lora_linear(b, xin, d_in * visits, d_out * visits, e, ls.adapter_bytes, ls.autocast, out,
                               group + "-" + name)
        return out

    x = b.t("x", h, ls.residual)
    gemma = model.family.startswith("gemma") or model.id.startswith("gemma")
    n1 = b.norm(x, h, model.norm, ls.weight_bytes, ls.trainable_norms, "norm1", gemma)
    if is_mla(model):                              # the latents' own norms, on their widths
        n1 = b.norm(n1, (model.q_lora_rank or 0) + model.kv_lora_rank, model.norm, ls.weight_bytes,
                    ls.trainable_norms, "mla-norm", gemma) if model.kv_lora_rank else n1
    q = linear("q_proj", n1, h, q_w, "norm1")
    k = linear("k_proj", n1, h, k_w, "norm1")
    v = linear("v_proj", n1, h, v_w, "norm1")
    if model.qk_norm != "none":
        q = b.norm(q, q_w, "rmsnorm", ls.weight_bytes, ls.trainable_norms, "qk-norm")
        k = b.norm(k, k_w, "rmsnorm", ls.weight_bytes, ls.trainable_norms, "qk-norm")
    if model.learned_positions == 0:               # rotary: q·cos + rotate_half(q)·sin on q and k
        rotated = []
        for t, width in ((q, q_w), (k, k_w)):
            width = width * Fraction(model.rotary_fraction).limit_denominator(1000)
            qc = b.t("qc", width, e)
            b.op("scale", [t], [qc], "rope")
            half = b.t("qh", width / 2, e)
            b.op("view", [t], [half], "rope")
            neg = b.t("qn", width / 2, e)
            b.op("scale", [half], [neg], "rope")
            other = b.t("qo", width / 2, e)
            b.op("view", [t], [other], "rope")
            rot = b.t("qr", width, e)
            b.op("cat", [neg, other], [rot], "rope")
            rs = b.t("qs", width, e)
            b.op("scale", [rot], [rs], "rope")
            out = b.t("qe", width, e)
            b.op("add", [qc, rs], [out], "rope")
            rotated.append(out)
        q, k = rotated
    attn = b.t("attn", o_w, e)
    if ls.flash_attention:
        b.op("attention", [q, k, v], [attn])
    else:       # QKᵀ, scaled, softmax (fp32 where softmax_fp32), dropout, then ·V: each query row holds s scores
        scores_width = model.heads * ls.seq_len
        sc = b.t("scores", scores_width, e)
        b.op("gemm", [q, k], [sc])
        ss = b.t("scaled", scores_width, e)
        b.op("scale", [sc], [ss], "softmax")
        if ls.softmax_fp32 and e < FP32_BYTES:
            s32 = b.t("s32_", scores_width, FP32_BYTES)
            b.op("cast", [ss], [s32], "softmax")
            ss = s32
        pr = b.t("probs", scores_width, value_bytes(ss))
        b.op("softmax", [ss], [pr], "softmax")
        if value_bytes(pr) != e:
            pe = b.t("pe", scores_width, e)
            b.op("cast", [pr], [pe], "softmax")
            pr = pe
        if model.dropout:
            pd = b.t("pd", scores_width, e)
            b.op("dropout", [pr], [pd], "softmax")
            pr = pd
        b.op("gemm", [pr, v], [attn])
    ctg = b.t("attn_c", o_w, e)
    b.op("copy", [attn], [ctg], "attn-out")        # transpose(1, 2).contiguous()
    o = linear("o_proj", ctg, o_w, h, "attn-out")
    if model.dropout:
        od = b.t("od", h, e)
        b.op("dropout", [o], [od], "resid1")
        o = od
    x1 = b.t("x1_", h, ls.residual)
    b.op("add", [x, o], [x1], "resid1")
    n2 = n1 if (model.parallel_attention and model.norms_per_layer == 1) else \
        b.norm(x1, h, model.norm, ls.weight_bytes, ls.trainable_norms, "resid1", gemma)
    moe = is_moe(model)
    f = expert_ffn_hidden(model) * routed_experts(model) if moe else model.ffn_hidden
    if moe and model.shared_experts:
        f += shared_expert_ffn_hidden(model) * model.shared_experts
    if mlp_matrices(model) == 3:
        gate = linear("gate_proj", n2, h, f, "resid1")
        up = linear("up_proj", n2, h, f, "resid1")
        act = b.t("act", f, e)
        b.op("unary", [gate], [act], "act")
        m = b.t("m", f, e)
        b.op("mul", [act, up], [m], "act")
    else:
        up = linear("up_proj", n2, h, f, "resid1")
        m = b.t("act", f, e)
        b.op("unary", [up], [m], "act")
    if moe:                                        # tokens permuted to their experts and back
        p = b.t("perm", h * routed_experts(model), e)
        b.op("copy", [n2], [p], "act")
    d = linear("down_proj", m, f, h, "act")
    if model.dropout:
        dd = b.t("dd", h, e)
        b.op("dropout", [d], [dd], "resid2")
        d = dd
    x2 = b.t("x2_", h, ls.residual)
    b.op("add", [x1, d], [x2], "resid2")
    return Graph(tuple(b.ops), b.size, (x2,))


# The runs of ops around tensor parallelism's two blocks (attention, the MLP): the norms, the dropouts and
# residual adds on the residual stream, and the 16-bit casts of the blocks' inputs (a column-parallel linear reads
# its whole input). Every GPU of a tensor-parallel group runs them on the whole sequence unless sequence
# parallelism splits them along it (Korthikanti et al. 2022 §4.2.2; activations.tensor_parallel_shares: the
# tensors they save, norm inputs, the blocks' inputs, dropout masks, are the activation terms kept whole). The
# other runs (rotary, q/k norms, the softmax, the attention output's copy, the MLP's activation) work on the heads
# and the MLP width a GPU holds. A LoRA adapter's run ("group-module") goes with its linear's input's run.
OUTSIDE_TENSOR_PARALLEL = ("norm1", "mla-norm", "resid1", "resid2", "final-norm")


def outside_tensor_parallel(group: str) -> bool:
    """Whether a run of ops (an op's group) lies outside tensor parallelism's blocks (OUTSIDE_TENSOR_PARALLEL)."""
    return any(group == g or group.startswith(g + "-") for g in OUTSIDE_TENSOR_PARALLEL)


def _inside_tensor_parallel(group: str) -> bool:
    return not outside_tensor_parallel(group)


@dataclass(frozen=True)
class Regions:
    """Traffic per token split at tensor parallelism's boundary: `inside` the attention and MLP blocks (and the
    vocabulary-parallel loss), which a tensor-parallel group's GPUs share, and `outside` them
    (OUTSIDE_TENSOR_PARALLEL), which each of them runs whole without sequence parallelism."""

    inside: Traffic
    outside: Traffic

    @property
    def total(self) -> Traffic:
        return self.inside + self.outside


def _regions(g: Graph, kernels: str) -> Regions:
    run = eager_traffic if kernels == "eager" else fused_traffic
    return Regions(run(g, _inside_tensor_parallel), run(g, outside_tensor_parallel))


def layer_traffic(model: ModelSpec, ls: LayerSetup, kernels: str) -> Regions:
    """Per token of one layer: eager PyTorch, or "compiled"/"fused" (one kernel per run of memory-bound ops)."""
    return _regions(layer_graph(model, ls), kernels)


def head_traffic(model: ModelSpec, ls: LayerSetup, kernels: str, loss: str) -> Regions:
    """Per token: the final norm, the output projection's input cast (autocast) and the loss over the
    vocabulary. The standard and eager chunked losses upcast the 16-bit logits, log_softmax them in fp32 and
    take nll_loss (loss.py LOSS_SOURCES); compiled with the model (a chunked loss under compile: true, loss.py)
    or fused (Liger, Cut Cross-Entropy), the loss reads the 16-bit logits for the row statistics twice and
    once more for the gradient it writes: 3e + e per logit."""
    b = _Builder()
    h, v, e = model.hidden, model.vocab, ls.e
    x = b.t("x", h, ls.residual)
    y = b.norm(x, h, model.norm, ls.weight_bytes, ls.trainable_norms, "final-norm")
    xin = b.linear_input(y, h, e, "final-norm")
    logits = b.t("logits", v, e)
    b.op("gemm-frozen" if ls.lora is not None else "gemm", [xin], [logits])
    norm = _regions(Graph(tuple(b.ops), b.size), kernels)
    compiled_loss = loss == "fused" or (kernels != "eager" and loss == "chunked")
    if compiled_loss:
        per_logit = Traffic(2 * e * v, 2 * e * v, 1, 1)
    else:
        lb = _Builder()
        lg = lb.t("logits", v, e)
        l32 = lb.t("l32_", v, FP32_BYTES)
        lb.op("cast", [lg], [l32])
        ls_ = lb.t("lsm", v, FP32_BYTES)
        lb.op("logsoftmax", [l32], [ls_])
        lb.op("nll", [ls_], [lb.t("nll", 0, FP32_BYTES)])
        per_logit = eager_traffic(Graph(tuple(lb.ops), lb.size))
    # The loss over the vocabulary runs where the logits are: split over a tensor-parallel group (Megatron-LM's
    # vocab-parallel cross-entropy, torchtitan's loss_parallel), as activations.py splits the loss's bytes.
    return Regions(norm.inside + per_logit, norm.outside)
