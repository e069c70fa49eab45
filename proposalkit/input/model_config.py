"""Reading a local Hugging Face config.json into a ModelSpec (`model: {config: path}`)."""

from __future__ import annotations

import json
import os

from ..errors import Problem
from ..estimate.shapes import ModelSpec
from .messages import Path, field_name
from .yamlfile import Source


def read_config(path: str, base_dir: str, origin: Source, at: Path) -> tuple[ModelSpec | None, list[Problem]]:
    """A local Hugging Face config.json → ModelSpec."""
    full = os.path.normpath(os.path.join(base_dir, path))
    where = (origin.path, origin.line(at), field_name(at))
    try:
        with open(full, "rb") as handle:
            config = json.loads(handle.read().decode("utf-8"))
    except FileNotFoundError:
        return None, [Problem(*where, f"file not found (got {path!r}, looked for {full}; "
                                      "the path is relative to the workload file)")]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        return None, [Problem(*where, f"cannot read the config (got {path!r}: {error})")]
    if not isinstance(config, dict):
        return None, [Problem(*where, f"not a config (got {path!r}, expected a JSON object)")]
    return model_from_hf_config(config, name=os.path.basename(os.path.dirname(full)) or path), []


def model_from_hf_config(config: dict, name: str) -> ModelSpec:
    """Map Hugging Face config.json keys (Llama/Mistral/Qwen2/GPT-2 families) to a ModelSpec."""
    get = config.get
    hidden = get("hidden_size", get("n_embd"))
    heads = get("num_attention_heads", get("n_head"))
    gpt2_like = "n_embd" in config
    mlp_act = str(get("hidden_act", get("activation_function", "silu")))
    mlp = "gelu" if gpt2_like or "gelu" in mlp_act and "intermediate_size" not in config else "swiglu"
    ffn = get("intermediate_size", get("n_inner") or (4 * hidden if hidden else None))
    experts = get("num_local_experts", 1) or 1
    return ModelSpec(
        id=name, name=name,
        layers=get("num_hidden_layers", get("n_layer")),
        hidden=hidden, heads=heads,
        kv_heads=get("num_key_value_heads", heads),
        head_dim=get("head_dim"),
        ffn_hidden=ffn,
        vocab=get("vocab_size"),
        max_context=get("max_position_embeddings", get("n_positions")),
        tied_embeddings=bool(get("tie_word_embeddings", gpt2_like)),
        mlp=mlp,
        norm="layernorm" if gpt2_like else "rmsnorm",
        attention_bias=bool(get("attention_bias", get("qkv_bias", gpt2_like or get("model_type") == "qwen2"))),
        attention_out_bias=gpt2_like,
        mlp_bias=bool(get("mlp_bias", gpt2_like)),
        learned_positions=get("n_positions", 0) if gpt2_like else 0,
        experts=experts,
        experts_per_token=get("num_experts_per_tok", 1) or 1,
        dropout=bool(get("resid_pdrop", 0) or get("attention_dropout", 0)),
        source="local config.json",
    )
