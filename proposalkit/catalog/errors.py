"""The estimates' validated errors: each regime's residuals over the validation sets (errors.yaml).

errors.yaml is generated (benchmarks/errors.py, `make errors`) from the rows of benchmarks/validation/:
every row is planned through the command line and set beside its published or measured figure, and its
residual is what the plan's figure must be multiplied by to give the measurement:

- speed and inference: measured rate ÷ planned rate (tokens per second; a latency is a rate's inverse,
  so a time to first token's residual is planned ÷ measured milliseconds, GPU-hours likewise);
- memory: measured bytes ÷ planned bytes, in the statistic the source measured.

Residuals above 1 mean the run was faster (or took more memory) than planned. A range is the estimate
times the residuals' 10th and 90th percentiles (planning/ranges.py). A regime with fewer than MIN_ROWS
rows is pooled with its set's pool (REGIMES[...].pool): its own rows and every row of the regimes named
there, stated in the plan's ranges_basis. Nothing is read at import time.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources as _resources

# A regime with fewer rows than this takes its set's pool: with n − 1 = 9 rows left in leave-one-out,
# the interpolated 10th percentile already lies between the two lowest rows (position (n − 2) × 0.1 < 1),
# so fewer rows would give an interval set by one or two rows at each end.
MIN_ROWS = 10

SPEED, INFERENCE, MEMORY = "speed", "inference", "memory"
SETS = (SPEED, INFERENCE, MEMORY)


@dataclass(frozen=True)
class Regime:
    """One kind of estimate whose error is calibrated on its own rows."""

    id: str
    set: str
    """speed, inference or memory: the validation set its rows belong to (coverage is reported per set)."""
    quantity: str
    """What the residual multiplies: tokens_per_second (a rate), ttft_rate or tpot_rate (a latency's
    inverse), or bytes."""
    what: str
    """The regime in words, for the plan's basis and docs/validation.md."""
    short: str = ""
    """A few words for a table or a derivation line."""
    pool: tuple[str, ...] = ()
    """The regimes whose rows are joined to this one's when it has fewer than MIN_ROWS."""
    used: bool = True
    """Whether a plan's ranges take it (False: reported only, as the whole runs are)."""


_FLOPS = ("flops-single-node", "flops-multi-node", "flops-tensor-parallel")
_INFERENCE = ("inference-throughput", "inference-prefill", "inference-decode")
_MEMORY = ("memory-allocated", "memory-reserved", "memory-device")

REGIMES: dict[str, Regime] = {r.id: r for r in (
    Regime("flops-single-node", SPEED, "tokens_per_second",
           "training speed without a pilot (the step-time model, or FLOPs at a given MFU), one node (at most 8 GPUs), "
           "no tensor parallelism", "estimated speed, one node", _FLOPS),
    Regime("flops-multi-node", SPEED, "tokens_per_second",
           "training speed without a pilot (the step-time model, or FLOPs at a given MFU), more than one node, "
           "no tensor parallelism", "estimated speed, several nodes", _FLOPS),
    Regime("flops-tensor-parallel", SPEED, "tokens_per_second",
           "training speed without a pilot (the step-time model, or FLOPs at a given MFU), tensor parallel",
           "estimated speed, tensor parallel", _FLOPS),
    Regime("pilot-extrapolated", SPEED, "tokens_per_second",
           "a measured rate carried to another GPU type or count (training: by the step-time model's rates on "
           "both setups; two runs of one workload on different GPUs: the second's measured ÷ the first's "
           "carried)", "pilots carried to other GPUs",
           _FLOPS),
    Regime("pilot-steps", SPEED, "tokens_per_second",
           "a measured rate's step-to-step spread (each steady step's rate ÷ the run's median; this project's "
           "own runs)", "steps of measured runs"),
    Regime("whole-run", SPEED, "tokens_per_second",
           "a whole published run's GPU-hours against the plan's steady-state speed (restarts, evaluation, "
           "long-context stages and idle time included)", "whole published runs", used=False),
    Regime("inference-throughput", INFERENCE, "tokens_per_second",
           "inference output tokens per second of a batch job", "inference throughput", _INFERENCE),
    Regime("inference-prefill", INFERENCE, "ttft_rate", "inference time to first token (its inverse)",
           "time to first token", _INFERENCE),
    Regime("inference-decode", INFERENCE, "tpot_rate", "inference time per output token (its inverse)",
           "time per output token", _INFERENCE),
    Regime("memory-allocated", MEMORY, "bytes", "peak allocated memory (torch max_memory_allocated)",
           "allocated memory", _MEMORY),
    Regime("memory-reserved", MEMORY, "bytes", "peak reserved memory (the caching allocator's pool)",
           "reserved memory", _MEMORY),
    Regime("memory-device", MEMORY, "bytes", "whole-device memory (nvidia-smi: reserved + CUDA context)",
           "device memory", _MEMORY),
)}

# The plan JSON's memory statistic → its regime (an "active" figure is compared with allocated).
MEMORY_REGIME = {"allocated": "memory-allocated", "active": "memory-allocated", "reserved": "memory-reserved",
                 "reserved_ample": "memory-reserved",
                 "device": "memory-device"}


def speed_regime(source: str, gpus: int, tensor_parallel: int, node_gpus: int) -> str | None:
    """The regime of a training or batch rate: by where the rate came from ("flops", "pilot",
    "pilot-extrapolated"; records.Throughput.source), then tensor parallelism, then nodes (None: a service,
    sized by its hours)."""
    if source == "pilot":
        return "pilot-steps"
    if source == "pilot-extrapolated":
        return "pilot-extrapolated"
    if source != "flops":
        return None
    if tensor_parallel > 1:
        return "flops-tensor-parallel"
    return "flops-multi-node" if gpus > node_gpus else "flops-single-node"


@dataclass(frozen=True)
class Row:
    """One validation row's residual."""

    id: str
    residual: float


@functools.lru_cache(maxsize=None)
def table() -> dict[str, tuple[Row, ...]]:
    """Regime id → its rows, as errors.yaml holds them (every regime of REGIMES present, maybe empty)."""
    import yaml  # deferred: keeps `import proposalkit` light

    text = _resources.files(__package__).joinpath("errors.yaml").read_text(encoding="utf-8")
    data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    unknown = set(data["regimes"]) - set(REGIMES)
    if unknown:
        raise ValueError(f"errors.yaml: unknown regimes {sorted(unknown)}")
    return {rid: tuple(Row(str(r["id"]), float(r["residual"])) for r in data["regimes"].get(rid) or ())
            for rid in REGIMES}


@dataclass(frozen=True)
class Basis:
    """The rows an interval is taken from: the regime asked for, and its pool where it has too few."""

    regime: str
    """The regime asked for."""
    rows: tuple[Row, ...]
    """The rows used (the regime's own, or its pool's), the left-out row removed."""
    pooled: bool
    """The regime had fewer than MIN_ROWS rows, so its pool's rows are used."""
    own_rows: int
    """How many rows the regime has of its own (the left-out row removed)."""

    @property
    def residuals(self) -> tuple[float, ...]:
        """The rows' residuals, ascending."""
        return tuple(sorted(r.residual for r in self.rows))

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(r.id for r in self.rows)


def basis(regime: str, leave_out: str | None = None,
          rows: dict[str, tuple[Row, ...]] | None = None) -> Basis:
    """The rows `regime`'s interval is taken from, `leave_out` (a row id) removed: a row never calibrates its
    own interval. `rows`: another table than errors.yaml's (the generator's, before it is written)."""
    rows = table() if rows is None else rows
    own = tuple(r for r in rows.get(regime, ()) if r.id != leave_out)
    spec = REGIMES[regime]
    if len(own) >= MIN_ROWS or not spec.pool:
        return Basis(regime, own, False, len(own))
    pooled = own + tuple(r for rid in spec.pool if rid != regime for r in rows.get(rid, ()) if r.id != leave_out)
    return Basis(regime, pooled, True, len(own))
