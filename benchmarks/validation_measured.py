"""Training runs this project measured itself, as rows of the memory and speed validation sets.

benchmarks/validation/measured/ holds one ordinary workload file per configuration (index.yaml: what the
harness shares, why each row is there) and results/ the raw device output of each measuring session
(benchmarks/device/measure_training.py). The figures are read from that output, never copied: each run
becomes

- speed rows (validation_speed.py, section M): the median tokens/s over the timed steps, with p10/p90;
- memory rows (validation_memory.py): torch.cuda.max_memory_allocated() and max_memory_reserved() over the
  whole run, compared with the plan's memory.allocated_bytes and memory.reserved_bytes.

Every row is role validate (no constant of the planner was set from it, except where a calibration says so
by name: validation_speed.py CALIBRATED_ON). The source names the results file, the date, the device as
nvidia-smi printed it (with its power limit) and the versions of torch, transformers and PEFT.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
MEASURED = ROOT / "benchmarks" / "validation" / "measured"
INDEX = MEASURED / "index.yaml"
# The measuring sessions whose output is read, oldest first; a later file's run replaces an earlier one's.
RESULTS = ("results/h100-80gb-hbm3-2026-11-26.json", "results/h100-80gb-hbm3-2026-11-26-compile.json")
GIB = 2**30


@dataclass(frozen=True)
class Run:
    """One measured configuration: its workload file, the figures of its run and where they come from."""

    id: str
    file: Path                  # the workload file (benchmarks/validation/measured/<id>.yaml)
    results: str                # the results file, relative to benchmarks/validation/measured/
    why: str                    # index.yaml's reason for the row
    tokens_per_second: float    # median over the timed steps
    tokens_per_second_p10: float
    tokens_per_second_p90: float
    timed_steps: int
    allocated_bytes: int        # torch.cuda.max_memory_allocated() over the run
    reserved_bytes: int         # torch.cuda.max_memory_reserved()
    device_bytes: int           # the device's used memory at its peak (NVML)
    date: str                   # the session's date (from the results file's name)
    device: str                 # nvidia-smi's name and power limit
    versions: str               # torch, transformers, peft

    @property
    def source(self) -> str:
        return (f"measured by this project: benchmarks/validation/measured/{self.results}, {self.date}, "
                f"{self.device}, {self.versions}")


def _session(relative: str) -> tuple[dict, str, str, str]:
    data = json.loads((MEASURED / relative).read_text(encoding="utf-8"))
    env = data["environment"]
    smi = env["nvidia_smi"]
    versions = env["versions"]
    device = f"1× {smi['name']} at {smi['power.limit'].replace('.00 W', ' W')}"
    software = (f"torch {versions['torch']}, transformers {versions['transformers']}, peft {versions['peft']}, "
                f"{data['script']}")
    return data, _date(relative), device, software


def _date(relative: str) -> str:
    """The session's date, YYYY-MM-DD, from the results file's name (h100-80gb-hbm3-2026-11-26[-compile].json)."""
    parts = Path(relative).stem.split("-")
    for i in range(len(parts) - 2):
        if len(parts[i]) == 4 and parts[i].isdigit() and parts[i + 1].isdigit() and parts[i + 2].isdigit():
            return "-".join(parts[i:i + 3])
    raise ValueError(f"{relative}: no date in the name")


@lru_cache(maxsize=1)
def runs() -> tuple[Run, ...]:
    """Every run that finished, in index.yaml's order (a row not measured yet is left out)."""
    index = yaml.safe_load(INDEX.read_text(encoding="utf-8"))
    why = {row["id"]: row["why"] for row in index["rows"]}
    found: dict[str, Run] = {}
    for relative in RESULTS:
        data, date, device, versions = _session(relative)
        for r in data["runs"]:
            if r["status"] != "ok":
                continue
            if r["id"] not in why:
                raise ValueError(f"{relative}: run {r['id']} is not a row of {INDEX.name}")
            speed, memory = r["speed"], r["memory"]
            tps = speed["tokens_per_second"]
            found[r["id"]] = Run(
                id=r["id"], file=MEASURED / f"{r['id']}.yaml", results=relative, why=why[r["id"]],
                tokens_per_second=tps["median"], tokens_per_second_p10=tps["p10"], tokens_per_second_p90=tps["p90"],
                timed_steps=speed["timed_steps"], allocated_bytes=memory["max_allocated_bytes"],
                reserved_bytes=memory["max_reserved_bytes"], device_bytes=memory["max_device_used_bytes"],
                date=date, device=device, versions=versions)
    return tuple(found[i] for i in why if i in found)


def speed_rows() -> list[dict]:
    """The speed index rows (validation_speed.py's format), section M, one per measured run."""
    return [{"id": run.id, "section": "M", "role": "validate", "file": f"../measured/{run.id}.yaml",
             "compare": "tokens_per_second", "value": round(run.tokens_per_second, 1),
             "unit": "tokens/s on 1 GPU",
             "counts": (f"median of {run.timed_steps} timed steps (p10 {run.tokens_per_second_p10:,.0f}, "
                        f"p90 {run.tokens_per_second_p90:,.0f}); every token real"),
             "source": run.source, "note": run.why, "measured_p10": run.tokens_per_second_p10,
             "measured_p90": run.tokens_per_second_p90}
            for run in runs()]


# (row id suffix, the run's figure, what it measures, the plan figure compared, the statistic's name in the JSON)
MEMORY_STATISTICS = (
    ("", "allocated_bytes", "allocated", "memory.allocated_bytes", "max_allocated_bytes"),
    ("-RES", "reserved_bytes", "reserved", "memory.reserved_bytes", "max_reserved_bytes"),
)


def memory_rows() -> list[dict]:
    """The memory index rows (validation_memory.py's format): allocated and reserved peak per measured run."""
    out = []
    for run in runs():
        for suffix, attr, measures, compare, key in MEMORY_STATISTICS:
            value = getattr(run, attr)
            out.append({"id": run.id + suffix, "group": "expressible", "value": round(value / GIB, 2), "unit": "GiB",
                        "measures": measures, "compare": compare, "file": f"measured/{run.id}.yaml",
                        "settings": _settings(run), "gpu": run.device.removeprefix("1× "),
                        "source": run.source, "quote": f"{key}: {value:,}", "trust": "high",
                        "notes": run.why})
    return out


def _settings(run: Run) -> str:
    w = yaml.safe_load(run.file.read_text(encoding="utf-8"))["workloads"][0]
    parts = [f"{w['seq_len']:,} × {w['micro_batch']}", "1 GPU"]
    if w.get("gradient_accumulation_steps", 1) > 1:
        parts.append(f"accumulation {w['gradient_accumulation_steps']}")
    if w.get("activation_checkpointing"):
        parts.append("checkpointing")
    if w.get("compile"):
        parts.append("compiled")
    return ", ".join(parts)
