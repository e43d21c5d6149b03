"""The dashboard: its numbers are the raw rows' (a week with known answers, an empty tenant,
one data point, a range across midnight, the DST changes of Europe/Paris); one tenant's data
only; what each role sees; the range and the time zone in the URL; a pinned query count."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from console_app.selectors.dashboard import dashboard, window
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.conftest import layout_queries
from tests.console.dashboard.data import (
    NOW,
    PARIS,
    ask,
    build_week,
    day,
    decide,
    expected,
    roll_up,
    t,
)

CASES = [("24h", UTC), ("24h", PARIS), ("7d", UTC), ("7d", PARIS), ("30d", PARIS), ("30d", UTC)]


@pytest.fixture
def clock(monkeypatch):
    monkeypatch.setattr("console_app.views.dashboard.now", lambda: NOW)


@pytest.fixture(params=["rows", "rolled up"])
def rolled(request):
    """Each figure test twice: read from the rows alone, and with every quarter that can be
    closed at NOW rolled up (the same numbers: stateroom.rollup)."""
    return request.param == "rolled up"


def figures_of(tenant, key: str, tz, now=NOW, with_erasures=True, rolled=False):
    win = window(key, tz, now)
    if rolled:
        roll_up(tenant, now)
    with in_tenant(tenant):
        return win, dashboard(tenant, win, now, with_erasures=with_erasures)


@pytest.mark.parametrize(("key", "tz"), CASES)
def test_every_figure_equals_the_raw_rows(rolled, tenant_a, key, tz):
    build_week(tenant_a)
    win, got = figures_of(tenant_a, key, tz, rolled=rolled)
    want = expected(tenant_a, win, NOW)
    approvals, runs, effects = got["approvals"], got["runs"], got["effects"]
    assert approvals["asked"] == want["asked"]
    assert approvals["decided"] == want["decided"]
    assert approvals["expired"] == want["expired"]
    assert approvals["voided"] == want["voided"]
    assert set(approvals["latency"]) == set(want["latency"])
    for risk, rows in want["latency"].items():
        for got_row, want_row in zip(approvals["latency"][risk], rows, strict=True):
            if want_row is None:
                assert got_row is None
            else:
                assert (got_row["n"], got_row["p50"], got_row["p95"]) == pytest.approx(want_row)
    assert approvals["pending"] == want["pending"]
    assert NOW - approvals["oldest_age"] == want["oldest"]
    assert runs["by_status"] == want["runs_by_status"]
    assert runs["tokens"] == want["tokens"]
    assert runs["cost"] == want["cost"]
    assert {row["reason"]: row["n"] for row in runs["reasons"]} == want["reasons"]
    assert effects["unknown"] == want["unknown"]
    assert effects["stuck"] == want["stuck"]
    assert (effects["unknown_total"], effects["stuck_total"]) == (
        want["unknown_total"],
        want["stuck_total"],
    )
    assert got["deletions"]["receipts"]["done"] == want["receipts_done"]


def test_known_answers_of_the_week_in_paris_and_in_utc(rolled, tenant_a):
    build_week(tenant_a)
    win, paris = figures_of(tenant_a, "7d", PARIS, rolled=rolled)
    assert win.keys == [day(d) for d in range(25, 32)]
    # 23:30 UTC on the 28th is the 29th in Paris; 22:30 UTC on the 29th is the 30th there.
    assert paris["approvals"]["asked"] == [0, 0, 0, 0, 3, 5, 3]
    _, utc = figures_of(tenant_a, "7d", UTC, rolled=rolled)
    assert utc["approvals"]["asked"] == [0, 0, 0, 1, 3, 5, 2]
    assert utc["approvals"]["expired"] == [0, 0, 0, 0, 1, 1, 0]  # one swept, one not yet
    assert utc["approvals"]["voided"] == [0, 0, 0, 0, 0, 1, 0]
    high = utc["approvals"]["latency"]["high"]
    # the 30th: 600 s and 1,800 s; the 31st: 1,200 s (asked before midnight)
    assert (high[5]["n"], high[5]["p50"], high[5]["p95"]) == (2, 1200.0, 1740.0)
    assert (high[6]["n"], high[6]["p50"], high[6]["p95"]) == (1, 1200.0, 1200.0)
    assert utc["approvals"]["pending"] == 2
    assert utc["approvals"]["oldest_age"] == timedelta(hours=3)
    assert utc["runs"]["by_status"]["failed"] == [0, 0, 0, 0, 2, 2, 0]
    assert utc["runs"]["tokens"] == [0, 0, 0, 500, 0, 1200, 0]
    assert utc["runs"]["cost"][5] == Decimal("0.6")
    assert [(r["reason"], r["n"]) for r in utc["runs"]["reasons"]] == [
        ("tool_failed", 2),
        ("", 1),
        ("timeout", 1),
    ]
    assert [(r["name"], r["tokens"]) for r in utc["runs"]["sessions"]] == [
        ("s-1", 1200),
        ("s-2", 500),
        ("s-deleted", 0),
    ]
    agents = [(r["name"], r["tokens"], r["n"]) for r in utc["runs"]["agents"]]
    assert agents[:2] == [("triage", 1200, 2), ("billing", 500, 3)]
    assert (utc["effects"]["unknown_total"], utc["effects"]["stuck_total"]) == (2, 1)
    assert utc["effects"]["unknown_older"] == 1
    assert utc["deletions"]["receipts"]["done"] == [0, 0, 0, 0, 0, 1, 0]


def test_days_around_dst_changes_are_23_and_25_hours(rolled, tenant_a):
    spring = window("7d", PARIS, NOW)
    lengths = [b - a for a, b in zip(spring.starts, spring.starts[1:], strict=False)]
    assert lengths[4] == timedelta(hours=23)  # 29 March
    assert set(lengths) - {lengths[4]} == {timedelta(hours=24)}
    autumn = window("7d", PARIS, datetime(2026, 10, 27, 12, tzinfo=UTC))
    assert autumn.starts[5] - autumn.starts[4] == timedelta(hours=25)  # 25 October
    # An event in the extra hour (02:30 CET, after 02:30 CEST) counts on its own day.
    with in_tenant(tenant_a):
        ask(tenant_a, "a-autumn", "refund", "low", datetime(2026, 10, 25, 1, 30, tzinfo=UTC))
    _, figures = figures_of(
        tenant_a, "7d", PARIS, now=datetime(2026, 10, 27, 12, tzinfo=UTC), rolled=rolled
    )
    assert figures["approvals"]["asked"] == [0, 0, 0, 0, 1, 0, 0]


def test_24_hours_cross_midnight_hour_by_hour(rolled, tenant_a):
    build_week(tenant_a)
    win, got = figures_of(tenant_a, "24h", UTC, rolled=rolled)
    assert win.keys[0] == t(30, 11) and win.keys[-1] == t(31, 10)
    midnight = win.keys.index(t(31, 0))
    assert got["approvals"]["asked"][midnight - 1] == 1  # a-refund-3 at 23:50
    assert got["approvals"]["decided"][midnight] == 1  # ... decided at 00:10
    assert got["approvals"]["latency"]["high"][midnight]["p95"] == 1200.0
    assert sum(got["approvals"]["asked"]) == 5  # exp-1 (12:00), void-1, refund-3, pend-1, pend-2
    paris_win = window("24h", PARIS, NOW)
    assert paris_win.keys == win.keys  # the same hours, labelled in the zone
    assert paris_win.label(midnight) == "02:00"


def test_an_empty_tenant_has_zeros_and_no_latency(rolled, tenant_a):
    _, got = figures_of(tenant_a, "30d", PARIS, rolled=rolled)
    assert got["approvals"]["asked"] == [0] * 30
    assert got["approvals"]["latency"] == {}
    assert got["approvals"]["pending"] == 0 and got["approvals"]["oldest_age"] is None
    assert got["runs"]["by_status"] == {} and got["runs"]["reasons"] == []
    assert got["effects"]["unknown_total"] == 0
    assert got["deletions"]["erasures"] == [0] * 30


def test_one_data_point_is_a_dot_with_its_own_percentiles(rolled, tenant_a, support_a, clock):
    with in_tenant(tenant_a):
        ask(tenant_a, "a-1", "refund", "medium", t(30, 8))
        decide(tenant_a, "a-1", t(30, 8, 7))
    _, got = figures_of(tenant_a, "7d", UTC, rolled=rolled)
    row = got["approvals"]["latency"]["medium"][5]
    assert (row["n"], row["p50"], row["p95"]) == (1, 420.0, 420.0)
    page = login(support_a).get("/t/acme/dashboard/?range=7d").content.decode()
    decision = _section(page, "decision-time")
    assert decision.count("<circle") == 1 and "<polyline" not in decision
    assert "1 approval decided by a person in the last 7 days" in decision
    assert "7.0 min" in decision


def _section(page: str, chart: str) -> str:
    match = re.search(
        rf'<section class="card chart-card" id="chart-{chart}".*?</section>', page, re.S
    )
    assert match, chart
    return match.group(0)


def test_the_page_draws_every_chart_with_summary_table_and_link(tenant_a, admin_a, clock):
    build_week(tenant_a)
    page = login(admin_a).get("/t/acme/dashboard/?range=7d&tz=Europe/Paris").content.decode()
    charts = re.findall(r'<section class="card chart-card" id="chart-([a-z-]+)"', page)
    assert charts == [
        "decision-time",
        "approval-flow",
        "backlog",
        "runs",
        "effects",
        "tokens",
        "cost",
        "deletions",
        "erasures",
    ]
    for chart in charts:
        section = _section(page, chart)
        assert (
            'role="img"' in section and "<table" in section and 'class="chart-summary"' in section
        )
        assert 'data-testid="link-' in section
    flow = _section(page, "approval-flow")
    assert "In the last 7 days: 11 asked, 6 decided, 2 expired undecided, 1 voided." in flow
    assert 'href="/t/acme/approvals/history/?tab=expired&amp;date_from=2026-03-24"' in flow
    # each day's row links to that day's decided approvals
    assert (
        'href="/t/acme/approvals/history/?tab=decided&amp;date_from=2026-03-29&amp;date_to=2026-03-29"'
        in flow
    )
    runs = _section(page, "runs")
    assert 'href="/t/acme/runs/?status=failed"' in runs
    assert "2 approvals pending now; the oldest was asked 3.0 h ago." in page
    assert (
        'href="/t/acme/approvals/history/?tab=decided&amp;date_from=2026-03-24&amp;tool=refund&amp;risk=high"'
        in page
    )
    assert 'href="/t/acme/effects/"' in _section(page, "effects")
    assert "tool_failed" in page and 'href="/t/acme/sessions/s-1/"' in page


def test_the_range_and_zone_are_kept_in_the_url(tenant_a, support_a, clock):
    client = login(support_a)
    page = client.get("/t/acme/dashboard/?range=24h&tz=Europe/Paris").content.decode()
    assert re.search(
        r'href="/t/acme/dashboard/\?range=24h&amp;tz=Europe/Paris" aria-current="page"', page
    )
    assert 'href="/t/acme/dashboard/?range=30d&amp;tz=Europe/Paris"' in page
    assert '<input type="hidden" name="range" value="24h">' in page
    assert len(re.findall(r"<tr><th scope=\"row\">", _section(page, "approval-flow"))) == 24
    default = client.get("/t/acme/dashboard/").content.decode()
    assert len(re.findall(r"<tr><th scope=\"row\">", _section(default, "approval-flow"))) == 7


@pytest.mark.parametrize("query", ["range=1y", "tz=Mars/Olympus", "tz=" + "x" * 65])
def test_a_bad_range_or_zone_is_a_400_that_says_why(tenant_a, support_a, query, clock):
    response = login(support_a).get(f"/t/acme/dashboard/?{query}")
    assert response.status_code == 400
    body = response.content.decode()
    assert 'data-testid="dashboard-errors"' in body and "<svg" not in body


def test_another_tenants_data_never_shows(tenant_a, tenant_b, admin_b, clock):
    build_week(tenant_a)
    client = login(admin_b)
    page = client.get("/t/globex/dashboard/?range=30d").content.decode()
    assert "No approval was decided by a person in the last 30 days." in page
    assert "0 runs started in the last 30 days." in page
    assert "s-1" not in page and "tool_failed" not in page
    _, figures = figures_of(tenant_b, "30d", UTC)
    assert sum(figures["approvals"]["asked"]) == 0
    # and the other tenant's dashboard is a 404, as for any page of it
    assert client.get("/t/acme/dashboard/").status_code == 404


def test_every_role_sees_it_and_only_admins_see_erasures(
    tenant_a, support_a, operator_a, admin_a, clock
):
    for user, erasures in ((support_a, False), (operator_a, False), (admin_a, True)):
        response = login(user).get("/t/acme/dashboard/")
        assert response.status_code == 200
        page = response.content.decode()
        assert ('id="chart-erasures"' in page) is erasures
        assert '<a href="/t/acme/dashboard/" aria-current="page">Dashboard</a>' in page


def test_a_stranger_logs_in_first(tenant_a, client):
    response = client.get("/t/acme/dashboard/")
    assert response.status_code == 302 and "/login/" in response["Location"]


@pytest.mark.parametrize("with_data", [False, True])
def test_the_query_count_is_pinned(
    tenant_a, support_a, admin_a, with_data, clock, django_assert_num_queries
):
    if with_data:
        build_week(tenant_a)
        roll_up(tenant_a)  # rolled-up quarters and raw ones: the same statements
    for user, own in ((support_a, 9), (admin_a, 10)):  # 10: the erasures' query
        client = login(user)
        with django_assert_num_queries(layout_queries(client, tenant_a) + own):
            assert client.get("/t/acme/dashboard/?range=30d").status_code == 200


def test_a_half_hour_zone_groups_its_own_days(rolled, tenant_a):
    kolkata = ZoneInfo("Asia/Kolkata")  # UTC+05:30
    with in_tenant(tenant_a):
        ask(tenant_a, "a-1", "refund", "low", t(30, 18, 29))  # 23:59 in Kolkata
        ask(tenant_a, "a-2", "refund", "low", t(30, 18, 31))  # 00:01 on the 31st there
    _, got = figures_of(tenant_a, "7d", kolkata, rolled=rolled)
    assert got["approvals"]["asked"][-2:] == [1, 1]


def test_what_runtimes_wrote_is_escaped(tenant_a, support_a, clock):
    with in_tenant(tenant_a):
        ask(tenant_a, "a-1", "<b>tool</b>", "low", t(30, 8), agent="<i>agent</i>")
        decide(tenant_a, "a-1", t(30, 8, 1))
        from runs_app.store import RunStateStore
        from tests.console.dashboard.data import RUNTIME, at

        store = RunStateStore(tenant_a, RUNTIME, clock=at(t(30, 9)))
        store.create(run_id="r-x", active_agent="<i>agent</i>")
        store.compare_and_set(
            run_id="r-x",
            expected_version=1,
            changes={"status": "failed", "error": {"code": "<s>x"}},
        )
    page = login(support_a).get("/t/acme/dashboard/").content.decode()
    assert "<b>tool</b>" not in page and "&lt;b&gt;tool&lt;/b&gt;" in page
    assert "<i>agent</i>" not in page and "&lt;i&gt;agent&lt;/i&gt;" in page
    assert "<s>x" not in page and "&lt;s&gt;x" in page
