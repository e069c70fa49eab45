"""Built-in catalogs (GPUs, models), read lazily from the YAML files beside this module.

Each row carries its sources, typed (sources.py: kind, publisher, title, URL, date or revision);
row_sources() lists them and listing.py prints them (`proposalkit catalog`). Nothing is read at import
time. Beside this module, the records and readers of what the tool knows: shapes.py (ModelSpec,
parameter counts), vision.py (vision towers), modules.py (linear module names, LoRA targets),
engines.py (serving engines), resources.py (resources, tracks, ACCESS tiers).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields
from importlib import resources as _resources

from .shapes import ModelSpec
from .sources import Source, cite, parse
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
    bf16: bool                   # bfloat16 tensor cores (false: Volta)
    source: str
    architecture: str = ""       # the generation its datasheet names (Ampere, Hopper, CDNA3, ...)
    usable_memory_source: str = ""
    peak_fp8_flops: float | None = None   # dense FP8 tensor FLOP/s; None: no FP8 tensor cores
    peak_fp4_flops: float | None = None   # dense FP4 tensor FLOP/s; None: no native FP4 (all but Blackwell)
    notes: str = ""
    # The best-shape BF16 matmul's measured FLOP/s (gpus.yaml: Bekman's MAMF table); 0 where unknown.
    mamf_flops: float = 0.0
    mamf_source: str = ""
    mamf_measured: bool = True   # False: the table measures no such GPU, its vendor's lowest efficiency is taken

    @property
    def matmul_efficiency(self) -> float:
        """The maximum achievable matmul rate ÷ the dense 16-bit peak (the MAMF table's 'efficiency')."""
        return self.mamf_flops / self.peak_16bit_flops

    def supports(self, precision: str) -> bool:
        """Whether the tensor cores run `precision` natively (PRECISION_HARDWARE); precisions it does not
        name (fp32, fp16, and int8/int4 weights, dequantized to 16 bits) run on every GPU."""
        need = PRECISION_HARDWARE.get(precision)
        return need is None or need[0](self)


# What a precision needs of the GPU, read from its catalog row (gpus.yaml says where each figure is from):
# (the test, what it needs in words, the generations that have it). Volta's tensor cores run fp16 only (NVIDIA V100
# datasheet: "Tensor Performance" is mixed-precision fp16); FP8 tensor cores came with Hopper and Ada
# Lovelace (and AMD CDNA3), native FP4 with Blackwell. A precision not named here runs on any GPU.
PRECISION_HARDWARE = {
    "bf16": (lambda g: g.bf16, "bfloat16 tensor cores", "Ampere and later, CDNA2 and later, Xe-HPC"),
    "fp8": (lambda g: g.peak_fp8_flops is not None, "FP8 tensor cores", "Hopper, Ada Lovelace, Blackwell, CDNA3"),
    "fp4": (lambda g: g.peak_fp4_flops is not None, "FP4 tensor cores", "Blackwell"),
}
# The nearest precision a GPU without the named one runs, with the same bytes per weight: bf16 → fp16
# (both 2 bytes; fp16 needs loss scaling in training, Micikevicius et al. 2018), fp8 → int8 weights
# (1 byte, dequantized to 16-bit compute, as GPTQ/bitsandbytes 8-bit run on Ampere).
PRECISION_FALLBACK = {"bf16": "fp16", "fp8": "int8"}


def _read(name: str) -> dict:
    import yaml  # deferred: keeps `import proposalkit` light

    text = _resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)


def _gpu_from_row(row: dict) -> GPUSpec:
    row = dict(row)
    row["mamf_measured"] = all(s.kind == "measurement" for s in parse(row["mamf_source"], f"gpus.yaml: {row['id']}"))
    for key in ("source", "usable_memory_source", "mamf_source"):
        row[key] = cite(row[key], f"gpus.yaml: {row['id']}: {key}")
    row["memory_bytes"] = parse_memory(row.pop("memory"))
    row["usable_memory_bytes"] = parse_memory(row.pop("usable_memory"))
    row["peak_16bit_flops"] = parse_count(row["peak_16bit_flops"])
    row["memory_bandwidth"] = parse_count(row["memory_bandwidth"])
    row["mamf_flops"] = parse_count(row["mamf_flops"])
    for key in ("peak_fp8_flops", "peak_fp4_flops"):
        if row.get(key) is not None:
            row[key] = parse_count(row[key])
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
        row = dict(row)
        where = f"models.yaml: {row.get('id')}"
        # The shape's sources (config.json) and the published count's (the model's page), as one text.
        row["source"] = (f"shape: {cite(row['source'], f'{where}: source').removesuffix('.')}; "
                         f"parameter count: {cite(row.pop('params_source'), f'{where}: params_source')}")
        unknown = set(row) - _MODEL_FIELDS
        if unknown:
            raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
        out[row["id"]] = ModelSpec(**row)
    return out


@dataclass(frozen=True)
class RowSource:
    """One typed source of one catalog row: catalog (gpus, models, resources), row id, field, Source."""

    catalog: str
    row: str
    field: str            # source, usable_memory_source, params_source, size_source, access_credits.source ...
    source: Source


CATALOGS = ("gpus", "models", "resources")


def row_sources(name: str) -> tuple[RowSource, ...]:
    """Every typed source of a catalog's rows, in file order: each field named `source` or ending in
    `_source`, at any depth of a row (resources' access_credits.source too); the resource catalog's
    allocation tracks and ACCESS tiers as rows of their own."""
    if name == "resources":
        from .resources import _catalog

        data = _catalog()
        rows = [*data["resources"], *data["allocation_tracks"],
                {"id": "access_credit_tiers", "source": data["access_credit_tiers_source"]}]
    else:
        rows = _read(f"{name}.yaml")[name]
    return tuple(RowSource(name, str(row["id"]), field, s) for row in rows for field, value in _source_fields(row)
                 for s in parse(value, f"{name}.yaml: {row['id']}: {field}"))


def _source_fields(row: dict, prefix: str = ""):
    """(dotted field name, raw value) of every source field in a row, nested mappings included."""
    for key, value in row.items():
        if key == "source" or key.endswith("_source"):
            yield prefix + key, value
        elif isinstance(value, dict):
            yield from _source_fields(value, f"{prefix}{key}.")
