"""`proposalkit pilot` output: text, JSON (CONTRACT.md keys) and a YAML `throughput:` block."""

from __future__ import annotations

import json

from ..text import control_escape
from ..units import GiB
from .common import WARMUP_RULE, PilotResult


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def as_dict(r: PilotResult) -> dict:
    peak = r.peak()
    out = {
        "path": r.path, "format": r.format,
        "tokens_per_second": _round(r.tokens_per_second),
        "tokens_per_second_per_gpu": _round(r.tokens_per_second_per_gpu),
        "gpus": r.gpus,
        "token_definition": r.token_definition,
        "steps": {"logged": r.steps_logged, "warmup_excluded": r.warmup_steps, "used": r.steps_used,
                  "warmup_rule": WARMUP_RULE if r.warmup_steps is not None else None},
        "method": r.method,
        "peak_memory": {"bytes": peak[1], "statistic": peak[0]} if peak else None,
        "peak_memory_all": {s: b for s, b in r.peak_memory.items() if not peak or s != peak[0]},
        "notes": r.notes,
    }
    if r.output_tokens_per_second is not None or r.total_tokens_per_second is not None:
        out["output_tokens_per_second"] = _round(r.output_tokens_per_second)
        out["total_tokens_per_second"] = _round(r.total_tokens_per_second)
    return out


def render_json(results: list[PilotResult]) -> str:
    # allow_nan=False: never `Infinity` or `NaN`, which are not JSON (checks.check_result keeps them out of
    # every result; were one to slip through, this fails loudly instead of printing invalid JSON).
    return json.dumps({"logs": [as_dict(r) for r in results]}, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _rate(value: float | None) -> str:
    return "unknown" if value is None else f"{value:,.1f} tokens/s"


def render_text(results: list[PilotResult]) -> str:
    blocks = []
    for r in results:
        lines = [f"{control_escape(r.path)}: {r.format}"]
        if r.warmup_steps is not None:
            lines.append(f"  steps: {r.steps_logged} logged, {r.warmup_steps} warm-up excluded "
                         f"({WARMUP_RULE}), {r.steps_used} used")
        if r.tokens_per_second is None and r.tokens_per_second_per_gpu is None:
            lines.append(f"  throughput: not in the log ({r.token_definition})")
        else:
            lines.append(f"  throughput: {_rate(r.tokens_per_second)} whole job, "
                         f"{_rate(r.tokens_per_second_per_gpu)} per GPU ({r.token_definition})")
        if r.total_tokens_per_second is not None:
            lines.append(f"  output: {_rate(r.output_tokens_per_second)}, total (input + output): "
                         f"{_rate(r.total_tokens_per_second)}")
        lines.append(f"  method: {r.method}")
        lines.append(f"  GPUs: {r.gpus} ({r.gpus_source})" if r.gpus
                     else "  GPUs: not in the log (pass --gpus N)")
        peak = r.peak()
        if peak:
            others = ", ".join(f"{s} {b / GiB:.2f} GiB" for s, b in r.peak_memory.items() if s != peak[0])
            lines.append(f"  peak memory: {peak[1] / GiB:.2f} GiB {peak[0]} ({peak[1]} bytes)"
                         + (f"; also {others}" if others else ""))
        else:
            lines.append("  peak memory: not in the log")
        lines += [f"  note: {n}" for n in r.notes]
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def render_yaml(results: list[PilotResult]) -> str:
    blocks = []
    for r in results:
        lines = [f"# {control_escape(r.path)} ({r.format}): {r.method}; {r.token_definition}"]
        if r.warmup_steps is not None:
            lines.append(f"# {r.warmup_steps} warm-up step(s) excluded: {WARMUP_RULE}")
        if r.tokens_per_second is None and r.tokens_per_second_per_gpu is None:
            lines.append("# no throughput in this log: nothing to paste")
            blocks.append("\n".join(lines) + "\n")
            continue
        if r.tokens_per_second is not None:
            rate, gpus = r.tokens_per_second, r.gpus
        else:
            rate, gpus = r.tokens_per_second_per_gpu, 1
            lines.append("# the log does not give the GPU count: this is the per-GPU rate on 1 GPU")
        lines.append("throughput:")
        lines.append(f"  tokens_per_second: {round(rate)}")
        lines.append(f"  gpus: {gpus}" if gpus else "  gpus:   # fill in: the log does not give the GPU count")
        lines.append("  gpu:    # fill in: the GPU type the pilot ran on (a catalog id, e.g. a100-80gb)")
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)
