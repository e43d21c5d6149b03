"""bench.curve: the table of runs at several scales, and what it calls flat."""

from bench.curve import render


def _run(factor: float, items: int, append_ms: float, page_ms: tuple[float, float]) -> dict:
    return {
        "scale": {"factor": factor},
        "dataset": {"rows": {"item": items}},
        "sections": {
            "store": {
                "operations": [
                    {"operation": "append 1 item", "stateroom": {"p50_ms": append_ms}},
                    # The contention row has no per-call p50: not a row of the curve.
                    {"operation": "read + CAS, 2 threads", "stateroom": {"p50_ms": 0.0}},
                ]
            },
            "console": {
                "pages": [
                    {
                        "page": f"timeline ({items:,} items)",
                        "p50_ms": page_ms[0],
                        "p95_ms": page_ms[1],
                    }
                ]
            },
        },
    }


def test_the_curve_flags_growth_over_one_and_a_half_from_the_default_scale_up():
    table = render(
        [
            _run(0.01, 10_000, 0.5, (10.0, 12.0)),  # fewer rows to show: not held to the bar
            _run(1, 1_000_000, 1.0, (20.0, 25.0)),
            _run(10, 10_000_000, 1.2, (40.0, 60.0)),
        ]
    ).splitlines()
    assert table[0].split(" | ")[1:5] == [
        "x 0.01 (10 k items)",
        "x 1 (1 M items)",
        "x 10 (10 M items)",
        "spread (max / min p50)",
    ]
    rows = {line.split(" | ")[0].lstrip("| "): line for line in table[2:]}
    assert set(rows) == {"store: append 1 item", "console: timeline"}
    assert rows["store: append 1 item"].endswith("| 1.20 | 2.40x | 1.20x | yes |")
    assert rows["console: timeline"].endswith("| 40.0 / 60.0 | 4.00x | 2.00x | **no** |")


def test_runs_of_one_scale_make_one_column_of_medians_with_their_range():
    table = render(
        [
            [_run(1, 1_000_000, 1.0, (20.0, 25.0))],
            [
                _run(10, 10_000_000, 1.2, (40.0, 60.0)),
                _run(10, 10_000_000, 2.0, (25.0, 30.0)),
                _run(10, 10_000_000, 1.4, (30.0, 90.0)),
            ],
        ]
    ).splitlines()
    assert table[0].split(" | ")[2] == "x 10 (10 M items, median of 3)"
    rows = {line.split(" | ")[0].lstrip("| "): line for line in table[2:]}
    # Medians: p50 1.4 of (1.2, 2.0, 1.4); the page's p50 30 and p95 60, each its own median.
    assert rows["store: append 1 item"].endswith("| 1.40 (1.20-2.00) | 1.40x | 1.40x | yes |")
    assert rows["console: timeline"].endswith("| 30.0 / 60.0 (25.0-40.0) | 1.50x | 1.50x | yes |")
