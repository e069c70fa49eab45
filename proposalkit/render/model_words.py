"""The model readers' notes in words: what input/mapping.py, input/configs/ and input/model_config.py assumed of a
model's shape (render/notes.py WORDS takes these in).

Each sentence begins with the model's id (the planner adds it to the records as `model`). The shape-default and
params-given sentences are also the model's warnings, which input/mapping.py words the same way
(_default_sentence, _params_sentence) while warnings are sentences.
"""

from __future__ import annotations

from collections.abc import Callable

from ..notes import Note


def _shape_default(n: Note) -> str:
    value = f"{n['value']:,}" if n["field"] == "ffn_hidden" else n["value"]
    return f"{n['field']} not given: {value} ({n['why']})"


def _params_given(n: Note) -> str:
    params, shape = n["params"], n["shape_params"]
    text = (f"params {params:,} given: it sets the weights and FLOPs; the shape (layers, hidden, heads, ...) counts "
            f"{shape:,}")
    off = params / shape - 1
    if abs(off) <= n["tolerance"]:
        return text
    return text + f"; params is {off:+.1%} from it"


def _shape_assumed(n: Note) -> str:
    if n["basis"] == "catalog":
        lent = f"{n['family']}'s catalog model nearest in size, {n['origin']} ({n['origin_params']:,} parameters)"
    else:
        lent = f"the standard decoder nearest in size, {n['origin']} ({n['origin_params']:,} parameters, {n['table']})"
    return (f"params alone ({n['params']:,}): shape assumed from {lent}: {n['layers']} layers, hidden "
            f"{n['hidden']}, {n['heads']} heads, {n['kv_heads']} kv heads of {n['head_dim']}, ffn_hidden "
            f"{n['ffn_hidden']:,} ({n['mlp']} MLP), vocab {n['vocab']:,}; params sets the weights and 6·N FLOPs, the "
            "shape the activations, attention FLOPs and KV cache")


def _quantized(n: Note) -> str:
    return f"quantized checkpoint (quantization_config): {n['method']}" + (f": {n['layout']}" if n["layout"] else "")


_BODIES: dict[str, Callable[[Note], str]] = {
    # a mapping's shape (input/mapping.py)
    "shape-default": _shape_default,
    "plain-mlp-layernorm": lambda n: "mlp: plain: LayerNorm, as the GPT block (no eager fp32 norm copy counted)",
    "params-given": _params_given,
    "shape-assumed": _shape_assumed,
    # a config.json (input/configs/read.py, quantization.py) and the Hub's (input/model_config.py)
    "config-read-as": lambda n: f"config.json read as {n['model_type']}: {n['assumed']}",
    "config-from-hub": lambda n: f"shape read from the {n['source']}",
    "vision-counted": lambda n: (
        f"vision tower ({n['vision_type']}) and projector: {n['params']:,} parameters, counted in the weights; FLOPs "
        "and activations are the language model's"),
    "context-stretched": lambda n: (
        f"maximum context {n['max_context']:,} tokens: rope_scaling {n['rope_type']} factor {n['factor']:g} × "
        f"{n['base_key']} {n['base']:,} (max_position_embeddings says {n['stated']:,})"),
    "quantized-checkpoint": _quantized,
}


def _of_model(body: Callable[[Note], str]) -> Callable[[Note], str]:
    return lambda n: f"{n['model']}: {body(n)}"


MODEL_WORDS: dict[str, Callable[[Note], str]] = {kind: _of_model(body) for kind, body in _BODIES.items()}
