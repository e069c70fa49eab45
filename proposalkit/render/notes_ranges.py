"""The ranges' notes in words (planning/ranges.py range_notes): where each range comes from, and the
share of validated cases the request covers. render/notes.py's WORDS takes these kinds from here."""

from __future__ import annotations

from collections.abc import Callable

from ..notes import Note

# The quantities of a plan's ranges, as a sentence names them.
QUANTITY_WORDS = {"tokens_per_second": "tokens/s", "runtime_hours": "runtime", "gpu_hours": "GPU-hours",
                  "device_bytes": "memory per GPU", "output_tokens_per_second": "output tokens/s",
                  "ttft_ms": "time to first token", "tpot_ms": "time per output token"}
# Why a quantity has no spread (planning/ranges.py HOURS_GIVEN, ENGINE_RESERVATION).
NO_SPREAD = {"hours-given": "a service's GPU-hours are its hours × GPUs whatever its speed; a slower engine shows "
                            "in its latencies",
             "engine-reservation": "the engine reserves its memory at start-up whatever the tensors need"}


def _names(quantities) -> str:
    words = [QUANTITY_WORDS.get(q, q) for q in quantities]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def range_basis(n: Note) -> str:
    """Where one group of quantities' p10–p90 comes from."""
    names = _names(n["quantities"])
    if n["regime"] is None:
        return f"range of {names}: none ({NO_SPREAD[n['why']]})"
    spread = f"p10–p90 = {n['low']:.2f}–{n['high']:.2f} × the estimate of {QUANTITY_WORDS[n['quantities'][0]]}"
    if n["regime"] == "pilot-log":
        return (f"range of {names}: the pilot log's own {n['rows']:,} steady steps (each step's rate ÷ their "
                f"median): {spread}")
    where = f"{n['rows']} validation rows of {n['what']}"
    if n["pooled"]:
        where = (f"{n['what']}: {n['own_rows']} validation row{'s' if n['own_rows'] != 1 else ''} of its own, "
                 f"fewer than {n['min_rows']}, so the {n['rows']} rows of its set's pool")
    return f"range of {names}: {spread}, from the {where} (measured ÷ planned)"


def request_coverage(n: Note) -> str:
    request = f"the request, GPU-hours × (1 + {n['buffer']:.0%}),"
    if n["basis"] is None:
        covers = f"{request} covers the GPU-hours needed ({NO_SPREAD['hours-given']})"
    elif n["basis"] == "pilot-log":
        covers = (f"{request} covers {n['coverage']:.0%} of the pilot log's step-to-step spread (its "
                  f"{n['cases']:,} steady steps' rates)")
    else:
        covers = (f"{request} covers {n['coverage']:.0%} of the {n['cases']:,} validated cases (those whose "
                  "GPU-hours needed are at most it)")
    if n["auto"] is None:
        return covers
    return (f"buffer auto: {n['buffer']:.0%}, the least whole percent at which {covers}; asked: at least "
            f"{n['auto']:.0%}. It covers the estimate's error only: retries, sweeps, profiling and evaluation "
            "(the NAIRR guide's reasons) are variants or a buffer of their own")


def fit_margin(n: Note) -> str:
    if n["tight"]:
        return (f"no configuration tried fits at the memory p90 (the estimate × {n['margin']:.3f}): the one chosen "
                "fits at the p10, planned tight (see its warning)")
    return (f"configurations chosen where the memory p90 fits: the estimate × {n['margin']:.3f} (the whole-device "
            "rows' 90th percentile, measured ÷ planned) within the GPU's usable memory")


RANGE_WORDS: dict[str, Callable[[Note], str]] = {"range-basis": range_basis, "request-coverage": request_coverage,
                                                 "fit-margin": fit_margin}
