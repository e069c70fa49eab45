"""The ranges' notes in words (planning/ranges.py range_notes): where each range comes from, and the
share of validated cases the request covers; and the report's one derivation line on the GPU-hours'
range (range_line). render/notes.py's WORDS takes these kinds from here."""

from __future__ import annotations

from collections.abc import Callable

from ..notes import Note
from ..units import factor_text
from .format import and_list, fmt_hours, fmt_pct

# The quantities of a plan's ranges, as a sentence names them.
QUANTITY_WORDS = {"tokens_per_second": "tokens/s", "runtime_hours": "runtime", "gpu_hours": "GPU-hours",
                  "device_bytes": "memory per GPU", "output_tokens_per_second": "output tokens/s",
                  "ttft_ms": "time to first token", "tpot_ms": "time per output token"}
# Why a quantity has no spread (planning/ranges.py HOURS_GIVEN, ENGINE_RESERVATION).
NO_SPREAD = {"hours-given": "a service's GPU-hours are its hours × GPUs whatever its speed; a slower engine shows "
                            "in its latencies",
             "engine-reservation": "the engine reserves its memory at start-up whatever the tensors need"}
SHORT_NO_SPREAD = {"hours-given": "a service's GPU-hours are its hours"}


def _names(quantities) -> str:
    return and_list(QUANTITY_WORDS.get(q, q) for q in quantities)


def _log(n: Note) -> str:
    """'the pilot log's', or 'the illustrative pilot log's' where the log is an example's (pilot.illustrative)."""
    return "the illustrative pilot log's" if n.get("illustrative") else "the pilot log's"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def source(n: Note) -> str:
    """Where a range-basis note's spread comes from: 'the 25 validation rows of …' (no spread: why not)."""
    if n["regime"] is None:
        return NO_SPREAD[n["why"]]
    if n["regime"] == "pilot-log":
        return f"{_log(n)} own {_plural(n['rows'], 'steady step')} (each step's rate ÷ their median)"
    if n["regime"] == "pilot-steps":
        return (f"the {_plural(n['rows'], 'timed step')} of measured training runs (each step's rate ÷ its "
                "run's median: a measured rate given without its log)")
    if n["pooled"]:
        return (f"{n['what']}: {_plural(n['own_rows'], 'validation row')} of its own, fewer than {n['min_rows']}, "
                f"so the {n['rows']} rows of its set's pool (measured ÷ planned)")
    return f"the {n['rows']} validation rows of {n['what']} (measured ÷ planned)"


# The quantities worked as the inverse of a group's first (hours from a rate: the estimate ÷ the factors).
INVERSE = ("runtime_hours", "gpu_hours")


def range_basis(n: Note) -> str:
    """Where one group of quantities' p10–p90 comes from, and how its ends are worked from the printed factors."""
    quantities = n["quantities"]
    names = _names(quantities)
    if n["regime"] is None:
        return f"range of {names}: none ({source(n)})"
    low, high = factor_text(n["low"]), factor_text(n["high"])
    spread = f"p10–p90 = {low}–{high} × the estimate of {QUANTITY_WORDS[quantities[0]]}"
    inverse = [q for q in quantities[1:] if q in INVERSE]
    if inverse:
        spread += f" ({_names(inverse)}: the estimate ÷ {high} to ÷ {low})"
    return f"range of {names}: {spread}, from {source(n)}"


def _cases(n: Note) -> str:
    """What a request-coverage note's share is of."""
    if n["basis"] == "pilot-log":
        return f"{_log(n)} {_plural(n['cases'], 'steady step')}"
    if n["basis"] == "pilot-steps":
        return f"the {_plural(n['cases'], 'timed step')} of measured training runs"
    return f"the {_plural(n['cases'], 'validated case')}"


def request_coverage(n: Note) -> str:
    request = f"the request, GPU-hours × (1 + {n['buffer']:.0%}),"
    if n["basis"] is None:
        covers = f"{request} covers the GPU-hours needed ({NO_SPREAD['hours-given']})"
    else:
        covers = (f"{request} covers {fmt_pct(n['coverage'])} of {_cases(n)} (those whose GPU-hours needed are at "
                  "most it)")
    if n["auto"] is None:
        return covers
    return (f"buffer auto: {n['buffer']:.0%}, the least whole percent at which {covers}; asked: at least "
            f"{n['auto']:.0%}. It covers the estimate's error only: retries, sweeps, profiling and evaluation "
            "(the NAIRR guide's reasons) are variants or a buffer of their own")


def fit_margin(n: Note) -> str:
    if n["tight"]:
        return (f"no configuration tried fits at the memory p90 (the estimate × {factor_text(n['margin'])}): the one "
                "chosen fits at the p10, planned tight (see its warning)")
    return (f"configurations chosen where the memory p90 fits: the estimate × {factor_text(n['margin'])} (the "
            "whole-device rows' 90th percentile, measured ÷ planned) within the GPU's usable memory")


def range_line(hours, basis: Note, coverage: Note) -> str:
    """The report's derivation line: the GPU-hours needed at p10–p90 worked from the printed GPU-hours and factors
    (units.range_ends: the low end rounded down, the high end up), the rows the spread comes from, the share the
    request covers. `hours`: the GPU-hours' interval (planning/intervals.Interval)."""
    if basis["regime"] is None:
        return f"none: {SHORT_NO_SPREAD[basis['why']]}"
    if basis["regime"] == "pilot-log":
        rows = f"{_log(basis)} {_plural(basis['rows'], 'steady step')}"
    elif basis["regime"] == "pilot-steps":
        rows = f"{_plural(basis['rows'], 'step')} of measured training runs"
    elif basis["pooled"]:
        rows = f"{basis['short']}: {_plural(basis['own_rows'], 'validation run')}, pooled to {basis['rows']}"
    else:
        rows = f"{basis['short']}: {_plural(basis['rows'], 'validation run')}"
    worked = (f"{fmt_hours(hours.p50)} ÷ {factor_text(basis['high'])} to ÷ {factor_text(basis['low'])} = "
              f"{fmt_hours(hours.p10)}–{fmt_hours(hours.p90)} GPU-h")
    return f"p10–p90 {worked} ({rows}); covers {fmt_pct(coverage['coverage'])}"


RANGE_WORDS: dict[str, Callable[[Note], str]] = {"range-basis": range_basis, "request-coverage": request_coverage,
                                                 "fit-margin": fit_margin}
