"""config.json → ModelSpec: the family table by model_type, the language part of vision-language configs,
encoders refused by name, an unknown model_type read only when its keys suffice, and the shape checked.
"""

from __future__ import annotations

from ...catalog import vision
from ...catalog.shapes import ModelSpec
from .families import (ENCODERS, FAMILIES, GEMMA3_TEXT_DEFAULTS, LLAMA_DEFAULTS, UNKNOWN_ASSUMED, UNKNOWN_REQUIRED,
                       UNKNOWN_UNREADABLE, llama_style)
from ..shape_rules import shape_problems
from .keys import Keys
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
    assumptions: list[str] = []
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
        vision, vision_note = _vision(keys, model_type, projector, text)
        (assumptions if vision else warnings).append(vision_note)
        model_type = text_type or ""
    family = READERS.get(model_type)
    if family is not None:
        fields = family.read(text)
        assumptions.insert(0, f"config.json read as {model_type}: {family.assumed}")
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
        note = f"{what} is not an architecture proposalkit knows; read as {UNKNOWN_ASSUMED}"
        if text is keys and keys.has("vision_config"):
            note += "; its vision_config is not counted"
        warnings.insert(0, note)
    weight_format, unread = read_quantization(keys)
    if weight_format is not None:
        assumptions.append(f"quantized checkpoint (quantization_config): {weight_format.what}")
    if unread:
        warnings.append(unread)
    if text.missing:
        return None, [(text.missing[0].split(" or ")[0],
                       f"missing (expected {', '.join(text.missing)} for a {model_type or 'decoder'} config)")]
    problems = keys.problems or _shape_problems(fields, text)
    if problems:
        return None, problems
    return ModelSpec(id=name, name=name, source="local config.json", vision_params=vision, family=model_type or "",
                     weight_format=weight_format, assumptions=tuple(assumptions), warnings=tuple(warnings),
                     **fields), []


def _shape_problems(fields: dict, keys: Keys) -> Problems:
    """Heads dividing hidden (unless head_dim is given) and kv heads dividing heads, named by their keys
    (input/shape_rules.py, the rules workload mappings share)."""
    names = {"kv_heads": "num_key_value_heads", **keys.names}
    return shape_problems({k: fields[k] for k in ("hidden", "heads", "kv_heads", "head_dim")}, names)


def _vision(keys: Keys, model_type: str, projector: str | None, text: Keys) -> tuple[int, str]:
    """Parameters of the vision tower and projector, and the sentence that states them."""
    defaults = GEMMA3_VISION_DEFAULTS if model_type == "gemma3" else None
    raw = keys.config.get("vision_config")
    vision_type = raw.get("model_type") if isinstance(raw, dict) else None
    vision_type = vision_type or (defaults or {}).get("model_type")
    if vision_type not in ("clip_vision_model", "siglip_vision_model") or projector is None:
        return 0, (f"vision tower ({vision_type or 'none stated'}) not counted: only CLIP and SigLIP towers of "
                   "LLaVA and Gemma 3 are; the weights are the language model's")
    clip = vision_type == "clip_vision_model"
    v = keys.nested("vision_config", {**(CLIP_DEFAULTS if clip else SIGLIP_DEFAULTS), **(defaults or {})})
    if v is None:   # not an object: the problem is recorded, the model refused
        return 0, ""
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
    return count, (f"vision tower ({vision_type}) and projector: {count:,} parameters, counted in the weights; "
                   "FLOPs and activations are the language model's")
