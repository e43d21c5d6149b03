"""The cost curve: one table of several bench runs at different scales.

    python -m bench.curve bench/results/scale-0.01/latest.json \\
        bench/results/scale-0.1/latest.json bench/results/latest.json \\
        bench/results/scale-10/latest.json

For every store hot operation, console page and the API load, the p50 (and,
for pages, the p95) at each scale, smallest scale first; the spread (the
largest p50 over the smallest) and the largest scale's p50 over the default
scale's (x 1), where the pages show as many rows as at the largest (at 0.01
the inbox or a list has fewer rows to show). "flat" is at most 1.5x (issue
17's bar) from the default scale up. Markdown on stdout, for bench/README.md.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FLAT = 1.5


def _runs(paths: list[str]) -> list[dict]:
    runs = [json.loads(Path(p).read_text()) for p in paths]
    return sorted(runs, key=lambda run: run["scale"]["factor"])


def _rows(run: dict) -> dict[str, tuple[float, float | None]]:
    """measurement -> (p50 ms, p95 ms or None) of one run."""
    sections = run["sections"]
    rows: dict[str, tuple[float, float | None]] = {}
    for op in sections.get("store", {}).get("operations", []):
        if "stateroom" in op and op["stateroom"].get("p50_ms"):
            rows[f"store: {op['operation']}"] = (op["stateroom"]["p50_ms"], None)
    for page in sections.get("console", {}).get("pages", []):
        if page.get("p50_ms") is not None:
            rows[f"console: {page['page'].split(' (')[0]}"] = (page["p50_ms"], page["p95_ms"])
    load = sections.get("api", {}).get("load")
    if load and load.get("p50_ms") is not None:
        rows["api: GET 50 items, gunicorn 2 sync workers under wrk"] = (load["p50_ms"], None)
    return rows


def _cell(value: tuple[float, float | None] | None) -> str:
    if value is None:
        return "-"
    p50, p95 = value
    return f"{p50:.2f}" if p95 is None else f"{p50:.1f} / {p95:.1f}"


def render(runs: list[dict]) -> str:
    tables = [_rows(run) for run in runs]
    names = [name for name in tables[-1] if all(name in table for table in tables)]
    head = ["measurement (p50 ms; pages p50 / p95)"]
    head += [f"x {run['scale']['factor']:g} ({_items(run)})" for run in runs]
    factors = [run["scale"]["factor"] for run in runs]
    default = factors.index(1.0) if 1.0 in factors else 0
    head += ["spread (max / min p50)", f"x {factors[-1]:g} / x {factors[default]:g}"]
    head += ["flat (<= 1.5x)"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for name in names:
        values = [table[name] for table in tables]
        p50s = [v[0] for v in values]
        spread = max(p50s) / min(p50s)
        growth = max(p50s[default:]) / p50s[default]
        cells = [name, *(_cell(v) for v in values), f"{spread:.2f}x", f"{growth:.2f}x"]
        cells.append("yes" if growth <= FLAT else "**no**")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _items(run: dict) -> str:
    items = run.get("dataset", {}).get("rows", {}).get("item")
    if not items:
        return "?"
    return f"{items / 1e6:g} M items" if items >= 1e6 else f"{items / 1e3:g} k items"


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    print(render(_runs(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
