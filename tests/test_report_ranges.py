"""The documents show each request's range (issue 22, item 6), through the command line: section B's table gives
p10–p90 and coverage beside each request, the supplement's chart its error bars and each derivation its Range
line; every figure read back from `proposalkit plan --format json` of the same file.

Three workloads: a rate from FLOPs (the FLOPs regime's validation rows), a measured rate given without its
log (the step spread of measured training runs) and a service costed by its hours (no spread).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import textwrap

import pytest

from proposalkit.cli import main
from proposalkit.render.format import fmt_hours, fmt_pct

WORKLOADS = textwrap.dedent("""\
    workloads:
      - name: pretrain
        kind: pretrain
        model: llama-3.2-1b
        tokens: 1B
        gpu: h100-80gb
        gpus: 4
      - name: tune
        kind: finetune
        method: lora
        model: llama-3.1-8b
        tokens: 100M
        variants: 4
        throughput: {tokens_per_second: 3000, gpu: a100-80gb, gpus: 1}
        gpu: a100-80gb
        gpus: 1
      - name: serve
        kind: inference
        model: llama-3.1-8b
        context: 4k
        hours: 200
        gpu: a100-80gb
        gpus: 1
        buffer: auto
        coverage: 0.9
    """)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(plan JSON, report.md, report.html, the GPU-hours chart's SVG, a second build's files, supplement.md) of
    WORKLOADS."""
    root = tmp_path_factory.mktemp("ranges")
    path = root / "w.yaml"
    path.write_text(WORKLOADS, encoding="utf-8")
    out = {}
    for name in ("a", "b"):
        assert main(["report", str(path), "-o", str(root / name), "--format", "md,html"]) == 0
        out[name] = {p.relative_to(root / name).as_posix(): p.read_bytes()
                     for p in sorted((root / name).rglob("*")) if p.is_file()}
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(["plan", str(path), "--format", "json"]) == 0
    plan = json.loads(buffer.getvalue())
    files = out["a"]
    return (plan, files["report.md"].decode(), files["report.html"].decode(),
            files["charts/gpu-hours.svg"].decode(), out, files["supplement.md"].decode())


def workload(plan, name):
    return next(w for w in plan["workloads"] if w["name"] == name)


def span(r: dict) -> str:
    low, high = fmt_hours(r["p10"]), fmt_hours(r["p90"])
    return low if low == high else f"{low}–{high}"


def test_reruns_are_byte_identical(built):
    out = built[4]
    assert out["a"] == out["b"]


def test_summary_table_has_each_range_and_coverage(built):
    plan, md, html, *_ = built
    assert "| requested GPU-h | need p10–p90 | covers |" in md
    for w in plan["workloads"]:
        cells = (f"| {fmt_hours(w['gpu_hours_requested'])} | {span(w['ranges']['gpu_hours'])} | "
                 f"{fmt_pct(w['request_coverage'])} |")
        assert any(line.startswith(f"| {w['name']} |") and line.endswith(cells) for line in md.splitlines()), cells
        assert (f'<td class="num">{span(w["ranges"]["gpu_hours"])}</td>'
                f'<td class="num">{fmt_pct(w["request_coverage"])}</td>') in html
    # Totals are per GPU type (issue 23): the plan's whole-request range adds GPU-hours of H100s and A100s, so
    # section B does not show it; the plan JSON keeps it, the workloads' p10s and p90s added (comonotonic:
    # CONTRACT.md, planning/intervals.py).
    t = plan["totals"]
    assert span(t["ranges"]["gpu_hours"]) not in md
    for p in ("p10", "p90"):
        assert t["ranges"]["gpu_hours"][p] == pytest.approx(
            sum(w["ranges"]["gpu_hours"][p] for w in plan["workloads"]), abs=1e-5)
    # buffer: auto on the service: the note says what such a buffer covers.
    assert "a buffer set by coverage covers the estimate's error only" in md


def test_the_ranges_differ_as_their_sources_do(built):
    plan, *_ = built
    pretrain, tune, serve = (workload(plan, n) for n in ("pretrain", "tune", "serve"))
    assert pretrain["ranges_basis"]["gpu_hours"]["regime"] == "flops-single-node"
    assert tune["ranges_basis"]["gpu_hours"]["regime"] == "pilot-steps"
    assert serve["ranges_basis"]["gpu_hours"]["regime"] is None
    width = {n: w["ranges"]["gpu_hours"]["p90"] / w["ranges"]["gpu_hours"]["p10"]
             for n, w in (("pretrain", pretrain), ("tune", tune))}
    assert width["pretrain"] > width["tune"] > 1
    r = serve["ranges"]["gpu_hours"]
    assert r["p10"] == r["p50"] == r["p90"] == serve["gpu_hours"] and serve["request_coverage"] == 1


def test_derivation_says_where_each_range_comes_from(built):
    plan, md = built[0], built[5]
    pretrain, tune = workload(plan, "pretrain"), workload(plan, "tune")
    for w, rows in ((pretrain, f"estimated speed, one node: {pretrain['ranges_basis']['gpu_hours']['rows']} validation "
                               "runs"),
                    (tune, f"{tune['ranges_basis']['gpu_hours']['rows']:,} steps of measured training runs")):
        r = w["ranges"]["gpu_hours"]
        assert re.search(rf"- \*\*Range:\*\* p10–p90 {re.escape(fmt_hours(w['gpu_hours']))} ÷ [\d.]+ to ÷ [\d.]+ = "
                         rf"{re.escape(fmt_hours(r['p10']))}–{re.escape(fmt_hours(r['p90']))} GPU-h "
                         rf"\({re.escape(rows)}\); covers {re.escape(fmt_pct(w['request_coverage']))}", md)
    assert "- **Range:** none: a service's GPU-hours are its hours" in md


def test_chart_error_bars_span_p10_to_p90(built):
    """Each bar with a spread carries a whisker from its p10 to its p90, on the bars' own scale; a service's
    bar (no spread) none."""
    plan, _, _, svg, *_ = built
    bars = re.findall(r'<rect x="([0-9.]+)" y="([0-9.]+)" width="([0-9.]+)" height="13"', svg)
    whiskers = re.findall(r'<path d="M([0-9.]+) ([0-9.]+)H([0-9.]+)M', svg)
    assert len(bars) == 3 and len(whiskers) == 2
    by_y = {float(y) + 13 / 2: (float(x), float(w)) for x, y, w in bars}
    names = [w["name"] for w in plan["workloads"]]
    for (lo, mid, hi), name in zip(whiskers, names[:2]):
        x0, width = by_y[float(mid)]
        w = workload(plan, name)
        scale = width / w["gpu_hours_requested"]
        r = w["ranges"]["gpu_hours"]
        assert float(lo) == pytest.approx(x0 + r["p10"] * scale, abs=0.1)
        assert float(hi) == pytest.approx(x0 + r["p90"] * scale, abs=0.1)


def test_plan_markdown_has_the_ranges_too(tmp_path, capsys):
    path = tmp_path / "w.yaml"
    path.write_text(WORKLOADS, encoding="utf-8")
    assert main(["plan", str(path), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "| need p10–p90 | covers |" in out
    assert "covers: the share of those runs the request suffices for; a buffer set by coverage covers" in out
