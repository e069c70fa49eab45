"""Readers of the mixture-of-experts families: Mixtral, Qwen2-MoE, Qwen3-MoE, DeepSeek-V2/V3 (MLA).

As in families.py, each reader names the keys its Hugging Face configuration
class reads, with that class's defaults for keys a config leaves out
(transformers models/<family>/configuration_<family>.py), and sets ModelSpec
fields; catalog/shapes.py does the arithmetic.
"""

from __future__ import annotations

from .families import Family, decoder
from .keys import REQUIRED, Keys


def _experts(k: Keys, spec: dict, experts_key: str, experts: int, top_k: int | None) -> None:
    """Routed experts and top-k, checked: top-k at most the experts (each error names the key)."""
    before = len(k.problems)
    spec["experts"] = k.count(experts_key, default=experts, bound="experts")
    spec["experts_per_token"] = k.count("num_experts_per_tok", default=REQUIRED if top_k is None else top_k,
                                        bound="experts")
    if len(k.problems) == before and spec["experts_per_token"] > spec["experts"]:
        k.problems.append((k.key("num_experts_per_tok"),
                           f"more experts per token than experts (got {spec['experts_per_token']} of "
                           f"{spec['experts']} {k.key(experts_key)}; expected at most {spec['experts']})"))


def _layer_list(k: Keys, name: str, layers: int) -> list[int]:
    """A list of layer indices (Qwen's mlp_only_layers), each within the model."""
    value = k.config.get(name)
    if value is None:
        return []
    if not isinstance(value, list) or any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < layers
                                          for i in value):
        k.problems.append((k.key(name), f"not a list of layer indices (expected integers from 0 to {layers - 1})"))
        return []
    return value


def mixtral(k: Keys) -> dict:
    """MixtralConfig: num_local_experts gated experts of intermediate_size (no separate expert width),
    num_experts_per_tok routed; every layer sparse; no biases."""
    spec = decoder(k, tied=False)
    _experts(k, spec, "num_local_experts", 8, 2)
    return spec


def _qwen_moe(k: Keys, *, experts: int, top_k: int, moe_width: int, **fields) -> dict:
    """Qwen2MoeConfig / Qwen3MoeConfig: layer i is sparse unless it is in mlp_only_layers or
    (i + 1) is not a multiple of decoder_sparse_step; a sparse layer holds num_experts experts
    of moe_intermediate_size, the others a dense MLP of intermediate_size."""
    spec = decoder(k, tied=False, **fields)
    _experts(k, spec, "num_experts", experts, top_k)
    spec["moe_ffn_hidden"] = k.count("moe_intermediate_size", default=moe_width)
    step = k.count("decoder_sparse_step", default=1)
    dense_only = set(_layer_list(k, "mlp_only_layers", spec["layers"]))
    spec["dense_layers"] = sum(1 for i in range(spec["layers"]) if i in dense_only or (i + 1) % step)
    return spec


def qwen2_moe(k: Keys) -> dict:
    """Qwen2MoeConfig: q, k, v biases; one shared expert of shared_expert_intermediate_size
    beside the routed ones, gated by a one-output shared_expert_gate."""
    spec = _qwen_moe(k, experts=60, top_k=4, moe_width=1408, attention_bias=True)
    spec.update(shared_experts=1, shared_expert_gate=True,
                shared_ffn_hidden=k.count("shared_expert_intermediate_size", default=5632))
    return spec


def qwen3_moe(k: Keys) -> dict:
    """Qwen3MoeConfig: RMSNorm over head_dim on q and k; no shared expert; attention_bias on q, k, v and o."""
    bias = k.flag("attention_bias", False)
    return _qwen_moe(k, experts=128, top_k=8, moe_width=768, qk_norm="head", attention_bias=bias,
                     attention_out_bias=bias)


def _count_or_none(k: Keys, name: str, default: int, none: int | None = 0) -> int | None:
    """A count that may be 0, or null (`none`: the feature is off), else a positive integer;
    absent: the class default."""
    if name in k.config and k.config[name] is None:
        return none
    value = k.config.get(name)
    if value == 0 and not isinstance(value, bool):
        return 0
    return k.count(name, default=default)


def _deepseek(k: Keys, *, experts: int, shared: int, top_k: int | None, moe_width: int, first_dense: int) -> dict:
    """DeepseekV2Config / DeepseekV3Config: multi-head latent attention (q_lora_rank null: q projected
    directly; kv_lora_rank latent; qk_nope/qk_rope/v head dims); layer i holds a mixture of experts
    when n_routed_experts is not null, i ≥ first_k_dense_replace and i is a multiple of
    moe_layer_freq, else a dense MLP of intermediate_size; n_shared_experts shared experts of
    moe_intermediate_size each (one MLP of their summed width in the modeling code: the same
    parameters). attention_bias on q_a_proj, kv_a_proj_with_mqa and o_proj. The
    multi-token-prediction layers (num_nextn_predict_layers) are not counted: transformers'
    DeepseekV3ForCausalLM does not build them."""
    spec = decoder(k, tied=False, attention_bias=k.flag("attention_bias", False))
    spec.update(q_lora_rank=_count_or_none(k, "q_lora_rank", 1536, none=None),
                kv_lora_rank=k.count("kv_lora_rank", default=512),
                qk_nope_head_dim=k.count("qk_nope_head_dim", default=128),
                qk_rope_head_dim=k.count("qk_rope_head_dim", default=64),
                v_head_dim=k.count("v_head_dim", default=128))
    # MLA: keys and values per query head, expanded from the latent; the q/k head is dn + dr wide
    spec.update(kv_heads=spec["heads"], head_dim=spec["qk_nope_head_dim"] + spec["qk_rope_head_dim"])
    if _count_or_none(k, "n_routed_experts", experts):
        _experts(k, spec, "n_routed_experts", experts, top_k)
        spec["moe_ffn_hidden"] = k.count("moe_intermediate_size", default=moe_width)
        spec["shared_experts"] = _count_or_none(k, "n_shared_experts", shared)
        first = min(_count_or_none(k, "first_k_dense_replace", first_dense), spec["layers"])
        freq = k.count("moe_layer_freq", default=1)
        spec["dense_layers"] = sum(1 for i in range(spec["layers"]) if i < first or i % freq)
    return spec


def deepseek_v2(k: Keys) -> dict:
    """DeepseekV2Config defaults: 64 routed experts, 2 shared, moe_intermediate_size 1407, all layers
    sparse; the router's score-correction bias only with topk_method noaux_tc."""
    spec = _deepseek(k, experts=64, shared=2, top_k=None, moe_width=1407, first_dense=0)
    spec["router_bias"] = spec.get("experts", 1) > 1 and k.text("topk_method", "greedy") == "noaux_tc"
    return spec


def deepseek_v3(k: Keys) -> dict:
    """DeepseekV3Config defaults: 256 routed experts, 1 shared, top-8, moe_intermediate_size 2048, the
    first 3 layers dense; the router's per-expert score-correction bias (noaux_tc)."""
    spec = _deepseek(k, experts=256, shared=1, top_k=8, moe_width=2048, first_dense=3)
    spec["router_bias"] = spec.get("experts", 1) > 1
    return spec


MOE_FAMILIES: dict[str, Family] = {
    "mixtral": Family(mixtral, "gated MLP experts (SwiGLU), RMSNorm, no biases"),
    "qwen2_moe": Family(qwen2_moe, "gated MLP experts (SwiGLU) and one gated shared expert, RMSNorm, q/k/v biases"),
    "qwen3_moe": Family(qwen3_moe, "gated MLP experts (SwiGLU), RMSNorm, per-head q/k norms"),
    "deepseek_v2": Family(deepseek_v2, "multi-head latent attention, gated MLP experts (SwiGLU) and shared "
                                       "experts, RMSNorm"),
    "deepseek_v3": Family(deepseek_v3, "multi-head latent attention, gated MLP experts (SwiGLU) and shared "
                                       "experts, RMSNorm; the multi-token-prediction layer not counted"),
}
