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


def attention_params(m: ModelSpec) -> int:
    """q, k, v, o projections of one layer: h·a·d + 2·h·kv·d + a·d·h (+ biases)."""
    h, d = m.hidden, m.head_size
    q_out, kv_out = m.heads * d, m.kv_head_count * d
    count = h * q_out + 2 * h * kv_out + q_out * h
    if m.attention_bias:
        count += q_out + 2 * kv_out
    if m.attention_out_bias:
        count += h
    return count


def mlp_params_per_expert(m: ModelSpec) -> int:
    """One MLP: SwiGLU has gate, up and down (3·h·f); GELU has up and down (2·h·f)."""
    h, f = m.hidden, m.ffn_hidden
    matrices = 3 if m.mlp == "swiglu" else 2
    count = matrices * h * f
    if m.mlp_bias:
        count += (matrices - 1) * f + h
    return count


def norm_params(m: ModelSpec) -> int:
    """One normalisation layer: RMSNorm has a weight, LayerNorm a weight and a bias."""
    return m.hidden * (2 if m.norm == "layernorm" else 1)


def parameter_count(m: ModelSpec) -> int:
    """Parameters of a decoder-only transformer from its config.

    embeddings v·h (+ learned positions) + L·(attention + MLP·experts +
    router + 2 norms) + final norm + LM head v·h unless tied.
    """
    if not m.has_architecture:
        raise ValueError(f"model {m.id!r} has no architecture and no parameter count")
    h, v, L = m.hidden, m.vocab, m.layers
    embeddings = v * h + m.learned_positions * h
    router = h * m.experts if m.experts > 1 else 0
    layer = attention_params(m) + m.experts * mlp_params_per_expert(m) + router + 2 * norm_params(m)
    head = 0 if m.tied_embeddings else v * h
    return embeddings + L * layer + norm_params(m) + head
