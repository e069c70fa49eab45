"""A model given as a mapping (CONTRACT.md "Model as a mapping") → ModelSpec, and the shape rules.

A partial shape is completed the way the original GPT block is (Radford et
al. 2018/2019: multi-head attention, an MLP of 4 × hidden with GELU, two
matrices): kv_heads = heads, ffn_hidden = 4 × hidden, mlp: plain; each
default is stated as a record (kind shape-default, worded in render/model_words.py)
and warned. layers, hidden, heads and vocab have no default. A mapping with only
`params` gets a whole shape (assumed_shape: its family's nearest catalog model,
else the nearest standard decoder of catalog/standard_shapes.py), every
dimension stated as a record (shape-assumed) and a warning; `params` keeps
setting the weights and FLOPs.
The consistency rules (shape_problem) hold for mappings and config.json alike.
"""

from __future__ import annotations

from dataclasses import dataclass, fields as dataclass_fields, replace

from .. import catalog
from ..catalog.references import REFERENCES
from ..catalog.standard_shapes import (
    family_models, known_families, name_family, nearest_model, nearest_standard, normalized,
)
from ..notes import Note, note

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
# What an assumed shape lends: the architecture fields of ModelSpec (catalog/shapes.py) from `layers` up to its
# `warnings`, the MoE and latent-attention fields, and `family` (the config model_type, which names the linear
# modules); not the name, source, Hub id, context or counts of the model it is lent by.
_LENT = tuple(f.name for f in dataclass_fields(ModelSpec)
              if f.name not in ("id", "name", "max_context", "warnings", "records", "params_override",
                                "published_params", "source", "hf_id", "weight_format", "vision_params"))


def _and(names) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


Problem = tuple[str | None, str]     # (the mapping's key it is about, or None for the whole mapping; message)


def from_mapping(ref: ModelShape, base: ModelSpec | None) -> tuple[ModelSpec | None, Problem | None]:
    """The mapping's model (base: the one its `config:` gave, if any) → (spec, None) or (None, problem)."""
    given = {k: v for k, v in ref.model_dump().items()
             if v is not None and k not in ("config", "hf", "revision", "params", "name", "family")}
    records: list[Note] = []
    warnings: list[str] = []
    assumed = None
    shape = [k for k in SHAPE_KEYS if k in given]
    if ref.family is not None and (base is not None or shape or ref.params is None):
        return None, ("family", "family only lends a shape to params alone (got it beside "
                                + ("a config" if base is not None else "a shape" if shape else "no params")
                                + "; expected params and family, without layers, hidden, heads or vocab)")
    if base is None:
        base = ModelSpec(id=ref.name or "custom", name=ref.name or "custom model", source="given in the workload file")
        missing = [k for k in REQUIRED if k not in given]
        if shape and missing:
            return None, (None, f"incomplete shape (missing {_and(missing)}; expected all of layers, hidden, heads "
                                "and vocab, which have no default, or params alone, whose shape is assumed)")
        if not shape and ref.params is None:
            return None, (None, "incomplete model (expected params, a shape with layers, hidden, heads and "
                                "vocab, or config)")
        if shape:
            given, records, warnings = _complete(given)
        else:
            assumed = assumed_shape(ref)
            if isinstance(assumed, tuple):
                return None, assumed
            base = replace(base, **assumed.fields)
    spec = replace(base, **given)
    problem = _moe_problem(given, spec)
    if problem:
        return None, problem
    if ref.name:
        spec = replace(spec, id=ref.name, name=ref.name)
    if ref.params is not None:
        spec = replace(spec, params_override=ref.params)
        if assumed is not None:
            records.append(assumed.record(spec))
            warnings.append(assumed.warning(spec))
        elif spec.has_architecture:
            given_note = note("params-given", params=ref.params, shape_params=parameter_count(spec),
                              tolerance=PARAMS_TOLERANCE)
            records.append(given_note)
            if _params_off(given_note):
                warnings.append(_params_sentence(given_note))
    spec = replace(spec, records=spec.records + tuple(records), warnings=spec.warnings + tuple(warnings))
    return spec, shape_problem(spec)


@dataclass(frozen=True)
class AssumedShape:
    """The shape lent to params alone (catalog/standard_shapes.py): from a catalog model of the family, or a
    row of a published table of standard decoders."""

    fields: dict            # ModelSpec fields: layers, hidden, heads, kv_heads, head_dim, ffn_hidden, vocab, ...
    origin: str             # the catalog id or the table row's name
    origin_params: int      # its own parameter count
    basis: str              # "catalog" (family) or "table"
    sources: tuple[str, ...] = ()   # reference ids of the table
    family: str = ""

    @property
    def table(self) -> str:
        """Where the table row is published ('Biderman et al. 2023, Table 1'; '' for a catalog model)."""
        return "".join(f"{REFERENCES[s].key}, Table 1" for s in self.sources)

    def values(self, spec: ModelSpec) -> dict:
        return dict(params=spec.params, basis=self.basis, family=self.family, origin=self.origin,
                    origin_params=self.origin_params, table=self.table, layers=spec.layers, hidden=spec.hidden, heads=spec.heads,
                    kv_heads=spec.kv_head_count, head_dim=spec.head_size, ffn_hidden=spec.ffn_hidden, mlp=spec.mlp,
                    vocab=spec.vocab)

    def record(self, spec: ModelSpec) -> Note:
        """The assumption as a record (render/model_words.py words it, kind shape-assumed)."""
        return note("shape-assumed", self.sources, **self.values(spec))

    def warning(self, spec: ModelSpec) -> str:
        """Every dimension assumed, in the plan's warnings (and the report's caveats)."""
        v = self.values(spec)
        where = (f"{self.family}'s nearest catalog model, {self.origin}" if self.basis == "catalog" else
                 f"the nearest standard decoder, {self.origin} ({self.table})")
        return (f"shape assumed from params alone: layers {v['layers']}, hidden {v['hidden']}, heads {v['heads']}, "
                f"kv_heads {v['kv_heads']}, head_dim {v['head_dim']}, ffn_hidden {v['ffn_hidden']} ({v['mlp']} MLP), "
                f"vocab {v['vocab']:,}, those of {where}; the activations, attention FLOPs and KV cache follow "
                "it; give the model's layers, hidden, heads and vocab (or config) to plan its own")


def assumed_shape(ref: ModelShape) -> AssumedShape | Problem:
    """params alone: the family's nearest catalog model (`family`, else the family `name` starts with), else
    the nearest standard decoder (catalog/standard_shapes.py)."""
    models = catalog.models()
    family = ref.family or (name_family(models, ref.name) if ref.name else None)
    if family is not None:
        rows = family_models(models, family)
        if not rows:
            known = known_families(models)
            hint = did_you_mean(normalized(family), known)
            return "family", (f"no catalog model of this family (got {family!r}; expected one of "
                              f"{', '.join(known)}{hint})")
        m = nearest_model(rows, ref.params)
        fields = {k: getattr(m, k) for k in _LENT}
        return AssumedShape(fields, m.id, m.params, "catalog", family=normalized(family))
    row = nearest_standard(ref.params)
    fields = {k: getattr(row.spec, k) for k in _LENT}
    return AssumedShape(fields, row.name, parameter_count(row.spec), "table", sources=(row.source,))


# Why the GPT block's defaults are what they are, by field (and by mlp value): stated in the plan beside the value.
GPT_BLOCK_DEFAULTS = {
    "kv_heads": "= heads: multi-head attention, as in the original GPT block",
    "ffn_hidden": f"= {GPT_FFN_FACTOR} × hidden, as in the original GPT block",
    "plain": "two matrices, up and down, with GELU, and LayerNorm, as in the original GPT block",
    "gated": "gate, up and down projections: SwiGLU, as Llama",
}
# What the author writes for the other block: the plan's warning (stderr) says it, the documents do not.
MLP_ALTERNATIVE = {"plain": "mlp: gated would be SwiGLU", "gated": "mlp: plain would be a two-matrix GELU MLP"}


def _default(field: str, value) -> Note:
    """A field the shape left out, the value it takes and why (kind shape-default)."""
    return note("shape-default", field=field, value=value, why=GPT_BLOCK_DEFAULTS[value if field == "mlp" else field])


def _default_sentence(n: Note) -> str:
    """A shape-default record as the plan's warning says it (render/model_words.py states the note the same way;
    warnings are sentences until they are records)."""
    value = f"{n['value']:,}" if n["field"] == "ffn_hidden" else n["value"]
    other = f"; {MLP_ALTERNATIVE[n['value']]}" if n["field"] == "mlp" else ""
    return f"{n['field']} not given: {value} ({n['why']}{other})"


def _complete(given: dict) -> tuple[dict, list[Note], list[str]]:
    """The GPT block's defaults for what a shape leaves out: (fields, the records stating them, warnings)."""
    out = dict(given)
    defaulted = []
    if "kv_heads" not in given:
        out["kv_heads"] = given["heads"]
        defaulted.append(_default("kv_heads", out["kv_heads"]))
    if "ffn_hidden" not in given:
        out["ffn_hidden"] = GPT_FFN_FACTOR * given["hidden"]
        defaulted.append(_default("ffn_hidden", out["ffn_hidden"]))
        if "mlp" not in given:
            out["mlp"] = "plain"
            defaulted.append(_default("mlp", "plain"))
    stated = []
    if out.get("mlp") == "plain":
        # The GPT block's LayerNorm (saves its input, mean and rstd: no eager fp32 copy, estimate/kernels.py);
        # counted without a bias, so the parameter count is the one the mapping always gave.
        out["norm"], out["norm_bias"] = "layernorm", False
        if given.get("mlp") == "plain":
            stated.append(note("plain-mlp-layernorm"))
    if "mlp" not in out:
        stated.append(_default("mlp", "gated"))
    return out, stated + defaulted, [_default_sentence(n) for n in defaulted]


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


def _params_off(n: Note) -> bool:
    """Whether a given params (a params-given record) is further than its tolerance from the shape's count."""
    return abs(n["params"] / n["shape_params"] - 1) > n["tolerance"]


def _params_sentence(n: Note) -> str:
    """A params-given record as the plan's warning says it when params is off the shape's count (render/model_words.py
    states the note the same way; warnings are sentences until they are records)."""
    return (f"params {n['params']:,} given: it sets the weights and FLOPs; the shape (layers, hidden, heads, ...) "
            f"counts {n['shape_params']:,}; params is {n['params'] / n['shape_params'] - 1:+.1%} from it")


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
