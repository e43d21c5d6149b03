"""Charts as server-rendered SVG: the geometry of bar and line charts, drawn by
`templates/console/dashboard/_chart.html`, and the table of the data behind each.

No JavaScript: a chart is part of the page's HTML (it works without scripts, under the
console's CSP, printed, and in the tests' HTML), and it is small enough to own
(docs/architecture.md, "The dashboard").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from django.utils.html import escape
from django.utils.safestring import mark_safe

WIDTH, HEIGHT = 640, 180
LEFT, RIGHT, TOP, BOTTOM = 64, 8, 10, 22
MAX_X_LABELS = 8


@dataclass(frozen=True)
class Series:
    name: str
    values: Sequence[float | int | Decimal | None]
    css: str  # the colour's class (`.chart .k-<css>`)


def nice_ceiling(value: float) -> float:
    """The smallest 1, 2, 2.5 or 5 times 10^k at or above `value` (1 for nothing)."""
    if value <= 0:
        return 1
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * power:
            return step * power
    return 10 * power  # pragma: no cover (the loop always returns)


def _frame(labels: Sequence[str], top: float, fmt: Callable[[float], str]) -> dict:
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / max(len(labels), 1)
    every = max(1, math.ceil(len(labels) / MAX_X_LABELS))
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "left": LEFT,
        "right": WIDTH - RIGHT,
        "base": TOP + plot_h,
        "slot": slot,
        "ticks": [
            {"y": round(TOP + plot_h * (1 - f), 1), "label": fmt(top * f)} for f in (0, 0.5, 1)
        ],
        "xlabels": [
            {"x": round(LEFT + slot * (i + 0.5), 1), "label": label}
            for i, label in enumerate(labels)
            if i % every == 0
        ],
        "scale": plot_h / top,
    }


def _number(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 or value == int(value) else f"{value:,.2f}"


def bar_chart(labels: Sequence[str], series: Sequence[Series], fmt=_number) -> dict:
    """Stacked bars, one per label; each series a layer."""
    totals = [sum(float(s.values[i] or 0) for s in series) for i in range(len(labels))]
    frame = _frame(labels, nice_ceiling(max(totals, default=0)), fmt)
    bars = []
    width = max(frame["slot"] * 0.7, 1)
    for i, label in enumerate(labels):
        y = frame["base"]
        for s in series:
            value = float(s.values[i] or 0)
            if not value:
                continue
            height = value * frame["scale"]
            y -= height
            bars.append(
                {
                    "x": round(LEFT + frame["slot"] * i + (frame["slot"] - width) / 2, 1),
                    "y": round(y, 1),
                    "w": round(width, 1),
                    "h": round(max(height, 0.5), 1),
                    "css": s.css,
                    "title": f"{label}: {s.name} {fmt(value)}",
                }
            )
    chart = {"kind": "bars", **frame, "bars": bars, "legend": series}
    return {**chart, "svg": svg_body(chart)}


def line_chart(labels: Sequence[str], series: Sequence[Series], fmt=_number) -> dict:
    """One line per series; a missing value (None) breaks the line; a lone point is a dot."""
    values = [float(v) for s in series for v in s.values if v is not None]
    frame = _frame(labels, nice_ceiling(max(values, default=0)), fmt)
    lines = []
    for s in series:
        segments: list[list[tuple[float, float]]] = [[]]
        for i, value in enumerate(s.values):
            if value is None:
                segments.append([])
                continue
            x = LEFT + frame["slot"] * (i + 0.5)
            y = frame["base"] - float(value) * frame["scale"]
            segments[-1].append((round(x, 1), round(y, 1)))
        for points in segments:
            if len(points) > 1:
                text = " ".join(f"{x},{y}" for x, y in points)
                lines.append({"css": s.css, "points": text})
            elif points:
                lines.append({"css": s.css, "dot": points[0]})
    chart = {"kind": "lines", **frame, "lines": lines, "legend": series}
    return {**chart, "svg": svg_body(chart)}


def data_table(
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    urls: Sequence[str | None] | None = None,
    fmt=_number,
) -> dict:
    """The numbers behind a chart: a row per label, a column per series."""
    rows = []
    for i, label in enumerate(labels):
        cells = ["—" if s.values[i] is None else fmt(float(s.values[i])) for s in series]
        rows.append({"label": label, "url": urls[i] if urls else None, "cells": cells})
    return {"head": [s.name for s in series], "rows": rows}


def svg_body(chart: dict) -> str:
    """The SVG's elements (grid, ticks, labels, bars or lines) as one safe string, text
    escaped (numbers are ours): a 30-day page draws hundreds of elements, which Python
    writes several times faster than template loops."""
    left, right, height = chart["left"], chart["right"], chart["height"]
    parts = [
        f'<line class="grid" x1="{left}" x2="{right}" y1="{t["y"]}" y2="{t["y"]}"/>'
        f'<text class="tick" x="{left - 6}" y="{t["y"]}" text-anchor="end"'
        f' dominant-baseline="middle">{escape(t["label"])}</text>'
        for t in chart["ticks"]
    ]
    parts += [
        f'<text class="tick" x="{x["x"]}" y="{height - 6}" text-anchor="middle">'
        f"{escape(x['label'])}</text>"
        for x in chart["xlabels"]
    ]
    parts += [
        f'<rect class="k-{escape(b["css"])}" x="{b["x"]}" y="{b["y"]}" width="{b["w"]}"'
        f' height="{b["h"]}"><title>{escape(b["title"])}</title></rect>'
        for b in chart.get("bars", ())
    ]
    for line in chart.get("lines", ()):
        css = escape(line["css"])
        if "points" in line:
            parts.append(f'<polyline class="line k-{css}" points="{line["points"]}"/>')
        else:
            x, y = line["dot"]
            parts.append(f'<circle class="dot k-{css}" cx="{x}" cy="{y}" r="3"/>')
    return mark_safe("".join(parts))


def table_body(table: dict) -> str:
    """The data table's rows as one safe string, text escaped (see `svg_body`)."""
    rows = []
    for row in table["rows"]:
        head = escape(row["label"])
        if row["url"]:
            head = f'<a href="{escape(row["url"])}">{head}</a>'
        cells = "".join(f"<td>{escape(cell)}</td>" for cell in row["cells"])
        rows.append(f'<tr><th scope="row">{head}</th>{cells}</tr>')
    if not rows:
        span = len(table["head"]) + 1
        rows.append(f'<tr><td class="empty" colspan="{span}">Nothing yet.</td></tr>')
    return mark_safe("".join(rows))
