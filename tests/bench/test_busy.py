"""bench.busy: the busy tenant's month fills every figure of the dashboard, and the
dashboard reads the same from its rows alone and rolled up (the two rows the bench times)."""

from datetime import UTC, datetime

import pytest

from approvals_app import rollup as approvals_rollup
from bench.busy import WINDOW, _load
from bench.generate.sql import tables
from console_app.selectors.dashboard import dashboard, window
from runs_app import rollup as runs_rollup
from tenancy_app.scoping import in_tenant
from tests.console.dashboard.data import PARIS

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)


def figures(tenant):
    with in_tenant(tenant):
        return dashboard(tenant, window("30d", PARIS, NOW), NOW, with_erasures=False)


def test_the_busy_month_reads_the_same_from_rows_and_rolled_up(tenant_a):
    from django.db import connection

    with in_tenant(tenant_a), connection.cursor() as cursor:
        _load(cursor, tables(), tenant_a.pk, 2_000, NOW)
    raw = figures(tenant_a)
    approvals, runs = raw["approvals"], raw["runs"]
    # 30 days back from noon: the window's first (Paris) day starts after the oldest few
    assert 1_900 < sum(approvals["asked"]) < 2_000
    assert sum(approvals["expired"]) > 150 and sum(approvals["decided"]) > 1_500
    assert len(approvals["by_tool"]) == 20 and set(approvals["latency"]) == {
        "low",
        "medium",
        "high",
        "critical",
    }
    assert {row["reason"] for row in runs["reasons"]} == {"tool_error", "timeout", "rate_limited"}
    assert sum(runs["by_status"]["running"]) == 20
    with in_tenant(tenant_a):
        closed = approvals_rollup.refresh(tenant_a.pk, NOW)
        runs_rollup.refresh(tenant_a.pk, NOW)
    assert closed > WINDOW / approvals_rollup.rollup.QUARTER * 0.9
    rolled = figures(tenant_a)
    for figure in ("asked", "decided", "expired", "voided", "pending"):
        assert rolled["approvals"][figure] == approvals[figure], figure
    assert rolled["runs"] == runs
    for risk, rows in approvals["latency"].items():
        for got, want in zip(rolled["approvals"]["latency"][risk], rows, strict=True):
            assert (got is None) == (want is None)
            if want:
                assert got["n"] == want["n"]
                assert (got["p50"], got["p95"]) == pytest.approx((want["p50"], want["p95"]))
    assert [row["n"] for row in rolled["approvals"]["by_tool"]] == [
        row["n"] for row in approvals["by_tool"]
    ]
