"""The cost curve: one table of several bench runs at different scales.

    python -m bench.curve bench/results/scale-0.01/latest.json \\
        bench/results/scale-0.1/latest.json bench/results/latest.json \\
        bench/results/scale-10/latest.json

For every store hot operation, console page and the API load, the p50 (and,
for pages, the p95) at each scale, smallest scale first; several runs of one
scale make one column of their medians, with the range of the p50s in
brackets (`python -m bench.curve a/latest.json b/latest.json c/latest.json`
for three runs at scale 10, beside the other scales' files); the spread (the
largest p50 over the smallest) and the largest scale's p50 over the default
scale's (x 1), where the pages show as many rows as at the largest (at 0.01
the inbox or a list has fewer rows to show). "flat" is at most 1.5x (issue
17's bar) from the default scale up. Markdown on stdout, for bench/README.md.
"""

from __future__ import annotations

import json
import statistics
import sys
from itertools import groupby
from pathlib import Path

FLAT = 1.5


def _runs(paths: list[str]) -> list[list[dict]]:
    """The runs, grouped by scale (smallest first)."""
    runs = [json.loads(Path(p).read_text()) for p in paths]
    runs.sort(key=lambda run: run["scale"]["factor"])
    return [list(group) for _, group in groupby(runs, key=lambda run: run["scale"]["factor"])]


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
        rows["api: GET 50 items, the production server's 2 workers under wrk"] = (
            load["p50_ms"],
            None,
        )
    return rows


# One scale's measurement: (median p50, median p95 or None, every run's p50).
Cell = tuple[float, float | None, list[float]]


def _medians(group: list[dict]) -> dict[str, Cell]:
    tables = [_rows(run) for run in group]
    cells: dict[str, Cell] = {}
    for name in tables[0]:
        if not all(name in table for table in tables):
            continue
        p50s = [table[name][0] for table in tables]
        p95s = [table[name][1] for table in tables]
        p95 = statistics.median(p95s) if all(v is not None for v in p95s) else None
        cells[name] = (statistics.median(p50s), p95, p50s)
    return cells


def _cell(value: Cell | None) -> str:
    if value is None:
        return "-"
    p50, p95, runs = value
    text = f"{p50:.2f}" if p95 is None else f"{p50:.1f} / {p95:.1f}"
    if len(runs) > 1:
        digits = 2 if p95 is None else 1
        text += f" ({min(runs):.{digits}f}-{max(runs):.{digits}f})"
    return text


def render(groups: list[list[dict]]) -> str:
    """The table of runs grouped by scale (`_runs`); a lone run is a group of one."""
    groups = [group if isinstance(group, list) else [group] for group in groups]
    tables = [_medians(group) for group in groups]
    names = [name for name in tables[-1] if all(name in table for table in tables)]
    head = ["measurement (p50 ms; pages p50 / p95)"]
    head += [_heading(group) for group in groups]
    factors = [group[0]["scale"]["factor"] for group in groups]
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


def _heading(group: list[dict]) -> str:
    runs = f", median of {len(group)}" if len(group) > 1 else ""
    return f"x {group[0]['scale']['factor']:g} ({_items(group[0])}{runs})"


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
