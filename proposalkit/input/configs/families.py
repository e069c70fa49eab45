"""One reader per dense decoder family: config.json keys → ModelSpec fields (table FAMILIES at the end).

Each reader names the keys its family's Hugging Face configuration class
reads, with that class's defaults for keys a config leaves out, and sets
the architecture fields of ModelSpec (catalog/shapes.py does the
arithmetic). `assumed` says, for the plan, what the reader takes as given
beyond the keys. Module names are those of transformers' modeling_<family>.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ...catalog.shapes import GPT_FFN_FACTOR
from .keys import REQUIRED, Keys

HF_NAMES = {"hidden": ("hidden_size",), "heads": ("num_attention_heads",), "layers": ("num_hidden_layers",),
            "ffn": ("intermediate_size",), "kv": ("num_key_value_heads",), "context": ("max_position_embeddings",)}
GPT2_NAMES = {"hidden": ("n_embd",), "heads": ("n_head",), "layers": ("n_layer",), "ffn": ("n_inner",),
              "kv": (), "context": ("n_positions",)}
DROPOUT_KEYS = ("resid_pdrop", "attention_dropout", "hidden_dropout", "attn_pdrop")


def decoder(k: Keys, names: dict = HF_NAMES, *, tied: bool, ffn_factor: int | None = None,
            head_dim: int | None = None, **fields) -> dict:
    """The keys every decoder states: layers, hidden, heads, kv heads, head_dim, MLP width, vocabulary.

    kv heads default to heads (multi-head attention); head_dim to hidden /
    heads; the MLP width to ffn_factor × hidden where the family's class
    does so (GPT-2's n_inner null: 4 × n_embd); tie_word_embeddings to the
    family's class default (`tied`).
    """
    hidden = k.count(*names["hidden"], field="hidden")
    heads = k.count(*names["heads"], field="heads")
    ffn_default = REQUIRED if ffn_factor is None else ffn_factor * hidden
    out = {
        "layers": k.count(*names["layers"], field="layers"),
        "hidden": hidden,
        "heads": heads,
        "kv_heads": k.count(*names["kv"], default=heads, field="kv_heads") if names["kv"] else heads,
        "head_dim": k.count("head_dim", default=head_dim, field="head_dim"),
        "ffn_hidden": k.count(*names["ffn"], default=ffn_default, field="ffn_hidden"),
        "vocab": k.count("vocab_size", field="vocab"),
        "max_context": k.count(*names["context"], default=None, bound="sequence", field="max_context"),
        "tied_embeddings": k.flag("tie_word_embeddings", tied),
        "dropout": any(k.fraction(key) > 0 for key in DROPOUT_KEYS),
    }
    out.update(fields)
    return out


def sliding_window(k: Keys, layers: int, global_every: int | None = None) -> dict:
    """sliding_window and the layers that attend within it: those layer_types names "sliding_attention"
    where the config lists them (transformers >= 4.53), else every layer (Mistral, Phi-3, StarCoder2:
    one window for all), or all but one in `global_every` (Gemma 2: 2, alternating; Gemma 3:
    sliding_window_pattern, 6). No window, or null: none."""
    window = k.count("sliding_window", default=None, bound="sequence")
    if window is None:
        return {}
    types = k.config.get("layer_types")
    if isinstance(types, list) and len(types) == layers:
        windowed = sum(kind == "sliding_attention" for kind in types)
    else:
        windowed = layers if global_every is None else layers - layers // global_every
    return {"sliding_window": window, "sliding_window_layers": windowed}


def windowed(k: Keys, spec: dict, global_every: int | None = None) -> dict:
    """spec with its sliding window (sliding_window above) added."""
    spec.update(sliding_window(k, spec["layers"], global_every))
    return spec


def llama(k: Keys) -> dict:
    """LlamaConfig: attention_bias puts biases on q, k, v and o_proj; mlp_bias on gate, up and down."""
    bias = k.flag("attention_bias", False)
    return decoder(k, tied=False, attention_bias=bias, attention_out_bias=bias, mlp_bias=k.flag("mlp_bias", False))


def mistral(k: Keys) -> dict:
    """MistralConfig: no biases; head_dim may differ from hidden / heads (Mistral Nemo); sliding_window
    on every layer (v0.1: 4096; null from v0.2)."""
    return windowed(k, decoder(k, tied=False))


def qwen2(k: Keys) -> dict:
    """Qwen2Config: q, k and v carry biases, o_proj does not."""
    return decoder(k, tied=False, attention_bias=True)


def qwen3(k: Keys) -> dict:
    """Qwen3Config: RMSNorm over head_dim on q and k (q_norm, k_norm); attention_bias on q, k, v and o."""
    bias = k.flag("attention_bias", False)
    return decoder(k, tied=False, qk_norm="head", attention_bias=bias, attention_out_bias=bias)


def gemma(k: Keys) -> dict:
    """GemmaConfig: GeGLU (gate, up, down), head_dim 256 by default, embeddings tied by default."""
    return decoder(k, tied=True, head_dim=256)


def gemma2(k: Keys) -> dict:
    """Gemma2Config: as Gemma, with four norms per layer (before and after attention and MLP); every other
    layer attends within sliding_window (modeling_gemma2.py: layers 0, 2, 4, ... sliding)."""
    return windowed(k, decoder(k, tied=True, head_dim=256, norms_per_layer=4), global_every=2)


# Gemma3TextConfig's defaults, which the multimodal Gemma 3 configs rely on (their text_config
# states only what differs): transformers models/gemma3/configuration_gemma3.py.
GEMMA3_TEXT_DEFAULTS = {"vocab_size": 262_208, "hidden_size": 2304, "intermediate_size": 9216,
                        "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
                        "max_position_embeddings": 131_072, "sliding_window": 4096, "sliding_window_pattern": 6}
# LlamaConfig's defaults (the Llama-2-7B shape), which LLaVA's text_config relies on:
# transformers models/llama/configuration_llama.py.
LLAMA_DEFAULTS = {"vocab_size": 32_000, "hidden_size": 4096, "intermediate_size": 11_008, "num_hidden_layers": 32,
                  "num_attention_heads": 32, "max_position_embeddings": 2048}


def gemma3_text(k: Keys) -> dict:
    """Gemma3TextConfig: four norms per layer and RMSNorm over head_dim on q and k; tied by default; one
    layer in sliding_window_pattern (6) attends globally, the others within sliding_window."""
    spec = decoder(k, tied=True, head_dim=256, norms_per_layer=4, qk_norm="head")
    return windowed(k, spec, global_every=k.count("sliding_window_pattern", default=6, bound="sequence"))


def phi(k: Keys) -> dict:
    """PhiConfig (Phi-2): attention and MLP in parallel after ONE LayerNorm (with bias); biases on q, k, v,
    dense, fc1, fc2 and the LM head; plain MLP fc1/fc2; partial rotary."""
    return decoder(k, tied=False, mlp="plain", norm="layernorm", norms_per_layer=1, parallel_attention=True,
                   attention_bias=True, attention_out_bias=True, mlp_bias=True, lm_head_bias=True,
                   rotary_fraction=k.fraction("partial_rotary_factor", 0.5, "rotary share"))


def phi3(k: Keys) -> dict:
    """Phi3Config: fused qkv_proj and gate_up_proj (the same weights as q, k, v and gate, up); no biases;
    sliding_window on every layer (Phi-3-mini-4k: 2047)."""
    rotary = k.fraction("partial_rotary_factor", 1.0, "rotary share")
    return windowed(k, decoder(k, tied=False, rotary_fraction=rotary))


def gpt2(k: Keys) -> dict:
    """GPT2Config: Conv1D c_attn (fused q, k, v) and c_proj, MLP c_fc/c_proj of 4 × n_embd when n_inner
    is null; learned positions (n_positions rows); LayerNorm; biases everywhere; tied."""
    spec = decoder(k, GPT2_NAMES, tied=True, ffn_factor=GPT_FFN_FACTOR, mlp="plain", norm="layernorm",
                   attention_bias=True, attention_out_bias=True, mlp_bias=True)
    spec["learned_positions"] = k.count("n_positions", default=1024, bound="sequence")
    return spec


def phi_msft(k: Keys) -> dict:
    """microsoft/phi-2's config before transformers' PhiConfig (model_type phi-msft, its remote-code
    configuration_phi.py and modeling_phi.py): the same block as phi, with GPT-2 key names. One LayerNorm
    feeding attention (Wqkv and out_proj, biases) and the MLP (fc1/fc2 of n_inner, 4 × n_embd when null) in
    parallel; n_head_kv key/value heads (n_head when null); rotary_dim of each head rotated; the LM head
    has its LayerNorm and a bias; vocab_size rounded up to pad_vocab_size_multiple (64). Phixtral's
    num_local_experts (a mixture of phi-2 MLPs) is not read."""
    if k.has("num_local_experts"):
        k.problems.append((k.key("num_local_experts"), "a mixture of experts in a phi-msft config (Phixtral) is "
                                                       "not read (expected a dense phi-msft or phi config)"))
    spec = decoder(k, {**GPT2_NAMES, "kv": ("n_head_kv",)}, tied=False, ffn_factor=GPT_FFN_FACTOR, mlp="plain",
                   norm="layernorm", norms_per_layer=1, parallel_attention=True, attention_bias=True,
                   attention_out_bias=True, mlp_bias=True, lm_head_bias=True)
    multiple = k.count("pad_vocab_size_multiple", default=64)
    spec["vocab"] = -(-spec["vocab"] // multiple) * multiple
    rotary = k.count("rotary_dim", default=32)
    spec["rotary_fraction"] = min(rotary / (spec["hidden"] // spec["heads"] or 1), 1.0)
    return spec


def gpt_bigcode(k: Keys) -> dict:
    """GPTBigCodeConfig: GPT-2's block with multi_query (true by default): ONE key/value head, so c_attn
    is n_embd → n_embd + 2·head_dim."""
    spec = gpt2(k)
    if k.flag("multi_query", True):
        spec["kv_heads"] = 1
    return spec


def gpt_neox(k: Keys) -> dict:
    """GPTNeoXConfig: fused query_key_value and dense with biases (attention_bias, default true),
    dense_h_to_4h/dense_4h_to_h with biases; two LayerNorms per layer, in parallel when
    use_parallel_residual (default true); rotary_pct of head_dim; untied embed_in/embed_out."""
    bias = k.flag("attention_bias", True)
    return decoder(k, tied=False, mlp="plain", norm="layernorm", attention_bias=bias, attention_out_bias=bias,
                   mlp_bias=True, parallel_attention=k.flag("use_parallel_residual", True),
                   rotary_fraction=k.fraction("rotary_pct", 0.25, "rotary share"))


def gptj(k: Keys) -> dict:
    """GPTJConfig: one ln_1 feeding attention and MLP in parallel; q, k, v, out_proj without bias;
    fc_in/fc_out (4 × n_embd when n_inner is null) with biases; the LM head has a bias; untied."""
    spec = decoder(k, GPT2_NAMES, tied=False, ffn_factor=GPT_FFN_FACTOR, mlp="plain", norm="layernorm", norms_per_layer=1,
                   parallel_attention=True, mlp_bias=True, lm_head_bias=True)
    rotary = k.count("rotary_dim", default=None)
    if rotary is not None:
        spec["rotary_fraction"] = min(rotary / (spec["hidden"] // spec["heads"] or 1), 1.0)
    return spec


def falcon(k: Keys) -> dict:
    """FalconConfig: new_decoder_architecture uses num_kv_heads (grouped) and two LayerNorms (ln_attn,
    ln_mlp); otherwise multi_query means ONE key/value head whatever num_kv_heads says, and a parallel
    block has one input_layernorm. `bias` puts biases on every linear; plain MLP of 4 × hidden
    (ffn_hidden_size); tied by default."""
    spec = decoder(k, {**HF_NAMES, "ffn": ("ffn_hidden_size",), "kv": ()}, tied=True, ffn_factor=GPT_FFN_FACTOR,
                   mlp="plain", norm="layernorm")
    bias = k.flag("bias", False)
    parallel = k.flag("parallel_attn", True)
    spec.update(attention_bias=bias, attention_out_bias=bias, mlp_bias=bias, parallel_attention=parallel)
    if k.flag("new_decoder_architecture", False):
        spec["kv_heads"] = k.count("num_kv_heads", default=spec["heads"], field="kv_heads")
        spec["norms_per_layer"] = k.count("num_ln_in_parallel_attn", default=2)
    else:
        if k.flag("multi_query", True):
            spec["kv_heads"] = 1
        spec["norms_per_layer"] = 1 if parallel else 2
    return spec


def olmo2(k: Keys) -> dict:
    """Olmo2Config: norms after attention and MLP (two per layer) and RMSNorm over the whole q and k
    widths (q_norm a·d, k_norm kv·d); attention_bias on q, k, v and o."""
    bias = k.flag("attention_bias", False)
    return decoder(k, tied=False, qk_norm="full", attention_bias=bias, attention_out_bias=bias)


def starcoder2(k: Keys) -> dict:
    """Starcoder2Config: LayerNorm with bias, use_bias (default true) on every linear, plain MLP
    c_fc/c_proj; tied by default."""
    bias = k.flag("use_bias", True)
    spec = decoder(k, tied=True, mlp="plain", norm="layernorm", attention_bias=bias, attention_out_bias=bias,
                   mlp_bias=bias)
    return windowed(k, spec)   # sliding_window on every layer (StarCoder2: 4096)


def stablelm(k: Keys) -> dict:
    """StableLmConfig: LayerNorm with bias; use_qkv_bias on q, k, v; gated MLP; partial rotary;
    one norm per layer when use_parallel_residual; qk_layernorm: a bias-free LayerNorm per head on q
    and k (StableLmLayerNormPerHead), a·d + kv·d weights, counted as qk_norm "full"."""
    parallel = k.flag("use_parallel_residual", False)
    return decoder(k, tied=False, norm="layernorm", attention_bias=k.flag("use_qkv_bias", False),
                   parallel_attention=parallel, norms_per_layer=1 if parallel else 2,
                   qk_norm="full" if k.flag("qk_layernorm", False) else "none",
                   rotary_fraction=k.fraction("partial_rotary_factor", 0.25, "rotary share"))


def internlm2(k: Keys) -> dict:
    """InternLM2Config (remote code): fused wqkv and wo, w1/w3/w2 gated MLP; `bias` on wqkv and wo."""
    bias = k.flag("bias", True)
    return decoder(k, tied=False, attention_bias=bias, attention_out_bias=bias)


def opt(k: Keys) -> dict:
    """OPTConfig: learned positions with an offset of 2 (max_position_embeddings + 2 rows); fc1/fc2
    (ffn_dim) with biases (enable_bias); LayerNorm; tied by default."""
    bias = k.flag("enable_bias", True)
    spec = decoder(k, {**HF_NAMES, "ffn": ("ffn_dim",), "kv": ()}, tied=True, mlp="plain", norm="layernorm",
                   attention_bias=bias, attention_out_bias=bias, mlp_bias=bias)
    spec["dropout"] = spec["dropout"] or k.fraction("dropout") > 0
    # OPTLearnedPositionalEmbedding: "OPT is set up so that if padding_idx is specified then offset the
    # embedding ids by 2" (transformers modeling_opt.py).
    spec["learned_positions"] = k.count("max_position_embeddings", default=2048, bound="sequence") + 2
    projection = k.count("word_embed_proj_dim", default=spec["hidden"])
    if projection != spec["hidden"]:
        k.problems.append((k.key("word_embed_proj_dim"),
                           f"an embedding narrower than the model (got {projection} against hidden_size "
                           f"{spec['hidden']}, OPT-350m's project_in/project_out) is not modelled"))
    return spec


def llama_style(k: Keys) -> dict:
    """An unknown model_type read as a Llama-style decoder (gated MLP, RMSNorm, no biases, untied)."""
    return decoder(k, tied=False)


@dataclass(frozen=True)
class Family:
    read: Callable[[Keys], dict]
    assumed: str   # what the reader takes as given beyond the keys, stated in the plan


FAMILIES: dict[str, Family] = {
    "llama": Family(llama, "gated MLP (SwiGLU), RMSNorm"),
    "mistral": Family(mistral, "gated MLP (SwiGLU), RMSNorm, no biases"),
    "qwen2": Family(qwen2, "gated MLP (SwiGLU), RMSNorm, q/k/v biases"),
    "qwen3": Family(qwen3, "gated MLP (SwiGLU), RMSNorm, per-head q/k norms"),
    "gemma": Family(gemma, "gated MLP (GeGLU), RMSNorm, tied unless tie_word_embeddings is false"),
    "gemma2": Family(gemma2, "gated MLP (GeGLU), 4 RMSNorms per layer, tied unless tie_word_embeddings is false"),
    "gemma3_text": Family(gemma3_text, "gated MLP (GeGLU), 4 RMSNorms per layer, per-head q/k norms, tied unless "
                                       "tie_word_embeddings is false"),
    "phi": Family(phi, "parallel attention and MLP after one LayerNorm, biases on every linear and the LM head"),
    "phi-msft": Family(phi_msft, "parallel attention and MLP after one LayerNorm, biases on every linear and the "
                                 "LM head (microsoft/phi-2's config before transformers' phi)"),
    "phi3": Family(phi3, "gated MLP (fused gate_up_proj), RMSNorm, no biases"),
    "gpt2": Family(gpt2, "plain MLP (GELU), LayerNorm, biases, learned positions, tied"),
    "gpt_bigcode": Family(gpt_bigcode, "plain MLP (GELU), LayerNorm, biases, learned positions, tied, one "
                                       "key/value head when multi_query"),
    "gpt_neox": Family(gpt_neox, "plain MLP (GELU), LayerNorm, biases, parallel residual"),
    "gptj": Family(gptj, "parallel attention and MLP after one LayerNorm, plain MLP, LM head bias"),
    # CodeGenConfig: GPT-J's block (modeling_codegen.py: CodeGenBlock "Copied from GPTJBlock", qkv_proj and
    # out_proj without bias, fc_in/fc_out with, lm_head with a bias, untied by default).
    "codegen": Family(gptj, "parallel attention and MLP after one LayerNorm, plain MLP, LM head bias (GPT-J's "
                            "block)"),
    "falcon": Family(falcon, "plain MLP (GELU), LayerNorm; multi_query: one key/value head; new decoder "
                             "architecture: num_kv_heads and two LayerNorms"),
    "olmo2": Family(olmo2, "gated MLP (SwiGLU), RMSNorm after attention and MLP, q/k norms over the full width"),
    "starcoder2": Family(starcoder2, "plain MLP (GELU), LayerNorm, biases on every linear"),
    "stablelm": Family(stablelm, "gated MLP (SwiGLU), LayerNorm, partial rotary"),
    "internlm2": Family(internlm2, "gated MLP (SwiGLU), RMSNorm"),
    "opt": Family(opt, "plain MLP (ReLU), LayerNorm, biases, learned positions (+2 rows), tied"),
}

# Not decoders: refused by name (planning them as decoders overcounts, and their activations differ).
ENCODERS = {"bert": "an encoder (BERT)", "roberta": "an encoder (RoBERTa)", "xlm-roberta": "an encoder (XLM-R)",
            "deberta": "an encoder (DeBERTa)", "deberta-v2": "an encoder (DeBERTa-v2)",
            "distilbert": "an encoder (DistilBERT)", "electra": "an encoder (ELECTRA)",
            "modernbert": "an encoder (ModernBERT)", "t5": "an encoder-decoder (T5)", "mt5": "an encoder-decoder (mT5)",
            "umt5": "an encoder-decoder (UMT5)", "bart": "an encoder-decoder (BART)",
            "mbart": "an encoder-decoder (mBART)", "pegasus": "an encoder-decoder (PEGASUS)",
            "whisper": "an encoder-decoder (Whisper)"}

# The keys an unknown model_type must state to be read as a Llama-style decoder.
UNKNOWN_REQUIRED = ("hidden_size", "num_attention_heads", "num_hidden_layers", "intermediate_size", "vocab_size")
UNKNOWN_ASSUMED = ("a Llama-style decoder: gated MLP (SwiGLU), RMSNorm, no biases, "
                   "untied embeddings unless tie_word_embeddings is true")
# Keys that say an unknown model_type is not a plain decoder (read as one, it would be undercounted).
UNKNOWN_UNREADABLE = ("num_experts", "num_local_experts", "n_routed_experts", "moe_intermediate_size",
                      "kv_lora_rank")
