"""Model architectures and the parameter count computed from them.

A ModelSpec holds the shape of a decoder-only transformer as its Hugging Face
config.json states it, mixture-of-experts and multi-head latent attention
included. The parameter count is computed from the shape (never
copied), and the catalog tests hold it equal to the published count.
"""

from __future__ import annotations

import functools
from dataclasses import astuple, dataclass
from functools import cached_property

from ..notes import Note
from ..precision import WeightFormat


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
    sliding_window: int | None = None   # tokens a windowed layer attends to (config.json sliding_window)
    sliding_window_layers: int = 0      # layers that attend within it (Mistral v0.1: all; Gemma 2: half)
    # --- dense architecture: where the config.json families differ (input/configs/ reads them)
    mlp: str = "gated"                  # "gated": gate, up, down (SwiGLU, GeGLU); "plain": up, down (GELU, ReLU)
    norm: str = "rmsnorm"               # "rmsnorm" (weight) or "layernorm" (weight, and a bias if norm_bias)
    norm_bias: bool = True              # LayerNorm carries a bias (false: OLMo-1-style bias-free LayerNorm)
    norms_per_layer: int = 2            # pre-attention + pre-MLP; Gemma 2/3: 4; Falcon-7B, Phi-2, GPT-J: 1
    qk_norm: str = "none"               # "head": RMSNorm over head_dim on q and k (Qwen3, Gemma 3);
                                        # "full": over the whole q and k widths (OLMo 2)
    attention_bias: bool = False        # q, k, v carry biases (GPT-2, Qwen2)
    attention_out_bias: bool = False    # o_proj carries a bias (GPT-2)
    mlp_bias: bool = False              # MLP matrices carry biases (GPT-2)
    lm_head_bias: bool = False          # the LM head carries a bias (Phi-2, GPT-J)
    learned_positions: int = 0          # rows of a learned position embedding (GPT-2: 1024; OPT: 2,048 + 2)
    parallel_attention: bool = False    # attention and MLP read one input (Falcon, GPT-J, GPT-NeoX); no parameters
    rotary_fraction: float = 1.0        # share of head_dim rotated (Phi-2 0.4, GPT-NeoX 0.25); no parameters
    vision_params: int = 0              # vision tower + projector of a vision-language model: in the weights,
                                        # not in the language model's FLOPs
    warnings: tuple[str, ...] = ()      # what the reader guessed (an unknown model_type), warned in the plan
    records: tuple[Note, ...] = ()      # what the config reader or the mapping assumed, stated in the plan as
                                        # notes (the planner adds the model's id as their value `model`)
    # --- end of the dense architecture block
    dropout: bool = False               # dropout in attention and MLP (GPT-style training)
    # Mixture of experts (experts > 1). Each MoE layer holds `experts` routed MLPs of width
    # moe_ffn_hidden, of which a token visits experts_per_token, plus shared experts every
    # token visits; the first dense_layers layers keep a dense MLP of width ffn_hidden.
    experts: int = 1                    # routed experts per MoE layer (num_local_experts, num_experts, n_routed_experts)
    experts_per_token: int = 1          # routed experts a token visits, top-k (num_experts_per_tok)
    moe_ffn_hidden: int | None = None   # one routed expert's inner width (moe_intermediate_size); None: ffn_hidden (Mixtral)
    shared_experts: int = 0             # experts every token visits (DeepSeek n_shared_experts; Qwen2-MoE 1)
    shared_ffn_hidden: int | None = None  # one shared expert's inner width; None: moe width (DeepSeek)
    shared_expert_gate: bool = False    # Qwen2-MoE: a one-output linear h→1 gating the shared expert
    router_bias: bool = False           # DeepSeek-V3: e_score_correction_bias, one value per routed expert
    dense_layers: int = 0               # layers with a dense MLP instead (DeepSeek first_k_dense_replace)
    # Multi-head latent attention (DeepSeek-V2/V3), used when kv_lora_rank is set: K and V are
    # projected up from a kv_lora_rank latent, which with the shared rotary key is what is cached.
    q_lora_rank: int | None = None      # query latent width; None: q projected directly (DeepSeek-V2-Lite)
    kv_lora_rank: int | None = None     # key/value latent width
    qk_nope_head_dim: int | None = None  # per head: query/key width without rotary embedding
    qk_rope_head_dim: int | None = None  # per head: query/key width with rotary embedding (key part shared)
    v_head_dim: int | None = None       # per head: value width
    params_override: int | None = None  # a count given by the user when the shape is unknown
    published_params: int | None = None
    source: str = ""
    hf_id: str = ""                     # the Hugging Face Hub id (ORG/NAME) of a catalog row
    weight_format: WeightFormat | None = None  # a quantized checkpoint's layout (config.json quantization_config)
    family: str = ""                    # config.json's model_type: names the linear modules (estimate/lora.py)

    def __hash__(self) -> int:
        # Memo keys (lru_cache) hash the model on every lookup: its fields are hashed once.
        try:
            return self.__dict__["_hash"]
        except KeyError:
            value = self.__dict__["_hash"] = hash(astuple(self))
            return value

    @cached_property
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
        """Parameters a token passes through (differs from params for MoE). A given params beside an
        MoE shape keeps the shape's active share of it (rounded down)."""
        if not is_moe(self) or not self.has_architecture:
            return self.params
        total = parameter_count(self)
        active = total - moe_layer_count(self) * (self.experts - self.experts_per_token) * mlp_params_per_expert(self)
        if self.params_override is None:
            return active
        return self.params_override * active // total


# The original GPT block's MLP width, 4 × hidden: GPT-1 (Radford et al. 2018 §4.1), GPT-2
# (modeling_gpt2.py: n_inner None → 4 × n_embd). The default for configs and mappings that omit it.
GPT_FFN_FACTOR = 4

# Shape figures of a (frozen, hashable) model, computed once per model: the planner asks for
# them on every GPU count and ZeRO stage it tries. benchmarks/plan_bench.py clears them.
per_model = functools.lru_cache(maxsize=256)


def require_architecture(m: ModelSpec, what: str) -> None:
    if not m.has_architecture:
        raise ValueError(
            f"model {m.id!r}: {what} needs the architecture "
            "(layers, hidden, heads, ffn_hidden, vocab), not only a parameter count"
        )


# Every count below is of one transformer layer unless its name says otherwise.


def is_moe(m: ModelSpec) -> bool:
    """A mixture of experts: more than one routed expert per MoE layer."""
    return m.experts > 1


def is_mla(m: ModelSpec) -> bool:
    """Multi-head latent attention (DeepSeek-V2 §2.1): set by kv_lora_rank."""
    return m.kv_lora_rank is not None


def moe_layer_count(m: ModelSpec) -> int:
    """Layers whose MLP is a mixture of experts: all but the dense_layers (none for a dense model)."""
    return m.layers - m.dense_layers if is_moe(m) else 0


def expert_ffn_hidden(m: ModelSpec) -> int:
    """One routed expert's inner width: moe_ffn_hidden, else ffn_hidden (Mixtral's experts are full MLPs)."""
    return m.moe_ffn_hidden if m.moe_ffn_hidden is not None else m.ffn_hidden


def shared_expert_ffn_hidden(m: ModelSpec) -> int:
    """One shared expert's inner width: shared_ffn_hidden, else a routed expert's (DeepSeek)."""
    return m.shared_ffn_hidden if m.shared_ffn_hidden is not None else expert_ffn_hidden(m)


def attention_widths(m: ModelSpec) -> tuple[int, int]:
    """Output widths of the query and of each key/value projection: (a·d, kv·d)."""
    d = m.head_size
    return m.heads * d, m.kv_head_count * d


@per_model
def projection_widths(m: ModelSpec) -> tuple[int, int, int, int]:
    """Per-token widths of Q, K, V and of the o_proj input as attention computes them.

    Grouped-query attention: (a·d, kv·d, kv·d, a·d). MLA expands K and V per
    head from the latent: (a·(dn + dr), a·(dn + dr), a·dv, a·dv) with dn =
    qk_nope_head_dim, dr = qk_rope_head_dim, dv = v_head_dim (DeepSeek-V2 §2.1.2-3).
    """
    if is_mla(m):
        qk = m.heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)
        v = m.heads * m.v_head_dim
        return qk, qk, v, v
    q, kv = attention_widths(m)
    return q, kv, kv, q


def attention_head_size(m: ModelSpec) -> int | float:
    """Q in PaLM's attention FLOPs 12·L·H·Q·T, which counts QKᵀ and AV at Q each: the head
    size, or for MLA the mean of the query-key width (dn + dr) and the value width dv."""
    if not is_mla(m):
        return m.head_size
    total = m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim
    return total // 2 if total % 2 == 0 else total / 2


def mlp_matrices(m: ModelSpec) -> int:
    """Weight matrices of one MLP: gated (SwiGLU, GeGLU) gate, up and down (3); plain (GELU, ReLU) up and down (2)."""
    return 3 if m.mlp == "gated" else 2


def routed_experts(m: ModelSpec) -> int:
    """MLPs a token passes through in one layer: experts_per_token for MoE, else 1."""
    return m.experts_per_token if is_moe(m) else 1


@dataclass(frozen=True)
class Linear:
    """A group of same-shaped block matrices under one Hugging Face module name."""

    module: str        # the module name (a LoRA target)
    d_in: int
    d_out: int
    count: int         # matrices of this shape in the whole model
    per_token: int     # of those, the ones one token passes through (routed experts: top-k)


@per_model
def linears(m: ModelSpec) -> tuple[Linear, ...]:
    """The block linears of the whole model, in Hugging Face's module names.

    Attention: q_proj h→a·d, k_proj and v_proj h→kv·d (grouped-query
    widths), o_proj a·d→h. MLA (DeepSeek-V2 modeling code): q_proj h→a·(dn+dr),
    or q_a_proj h→q_lora and q_b_proj q_lora→a·(dn+dr); kv_a_proj_with_mqa
    h→kv_lora + dr; kv_b_proj kv_lora→a·(dn + dv); o_proj a·dv→h.
    MLP: gate_proj and up_proj h→f, down_proj f→h, for the dense MLPs, each
    routed expert (f = moe width) and each shared expert. A plain MLP has no
    gate_proj: up_proj and down_proj name its two matrices (GPT-2's c_fc and
    c_proj). The MoE router stays out (it is not quantized).
    """
    h, layers = m.hidden, m.layers
    out: list[Linear] = []

    def add(module: str, d_in: int, d_out: int, count: int, per_token: int | None = None) -> None:
        if count:
            out.append(Linear(module, d_in, d_out, count, count if per_token is None else per_token))

    if is_mla(m):
        qk, _, _, v = projection_widths(m)
        if m.q_lora_rank is None:
            add("q_proj", h, qk, layers)
        else:
            add("q_a_proj", h, m.q_lora_rank, layers)
            add("q_b_proj", m.q_lora_rank, qk, layers)
        add("kv_a_proj_with_mqa", h, m.kv_lora_rank + m.qk_rope_head_dim, layers)
        add("kv_b_proj", m.kv_lora_rank, m.heads * (m.qk_nope_head_dim + m.v_head_dim), layers)
        add("o_proj", v, h, layers)
    else:
        q_out, kv_out = attention_widths(m)
        add("q_proj", h, q_out, layers)
        add("k_proj", h, kv_out, layers)
        add("v_proj", h, kv_out, layers)
        add("o_proj", q_out, h, layers)
    moe_layers = moe_layer_count(m)
    mlps = ((m.ffn_hidden, layers - moe_layers, layers - moe_layers),
            (expert_ffn_hidden(m), moe_layers * m.experts, moe_layers * m.experts_per_token),
            (shared_expert_ffn_hidden(m), moe_layers * m.shared_experts, moe_layers * m.shared_experts))
    for module in (("gate_proj", "up_proj", "down_proj") if m.mlp == "gated" else ("up_proj", "down_proj")):
        for f, count, per_token in mlps:
            d_in, d_out = (f, h) if module == "down_proj" else (h, f)
            add(module, d_in, d_out, count, per_token)
    return tuple(out)


def attention_modules(m: ModelSpec) -> tuple[str, ...]:
    """The attention projections' module names: q_proj, k_proj, v_proj, o_proj, or MLA's (linears())."""
    if not is_mla(m):
        return ("q_proj", "k_proj", "v_proj", "o_proj")
    q = ("q_proj",) if m.q_lora_rank is None else ("q_a_proj", "q_b_proj")
    return (*q, "kv_a_proj_with_mqa", "kv_b_proj", "o_proj")


def mla_attention_params(m: ModelSpec) -> int:
    """MLA of one layer (DeepSeek-V2 §2.1): the linears() above plus the RMSNorms on
    the latents (q_a_layernorm q_lora, kv_a_layernorm kv_lora); with attention_bias,
    biases on q_a_proj, kv_a_proj_with_mqa and o_proj."""
    count = sum(x.d_in * x.d_out for x in linears(m) if x.module in attention_modules(m))
    count += (m.q_lora_rank or 0) + m.kv_lora_rank
    if m.attention_bias:
        count += (m.q_lora_rank or 0) + m.kv_lora_rank + m.qk_rope_head_dim + m.hidden
    return count


def attention_params(m: ModelSpec) -> int:
    """q, k, v, o projections of one layer: h·a·d + 2·h·kv·d + a·d·h (+ biases); MLA: mla_attention_params()."""
    if is_mla(m):
        return mla_attention_params(m)
    h = m.hidden
    q_out, kv_out = attention_widths(m)
    count = h * q_out + 2 * h * kv_out + q_out * h
    if m.attention_bias:
        count += q_out + 2 * kv_out
    if m.attention_out_bias:
        count += h
    return count


def mlp_params(m: ModelSpec, f: int) -> int:
    """One MLP of inner width f: gated has gate, up and down (3·h·f); plain has up and down (2·h·f)."""
    h = m.hidden
    matrices = mlp_matrices(m)
    count = matrices * h * f
    if m.mlp_bias:
        count += (matrices - 1) * f + h
    return count


def mlp_params_per_expert(m: ModelSpec) -> int:
    """One routed expert's MLP (a dense model's one MLP): mlp_params at expert_ffn_hidden."""
    return mlp_params(m, expert_ffn_hidden(m))


def shared_expert_params(m: ModelSpec) -> int:
    """Shared experts of one MoE layer: shared_experts MLPs (+ Qwen2-MoE's h→1 shared_expert_gate)."""
    return m.shared_experts * mlp_params(m, shared_expert_ffn_hidden(m)) + (m.hidden if m.shared_expert_gate else 0)


def norm_params(m: ModelSpec) -> int:
    """One normalisation layer over h: RMSNorm has a weight, LayerNorm a weight and a bias (unless norm_bias is off)."""
    return m.hidden * (2 if m.norm == "layernorm" and m.norm_bias else 1)


def qk_norm_params(m: ModelSpec) -> int:
    """Query/key norms of one layer (RMSNorms, weight only): 2·d over head_dim (Qwen3, Gemma 3),
    a·d + kv·d over the whole projections (OLMo 2), else 0."""
    if m.qk_norm == "head":
        return 2 * m.head_size
    if m.qk_norm == "full":
        return sum(attention_widths(m))
    return 0


def router_params(m: ModelSpec) -> int:
    """Mixture-of-experts router of one MoE layer: h·experts (+ DeepSeek-V3's per-expert
    score-correction bias); none for a dense model."""
    if not is_moe(m):
        return 0
    return m.hidden * m.experts + (m.experts if m.router_bias else 0)


def moe_mlp_params(m: ModelSpec) -> int:
    """The MLP of one MoE layer: routed experts + shared experts + router."""
    return m.experts * mlp_params_per_expert(m) + shared_expert_params(m) + router_params(m)


def attention_and_norm_params(m: ModelSpec) -> int:
    """What every layer has besides its MLP: attention + its norms (norms_per_layer, 2 unless the
    family says) + q/k norms."""
    return attention_params(m) + m.norms_per_layer * norm_params(m) + qk_norm_params(m)


def dense_layer_params(m: ModelSpec) -> int:
    """One layer with a dense MLP: attention + MLP + 2 norms."""
    return attention_and_norm_params(m) + mlp_params(m, m.ffn_hidden)


def moe_layer_params(m: ModelSpec) -> int:
    """One layer with a mixture-of-experts MLP: attention + experts + shared experts + router + 2 norms."""
    return attention_and_norm_params(m) + moe_mlp_params(m)


@per_model
def layer_params(m: ModelSpec) -> int:
    """The largest layer (what FSDP gathers at once): an MoE layer if the model has any, else a dense one."""
    if moe_layer_count(m) == 0:
        return dense_layer_params(m)
    if moe_layer_count(m) == m.layers:
        return moe_layer_params(m)
    return max(dense_layer_params(m), moe_layer_params(m))


def blocks_params(m: ModelSpec) -> int:
    """All transformer layers: dense layers × dense_layer_params + MoE layers × moe_layer_params."""
    moe_layers = moe_layer_count(m)
    moe = moe_layers * moe_layer_params(m) if moe_layers else 0
    return (m.layers - moe_layers) * dense_layer_params(m) + moe


def embedding_params(m: ModelSpec) -> int:
    """Input embeddings, whole model: v·h plus the learned position rows."""
    return (m.vocab + m.learned_positions) * m.hidden


def lm_head_params(m: ModelSpec) -> int:
    """Output projection, whole model: v·h, or 0 when tied to the input embeddings; + v for a bias."""
    return (0 if m.tied_embeddings else m.vocab * m.hidden) + (m.vocab if m.lm_head_bias else 0)


def parameter_count(m: ModelSpec) -> int:
    """Parameters of a decoder-only transformer from its config.

    embeddings v·h (+ learned positions) + the layers (blocks_params: dense
    and MoE layers) + final norm + LM head v·h unless tied + the vision
    tower of a vision-language model.
    """
    if not m.has_architecture:
        raise ValueError(f"model {m.id!r} has no architecture and no parameter count")
    return language_params(m) + m.vision_params


def language_params(m: ModelSpec) -> int:
    """The language model alone: embeddings + layers + final norm + LM head."""
    return embedding_params(m) + blocks_params(m) + norm_params(m) + lm_head_params(m)


@per_model
def linear_weight_params(m: ModelSpec) -> int:
    """Parameters in the weight matrices of the transformer blocks, whole model.

    These are what weight-only quantization (GPTQ, AWQ, bitsandbytes NF4/int8,
    vLLM fp8) converts: the linears() of attention and of every MLP and expert,
    without biases. Embeddings, the LM head, norms, biases and the MoE router stay 16-bit.
    """
    require_architecture(m, "the split of quantized and 16-bit weights")
    return sum(x.d_in * x.d_out * x.count for x in linears(m))


@per_model
def expert_params(m: ModelSpec) -> int:
    """Parameters of the routed experts, whole model: what expert parallelism shards."""
    return moe_layer_count(m) * m.experts * mlp_params_per_expert(m) if is_moe(m) else 0


@per_model
def largest_linear_params(m: ModelSpec) -> int:
    """The largest single block matrix, d_in·d_out (what QLoRA dequantizes at once)."""
    return max(x.d_in * x.d_out for x in linears(m))


def kv_values_per_token_per_layer(m: ModelSpec, kv_heads: int | None = None) -> int:
    """Values one token adds to one layer's KV cache: 2·kv·d (K and V; Kwon et al. 2023 §2-3).

    kv heads, not query heads (grouped-query attention); `kv_heads` replaces
    the model's count for a tensor-parallel rank's share. MLA caches the
    latent instead: kv_lora_rank + qk_rope_head_dim values, shared by all
    heads (DeepSeek-V2 §2.1.2, Table 1: (d_c + d_h^R)·l per token), so
    `kv_heads` does not divide it: every tensor-parallel rank keeps it whole.
    DeepSeek-V2-Lite: 512 + 64 = 576 values.
    """
    if is_mla(m):
        return m.kv_lora_rank + m.qk_rope_head_dim
    return 2 * (m.kv_head_count if kv_heads is None else kv_heads) * m.head_size


def matmul_params(m: ModelSpec) -> int:
    """Parameters that take part in matrix multiplies: N without the input
    embedding table, which is a lookup (Kaplan et al. 2020 §2.1 count
    non-embedding FLOPs; the LM head is a GEMM and stays in). With tied
    embeddings the table is the head, so it stays in. Uses active
    parameters, so a mixture-of-experts counts the experts a token visits;
    a vision tower is left out (the FLOPs are the language model's)."""
    if not m.has_architecture or m.params_override is not None:
        return m.active_params
    lookup = embedding_params(m) - (m.vocab * m.hidden if m.tied_embeddings else 0)
    return m.active_params - lookup - m.vision_params
