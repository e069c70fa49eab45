"""Reading a local Hugging Face config.json into a ModelSpec (`model: {config: path}`)."""

from __future__ import annotations

import json
import os

from ..errors import Problem
from ..estimate.shapes import ModelSpec
from .bounds import BOUNDS
from .files import CONFIG_FILE, Refused, read_limited
from .messages import Path, field_name
from .schema import describe
from .yamlfile import Source


# The config.json keys read, by the ModelSpec field they set (Hugging Face names first,
# then GPT-2's), and the bound each value is checked against (bounds.py).
_INTEGER_KEYS = (
    (("hidden_size", "n_embd"), "dimension"),
    (("num_attention_heads", "n_head"), "dimension"),
    (("num_hidden_layers", "n_layer"), "dimension"),
    (("num_key_value_heads",), "dimension"),
    (("head_dim",), "dimension"),
    (("intermediate_size", "n_inner"), "dimension"),
    (("vocab_size",), "dimension"),
    (("max_position_embeddings", "n_positions"), "sequence"),
    (("num_local_experts",), "experts"),
    (("num_experts_per_tok",), "experts"),
)
_BOOLEAN_KEYS = ("tie_word_embeddings", "attention_bias", "qkv_bias", "mlp_bias")
_FRACTION_KEYS = ("resid_pdrop", "attention_dropout")


def _shown(value: object) -> str:
    """A JSON value as the file wrote it ("4096", 4096.5, NaN, true), kept short."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**16:
        return describe(value)
    text = json.dumps(value, allow_nan=True)
    return text if len(text) <= 40 else text[:37] + "..."


def config_problems(config: dict) -> list[tuple[str, str]]:
    """(key, message) for each value of `config` that cannot be a model's shape.

    A null value counts as absent (GPT-2 writes "n_inner": null); a missing key is
    left to the model's completeness check, since the workload may give it.
    """
    out = []
    for keys, bound_name in _INTEGER_KEYS:
        key = next((k for k in keys if config.get(k) is not None), None)
        if key is None:
            continue
        value, bound = config[key], BOUNDS[bound_name]
        if isinstance(value, str):
            out.append((key, f"not a number (got {_shown(value)}, text; expected a positive integer without quotes)"))
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            out.append((key, f"not a number (got {_shown(value)}, expected a positive integer)"))
        elif value != value or value in (float("inf"), float("-inf")):
            out.append((key, f"not a finite number (got {_shown(value)}, expected a positive integer)"))
        elif value != int(value) or value <= 0:
            out.append((key, f"not a positive integer (got {_shown(value)}, expected a positive integer)"))
        elif value > bound.high:
            out.append((key, f"implausibly large (got {_shown(value)}, expected {bound.expected})"))
    for key in _BOOLEAN_KEYS:
        if config.get(key) is not None and not isinstance(config[key], bool):
            out.append((key, f"not a boolean (got {_shown(config[key])}, expected true or false)"))
    for key in _FRACTION_KEYS:
        value = config.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not 0 <= value <= 1):
            out.append((key, f"not a dropout probability (got {_shown(value)}, expected a number from 0 to 1)"))
    return out


def read_config(path: str, base_dir: str, origin: Source, at: Path) -> tuple[ModelSpec | None, list[Problem]]:
    """A local Hugging Face config.json → ModelSpec; problems name the file and the key."""
    full = os.path.normpath(os.path.join(base_dir, path))
    where = (origin.path, origin.line(at), field_name(at))
    try:
        config = json.loads(read_limited(full, CONFIG_FILE).decode("utf-8"))
    except FileNotFoundError:
        return None, [Problem(*where, f"file not found (got {path!r}, looked for {full}; "
                                      "the path is relative to the workload file)")]
    except Refused as refused:
        return None, [Problem(*where, f"{full}: {refused}")]
    except OSError as error:
        return None, [Problem(*where, f"{full}: cannot read the config ({error.strerror})")]
    except UnicodeDecodeError as error:
        return None, [Problem(*where, f"{full}: not UTF-8 text (byte 0x{error.object[error.start]:02x} at offset "
                                      f"{error.start})")]
    except json.JSONDecodeError as error:
        return None, [Problem(*where, f"{full}:{error.lineno}: malformed JSON: {error.msg}")]
    except ValueError:   # Python reads integers of at most 4,300 digits (sys.get_int_max_str_digits)
        return None, [Problem(*where, f"{full}: malformed JSON: a number of more than 4,300 digits")]
    except RecursionError:
        return None, [Problem(*where, f"{full}: malformed JSON: values nested too deeply")]
    if not isinstance(config, dict):
        return None, [Problem(*where, f"{full}: not a config (got {describe(config)}, expected a JSON object)")]
    problems = [Problem(*where, f"{full}: {key}: {message}") for key, message in config_problems(config)]
    if problems:
        return None, problems
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
