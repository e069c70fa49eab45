"""Built-in catalogs (GPUs, models), read lazily from the YAML files beside this module.

Each row carries its source. Nothing is read at import time. Beside this module, the records and
readers of what the tool knows: shapes.py (ModelSpec, parameter counts), vision.py (vision towers),
modules.py (linear module names, LoRA targets), engines.py (serving engines), resources.py
(resources, tracks, ACCESS tiers).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields
from importlib import resources as _resources

from .shapes import ModelSpec
from ..units import parse_count, parse_memory


@dataclass(frozen=True)
class GPUSpec:
    """One accelerator, from its vendor datasheet (dense figures, never sparse)."""

    id: str
    name: str
    vendor: str
    memory_bytes: int            # nominal capacity, as the datasheet states it
    usable_memory_bytes: int     # what torch.cuda.get_device_properties().total_memory reports
    peak_16bit_flops: float      # dense bf16 (fp16 where no bf16) tensor FLOP/s
    memory_bandwidth: float      # bytes per second
    bf16: bool                   # supports bfloat16
    source: str
    usable_memory_source: str = ""
    peak_fp8_flops: float | None = None
    notes: str = ""


def _read(name: str) -> dict:
    import yaml  # deferred: keeps `import proposalkit` light

    text = _resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)


def _gpu_from_row(row: dict) -> GPUSpec:
    row = dict(row)
    row["memory_bytes"] = parse_memory(row.pop("memory"))
    row["usable_memory_bytes"] = parse_memory(row.pop("usable_memory"))
    row["peak_16bit_flops"] = parse_count(row["peak_16bit_flops"])
    row["memory_bandwidth"] = parse_count(row["memory_bandwidth"])
    if row.get("peak_fp8_flops") is not None:
        row["peak_fp8_flops"] = parse_count(row["peak_fp8_flops"])
    return GPUSpec(**row)


@functools.lru_cache(maxsize=None)
def gpus() -> dict[str, GPUSpec]:
    """GPU id → GPUSpec, in catalog order."""
    return {row["id"]: _gpu_from_row(row) for row in _read("gpus.yaml")["gpus"]}


_MODEL_FIELDS = {f.name for f in fields(ModelSpec)}


@functools.lru_cache(maxsize=None)
def models() -> dict[str, ModelSpec]:
    """Model id → ModelSpec, in catalog order."""
    out = {}
    for row in _read("models.yaml")["models"]:
        unknown = set(row) - _MODEL_FIELDS
        if unknown:
            raise ValueError(f"models.yaml: {row.get('id')}: unknown keys {sorted(unknown)}")
        out[row["id"]] = ModelSpec(**row)
    return out
