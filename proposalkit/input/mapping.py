"""A model given as a mapping (CONTRACT.md "Model as a mapping") → ModelSpec, and the shape rules.

A partial shape is completed the way the original GPT block is (Radford et
al. 2018/2019: multi-head attention, an MLP of 4 × hidden with GELU, two
matrices): kv_heads = heads, ffn_hidden = 4 × hidden, mlp: plain; each
default is stated as an assumption and a warning. layers, hidden, heads and
vocab have no default. A mapping with only `params` stays a parameter count.
The consistency rules (shape_problem) hold for mappings and config.json alike.
"""

from __future__ import annotations

from dataclasses import replace

from ..catalog.modules import ALL_LINEAR, FAMILY_MODULES, module_names
from ..catalog.shapes import GPT_FFN_FACTOR, ModelSpec, is_mla, parameter_count
from ..bounds import BOUNDS
from .messages import did_you_mean
from .schema import ModelShape
from .shape_rules import shape_problems

REQUIRED = ("layers", "hidden", "heads", "vocab")
MOE_KEYS = ("experts_per_token", "moe_ffn_hidden", "shared_experts")
SHAPE_KEYS = (*REQUIRED, "kv_heads", "head_dim", "ffn_hidden", "mlp", "tied_embeddings", "experts", *MOE_KEYS)
PARAMS_TOLERANCE = 0.05     # a given params further than this from the shape's count is warned


def _and(names) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


Problem = tuple[str | None, str]     # (the mapping's key it is about, or None for the whole mapping; message)


def from_mapping(ref: ModelShape, base: ModelSpec | None) -> tuple[ModelSpec | None, Problem | None]:
    """The mapping's model (base: the one its `config:` gave, if any) → (spec, None) or (None, problem)."""
    given = {k: v for k, v in ref.model_dump().items()
             if v is not None and k not in ("config", "hf", "revision", "params", "name")}
    assumptions: list[str] = []
    warnings: list[str] = []
    if base is None:
        base = ModelSpec(id=ref.name or "custom", name=ref.name or "custom model", source="given in the workload file")
        shape = [k for k in SHAPE_KEYS if k in given]
        missing = [k for k in REQUIRED if k not in given]
        if shape and missing:
            return None, (None, f"incomplete shape (missing {_and(missing)}; expected all of layers, hidden, heads "
                                "and vocab, which have no default, or params alone for a parameter count)")
        if not shape and ref.params is None:
            return None, (None, "incomplete model (expected params, a shape with layers, hidden, heads and "
                                "vocab, or config)")
        if shape:
            given, assumptions, warnings = _complete(given)
    spec = replace(base, **given)
    problem = _moe_problem(given, spec)
    if problem:
        return None, problem
    if ref.name:
        spec = replace(spec, id=ref.name, name=ref.name)
    if ref.params is not None:
        spec = replace(spec, params_override=ref.params)
        if spec.has_architecture:
            note = _params_note(ref.params, parameter_count(spec))
            assumptions.append(note[0])
            if note[1]:
                warnings.append(note[0])
    spec = replace(spec, assumptions=spec.assumptions + tuple(assumptions), warnings=spec.warnings + tuple(warnings))
    return spec, shape_problem(spec)


def _complete(given: dict) -> tuple[dict, list[str], list[str]]:
    """The GPT block's defaults for what a shape leaves out: (fields, assumptions, warnings)."""
    out = dict(given)
    defaulted = []
    if "kv_heads" not in given:
        out["kv_heads"] = given["heads"]
        defaulted.append(f"kv_heads not given: {given['heads']} (= heads: multi-head attention, as in the original "
                         "GPT block)")
    if "ffn_hidden" not in given:
        out["ffn_hidden"] = GPT_FFN_FACTOR * given["hidden"]
        defaulted.append(f"ffn_hidden not given: {out['ffn_hidden']:,} (= 4 × hidden, as in the original GPT block)")
        if "mlp" not in given:
            out["mlp"] = "plain"
            defaulted.append("mlp not given: plain (two matrices, up and down, with GELU, and LayerNorm, as in the "
                             "original GPT block; write mlp: gated for SwiGLU)")
    stated = []
    if out.get("mlp") == "plain":
        # The GPT block's LayerNorm (saves its input, mean and rstd: no eager fp32 copy, estimate/kernels.py);
        # counted without a bias, so the parameter count is the one the mapping always gave.
        out["norm"], out["norm_bias"] = "layernorm", False
        if given.get("mlp") == "plain":
            stated.append("mlp: plain: LayerNorm, as the GPT block (no eager fp32 norm copy counted)")
    if "mlp" not in out:
        stated.append("mlp not given: gated (gate, up and down projections: SwiGLU, as Llama; write mlp: plain "
                      "for a two-matrix GELU MLP)")
    return out, stated + defaulted, defaulted


def _moe_problem(given: dict, spec: ModelSpec) -> Problem | None:
    """Mixture-of-experts keys of a mapping, against the experts the model has (given, or from its config)."""
    extra = [k for k in MOE_KEYS if k in given]
    if extra and spec.experts <= 1:
        return extra[0], (f"{_and(extra)} given without experts (expected experts, the routed experts per layer, "
                          "with them)")
    if "experts" in given and spec.experts > 1 and "experts_per_token" not in given and spec.experts_per_token == 1:
        return "experts", (f"experts given without experts_per_token (got {spec.experts} experts; expected "
                           "experts_per_token, the routed experts a token visits, e.g. 2 for Mixtral)")
    return None


def _params_note(params: int, shape_count: int) -> tuple[str, bool]:
    """The sentence on a given params beside the shape's count, and whether it differs by more than 5%."""
    off = params / shape_count - 1
    text = (f"params {params:,} given: it sets the weights and FLOPs; the shape (layers, hidden, heads, ...) "
            f"counts {shape_count:,}")
    if abs(off) <= PARAMS_TOLERANCE:
        return text, False
    return text + f"; params is {off:+.1%} from it: check the shape, or leave params out to use the shape's count", True


def shape_problem(spec: ModelSpec) -> Problem | None:
    """What makes a mapping's shape not a transformer's (input/shape_rules.py, shared with config.json), if anything."""
    if not spec.has_architecture:
        return None
    fields = {"hidden": spec.hidden, "heads": spec.heads, "kv_heads": spec.kv_head_count, "head_dim": spec.head_dim,
              "experts": spec.experts, "experts_per_token": spec.experts_per_token}
    problems = shape_problems(fields, {})
    if problems:
        return problems[0]
    bound = BOUNDS["params"]
    if spec.params_override is None and spec.params > bound.high:
        return None, f"implausibly large (got {spec.params:.3g} parameters from its shape, expected {bound.reason})"
    return None


def lora_target_problem(targets: list[str], model: ModelSpec) -> str | None:
    """A LoRA target the model does not have, with the names it has (its family's) and the nearest one."""
    valid = module_names(model)
    for name in targets:
        if name != ALL_LINEAR and name not in valid:
            hint = did_you_mean(name, valid)
            if model.has_architecture and is_mla(model) and name in ("k_proj", "v_proj"):
                why, hint = (": multi-head latent attention projects keys and values through kv_a_proj_with_mqa "
                             "and kv_b_proj"), ""
            elif model.has_architecture and model.mlp == "plain" and name == "gate_proj" and not model.family:
                why, hint = ": a GELU MLP has up_proj and down_proj only", ""
            elif model.family in FAMILY_MODULES:
                why = f": {model.family} names its linear modules as transformers' modeling_{model.family}.py does"
                covering = [m for m, parts in FAMILY_MODULES[model.family].items() if m in valid
                            and any(name in part for part in parts)]
                hint = f"; did you mean '{covering[0]}'?" if covering else hint
            else:
                why = ""
            return f"not a module of this model (got {name!r}{why}; expected {', '.join(valid)} or all-linear{hint})"
    return None


def params_only_problem(workload, model: ModelSpec | None) -> str | None:
    """What a parameter count alone cannot size for this workload: the KV cache of inference, and
    LoRA adapters unless a measured pilot (throughput) gives the GPU its memory is taken to fit."""
    if model is None or model.has_architecture:
        return None
    shape = "a catalog id, config, or the shape: layers, hidden, heads and vocab; kv_heads and ffn_hidden have defaults"
    if workload.kind == "inference":
        return f"a parameter count alone cannot size the KV cache of inference (got params only, expected {shape})"
    if workload.method not in ("lora", "qlora"):
        return None
    pilot = workload.throughput
    if pilot is None:
        return (f"a parameter count alone cannot size LoRA adapters (got params only, expected {shape}; or a "
                "measured pilot, throughput: {tokens_per_second, gpu, gpus}, on whose GPUs the memory is taken "
                "to fit)")
    pinned = [(key, got, want) for key, got, want in (("gpu", workload.gpu, pilot.gpu), ("gpus", workload.gpus,
                                                                                         pilot.gpus))
              if got is not None and got != want]
    if pinned:
        key, got, want = pinned[0]
        return (f"LoRA on a parameter count is planned only where its pilot ran (got {key}: {got}, the pilot's "
                f"is {want}; expected {key} as the pilot's, or the model's shape: layers, hidden, heads and vocab)")
    return None
