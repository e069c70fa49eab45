"""Model architectures and the parameter count computed from them.

A ModelSpec holds the shape of a decoder-only transformer as its Hugging Face
config.json states it. The parameter count is computed from the shape (never
copied), and the catalog tests hold it equal to the published count.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class ModelSpec:
    """Shape of a decoder-only transformer (symbols as in Korthikanti et al. 2022).

    L = layers, h = hidden, a = heads, kv_heads (< a for grouped-query
    attention), head_dim (h / a unless the config says otherwise), ffn_hidden
    (the MLP's inner width), v = vocab.
    """

    id: str
    name: str
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    ffn_hidden: int | None = None
    vocab: int | None = None
    max_context: int | None = None
    tied_embeddings: bool = False
    mlp: str = "swiglu"                 # "swiglu" (3 matrices) or "gelu" (2 matrices)
    norm: str = "rmsnorm"               # "rmsnorm" (weight) or "layernorm" (weight + bias)
    attention_bias: bool = False        # q, k, v carry biases (GPT-2, Qwen2)
    attention_out_bias: bool = False    # o_proj carries a bias (GPT-2)
    mlp_bias: bool = False              # MLP matrices carry biases (GPT-2)
    learned_positions: int = 0          # rows of a learned position embedding (GPT-2: 1024)
    experts: int = 1                    # mixture-of-experts: experts per layer
    experts_per_token: int = 1          # mixture-of-experts: experts routed per token
    dropout: bool = False               # dropout in attention and MLP (GPT-style training)
    params_override: int | None = None  # a count given by the user when the shape is unknown
    published_params: int | None = None
    source: str = ""

    @property
    def has_architecture(self) -> bool:
        return None not in (self.layers, self.hidden, self.heads, self.ffn_hidden, self.vocab)

    @property
    def kv_head_count(self) -> int:
        return self.kv_heads if self.kv_heads is not None else self.heads

    @property
    def head_size(self) -> int:
        return self.head_dim if self.head_dim is not None else self.hidden // self.heads

    @cached_property
    def params(self) -> int:
        """Total parameters: the user's count, else computed from the shape."""
        if self.params_override is not None:
            return self.params_override
        return parameter_count(self)

    @cached_property
    def active_params(self) -> int:
        """Parameters a token passes through (differs from params for MoE)."""
        if self.params_override is not None or self.experts == 1:
            return self.params
        per_expert = mlp_params_per_expert(self)
        return self.params - self.layers * (self.experts - self.experts_per_token) * per_expert


def require_architecture(m: ModelSpec, what: str) -> None:
    if not m.has_architecture:
        raise ValueError(
            f"model {m.id!r}: {what} needs the architecture "
            "(layers, hidden, heads, ffn_hidden, vocab), not only a parameter count"
        )


# Every count below is of one transformer layer unless its name says otherwise.


def attention_widths(m: ModelSpec) -> tuple[int, int]:
    """Output widths of the query and of each key/value projection: (a·d, kv·d)."""
    d = m.head_size
    return m.heads * d, m.kv_head_count * d


def mlp_matrices(m: ModelSpec) -> int:
    """Weight matrices of one MLP: SwiGLU gate, up and down (3); GELU up and down (2)."""
    return 3 if m.mlp == "swiglu" else 2


def routed_experts(m: ModelSpec) -> int:
    """MLPs a token passes through in one layer: experts_per_token for MoE, else 1."""
    return m.experts_per_token if m.experts > 1 else 1


def linear_shapes(m: ModelSpec) -> dict[str, tuple[int, int, int]]:
    """Hugging Face module name → (d_in, d_out, matrices per layer) of each block linear.

    q_proj h→a·d, k_proj and v_proj h→kv·d (grouped-query widths), o_proj
    a·d→h, gate_proj and up_proj h→f, down_proj f→h; MLP matrices once per
    expert. A GELU MLP has no gate_proj: up_proj and down_proj name its two
    matrices (GPT-2's c_fc and c_proj).
    """
    h, f = m.hidden, m.ffn_hidden
    q_out, kv_out = attention_widths(m)
    shapes = {
        "q_proj": (h, q_out, 1),
        "k_proj": (h, kv_out, 1),
        "v_proj": (h, kv_out, 1),
        "o_proj": (q_out, h, 1),
        "up_proj": (h, f, m.experts),
        "down_proj": (f, h, m.experts),
    }
    if m.mlp == "swiglu":
        shapes["gate_proj"] = (h, f, m.experts)
    return shapes


def attention_params(m: ModelSpec) -> int:
    """q, k, v, o projections of one layer: h·a·d + 2·h·kv·d + a·d·h (+ biases)."""
    h = m.hidden
    q_out, kv_out = attention_widths(m)
    count = h * q_out + 2 * h * kv_out + q_out * h
    if m.attention_bias:
        count += q_out + 2 * kv_out
    if m.attention_out_bias:
        count += h
    return count


def mlp_params_per_expert(m: ModelSpec) -> int:
    """One MLP: SwiGLU has gate, up and down (3·h·f); GELU has up and down (2·h·f)."""
    h, f = m.hidden, m.ffn_hidden
    matrices = mlp_matrices(m)
    count = matrices * h * f
    if m.mlp_bias:
        count += (matrices - 1) * f + h
    return count


def norm_params(m: ModelSpec) -> int:
    """One normalisation layer: RMSNorm has a weight, LayerNorm a weight and a bias."""
    return m.hidden * (2 if m.norm == "layernorm" else 1)


def router_params(m: ModelSpec) -> int:
    """Mixture-of-experts router of one layer: h·experts (none for a dense model)."""
    return m.hidden * m.experts if m.experts > 1 else 0


def layer_params(m: ModelSpec) -> int:
    """One transformer layer: attention + MLP·experts + router + 2 norms."""
    return attention_params(m) + m.experts * mlp_params_per_expert(m) + router_params(m) + 2 * norm_params(m)


def embedding_params(m: ModelSpec) -> int:
    """Input embeddings, whole model: v·h plus the learned position rows."""
    return (m.vocab + m.learned_positions) * m.hidden


def lm_head_params(m: ModelSpec) -> int:
    """Output projection, whole model: v·h, or 0 when tied to the input embeddings."""
    return 0 if m.tied_embeddings else m.vocab * m.hidden


def parameter_count(m: ModelSpec) -> int:
    """Parameters of a decoder-only transformer from its config.

    embeddings v·h (+ learned positions) + L·(attention + MLP·experts +
    router + 2 norms) + final norm + LM head v·h unless tied.
    """
    if not m.has_architecture:
        raise ValueError(f"model {m.id!r} has no architecture and no parameter count")
    return embedding_params(m) + m.layers * layer_params(m) + norm_params(m) + lm_head_params(m)


def linear_weight_params(m: ModelSpec) -> int:
    """Parameters in the weight matrices of the transformer blocks, whole model.

    These are what weight-only quantization (GPTQ, AWQ, bitsandbytes NF4/int8,
    vLLM fp8) converts: q, k, v, o and the MLP matrices of every expert, without
    biases. Embeddings, the LM head, norms, biases and the MoE router stay 16-bit.
    """
    require_architecture(m, "the split of quantized and 16-bit weights")
    return m.layers * sum(d_in * d_out * count for d_in, d_out, count in linear_shapes(m).values())


def largest_linear_params(m: ModelSpec) -> int:
    """The largest single block matrix, d_in·d_out (what QLoRA dequantizes at once)."""
    return max(d_in * d_out for d_in, d_out, _ in linear_shapes(m).values())


def kv_values_per_token_per_layer(m: ModelSpec, kv_heads: int | None = None) -> int:
    """Values one token adds to one layer's KV cache: 2·kv·d (K and V; Kwon et al. 2023 §2-3).

    kv heads, not query heads (grouped-query attention); `kv_heads` replaces
    the model's count for a tensor-parallel rank's share.
    """
    return 2 * (m.kv_head_count if kv_heads is None else kv_heads) * m.head_size


def matmul_params(m: ModelSpec) -> int:
    """Parameters that take part in matrix multiplies: N without the input
    embedding table, which is a lookup (Kaplan et al. 2020 §2.1 count
    non-embedding FLOPs; the LM head is a GEMM and stays in). With tied
    embeddings the table is the head, so it stays in. Uses active
    parameters, so a mixture-of-experts counts the experts a token visits."""
    if not m.has_architecture or m.params_override is not None:
        return m.active_params
    lookup = embedding_params(m) - (m.vocab * m.hidden if m.tied_embeddings else 0)
    return m.active_params - lookup
