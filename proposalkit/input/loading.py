"""YAML → validated workloads, with every problem reported as FILE:LINE: field: message.

All problems of a file are collected before giving up. Field paths are
written the way a user reads them: `workloads[2].data.seq_len`.
"""

from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass, field, replace

import yaml
from pydantic import ValidationError

from .. import catalog
from ..errors import InputError, Problem
from ..estimate.shapes import ModelSpec
from .schema import (
    ACCESS_TIERS, KINDS, LORA_TARGETS, MAX_TOKENS, METHODS, OPTIMIZERS, PRECISIONS, TRACKS, UNION_TAGS,
    Data, Lora, ModelShape, Proposal, Storage, Throughput, Workload, WorkloadFields,
    WorkloadFile, describe,
)

Path = tuple  # a path into the document: ("workloads", 0, "data", "seq_len")


@dataclass
class Source:
    """The text of one input file and where each field stands in it."""

    path: str
    lines: dict[Path, int] = field(default_factory=dict)
    from_defaults: set[Path] = field(default_factory=set)

    def line(self, path: Path) -> int | None:
        """The line of `path`, or of its nearest ancestor that has one."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), None)


@dataclass(frozen=True)
class LoadedWorkload:
    """A validated workload with its model resolved and where it came from."""

    spec: Workload
    model: ModelSpec
    path: str
    line: int | None
    index: int


@dataclass(frozen=True)
class LoadedFile:
    path: str
    proposal: Proposal | None
    workloads: tuple[LoadedWorkload, ...]


def field_name(path: Path) -> str:
    """("workloads", 0, "data", "seq_len") → "workloads[0].data.seq_len"."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


# Names researchers bring from other tools, mapped to ours (checked before
# spelling similarity, which cannot tell gpu_count from gpu).
FIELD_ALIASES = {
    "gpu_count": "gpus", "num_gpus": "gpus", "n_gpus": "gpus", "gpus_per_job": "gpus",
    "gpu_type": "gpu", "device": "gpu",
    "seq_length": "seq_len", "max_seq_len": "seq_len", "sequence_length": "seq_len", "max_length": "seq_len",
    "batch_size": "micro_batch", "per_device_train_batch_size": "micro_batch",
    "gradient_checkpointing": "activation_checkpointing",
    "num_train_epochs": "epochs", "dtype": "precision", "torch_dtype": "precision",
    "lora_rank": "lora", "lora_r": "lora", "target_modules": "targets",
    "contingency": "buffer", "overhead": "buffer", "repeats": "variants", "runs": "variants", "seeds": "variants",
    "parameters": "params", "num_parameters": "params", "n_layers": "layers", "num_hidden_layers": "layers",
    "hidden_size": "hidden", "num_attention_heads": "heads", "num_key_value_heads": "kv_heads",
    "intermediate_size": "ffn_hidden", "vocab_size": "vocab", "max_position_embeddings": "max_context",
}


def did_you_mean(word: object, choices) -> str:
    if not isinstance(word, str):
        return ""
    choices = list(choices)
    alias = FIELD_ALIASES.get(word)
    if alias in choices:
        return f"; did you mean '{alias}'?"
    # An id given without its variant ('h100' for h100-80gb or h100-pcie) names
    # every id it starts; a spelling slip gets the closest one.
    starts = sorted(c for c in choices if c.startswith(word) and c[len(word):len(word) + 1] in "-_.")
    if word and 1 <= len(starts) <= 3:
        return "; did you mean " + " or ".join(f"'{c}'" for c in starts) + "?"
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


# ----------------------------------------------------------------- YAML

# libyaml's parser when PyYAML was built with it (about 10× faster), else the pure-Python one.
_Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_Base):
    """Safe loading; dates stay text (a title or date is not a datetime).

    libyaml calls back into Python to resolve every plain scalar's tag, which
    is a third of composing a file; the tag depends on the text alone, and a
    workload file repeats the same keys and values, so resolved tags are
    remembered. No path resolvers are registered, so descending and ascending
    the document need not be tracked.
    """

    _tags: dict[str, str] = {}
    _TAGS_KEPT = 4096

    def resolve(self, kind, value, implicit):
        if kind is yaml.ScalarNode and implicit[0]:
            tag = self._tags.get(value)
            if tag is None:
                tag = super().resolve(kind, value, implicit)
                if len(self._tags) < self._TAGS_KEPT:
                    self._tags[value] = tag
            return tag
        return super().resolve(kind, value, implicit)

    def descend_resolver(self, current_node, current_index):
        pass

    def ascend_resolver(self):
        pass


_Loader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"


class _Builder:
    """Builds the Python value of a composed YAML document and the line of every field.

    One pass over the node tree instead of PyYAML's constructor plus a second
    walk for line numbers: scalars tagged as text (nearly all of them) are
    taken as they are, others (numbers, booleans, null) go through the safe
    constructor, so values follow YAML exactly as yaml.safe_load would. An
    alias yields the value already built for its anchor (as safe_load does),
    so aliases nested in aliases cannot blow a small file up ("billion laughs");
    fields reached through an alias keep the line of the anchor's text.
    Merge keys ('<<: *base', '<<: [*a, *b]') are applied as safe_load applies
    them, without changing the nodes (an anchor may sit inside a merge).
    """

    def __init__(self, loader, source: Source, problems: list[Problem]):
        self.loader, self.source, self.problems = loader, source, problems
        self.active: set[int] = set()   # collection nodes on the current path (recursive aliases)
        self.built: dict[int, object] = {}   # collection node → its value (aliases reuse it)

    def value(self, node, path: Path):
        if isinstance(node, yaml.ScalarNode):
            return node.value if node.tag == _STR_TAG else self.loader.construct_object(node, deep=True)
        if id(node) in self.built:
            return self.built[id(node)]
        if id(node) in self.active:
            self.problems.append(Problem(self.source.path, node.start_mark.line + 1, field_name(path),
                                         "an alias refers to a value that contains it (recursive alias)"))
            return None
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                value = self._sequence(node, path)
            elif isinstance(node, yaml.MappingNode):
                value = self._mapping(node, path)
            else:
                value = self.loader.construct_object(node, deep=True)
            self.built[id(node)] = value
            return value
        finally:
            self.active.discard(id(node))

    def _sequence(self, node, path: Path) -> list:
        items = []
        lines = self.source.lines
        for index, item in enumerate(node.value):
            at = path + (index,)
            lines[at] = item.start_mark.line + 1
            items.append(self.value(item, at))
        return items

    def _mapping(self, node, path: Path) -> dict:
        mapping: dict = {}
        explicit = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                # The first mapping named in '<<: [*a, *b]' wins over the later ones;
                # explicit keys win over all of them (YAML merge key, as safe_load).
                sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                merged: dict = {}
                for source_node in reversed(sources):
                    if not isinstance(source_node, yaml.MappingNode):
                        raise InputError([Problem(self.source.path, source_node.start_mark.line + 1,
                                                  field_name(path), "'<<' merges a mapping or a list of mappings "
                                                  f"(got {source_node.id})")])
                    source_value = self.value(source_node, path)
                    if isinstance(source_value, dict):      # None: a recursive alias, reported
                        merged.update(source_value)
                for key in merged:
                    self.source.lines.setdefault(path + (key,), key_node.start_mark.line + 1)
                mapping.update(merged)
            else:
                explicit.append((key_node, value_node))
        seen: dict[object, int] = {}
        lines = self.source.lines
        for key_node, value_node in explicit:
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode):
                self.problems.append(Problem(self.source.path, line, field_name(path),
                                             "a key must be a plain name, not a list or mapping"))
                continue
            key = key_node.value if key_node.tag == _STR_TAG else self.loader.construct_object(key_node)
            if not isinstance(key, str):
                # YAML reads `1:`, `null:` or `yes:` as a number, null or boolean; no field is named so.
                self.problems.append(Problem(self.source.path, line, field_name(path),
                                             f"a key must be a field name (got {describe(key)}; quote it if "
                                             "it is meant as text)"))
                continue
            if key in seen:
                self.problems.append(Problem(self.source.path, line, field_name(path + (key,)),
                                             f"duplicate key (first given on line {seen[key]})"))
                continue
            seen[key] = line
            at = path + (key,)
            lines[at] = line
            mapping[key] = self.value(value_node, at)
        return mapping


def _parse_yaml(path: str, raw: bytes) -> tuple[object, Source]:
    source = Source(path)
    if b"\0" in raw:
        raise InputError([Problem(path, None, "", "this is a binary file, not YAML text")])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise InputError([Problem(path, line, "", f"not UTF-8 text (byte 0x{raw[error.start]:02x} at offset "
                                                 f"{error.start}); save the file as UTF-8")]) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise InputError([Problem(path, None, "", "the file is empty (expected a mapping with a "
                                                      "'workloads' list)")])
        problems: list[Problem] = []
        source.lines[()] = node.start_mark.line + 1
        data = _Builder(loader, source, problems).value(node, ())
        if problems:
            raise InputError(problems)
    except RecursionError:
        raise InputError([Problem(path, None, "", "values nested too deeply (more than a few hundred levels)")]) \
            from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark else None
        what = error.problem or "malformed YAML"
        if error.context:
            what = f"{error.context}, {what}"
        raise InputError([Problem(path, line, "", f"malformed YAML: {what}")]) from None
    except yaml.YAMLError as error:
        raise InputError([Problem(path, None, "", f"malformed YAML: {error}")]) from None
    finally:
        loader.dispose()
    return data, source


# ----------------------------------------------------------------- errors

_FIELDS_BY_PARENT = {
    "": WorkloadFile.model_fields,
    "proposal": Proposal.model_fields,
    "defaults": WorkloadFields.model_fields,
    "workload": Workload.model_fields,
    "data": Data.model_fields,
    "throughput": Throughput.model_fields,
    "lora": Lora.model_fields,
    "model": ModelShape.model_fields,
    "storage": Storage.model_fields,
}

_CHOICES = {"kind": KINDS, "method": METHODS, "precision": PRECISIONS, "optimizer": OPTIMIZERS,
            "track": TRACKS, "access_tier": ACCESS_TIERS, "targets": LORA_TARGETS, "mlp": ("swiglu", "gelu")}


def _parent_kind(path: Path) -> str:
    parent = path[:-1]
    if not parent:
        return ""
    if parent[-1] == "shape" or (parent and parent[-1] == "model"):
        return "model"
    if isinstance(parent[-1], int) and parent[0] == "workloads" and len(parent) == 2:
        return "workload"
    return str(parent[-1])


def _nice_list(items) -> str:
    items = [str(i) for i in items]
    if not items:
        return "(none)"
    return ", ".join(items[:-1]) + " or " + items[-1] if len(items) > 1 else items[0]


def _translate(error: dict, source: Source) -> Problem:
    path = tuple(p for p in error["loc"] if not (isinstance(p, str) and p in UNION_TAGS))
    kind = error["type"]
    value = error.get("input")
    name = path[-1] if path else ""
    if kind == "extra_forbidden":
        known = _FIELDS_BY_PARENT.get(_parent_kind(path), {})
        message = f"unknown field '{name}'" + did_you_mean(name, known)
        if not did_you_mean(name, known) and known:
            message += f" (expected one of: {', '.join(known)})"
    elif kind == "literal_error":
        label = path[-2] if isinstance(name, int) else name
        choices = _CHOICES.get(str(label), ())
        message = (f"unknown {label} (got {describe(value)}, expected {_nice_list(choices)}"
                   f"{did_you_mean(value, choices)})")
    elif kind == "missing":
        message = "required field is missing"
    elif kind == "string_pattern_mismatch":
        message = (f"invalid name (got {describe(value)}, expected lower-case letters, digits, '-' and '_', "
                   "starting with a letter or digit)")
    elif kind in ("model_type", "dict_type", "model_attributes_type"):
        message = f"not a mapping (got {describe(value)}, expected a mapping of fields)"
    elif kind == "list_type":
        message = f"not a list (got {describe(value)}, expected a list)"
    elif kind == "too_short":
        message = "empty list (expected at least one workload)"
    elif kind == "pk":
        message = error["msg"]
    elif kind == "string_type":
        message = f"not text (got {describe(value)}, expected text)"
    else:
        message = error["msg"]
    suffix = " (set in defaults)" if path in source.from_defaults else ""
    return Problem(source.path, source.line(path), field_name(path), message + suffix)


# ----------------------------------------------------------------- loading

def _merge_defaults(data: dict, source: Source) -> dict:
    """Copy each `defaults` field into every workload that does not set it."""
    defaults = data.get("defaults")
    workloads = data.get("workloads")
    if not isinstance(defaults, dict) or not isinstance(workloads, list):
        return data
    merged = []
    for index, workload in enumerate(workloads):
        if isinstance(workload, dict):
            workload = dict(workload)
            for key, value in defaults.items():
                if key not in workload and key in Workload.model_fields and key != "name":
                    workload[key] = value
                    _copy_lines(source, ("defaults", key), ("workloads", index, key))
        merged.append(workload)
    return {**data, "workloads": merged}


def _copy_lines(source: Source, src: Path, dst: Path) -> None:
    for path, line in list(source.lines.items()):
        if path[: len(src)] == src:
            moved = dst + path[len(src):]
            source.lines[moved] = line
            source.from_defaults.add(moved)


def _read_config(path: str, base_dir: str, origin: Source, at: Path) -> tuple[ModelSpec | None, list[Problem]]:
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


def _unknown_model(got: str, known) -> str:
    return (f"unknown model (got {got!r}, expected a catalog id{did_you_mean(got, known)} — "
            "see 'proposalkit catalog models', or give a mapping with params or config)")


def _unknown_gpu(got: str, known) -> str:
    return f"unknown GPU (got {got!r}, expected a catalog id{did_you_mean(got, known)} — see 'proposalkit catalog gpus')"


def _unknown_resource(got: str, known) -> str:
    return (f"unknown resource (got {got!r}, expected a catalog id{did_you_mean(got, known)}"
            " — see 'proposalkit catalog resources')")


def _resolve_model(workload: Workload, index: int, source: Source, base_dir: str) -> tuple[ModelSpec | None, list[Problem]]:
    at = ("workloads", index, "model")
    ref = workload.model
    if isinstance(ref, str):
        known = catalog.models()
        if ref in known:
            return known[ref], []
        return None, [Problem(source.path, source.line(at), field_name(at), _unknown_model(ref, known))]
    if ref.config is not None:
        spec, problems = _read_config(ref.config, base_dir, source, at + ("config",))
        if spec is None:
            return None, problems
    else:
        spec = ModelSpec(id=ref.name or "custom", name=ref.name or "custom model", source="given in the workload file")
    overrides = {k: v for k, v in ref.model_dump().items()
                 if v is not None and k not in ("config", "params", "name")}
    spec = replace(spec, **overrides)
    if ref.name:
        spec = replace(spec, id=ref.name, name=ref.name)
    if ref.params is not None:
        spec = replace(spec, params_override=ref.params)
    if not spec.has_architecture and spec.params_override is None:
        return None, [Problem(source.path, source.line(at), field_name(at),
                              "incomplete model (expected params, or all of layers, hidden, heads, "
                              "ffn_hidden and vocab, or config)")]
    return spec, []


def _check(workload: Workload, index: int, source: Source, resource_ids) -> list[Problem]:
    """Rules that span fields: catalog ids, kind/method, tokens."""
    problems: list[Problem] = []

    def add(path: Path, message: str) -> None:
        full = ("workloads", index) + path
        problems.append(Problem(source.path, source.line(full), field_name(full), message))

    gpus = catalog.gpus()
    if workload.gpu is not None and workload.gpu not in gpus:
        add(("gpu",), _unknown_gpu(workload.gpu, gpus))
    if workload.throughput is not None and workload.throughput.gpu not in gpus:
        add(("throughput", "gpu"), _unknown_gpu(workload.throughput.gpu, gpus))
    if workload.resource is not None and resource_ids is not None and workload.resource not in resource_ids:
        add(("resource",), _unknown_resource(workload.resource, resource_ids))
    if workload.kind == "inference":
        for name in ("method", "optimizer", "zero_stage", "lora", "data"):
            if getattr(workload, name) is not None:
                add((name,), f"not used by inference (got {name}, expected it only on finetune or pretrain)")
        if workload.hours is None and workload.tokens is None:
            add(("hours",), "required for inference (expected hours a service is kept up, or tokens to generate)")
        if workload.context is None:
            add(("context",), "required for inference (expected tokens per sequence, e.g. 8k)")
    else:
        if workload.kind == "pretrain" and workload.method not in (None, "full"):
            add(("method",), f"pretraining trains every weight (got {workload.method!r}, expected 'full' or nothing)")
        if workload.kind == "finetune" and workload.method is None:
            add(("method",), "required for finetune (expected full, lora or qlora)")
        if workload.tokens is None and workload.data is None:
            add(("tokens",), "required (expected tokens, e.g. 200M, or data: {samples, seq_len, epochs})")
        if workload.tokens is not None and workload.data is not None:
            add(("data",), "given twice (expected tokens or data, not both)")
        if workload.data is not None:
            d = workload.data
            tokens = d.samples * d.seq_len * d.epochs
            if tokens > MAX_TOKENS:
                add(("data",), f"implausibly large (got {d.samples:,} samples × {d.seq_len:,} tokens × {d.epochs:g} "
                               f"epochs = {tokens:.3g} tokens, expected at most 10^15 tokens, 64× the 15.6T "
                               "Llama 3 was pretrained on)")
        if workload.hours is not None:
            add(("hours",), "only for an inference service (the training runtime is computed from the tokens)")
        if workload.lora is not None and workload.method not in ("lora", "qlora"):
            add(("lora",), f"LoRA settings on a {workload.method or 'full'} run (expected method lora or qlora)")
        if workload.method == "qlora" and workload.precision not in (None, "bf16", "fp16"):
            add(("precision",), f"QLoRA computes in 16-bit over a 4-bit base (got {workload.precision!r}, "
                                "expected bf16 or fp16)")
        if workload.precision in ("fp8", "int8", "int4") and workload.method != "qlora":
            add(("precision",), f"training precision {workload.precision!r} is not modelled "
                                "(expected fp32, bf16 or fp16; use method qlora for a 4-bit base)")
    if workload.throughput is not None and workload.kind == "inference" and workload.hours is not None:
        add(("throughput",), "an inference service is costed by hours; throughput applies to a token count")
    return problems


def _raw_ids(item: dict, index: int, source: Source, resource_ids, invalid: set[Path]) -> list[Problem]:
    """Catalog ids of a workload that failed validation, checked as they were written.

    So a file's unknown ids are reported with its other errors at once, not
    only after those are fixed. Fields that have an error of their own are skipped.
    """
    problems: list[Problem] = []
    throughput = item.get("throughput")
    checks = [(("model",), item.get("model"), catalog.models(), _unknown_model),
              (("gpu",), item.get("gpu"), catalog.gpus(), _unknown_gpu),
              (("throughput", "gpu"), throughput.get("gpu") if isinstance(throughput, dict) else None,
               catalog.gpus(), _unknown_gpu)]
    if resource_ids is not None:
        checks.append((("resource",), item.get("resource"), resource_ids, _unknown_resource))
    for sub, got, known, message in checks:
        at = ("workloads", index) + sub
        if isinstance(got, str) and got not in known and at not in invalid:
            problems.append(Problem(source.path, source.line(at), field_name(at), message(got, known)))
    return problems


def _valid(model_type, value):
    """`value` validated as `model_type`, or None if it is not valid (its errors are reported elsewhere)."""
    try:
        return model_type.model_validate(value)
    except ValidationError:
        return None


def known_resource_ids() -> set[str]:
    from ..planning import resources

    return set(resources.known_ids())


def load_file(path: str, resource_ids=None, *, raw: bytes | None = None, base_dir: str | None = None) -> LoadedFile:
    """Read, validate and resolve one workload file; raise InputError with every problem.

    `raw` gives the file's bytes when they do not come from `path` (a version
    read from git); `path` then only names them in messages, and `config:`
    paths resolve against `base_dir`. `resource_ids` defaults to the catalog's.
    """
    if resource_ids is None:
        resource_ids = known_resource_ids()
    if raw is None:
        try:
            with open(path, "rb") as handle:
                raw = handle.read()
        except OSError as error:
            raise InputError([Problem(path, None, "", f"cannot read the file ({error.strerror})")]) from None
    data, source = _parse_yaml(path, raw)
    if not isinstance(data, dict):
        raise InputError([Problem(path, source.line(()), "",
                                  f"expected a mapping with a 'workloads' list at the top level, got {describe(data)}")])
    data = _merge_defaults(data, source)
    problems: list[Problem] = []
    try:
        document = WorkloadFile.model_validate(data)
        proposal, workloads = document.proposal, list(enumerate(document.workloads))
    except ValidationError as error:
        # A bad value in `defaults` is reported once, at defaults, not again for every workload.
        located = [(tuple(p for p in e["loc"] if not (isinstance(p, str) and p in UNION_TAGS)), e)
                   for e in error.errors(include_url=False)]
        problems = [_translate(e, source) for loc, e in located if loc not in source.from_defaults]
        # The rest of the file is still checked, so every problem is reported at once:
        # the parts that validate on their own get the checks below; the catalog ids of
        # the workloads that do not are checked as written.
        invalid = {loc for loc, _ in located}
        proposal = _valid(Proposal, data["proposal"]) if isinstance(data.get("proposal"), dict) else None
        workloads = []
        items = data.get("workloads")
        for index, item in enumerate(items if isinstance(items, list) else []):
            workload = _valid(Workload, item)
            if workload is not None:
                workloads.append((index, workload))
            elif isinstance(item, dict):
                problems += _raw_ids(item, index, source, resource_ids, invalid)

    if proposal and proposal.resource is not None and resource_ids is not None \
            and proposal.resource not in resource_ids:
        problems.append(Problem(path, source.line(("proposal", "resource")), "proposal.resource",
                                _unknown_resource(proposal.resource, resource_ids)))
    seen: dict[str, int] = {}
    loaded = []
    base_dir = base_dir if base_dir is not None else os.path.dirname(os.path.abspath(path))
    for index, workload in workloads:
        at = ("workloads", index, "name")
        if workload.name in seen:
            problems.append(Problem(path, source.line(at), field_name(at),
                                    f"duplicate name (got {workload.name!r}, first used by workloads[{seen[workload.name]}])"))
        seen.setdefault(workload.name, index)
        model, model_problems = _resolve_model(workload, index, source, base_dir)
        problems += model_problems
        if model is not None and not model.has_architecture:
            needs = ("the KV cache of inference" if workload.kind == "inference" else
                     "LoRA adapters" if workload.method in ("lora", "qlora") else None)
            if needs:
                at = ("workloads", index, "model")
                problems.append(Problem(path, source.line(at), field_name(at),
                                        f"a parameter count alone cannot size {needs} (got params only, expected "
                                        "a catalog id, config, or layers, hidden, heads, kv_heads, ffn_hidden "
                                        "and vocab)"))
        problems += _check(workload, index, source, resource_ids)
        if model is not None:
            loaded.append(LoadedWorkload(workload, model, path, source.line(("workloads", index)), index))
    if problems:
        problems.sort(key=lambda p: (p.line or 0))
        raise InputError(_unique(problems))
    return LoadedFile(path, proposal, tuple(loaded))


def _unique(problems: list[Problem]) -> list[Problem]:
    out, seen = [], set()
    for p in problems:
        if (p.line, p.field, p.message) not in seen:
            seen.add((p.line, p.field, p.message))
            out.append(p)
    return out


def load_files(paths: list[str], resource_ids=None) -> list[LoadedFile]:
    """Load every file; all files' problems together, then raise. Names unique across files."""
    if resource_ids is None:
        resource_ids = known_resource_ids()
    loaded, problems = [], []
    for path in paths:
        try:
            loaded.append(load_file(path, resource_ids))
        except InputError as error:
            problems += error.problems
    if not problems:
        first: dict[str, LoadedWorkload] = {}
        for file in loaded:
            for w in file.workloads:
                if w.spec.name in first:
                    other = first[w.spec.name]
                    problems.append(Problem(w.path, w.line, f"workloads[{w.index}].name",
                                            f"duplicate name (got {w.spec.name!r}, also in {other.path}:{other.line})"))
                first.setdefault(w.spec.name, w)
    if problems:
        raise InputError(problems)
    return loaded
