"""The bench report's side-by-side rows: Stateroom beside its in-process peer, against a ratio."""

from bench.report import agents_rows, langgraph_rows


def _side(p50: float) -> dict:
    return {"ops_per_s": 1000 / p50, "p50_ms": p50, "p95_ms": p50 * 2}


def test_each_ratio_is_met_or_missed_against_its_target():
    section = {
        "stateroom": {"add 1": _side(3.0), "add 10": _side(5.0), "read 50": _side(2.0)},
        "sqlalchemy": {"add 1": _side(2.0), "add 10": _side(2.0), "read 50": _side(1.0)},
        "ratios": {"add 1": 1.5, "add 10": 2.5, "read 50": 2.0},
        "targets": {"add 1": 2.0, "add 10": 2.0, "read 50": 2.0},
    }
    rows = agents_rows(section)
    verdicts = [row[-1] for row in rows]
    assert verdicts == [
        "met: 1.50x SQLAlchemySession (p50)",
        "baseline",
        "**MISSED**: 2.50x SQLAlchemySession (p50)",
        "baseline",
        "met: 2.00x SQLAlchemySession (p50)",
        "baseline",
    ]
    assert rows[0][6] == "≤ 2x (p50)"


def test_the_checkpointers_include_the_whole_graph_and_say_when_not_measured():
    ops = ("put", "get_tuple", "list", "graph")
    section = {
        "checkpoint_bytes": 10240,
        "stateroom": {op: _side(4.0) for op in ops},
        "postgres": {op: _side(1.0) for op in ops},
        "ratios": dict.fromkeys(ops, 4.0),
        "targets": {"put": 3.0, "get_tuple": 3.0, "list": 3.0, "graph": 2.5},
    }
    rows = langgraph_rows(section)
    assert len(rows) == 8
    assert "3-node graph.invoke" in rows[6][1]
    assert rows[6][-1] == "**MISSED**: 4.00x PostgresSaver (p50)"
    failed = langgraph_rows({"error": "RuntimeError: no"})
    assert failed[0][-1] == "NOT MEASURED: RuntimeError: no"


def test_a_reference_page_has_no_target_and_no_verdict():
    from bench.report import _console_rows

    def page(name: str, p95: float, **extra) -> dict:
        return {
            "page": name,
            "path": "/t/x/dashboard/?range=30d",
            "ops_per_s": 2.0,
            "p50_ms": p95 - 20,
            "p95_ms": p95,
            "queries": 18,
            "queries_constant": True,
            "target_p95_ms": 150.0,
            "met": p95 < 150,
            **extra,
        }

    rows = _console_rows(
        {"pages": [page("from the rows alone", 550.0, reference=True), page("rolled up", 160.0)]}
    )
    assert rows[0][-2:] == ["reference", "—"]
    assert rows[1][-2] == "p95 < 150 ms, constant queries"
    assert rows[1][-1].startswith("**MISSED**: p95 160 ms")
