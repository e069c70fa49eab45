"""`proposalkit diff`'s two emitters: the Markdown a reviewer reads in a pull request and the JSON form.

diff.py compares the two versions (Diff, its entries and changes); this writes them. The whole request's
change is given per GPU type and per system in its unit, never as GPU-hours summed across GPU types (issue
23); a single GPU type's GPU-hours are the request, as they are.
"""

from __future__ import annotations

import json

from ..catalog.resources import system_of
from ..render.format import md_code
from ..text import json_control_escape
from ..units import rounded_outward
from .diff import (CATEGORIES, SCHEMA_VERSION, Diff, Entry, Version, _count, _delta, _dollar_delta, _hours, _pct,
                   _share, _span, compare, markdown_text)
from .sides import Side, read_side

def _gpu_types(d: Diff) -> list[str]:
    """The GPU types either side requests, sorted."""
    return sorted(set(d.old.totals["by_gpu_type"]) | set(d.new.totals["by_gpu_type"]))


def _change(before: float, after: float) -> str:
    """'1,234.5 → 1,600.0 (+365.5, +29.6%)'."""
    pct = _pct(before, after)
    return f"{_hours(before)} → {_hours(after)} ({_delta(after - before)}{', ' + pct if pct else ''})"


def _systems(d: Diff) -> list[tuple[str, str]]:
    """(system, unit) of the systems either side charges in its own unit, not dollars (those have their clause)."""
    out = {}
    for side in (d.old, d.new):
        for system, total in (side.totals.get("by_system") or {}).items():
            if total["unit"] != "USD":
                out[(system, total["unit"])] = None
    return sorted(out)


def _system_amount(side: Side, system: str) -> float:
    return ((side.totals.get("by_system") or {}).get(system) or {}).get("amount", 0.0)


def summary(d: Diff, dollar: str = "$") -> str:
    """'Requested GPU-hours: 1,234.5 → 1,600.0 (+365.5, +29.6%); 1 added, 1 removed, 2 changed.' With several
    GPU types, each type's instead (issue 23: GPU-hours of different types are never one request), and each
    system's amount in its unit: 'Requested GPU-hours: a100-40gb 238.7 → 431.8 (+193.1, +80.9%), h200 …;
    ncsa-delta 1,317.3 → 1,028.6 SUs (-288.7, -21.9%)'. Where either side charges a cloud resource, its dollars
    too: '; in dollars $191.57 → $139.22 (-$52.35, -27.3%)' (`dollar`: '\\$' for Markdown); where the GPU-hours
    needed at p10–p90 or the request's coverage changed, they too (_needed)."""
    t0, t1 = d.old.totals, d.new.totals
    types = _gpu_types(d)
    if len(types) > 1:
        hours = ", ".join(f"{gpu} {_change(t0['by_gpu_type'].get(gpu, 0.0), t1['by_gpu_type'].get(gpu, 0.0))}"
                          for gpu in types)
        units = "".join(f"; {system} " + _change(_system_amount(d.old, system), _system_amount(d.new, system))
                        .replace(" (", f" {unit} (", 1) for system, unit in _systems(d))
        requested = f"Requested GPU-hours: {hours}{units}"
    else:
        requested = f"Requested GPU-hours: {_change(t0['gpu_hours_requested'], t1['gpu_hours_requested'])}"
    counts = [f"{len(d.of(c))} {c}" for c in CATEGORIES[:-1] if d.of(c)]
    what = ", ".join(counts) if counts else "no workload changed"
    usd = [(side.totals.get("usd") or {}).get("amount", 0.0) for side in (d.old, d.new)]
    dollars = ""
    if any(usd):
        change, usd_pct = usd[1] - usd[0], _pct(*usd)
        change = 0.0 if abs(change) < 0.005 else change
        dollars = (f"; in dollars {dollar}{usd[0]:,.2f} → {dollar}{usd[1]:,.2f} ({'-' if change < 0 else '+'}"
                   f"{dollar}{abs(change):,.2f}{', ' + usd_pct if usd_pct else ''})")
    return f"{requested}{dollars}{_needed(d)}; {what}."


def _total_range(side: Side) -> tuple[float, float] | None:
    """(p10, p90) of the GPU-hours the whole request needs; (0, 0) for a side without workloads (/dev/null)."""
    r = (side.totals.get("ranges") or {}).get("gpu_hours")
    if r is None:
        return None if side.workloads else (0.0, 0.0)
    return r["p10"], r["p90"]


def _needed(d: Diff) -> str:
    """'; needed p10–p90 12.1–12.9 → 42.1–44.8 GPU-h, the request covering 99% → 96% of validated cases' where
    the whole request's range or coverage changed (a side without workloads has no coverage to name)."""
    spans = [_span(_total_range(side)).removesuffix(" GPU-h") for side in (d.old, d.new)]
    covers = [_share(c) for c in (d.old.totals.get("request_coverage"), d.new.totals.get("request_coverage"))]
    if spans[0] == spans[1] and covers[0] == covers[1]:
        return ""
    shares = [c for c in covers if c != "unset"]
    covering = shares[0] if len(set(shares)) == 1 else " → ".join(shares)
    together = " of all GPU types together" if len(_gpu_types(d)) > 1 else ""
    return (f"; needed p10–p90 {spans[0]} → {spans[1]} GPU-h{together}"
            + (f", the request covering {covering} of validated cases" if shares else ""))


def _describe(v: Version) -> str:
    p = v.plan
    where = f"{p['gpu']['count']}× {markdown_text(p['gpu']['type'])}"
    if p["kind"] == "inference" and not p["tokens"]:
        return f"{where}, service {_hours(p['runtime_hours'])} h"
    runs = f", {p['variants']} variants" if p["variants"] != 1 else ""
    return f"{where}, {_count(p['tokens'])} tokens{runs}"


def markdown(d: Diff) -> str:
    out = [summary(d, "\\$"), ""]
    rows = [e for e in d.entries if e.category != "unchanged"]
    if rows:
        out += ["| workload | change | before | after | delta | what changed |",
                "| --- | --- | ---: | ---: | ---: | --- |"]
        for e in rows:
            name = f"{md_code(e.old_name)} → {md_code(e.name)}" if e.category == "renamed" else md_code(e.name)
            before = _hours(e.before.requested) if e.before else "—"
            after = _hours(e.after.requested) if e.after else "—"
            delta = _delta(e.delta)
            if e.before and e.after and _pct(e.before.requested, e.after.requested):
                delta += f" ({_pct(e.before.requested, e.after.requested)})"
            if e.category == "added":
                what = _describe(e.after)
            elif e.category == "removed":
                what = "was " + _describe(e.before)
            else:
                what = "; ".join(c.markdown for c in e.changes) or "name only"
            out.append(f"| {name} | {e.category} | {before} | {after} | {delta} | {what} |")
        out.append("")
    unchanged = d.of("unchanged")
    if unchanged:
        by_type: dict[str, float] = {}
        for e in unchanged:
            gpu = e.after.plan["gpu"]["type"]
            by_type[gpu] = by_type.get(gpu, 0.0) + e.after.requested
        noun = "workload" if len(unchanged) == 1 else "workloads"
        if len(by_type) == 1:
            hours = f"{_hours(next(iter(by_type.values())))} requested GPU-hours"
        else:     # per GPU type, never summed across types
            hours = "requested GPU-hours: " + ", ".join(f"{markdown_text(g)} {_hours(h)}" for g, h in sorted(by_type.items()))
        out += [f"{len(unchanged)} {noun} unchanged ({hours}).", ""]
    t0, t1 = d.old.totals, d.new.totals
    out += ["| totals | before | after | delta |", "| --- | ---: | ---: | ---: |"]

    def row(label: str, a: float, b: float, usd: bool = False) -> str:
        pct = _pct(a, b)
        if usd:     # dollars to the cent, '$' escaped for Markdown (GitHub reads $...$ as math)
            return (f"| {label} | \\${a:,.2f} | \\${b:,.2f} | {_dollar_delta(b - a)}{f' ({pct})' if pct else ''} |")
        return f"| {label} | {_hours(a)} | {_hours(b)} | {_delta(b - a)}{f' ({pct})' if pct else ''} |"

    # GPU-hours per GPU type, amounts per resource and per system in their units; a sum across GPU types only
    # where there is one type (issue 23), the need's range said to be of every type together.
    types = _gpu_types(d)
    if len(types) <= 1:
        out.append(row("**requested GPU-hours**", t0["gpu_hours_requested"], t1["gpu_hours_requested"]))
    for gpu in types:
        out.append(row(f"{'**requested GPU-hours, ' if len(types) > 1 else 'GPU-hours on '}{markdown_text(gpu)}"
                       f"{'**' if len(types) > 1 else ''}", t0["by_gpu_type"].get(gpu, 0.0),
                       t1["by_gpu_type"].get(gpu, 0.0)))
    r0, r1 = t0.get("by_resource", {}), t1.get("by_resource", {})
    for rid in sorted(set(r0) | set(r1)):
        unit = (r1.get(rid) or r0[rid])["unit"]
        out.append(row(f"{markdown_text(rid)}, {markdown_text(unit)}", r0.get(rid, {}).get("amount", 0.0),
                       r1.get(rid, {}).get("amount", 0.0), usd=unit == "USD"))
    s0, s1 = t0.get("by_system", {}), t1.get("by_system", {})
    for system in sorted(set(s0) | set(s1)):
        if len({rid for rid in set(r0) | set(r1) if system_of(rid) == system}) < 2:
            continue      # one resource: its row gives the amount
        unit = (s1.get(system) or s0[system])["unit"]
        out.append(row(f"**{markdown_text(system)}, {markdown_text(unit)}**", s0.get(system, {}).get("amount", 0.0),
                       s1.get(system, {}).get("amount", 0.0), usd=unit == "USD"))
    if len(types) <= 1:
        out.append(row("GPU-hours before the buffer", t0["gpu_hours"], t1["gpu_hours"]))
    spans = _total_range(d.old), _total_range(d.new)
    if None not in spans:
        together = " (all GPU types together)" if len(types) > 1 else ""
        # Each end to the 0.1 shown, outward (as _span): the p10 down, the p90 up; the change is of those figures.
        low, high = ([rounded_outward(span[end], 1, up=end == 1) for span in spans] for end in (0, 1))
        out.append(row(f"GPU-hours needed, p10{together}", *low))
        out.append(row(f"GPU-hours needed, p90{together}", *high))
        c0, c1 = t0.get("request_coverage"), t1.get("request_coverage")
        points = 100 * (c1 - c0) if c0 is not None and c1 is not None else None
        out.append(f"| request covers (validated cases) | {_share(c0) if c0 is not None else '—'} | "
                   f"{_share(c1) if c1 is not None else '—'} | "
                   f"{'—' if points is None else _delta(points) + ' points'} |")
    return "\n".join(out) + "\n"


def _numbers(v: Version | None) -> dict | None:
    if v is None:
        return None
    p = v.plan
    return {"model": p["model"]["id"], "kind": p["kind"], "method": p["method"],
            "gpu": {"type": p["gpu"]["type"], "count": p["gpu"]["count"]},
            "per_gpu_bytes": p["memory"]["per_gpu_bytes"], "tokens": p["tokens"],
            "tokens_per_second": p["tokens_per_second"], "runtime_hours": p["runtime_hours"],
            "variants": p["variants"], "buffer": p["buffer"], "gpu_hours": p["gpu_hours"],
            "gpu_hours_requested": p["gpu_hours_requested"], "resource": v.resource_id,
            "gpu_hours_range": (p.get("ranges") or {}).get("gpu_hours"), "request_coverage": p.get("request_coverage")}


def _round(x: float) -> float:
    return round(x, 6) + 0.0


def diff_dict(d: Diff) -> dict:
    """The JSON form (schema_version 1): every category a list, sorted by name."""
    def entry(e: Entry) -> dict:
        out = {"name": e.name}
        if e.category == "renamed":
            out["old_name"] = e.old_name
        out |= {"before": _numbers(e.before), "after": _numbers(e.after),
                "delta_gpu_hours_requested": _round(e.delta),
                "changes": [{"field": c.key, "before": c.before, "after": c.after, "text": c.text}
                            for c in e.changes]}
        return out

    t0, t1 = d.old.totals, d.new.totals

    def amounts(key: str) -> dict:
        """Per resource or per system: the change of its amount, in its unit (the new side's where both have it)."""
        a0, a1 = t0.get(key, {}), t1.get(key, {})
        return {k: {"unit": (a1.get(k) or a0[k])["unit"],
                    "amount": _round(a1.get(k, {}).get("amount", 0.0) - a0.get(k, {}).get("amount", 0.0))}
                for k in sorted(set(a0) | set(a1))}

    return {
        "schema_version": SCHEMA_VERSION,
        "old": d.old.label,
        "new": d.new.label,
        "summary": summary(d),
        **{c: [entry(e) for e in d.of(c)] for c in CATEGORIES},
        "totals": {
            "before": t0,
            "after": t1,
            "delta": {"gpu_hours": _round(t1["gpu_hours"] - t0["gpu_hours"]),
                      "gpu_hours_requested": _round(t1["gpu_hours_requested"] - t0["gpu_hours_requested"]),
                      "by_gpu_type": {g: _round(t1["by_gpu_type"].get(g, 0.0) - t0["by_gpu_type"].get(g, 0.0))
                                      for g in _gpu_types(d)},
                      "by_resource": amounts("by_resource"), "by_system": amounts("by_system")},
        },
    }


def run_diff(old: str, new: str, fmt: str = "markdown") -> str:
    """`proposalkit diff OLD NEW`: the budget change as Markdown or JSON."""
    d = compare(read_side(old), read_side(new))
    if fmt == "json":
        return json_control_escape(json.dumps(diff_dict(d), indent=2, ensure_ascii=False) + "\n")
    return markdown(d)
