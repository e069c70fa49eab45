"""Messages about input: field names as a user reads them, near-match suggestions, pydantic errors translated.

Field paths are written the way a user reads them: `workloads[2].data.seq_len`.
"""

from __future__ import annotations

import difflib
import re

from ..errors import Problem
from ..options import INFERENCE_ATTENTION, LOSSES
from .frameworks import FRAMEWORKS
from .schema import (
    ACCESS_TIERS, KINDS, LORA_TARGETS, METHODS, OPTIMIZERS, PRECISIONS, TRACKS, UNION_TAGS,
    Data, Lora, ModelShape, Offload, Proposal, Storage, Throughput, Workload, WorkloadFields, WorkloadFile,
)
from .values import describe
from .source import Path, Source, field_name

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
    # vLLM benchmark and OpenAI API names (benchmarks/benchmark_serving.py: --num-prompts, --request-rate,
    # --random-input-len, --random-output-len; the API's max_tokens).
    "num_prompts": "requests", "prompts": "requests", "num_requests": "requests", "qps": "request_rate",
    "input_len": "input_tokens", "prompt_tokens": "input_tokens", "output_len": "output_tokens",
    "max_tokens": "output_tokens", "max_new_tokens": "output_tokens", "ttft": "ttft_ms", "tpot": "tpot_ms",
    # `framework` values as the projects spell their own names (package names, repositories).
    "tensorrt": "trt-llm", "tensorrt-llm": "trt-llm", "tensorrt_llm": "trt-llm", "trtllm": "trt-llm",
    "megatron-lm": "megatron", "megatron-core": "megatron", "llamafactory": "llama-factory",
    "llama_factory": "llama-factory", "trl": "hf-trainer", "peft": "hf-trainer",
}


def did_you_mean(word: object, choices, aliases: dict[str, str] | None = None) -> str:
    """'; did you mean ...?' naming the choices `word` was probably meant as, or ''.

    `aliases` maps other spellings of catalog ids (lower case, '-' for spaces: catalog_aliases) to the id.
    """
    if not isinstance(word, str):
        return ""
    choices = list(choices)
    lower = word.lower()
    if word != lower and lower in choices:          # 'vLLM', 'H100-80GB'
        return f"; did you mean '{lower}'?"
    alias = FIELD_ALIASES.get(word, FIELD_ALIASES.get(lower))
    if alias in choices:
        return f"; did you mean '{alias}'?"
    if aliases is not None:
        lower = catalog_spelling(word)
        if lower in choices and lower != word:      # 'Llama 3.1 8B', 'A100_80GB'
            return f"; did you mean '{lower}'?"
        if lower in aliases:                        # a row's name: 'NVIDIA A100 80GB SXM4', 'A100 80GB SXM4'
            return f"; did you mean '{aliases[lower]}'?"
        # A tuned variant's Hub name ('Llama-3.1-8B-Instruct', 'gemma-3-1b-it'): the base model's shape.
        base = re.sub(r"-(instruct|it|chat|hf|base)$", "", lower)
        if base != lower and (base in choices or base in aliases):
            return f"; did you mean '{aliases.get(base, base)}' (the same shape)?"
    # An id given without its variant ('h100' for h100-80gb or h100-pcie) names
    # every id it starts; a spelling slip gets the closest one.
    starts = sorted(c for c in choices if c.startswith(lower) and c[len(lower):len(lower) + 1] in "-_.")
    if lower and 1 <= len(starts) <= 3:
        return "; did you mean " + " or ".join(f"'{c}'" for c in starts) + "?"
    if lower and len(starts) > 3:
        return (f"; did you mean one of the {len(starts)} ids that start with '{lower}' ("
                + ", ".join(f"'{c}'" for c in starts[:3]) + ", ...)?")
    spellings = {c: c for c in choices} | (aliases or {})
    close = difflib.get_close_matches(lower, spellings, n=1, cutoff=0.6)
    return f"; did you mean '{spellings[close[0]]}'?" if close else ""


def catalog_spelling(word: str) -> str:
    """A catalog id or name as the catalog spells ids: lower case, '-' for spaces and '_'."""
    return "-".join(word.lower().replace("_", " ").split())


def catalog_aliases(rows) -> dict[str, str]:
    """Other spellings of catalog rows' ids → the id: each row's name, with and without its vendor and its
    parenthesised remark ('NVIDIA H100 80GB SXM5', 'H100 80GB SXM5'; 'Gemma 3 1B (text only)', 'Gemma 3 1B'),
    and its Hugging Face Hub id with and without the organization. A spelling two rows share is left out."""
    seen: dict[str, set[str]] = {}
    for row in rows:
        names = []
        for name in (getattr(row, "name", ""), getattr(row, "hf_id", None) or ""):
            names += [name, name.split("(")[0], name.rsplit("/", 1)[-1]]
        vendor = getattr(row, "vendor", "")
        names += [n[len(vendor):] for n in names if vendor and n.startswith(vendor + " ")]
        for name in names:
            spelt = catalog_spelling(name)
            if spelt and spelt != row.id:
                seen.setdefault(spelt, set()).add(row.id)
    return {spelt: ids.pop() for spelt, ids in seen.items() if len(ids) == 1}


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
    "offload": Offload.model_fields,
}

_CHOICES = {"kind": KINDS, "method": METHODS, "precision": PRECISIONS, "optimizer": OPTIMIZERS,
            "track": TRACKS, "access_tier": ACCESS_TIERS, "targets": LORA_TARGETS, "mlp": ("gated", "plain"),
            "loss": LOSSES, "framework": FRAMEWORKS,
            "attention": INFERENCE_ATTENTION}


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


def translate(error: dict, source: Source) -> Problem:
    kind = error["type"]
    loc = tuple(error["loc"])
    # pydantic puts a union's tag ("id", "shape") into the location; drop it, but not the
    # unknown key itself that an extra_forbidden error ends with (a user's own `id:`).
    keep_last = kind == "extra_forbidden" and loc
    path = tuple(p for p in (loc[:-1] if keep_last else loc) if not (isinstance(p, str) and p in UNION_TAGS))
    path += loc[-1:] if keep_last else ()
    value = error.get("input")
    name = path[-1] if path else ""
    if kind == "extra_forbidden":
        known = _FIELDS_BY_PARENT.get(_parent_kind(path), {})
        message = f"unknown field '{name}'" + did_you_mean(name, known)
        if not did_you_mean(name, known) and known:
            message += f" (expected one of: {', '.join(known)})"
    elif kind == "literal_error":
        label = path[-2] if isinstance(name, int) else name
        # offload.optimizer and offload.params name a device, not an optimizer
        choices = ("cpu",) if len(path) > 1 and path[-2] == "offload" else _CHOICES.get(str(label), ())
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



def unknown_model(got: str, known) -> str:
    return (f"unknown model (got {got!r}, expected a catalog id{did_you_mean(got, known, _aliases(known))} — "
            "see 'proposalkit catalog models', or give a mapping with params or config)")


def unknown_gpu(got: str, known) -> str:
    return (f"unknown GPU (got {got!r}, expected a catalog id{did_you_mean(got, known, _aliases(known))} — see "
            "'proposalkit catalog gpus')")


def _aliases(known) -> dict[str, str]:
    """catalog_aliases of a catalog's rows (id → row), kept for the run; {} for ids alone."""
    rows = known.values() if isinstance(known, dict) else ()
    key = tuple(known) if rows else ()
    if key not in _ALIASES:
        _ALIASES[key] = catalog_aliases(rows)
    return _ALIASES[key]


_ALIASES: dict[tuple, dict[str, str]] = {}


def unknown_resource(got: str, known) -> str:
    return (f"unknown resource (got {got!r}, expected a catalog id{did_you_mean(got, known)}"
            " — see 'proposalkit catalog resources')")
