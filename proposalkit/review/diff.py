"""Two versions of a plan → the budget change a reviewer reads in a pull request.

OLD and NEW are workload files, `REV:PATH` read with `git show`, or
`/dev/null` (no workloads: a file added or deleted), loaded and planned by
sides.py; every number comes from the plans' JSON form (output.plan_dict),
never recomputed here. Workloads are matched by name;
a removed and an added workload whose settings are identical except the
name (and description) are one renamed workload. diff_output.py writes the
comparison as Markdown and as JSON.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Callable

from ..catalog.resources import dollars
from ..render.format import fmt_pct, md_escape
from ..text import control_escape
from ..units import GiB, pct_text, rounded_outward
from .sides import EMPTY, Side, Version  # noqa: F401  (EMPTY, Side: this module's API too)

SCHEMA_VERSION = 1

# Categories in the order they are reported.
CATEGORIES = ("added", "removed", "renamed", "changed", "unchanged")


# ----------------------------------------------------------------- escaping

def markdown_text(text: object) -> str:
    """User text for the Markdown that CI posts on pull requests: control characters
    shown as escapes, then every character GitHub acts on escaped (images, links,
    HTML, @mentions, table pipes), as report.md does. The budget workflow escapes
    the file names it prints with it."""
    return md_escape(control_escape(text))


# ----------------------------------------------------------------- comparing

def _hours(x: float) -> str:
    return f"{x:,.1f}"


def _delta(x: float) -> str:
    x = 0.0 if abs(x) < 0.05 else x       # no "-0.0"
    return f"{x:+,.1f}"


def _dollar_delta(x: float) -> str:
    """'+\\$1,234.56' (Markdown-escaped '$'), '+\\$0.00' below a cent."""
    x = 0.0 if abs(x) < 0.005 else x
    return f"{'-' if x < 0 else '+'}\\${abs(x):,.2f}"


def _price(p: float | None) -> str:
    """A cloud instance type's price as charged: '$55.04 per instance-hour'; 'none' off the cloud."""
    return "none" if p is None else f"{dollars(p)} per instance-hour"


def _pct(before: float, after: float) -> str:
    """'+29.6%'; empty when nothing to compare against or nothing changed."""
    if before == 0:
        return ""
    p = 100 * (after - before) / before
    return "" if abs(p) < 0.05 else f"{p:+.1f}%"


def _count(n: int | None) -> str:
    if n is None:
        return "unset"
    for unit, size in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.4g}{unit}"
    return str(n)


def _value(v: object) -> str:
    """A workload-file value written the way YAML flow style reads."""
    if v is None:
        return "unset"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, int) and v >= 10_000:
        return _count(v)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_value(x)}" for k, x in v.items() if x is not None) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return str(v)


def _runtime(h: float) -> str:
    return _hours(h) if h >= 10 else f"{h:.3g}"


def _plain(n: int | None) -> str:
    return "unset" if n is None else f"{n:,}"


def _text(label: str, a: object, b: object, show: Callable[[object], str],
          escape: Callable[[object], str] = str) -> str:
    """'tokens 200M → 400M'; of two mappings only the keys that differ: 'LoRA rank 16 → 32'.

    `escape` is applied to every piece that comes from the workload files (md_escape for Markdown).
    """
    if isinstance(a, dict) and isinstance(b, dict) and label != "GPUs":
        keys = [k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k)]
        return f"{label} " + ", ".join(f"{escape(k)} {escape(_value(a.get(k)))} → {escape(_value(b.get(k)))}"
                                       for k in keys)
    return f"{label} {escape(show(a))} → {escape(show(b))}"


def _lora(v: dict | None) -> str:
    return "none" if v is None else f"rank {v['rank']} on {', '.join(v['targets'])}"


THROUGHPUT_SOURCES = {"pilot": "the pilot", "pilot-extrapolated": "the pilot, extrapolated",
                      "flops": "FLOPs × MFU", "service": "service hours", "estimate": "the inference estimate"}


@dataclass(frozen=True)
class Field:
    """A planned quantity compared between versions.

    `inputs` are the workload-file fields whose change this quantity shows, so
    an input is listed on its own only when none of its quantities changed.
    """

    key: str
    label: str
    get: Callable[[Version], object]
    show: Callable[[object], str]
    inputs: tuple[str, ...] = ()


def _setting(name: str, label: str, show: Callable[[object], str] = _value, inputs: tuple[str, ...] | None = None):
    return Field(f"settings.{name}", label, lambda v: v.plan["settings"].get(name), show,
                 (name,) if inputs is None else inputs)


def _inference(v: Version, key: str) -> object:
    return (v.plan.get("inference") or {}).get(key)


def _ttft(v: Version) -> tuple[float | None, float] | None:
    """(percentile, ms) of a service's TTFT; None where the plan gives none."""
    ms = _inference(v, "ttft_ms")
    return None if ms is None else (_inference(v, "ttft_percentile"), ms)


def _range(v: Version) -> tuple[float, float] | None:
    """(p10, p90) of the GPU-hours the workload needs (its plan's ranges; None where it has none)."""
    r = (v.plan.get("ranges") or {}).get("gpu_hours")
    return None if r is None else (r["p10"], r["p90"])


def _span(r: tuple[float, float] | None) -> str:
    """'9.9–10.5 GPU-h', the low end rounded down and the high end up to the 0.1 shown (the range printed holds the
    plan's); one figure where the two ends agree (no spread: a service's hours)."""
    if r is None:
        return "unset"
    if r[0] == r[1]:
        return f"{_hours(r[0])} GPU-h"
    low, high = _hours(rounded_outward(r[0], 1, up=False)), _hours(rounded_outward(r[1], 1, up=True))
    return f"{low if low == high else f'{low}–{high}'} GPU-h"


def _share(c: float | None) -> str:
    """The request's coverage as the report writes it (render/format.fmt_pct): '99.3%'."""
    return "unset" if c is None else str(fmt_pct(c))


def _show_ttft(t: tuple[float | None, float] | None) -> str:
    if t is None:
        return "unset"
    return (f"p{t[0]:g} " if t[0] is not None else "") + f"{t[1]:,.0f} ms"


FIELDS: tuple[Field, ...] = (
    Field("model", "model", lambda v: v.plan["model"]["id"], str, ("model",)),
    Field("kind", "kind", lambda v: v.plan["kind"], str, ("kind",)),
    Field("method", "method", lambda v: v.plan["method"], _value, ("method",)),
    Field("gpu", "GPUs", lambda v: {"type": v.plan["gpu"]["type"], "count": v.plan["gpu"]["count"]},
          lambda g: f"{g['count']}× {g['type']}", ("gpu", "gpus")),
    Field("memory.per_gpu_bytes", "memory/GPU", lambda v: v.plan["memory"]["per_gpu_bytes"],
          lambda b: f"{b / GiB:,.1f} GiB"),
    Field("tokens", "tokens", lambda v: v.plan["tokens"], _count, ("tokens", "data")),
    Field("tokens_per_second", "throughput", lambda v: v.plan["tokens_per_second"],
          lambda t: "unset" if t is None else f"{t:,.0f} tokens/s", ("throughput",)),
    Field("throughput_source", "throughput from", lambda v: v.plan["throughput_source"],
          lambda s: THROUGHPUT_SOURCES.get(s, str(s)), ("throughput",)),
    Field("runtime_hours", "h/run", lambda v: v.plan["runtime_hours"], _runtime, ("hours",)),
    Field("variants", "variants", lambda v: v.plan["variants"], str, ("variants",)),
    Field("buffer", "buffer", lambda v: v.plan["buffer"], pct_text, ("buffer",)),
    # The GPU-hours needed at p10–p90 and the share of validated cases the request covers (the plan's ranges):
    # a change of range beside the change of the request.
    Field("ranges.gpu_hours", "needed p10–p90", _range, _span, ()),
    Field("request_coverage", "request covers", lambda v: v.plan.get("request_coverage"), _share, ("coverage",)),
    Field("mfu", "MFU", lambda v: v.plan["mfu"], lambda m: "unset" if m is None else f"{m:.3g}", ("mfu",)),
    _setting("precision", "precision"),
    _setting("seq_len", "seq_len", _plain),
    _setting("micro_batch", "micro_batch"),
    _setting("gradient_accumulation_steps", "gradient accumulation"),
    _setting("optimizer", "optimizer"),
    _setting("zero_stage", "ZeRO stage"),
    _setting("activation_checkpointing", "checkpointing"),
    _setting("flash_attention", "FlashAttention"),
    _setting("loss", "loss"),
    _setting("activation_offload", "activation offloading"),
    _setting("kernels", "kernels"),
    _setting("context_parallel", "context_parallel"),
    _setting("attention", "attention"),
    _setting("tensor_parallel", "tensor_parallel"),
    _setting("pipeline_parallel", "pipeline_parallel"),
    _setting("context", "context", _plain),
    _setting("batch", "batch"),
    _setting("lora", "LoRA", _lora),
    _setting("concurrency", "concurrency"),
    # A service by load: its replicas, and its TTFT at the percentile held (which says the percentile, so
    # a changed ttft_percentile needs no line of its own); request_rate and ttft_ms still show as inputs.
    Field("inference.replicas", "replicas", lambda v: _inference(v, "replicas"), _plain, ()),
    Field("inference.ttft", "TTFT", _ttft, _show_ttft, ("ttft_percentile",)),
    _setting("framework", "framework"),
    Field("resource", "resource", lambda v: v.resource_id, _value, ("resource",)),
    # A cloud instance type's price per instance-hour (the catalog's, or price_per_hour): a dollar change with
    # the same hours. None on other resources.
    Field("resource.price", "price", lambda v: ((v.plan.get("resource") or {}).get("price") or {}).get(
        "per_instance_hour"), _price, ("price_per_hour",)),
)


@dataclass(frozen=True)
class Change:
    key: str
    label: str
    before: object
    after: object
    text: str                  # "tokens 200M → 400M"
    markdown: str              # the same with the workload files' text escaped (md_escape)


def changes(old: Version, new: Version) -> list[Change]:
    """What differs between two versions: planned quantities first, then any
    changed workload-file field whose effect none of them shows."""
    out: list[Change] = []
    shown: set[str] = set()
    for f in FIELDS:
        a, b = f.get(old), f.get(new)
        if a != b:
            out.append(Change(f.key, f.label, a, b, _text(f.label, a, b, f.show),
                              _text(f.label, a, b, f.show, markdown_text)))
            shown.update(f.inputs)
    for key in sorted(set(old.settings) | set(new.settings)):
        if key == "name" or key in shown:
            continue
        a, b = old.settings.get(key), new.settings.get(key)
        if a != b:
            out.append(Change(f"input.{key}", key, a, b, _text(key, a, b, _value),
                              _text(key, a, b, _value, markdown_text)))
    return out


@dataclass(frozen=True)
class Entry:
    category: str              # added | removed | renamed | changed | unchanged
    name: str                  # the name in NEW (in OLD for a removed workload)
    old_name: str | None
    before: Version | None
    after: Version | None
    changes: tuple[Change, ...]

    @property
    def delta(self) -> float:
        return (self.after.requested if self.after else 0.0) - (self.before.requested if self.before else 0.0)


@dataclass(frozen=True)
class Diff:
    old: Side
    new: Side
    entries: tuple[Entry, ...]

    def of(self, category: str) -> list[Entry]:
        return [e for e in self.entries if e.category == category]


def compare(old: Side, new: Side) -> Diff:
    """Match workloads by name, then pair removed and added ones with identical settings as renames."""
    entries: list[Entry] = []
    for name in sorted(set(old.workloads) & set(new.workloads)):
        a, b = old.workloads[name], new.workloads[name]
        found = changes(a, b)
        entries.append(Entry("changed" if found else "unchanged", name, None, a, b, tuple(found)))
    removed = [old.workloads[n] for n in sorted(set(old.workloads) - set(new.workloads))]
    added = [new.workloads[n] for n in sorted(set(new.workloads) - set(old.workloads))]
    # Each added workload (by name) is paired with the first removed one (by name) of the same
    # rename key: removed workloads are grouped by key once, so the pairing takes time linear in
    # the workloads (a search of every removed workload for each added one took 170 s for 2,000).
    by_key: dict[str, collections.deque[Version]] = collections.defaultdict(collections.deque)
    for a in removed:
        by_key[a.rename_key()].append(a)
    paired: set[str] = set()
    unmatched: list[Version] = []
    for b in added:
        candidates = by_key.get(b.rename_key())
        if candidates:
            match = candidates.popleft()
            paired.add(match.name)
            entries.append(Entry("renamed", b.name, match.name, match, b, tuple(changes(match, b))))
        else:
            unmatched.append(b)
    entries += [Entry("added", b.name, None, None, b, ()) for b in unmatched]
    entries += [Entry("removed", a.name, None, a, None, ()) for a in removed if a.name not in paired]
    entries.sort(key=lambda e: (CATEGORIES.index(e.category), e.name))
    return Diff(old, new, tuple(entries))
