"""config.json → ModelSpec: the family table by model_type, the language part of vision-language configs,
encoders refused by name, an unknown model_type read only when its keys suffice, and the shape checked.
"""

from __future__ import annotations

from ...catalog import vision
from ...catalog.shapes import ModelSpec
from ...notes import Note, note
from .families import (ENCODERS, FAMILIES, GEMMA3_TEXT_DEFAULTS, LLAMA_DEFAULTS, UNKNOWN_ASSUMED, UNKNOWN_REQUIRED,
                       UNKNOWN_UNREADABLE, llama_style)
from ..shape_rules import shape_problems
from ...bounds import BOUNDS
from .keys import Keys, count_problem, shown
from .quantization import read_quantization
from .moe import MOE_FAMILIES

# Every family reader by model_type: the dense decoders (families.py) and the mixtures of experts (moe.py).
READERS = {**FAMILIES, **MOE_FAMILIES}

# Class defaults of a sparse text_config, by its model_type.
TEXT_DEFAULTS = {"llama": LLAMA_DEFAULTS, "gemma3_text": GEMMA3_TEXT_DEFAULTS}

# Vision towers: CLIPVisionConfig and SiglipVisionConfig defaults; Gemma3Config's own default
# vision_config is SigLIP so400m/14 at 896 px without the pooling head (configuration_gemma3.py).
CLIP_DEFAULTS = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "image_size": 224,
                 "patch_size": 32}
SIGLIP_DEFAULTS = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "image_size": 224,
                   "patch_size": 16}
GEMMA3_VISION_DEFAULTS = {"model_type": "siglip_vision_model", "hidden_size": 1152, "intermediate_size": 4304,
                          "num_hidden_layers": 27, "image_size": 896, "patch_size": 14, "vision_use_head": False}

# Vision-language model_type → (the text_config's model_type when it states none, the projector).
MULTIMODAL = {"llava": ("llama", "llava"), "gemma3": ("gemma3_text", "gemma3")}

Problems = list[tuple[str, str]]


def model_from_config(config: dict, name: str) -> tuple[ModelSpec | None, Problems]:
    """A config.json object → (ModelSpec, []) or (None, [(key, message), ...])."""
    keys = Keys(config)
    model_type = keys.text("model_type")
    if model_type in ENCODERS:
        return None, [("model_type", f"{model_type!r} is {ENCODERS[model_type]}, not a decoder-only language "
                                     "model; proposalkit plans decoders (expected a causal LM's config.json, or "
                                     "give the model as params)")]
    records: list[Note] = []
    warnings: list[str] = []
    vision = 0
    text = keys
    if model_type in MULTIMODAL or (keys.has("text_config") and model_type not in READERS):
        text_type_default, projector = MULTIMODAL.get(model_type, (None, None))
        inner = keys.config.get("text_config")
        text_type = inner.get("model_type") if isinstance(inner, dict) else None
        text_type = text_type if isinstance(text_type, str) else text_type_default
        text = keys.nested("text_config", TEXT_DEFAULTS.get(text_type, {}))
        if text is None:
            return None, keys.problems or [("text_config", "missing (expected the language model's keys)")]
        vision, vision_type = _vision(keys, model_type, projector, text)
        if vision:
            records.append(note("vision-counted", vision_type=vision_type, params=vision))
        elif vision_type is not None:
            warnings.append(f"vision tower ({vision_type or 'none stated'}) not counted: only CLIP and SigLIP towers "
                            "of LLaVA and Gemma 3 are; the weights are the language model's")
        model_type = text_type or ""
    family = READERS.get(model_type)
    if family is not None:
        fields = family.read(text)
        records.insert(0, note("config-read-as", model_type=model_type, assumed=family.assumed))
    else:
        absent = [text.key(k) for k in UNKNOWN_REQUIRED if not text.has(k)]
        unread = [text.key(k) for k in UNKNOWN_UNREADABLE if text.has(k)]
        what = f"model_type {model_type!r}" if model_type else "no model_type"
        if unread:
            return None, [(text.key("model_type"), f"{what} is not an architecture proposalkit knows, and "
                                                   f"{', '.join(unread)} (mixture of experts or latent attention) "
                                                   "cannot be read as a Llama-style decoder")]
        if absent:
            return None, [(text.key("model_type"), f"{what} is not an architecture proposalkit knows, and the keys "
                                                   f"to read it as a Llama-style decoder are missing: "
                                                   f"{', '.join(absent)}")]
        fields = llama_style(text)
        guessed = f"{what} is not an architecture proposalkit knows; read as {UNKNOWN_ASSUMED}"
        if text is keys and keys.has("vision_config"):
            guessed += "; its vision_config is not counted"
        warnings.insert(0, guessed)
    context_note = _rope_scaled_context(text, model_type, fields)
    if context_note:
        records.append(context_note)
    weight_format, unread = read_quantization(keys)
    if weight_format is not None:
        records.append(note("quantized-checkpoint", weight_format.sources, precision=weight_format.precision,
                            method=weight_format.method, layout=weight_format.layout,
                            bits_per_param=float(weight_format.bits)))
    if unread:
        warnings.append(unread)
    if text.missing:
        return None, [(text.missing[0].split(" or ")[0],
                       f"missing (expected {', '.join(text.missing)} for a {model_type or 'decoder'} config)")]
    problems = keys.problems or _shape_problems(fields, text)
    if problems:
        return None, problems
    return ModelSpec(id=name, name=name, source="local config.json", vision_params=vision, family=model_type or "",
                     weight_format=weight_format, records=tuple(records), warnings=tuple(warnings),
                     **fields), []


def _shape_problems(fields: dict, keys: Keys) -> Problems:
    """Heads dividing hidden (unless head_dim is given) and kv heads dividing heads, named by their keys
    (input/shape_rules.py, the rules workload mappings share)."""
    names = {"kv_heads": "num_key_value_heads", **keys.names}
    return shape_problems({k: fields[k] for k in ("hidden", "heads", "kv_heads", "head_dim")}, names)


def _vision(keys: Keys, model_type: str, projector: str | None, text: Keys) -> tuple[int, str | None]:
    """(Parameters of the vision tower and projector, the tower's model_type: '' where none is stated); 0 where the
    tower is not one counted, (0, None) where vision_config is not an object (the problem is recorded)."""
    defaults = GEMMA3_VISION_DEFAULTS if model_type == "gemma3" else None
    raw = keys.config.get("vision_config")
    vision_type = raw.get("model_type") if isinstance(raw, dict) else None
    vision_type = vision_type or (defaults or {}).get("model_type")
    if vision_type not in ("clip_vision_model", "siglip_vision_model") or projector is None:
        return 0, vision_type or ""
    clip = vision_type == "clip_vision_model"
    v = keys.nested("vision_config", {**(CLIP_DEFAULTS if clip else SIGLIP_DEFAULTS), **(defaults or {})})
    if v is None:   # not an object: the problem is recorded, the model refused
        return 0, None
    hidden = v.count("hidden_size")
    count = vision.vision_encoder_params(
        hidden, v.count("intermediate_size"), v.count("num_hidden_layers"), v.count("patch_size"),
        v.count("image_size", bound="sequence"), channels=v.count("num_channels", default=3),
        class_token=clip, patch_bias=not clip, pre_norm=clip,
        pooling_head=not clip and v.flag("vision_use_head", (defaults or {}).get("vision_use_head", True)))
    text_hidden = text.count("hidden_size")
    if projector == "llava":
        count += vision.llava_projector_params(hidden, text_hidden, keys.flag("multimodal_projector_bias", True))
    else:
        count += vision.gemma3_projector_params(hidden, text_hidden)
    return count, vision_type


# rope_scaling types whose factor stretches the positions a model was trained on (transformers' LlamaConfig
# docstring: "In most scaling types, a `factor` of x will enable the model to handle sequences of length x *
# original maximum pre-trained length"). 'llama3', 'longrope' and 'su' configs state the stretched length as
# max_position_embeddings already; so does Gemma 3's linear factor. As vLLM derives max_model_len
# (vllm/config.py _get_and_verify_max_len): factor × original_max_position_embeddings for yarn, factor ×
# max_position_embeddings for linear and dynamic, gemma3 skipped.
STRETCHING_ROPE = ("linear", "dynamic", "yarn")


def _rope_scaled_context(k: Keys, model_type: str, fields: dict) -> Note | None:
    """Raise fields["max_context"] to the context rope_scaling stretches it to; the record that says so.

    Only ever raised: a config whose max_position_embeddings is already the longer one (DeepSeek-V3: 163,840
    = 40 × 4,096) keeps it. Qwen2.5's cards ask for rope_scaling {type: yarn, factor: 4,
    original_max_position_embeddings: 32768} to serve 131,072 tokens.
    """
    rope = k.config.get("rope_scaling")
    stated = fields.get("max_context")
    if not isinstance(rope, dict) or stated is None or "gemma3" in model_type:
        return None
    kind = rope.get("rope_type", rope.get("type"))
    if kind not in STRETCHING_ROPE:
        return None
    factor = rope.get("factor")
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 1 <= factor < float("inf"):
        k.problems.append((k.key("rope_scaling.factor"), f"not a scaling factor (got {shown(factor)}, expected a "
                                                         "number of at least 1)"))
        return None
    base, base_key = stated, k.names.get("max_context", k.key("max_position_embeddings"))
    if kind == "yarn" and rope.get("original_max_position_embeddings") is not None:
        base, base_key = rope["original_max_position_embeddings"], k.key("rope_scaling.original_max_position_embeddings")
        problem = count_problem(base, "sequence")
        if problem:
            k.problems.append((base_key, problem))
            return None
    bound = BOUNDS["sequence"]
    if factor * base > bound.high:      # inf included
        k.problems.append((k.key("rope_scaling.factor"), f"implausibly large (got {shown(factor)}: the context "
                                                         f"it stretches {base:,} tokens to is expected "
                                                         f"{bound.expected})"))
        return None
    stretched = int(factor * base)
    if stretched <= stated:
        return None
    fields["max_context"] = stretched
    return note("context-stretched", max_context=stretched, rope_type=kind, factor=factor, base_key=base_key,
                base=base, stated=stated)
