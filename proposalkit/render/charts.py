"""Charts as inline SVG, drawn by hand: no JavaScript, no fonts or files to fetch.

Charts a reviewer would rather look at than read:

- `bar_chart`: requested GPU-hours per workload (horizontal bars), each with the
  p10–p90 of the GPU-hours needed as an error bar.
- `memory_chart`: memory per GPU by component (stacked bars), each bar
  crossed by a vertical line at its GPU's usable memory.
- `burndown_chart` (the progress report): an allocation's amount remaining
  over its period, planned against used, and the recent rate carried on.

Every string that reaches the SVG goes through `xml_escape`; every number is
formatted with a fixed number of decimals, so the same plan gives the same
bytes (the golden HTML holds the charts too). Sizes are in CSS pixels; the
SVG scales to the column width through its viewBox.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from xml.sax.saxutils import escape as _escape

from .format import control_escape

# Okabe & Ito (2008) colour-blind-safe palette, in the order components are stacked.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999")
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
FONT_SIZE = 11          # px
CHAR_WIDTH = 6.4        # px per character at FONT_SIZE, for laying out labels (DejaVu Sans average)
WIDTH = 640             # px, the drawing's nominal width
BAR = 13                # px, bar thickness
GAP = 7                 # px between bars
TICKS = 5               # about this many grid lines
WHISKER = "#222222"     # an error bar across a bar: near black, seen on the blue bar and on white


def xml_escape(text: str) -> str:
    """Text for an SVG text node or attribute value; control characters as escapes (XML forbids them)."""
    return _escape(control_escape(text), {'"': "&quot;", "'": "&#39;"})


def _n(x: float) -> str:
    """A coordinate with one decimal, never '-0.0'."""
    s = f"{x:.1f}"
    return "0.0" if s == "-0.0" else s


def nice_step(span: float, ticks: int = TICKS) -> float:
    """A 1, 2 or 5 × 10^k grid step giving about `ticks` intervals over `span`."""
    if span <= 0:
        return 1.0
    raw = span / ticks
    power = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * power:
            return m * power
    return 10 * power


def _tick_label(x: float, step: float) -> str:
    decimals = 0 if step >= 1 else min(3, -math.floor(math.log10(step)))
    return f"{x:,.{decimals}f}"


def _label_width(labels) -> float:
    return max((len(s) for s in labels), default=0) * CHAR_WIDTH + 8


def _svg(width: float, height: float, title: str, body: list[str]) -> str:
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_n(width)} {_n(height)}" '
            f'width="{_n(width)}" height="{_n(height)}" role="img" aria-label="{xml_escape(title)}" '
            f'font-family="{FONT}" font-size="{FONT_SIZE}">')
    return "\n".join([head, f"<title>{xml_escape(title)}</title>", *body, "</svg>"]) + "\n"


def _axis(x0: float, plot_width: float, top: float, bottom: float, vmax: float, unit: str) -> tuple[list[str], float]:
    """Vertical grid lines with labels under the plot; returns (elements, scale px per unit)."""
    step = nice_step(vmax)
    top_value = step * math.ceil(vmax / step) if vmax > 0 else step
    scale = plot_width / top_value
    out = []
    k = 0
    while k * step <= top_value * (1 + 1e-9):
        x = x0 + k * step * scale
        out.append(f'<line x1="{_n(x)}" y1="{_n(top)}" x2="{_n(x)}" y2="{_n(bottom)}" '
                   'stroke="#dddddd" stroke-width="1"/>')
        out.append(f'<text x="{_n(x)}" y="{_n(bottom + 14)}" text-anchor="middle" fill="#444444">'
                   f'{xml_escape(_tick_label(k * step, step))}</text>')
        k += 1
    out.append(f'<text x="{_n(x0 + plot_width)}" y="{_n(bottom + 30)}" text-anchor="end" fill="#444444">'
               f'{xml_escape(unit)}</text>')
    return out, scale


def bar_chart(items: list[tuple[str, float, str]], *, title: str, unit: str,
              whiskers: list[tuple[float, float] | None] | None = None) -> str:
    """Horizontal bars: (label, value, value shown at the bar's end); `whiskers`, per bar, an interval (low,
    high) drawn across it as an error bar (None: none for that bar)."""
    whiskers = whiskers or [None] * len(items)
    label_w = _label_width(label for label, _, _ in items)
    value_w = _label_width(shown for _, _, shown in items)
    x0 = label_w
    plot_w = max(WIDTH - label_w - value_w, 120)
    top = 8
    bottom = top + len(items) * (BAR + GAP)
    vmax = max([v for _, v, _ in items] + [span[1] for span in whiskers if span], default=0.0)
    grid, scale = _axis(x0, plot_w, top, bottom, vmax, unit)
    body = list(grid)
    for i, ((label, value, shown), span) in enumerate(zip(items, whiskers)):
        y = top + GAP / 2 + i * (BAR + GAP)
        w = max(value * scale, 0.0)
        body.append(f'<text x="{_n(x0 - 6)}" y="{_n(y + BAR * 0.75)}" text-anchor="end">{xml_escape(label)}</text>')
        body.append(f'<rect x="{_n(x0)}" y="{_n(y)}" width="{_n(w)}" height="{BAR}" fill="{PALETTE[0]}"/>')
        end = w
        if span is not None and span[1] > span[0]:
            lo, hi = x0 + span[0] * scale, x0 + span[1] * scale
            mid = y + BAR / 2
            body.append(f'<path d="M{_n(lo)} {_n(mid)}H{_n(hi)}M{_n(lo)} {_n(y + 2)}V{_n(y + BAR - 2)}'
                        f'M{_n(hi)} {_n(y + 2)}V{_n(y + BAR - 2)}" stroke="{WHISKER}" stroke-width="1.5" '
                        'fill="none"/>')
            end = max(end, hi - x0)
        body.append(f'<text x="{_n(x0 + end + 4)}" y="{_n(y + BAR * 0.75)}">{xml_escape(shown)}</text>')
    return _svg(WIDTH, bottom + 38, title, body)


@dataclass(frozen=True)
class StackedBar:
    label: str                      # the bar's name (workload)
    parts: tuple[tuple[str, float], ...]   # (component, value), stacked left to right
    capacity: float                 # the GPU's usable memory, drawn as a line across the bar
    shown: str                      # written right of the bar and the line, e.g. "28.21 of 79.15 GiB (a100-80gb)"


def memory_chart(bars: list[StackedBar], *, title: str, unit: str) -> str:
    """Stacked horizontal bars by component, a capacity line across each bar, and a legend."""
    names: list[str] = []
    for bar in bars:
        for name, value in bar.parts:
            if value > 0 and name not in names:
                names.append(name)
    colour = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}
    label_w = _label_width(b.label for b in bars)
    value_w = _label_width(b.shown for b in bars)
    x0 = label_w
    plot_w = max(WIDTH - label_w - value_w, 120)
    top = 8
    bottom = top + len(bars) * (BAR + GAP)
    vmax = max([sum(v for _, v in b.parts) for b in bars] + [b.capacity for b in bars] + [0.0])
    grid, scale = _axis(x0, plot_w, top, bottom, vmax, unit)
    body = list(grid)
    for i, bar in enumerate(bars):
        y = top + GAP / 2 + i * (BAR + GAP)
        body.append(f'<text x="{_n(x0 - 6)}" y="{_n(y + BAR * 0.75)}" text-anchor="end">{xml_escape(bar.label)}</text>')
        x = x0
        for name, value in bar.parts:
            if value <= 0:
                continue
            w = value * scale
            body.append(f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{BAR}" fill="{colour[name]}">'
                        f'<title>{xml_escape(name)}</title></rect>')
            x += w
        cx = x0 + bar.capacity * scale
        body.append(f'<line x1="{_n(cx)}" y1="{_n(y - 3)}" x2="{_n(cx)}" y2="{_n(y + BAR + 3)}" '
                    f'stroke="#000000" stroke-width="2"/>')
        body.append(f'<text x="{_n(max(x, cx) + 5)}" y="{_n(y + BAR * 0.75)}">{xml_escape(bar.shown)}</text>')
    # Legend: swatches under the axis, wrapping when needed.
    ly = bottom + 44
    lx = x0
    for name in names + ["usable memory"]:
        w = 14 + len(name) * CHAR_WIDTH + 14
        if lx + w > WIDTH and lx > x0:
            lx, ly = x0, ly + 16
        if name == "usable memory":
            body.append(f'<line x1="{_n(lx + 5)}" y1="{_n(ly - 10)}" x2="{_n(lx + 5)}" y2="{_n(ly + 2)}" '
                        f'stroke="#000000" stroke-width="2"/>')
        else:
            body.append(f'<rect x="{_n(lx)}" y="{_n(ly - 9)}" width="10" height="10" fill="{colour[name]}"/>')
        body.append(f'<text x="{_n(lx + 14)}" y="{_n(ly)}">{xml_escape(name)}</text>')
        lx += w
    return _svg(WIDTH, ly + 8, title, body)


@dataclass(frozen=True)
class BurnDown:
    """One budget over the allocation, as amounts remaining (x: days from the allocation's start)."""

    label: str                               # the budget: "GPU-hours", a system
    unit: str
    planned: float                           # the request at the start; the planned line falls to 0 at `days`
    days: int                                # the allocation's length in days
    used: tuple[tuple[int, float], ...]      # (day, remaining at that day's end), up to the as-of day
    projection: tuple[tuple[int, float], tuple[int, float]] | None   # at the last 30 days' rate, from as-of on
    day_labels: tuple[tuple[int, str], ...]  # x-axis ticks: (day, text)


def burndown_chart(b: BurnDown, *, title: str) -> str:
    """Remaining amount over the allocation: planned (a straight line to zero at its end), used (the
    accounting, day by day), and the rate of the last 30 days carried on (dashed), with a legend."""
    left, right, top, height = 64.0, 16.0, 10.0, 180.0
    plot_w = WIDTH - left - right
    bottom = top + height
    values = [b.planned, 0.0] + [v for _, v in b.used] + ([p[1] for p in b.projection] if b.projection else [])
    vmax, vmin = max(values), min(values)
    step = nice_step(vmax - min(vmin, 0.0))
    high = step * math.ceil(vmax / step) if vmax > 0 else step
    low = step * math.floor(vmin / step) if vmin < 0 else 0.0
    days = max([b.days, 1] + [d for d, _ in b.used] + ([b.projection[1][0]] if b.projection else []))

    def x(day: float) -> float:
        return left + plot_w * day / days

    def y(value: float) -> float:
        return bottom - height * (value - low) / (high - low)

    body = []
    k = 0
    while low + k * step <= high * (1 + 1e-9) + 1e-12:
        v = low + k * step
        body.append(f'<line x1="{_n(left)}" y1="{_n(y(v))}" x2="{_n(left + plot_w)}" y2="{_n(y(v))}" '
                    f'stroke="{"#999999" if v == 0 else "#dddddd"}" stroke-width="1"/>')
        body.append(f'<text x="{_n(left - 6)}" y="{_n(y(v) + 4)}" text-anchor="end" fill="#444444">'
                    f'{xml_escape(_tick_label(v, step))}</text>')
        k += 1
    for day, text in b.day_labels:
        body.append(f'<line x1="{_n(x(day))}" y1="{_n(bottom)}" x2="{_n(x(day))}" y2="{_n(bottom + 4)}" '
                    'stroke="#444444" stroke-width="1"/>')
        body.append(f'<text x="{_n(x(day))}" y="{_n(bottom + 16)}" text-anchor="middle" fill="#444444">'
                    f'{xml_escape(text)}</text>')
    body.append(f'<text x="{_n(left)}" y="{_n(bottom + 32)}" fill="#444444">{xml_escape(b.unit)} remaining</text>')
    body.append(f'<line x1="{_n(x(0))}" y1="{_n(y(b.planned))}" x2="{_n(x(b.days))}" y2="{_n(y(0))}" '
                f'stroke="{PALETTE[7]}" stroke-width="2"><title>planned</title></line>')
    if b.used:
        points = " ".join(f"{_n(x(d))},{_n(y(v))}" for d, v in ((0, b.planned),) + b.used)
        body.append(f'<polyline points="{points}" fill="none" stroke="{PALETTE[0]}" stroke-width="2">'
                    '<title>used</title></polyline>')
    if b.projection:
        (d0, v0), (d1, v1) = b.projection
        body.append(f'<line x1="{_n(x(d0))}" y1="{_n(y(v0))}" x2="{_n(x(d1))}" y2="{_n(y(v1))}" '
                    f'stroke="{PALETTE[5]}" stroke-width="2" stroke-dasharray="6 4"><title>at the last 30 days\' '
                    'rate</title></line>')
    ly, lx = bottom + 32, left + 150
    for name, colour, dash in (("planned", PALETTE[7], ""), ("used", PALETTE[0], ""),
                               ("at the last 30 days' rate", PALETTE[5], ' stroke-dasharray="6 4"')):
        body.append(f'<line x1="{_n(lx)}" y1="{_n(ly - 4)}" x2="{_n(lx + 18)}" y2="{_n(ly - 4)}" stroke="{colour}" '
                    f'stroke-width="2"{dash}/>')
        body.append(f'<text x="{_n(lx + 22)}" y="{_n(ly)}">{xml_escape(name)}</text>')
        lx += 22 + len(name) * CHAR_WIDTH + 18
    return _svg(WIDTH, ly + 10, title, body)
