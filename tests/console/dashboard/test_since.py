"""The rollups' sums since an origin (stateroom.rollup.sum_days: `ApprovalWaitSince`,
`RunSince`): a day's, or a month's, figures are the difference of two sums; a zone's day
is the difference at the nearest UTC midnights with the quarters in between
(stateroom.rollup.cover). The sums equal the quarters', go back when a quarter is written
anew or opened again, and keep only the last KEPT days."""

from __future__ import annotations

import math
from collections import Counter
from datetime import UTC, timedelta
from zoneinfo import ZoneInfo

import pytest

from approvals_app.models import ApprovalWaitQuarter, ApprovalWaitSince
from approvals_app.rollup import ALL_TOOLS
from approvals_app.store import ApprovalStore
from console_app.selectors.dashboard import rollups, window
from console_app.selectors.rolled import pieces
from runs_app.models import RunQuarter, RunSince
from runs_app.store import RunStateStore
from runs_app.store.content import RUN_ERRORS
from stateroom.rollup import DAY, KEPT, cover
from tenancy_app.scoping import in_tenant
from tests.console.dashboard.data import (
    OPERATOR,
    PARIS,
    RUNTIME,
    ask,
    at,
    build_week,
    decide,
    roll_up,
    t,
)
from tests.console.dashboard.test_rollup import assert_figures_are_the_rows, states

H = timedelta(hours=1)
KOLKATA = ZoneInfo("Asia/Kolkata")


def test_a_utc_day_is_two_sums_and_nothing_else():
    assert cover(t(29, 0), t(30, 0), (t(1, 0), t(31, 0))) == ([(t(30, 0), 1), (t(29, 0), -1)], [])


def test_a_paris_day_is_the_utc_day_less_its_last_hour_plus_the_one_before():
    lo, hi = t(28, 23), t(29, 22)  # 29 March in Paris: CET, then CEST from 02:00
    assert cover(lo, hi, (t(1, 0), t(31, 0))) == (
        [(t(30, 0), 1), (t(29, 0), -1)],
        [(t(28, 23), t(29, 0), 1), (t(29, 22), t(30, 0), -1)],
    )


def test_a_half_hour_zones_day_has_quarter_edges():
    lo = t(28, 18, 30)  # 29 March in Kolkata (+5:30)
    assert cover(lo, lo + 24 * H, (t(1, 0), t(31, 0))) == (
        [(t(30, 0), 1), (t(29, 0), -1)],
        [(t(28, 18, 30), t(29, 0), 1), (t(29, 18, 30), t(30, 0), -1)],
    )


def test_what_the_sums_do_not_reach_is_read_as_quarters():
    # no sums at all, or an hour: the quarters alone
    assert cover(t(29, 3), t(29, 4), (t(1, 0), t(31, 0))) == ([], [(t(29, 3), t(29, 4), 1)])
    assert cover(t(28, 0), t(29, 0), None) == ([], [(t(28, 0), t(29, 0), 1)])
    # the window's end past the last sum: the last sum, then the quarters up to now
    now = t(31, 10, 7)
    assert cover(t(25, 0), now, (t(1, 0), t(31, 0))) == (
        [(t(31, 0), 1), (t(25, 0), -1)],
        [(t(31, 0), now, 1)],
    )
    # a day past the last sum, or before the first: nothing to take the difference of
    assert cover(t(31, 0), t(31, 23), (t(1, 0), t(31, 0))) == ([], [(t(31, 0), t(31, 23), 1)])
    assert cover(t(2, 0), t(3, 0), (t(5, 0), t(31, 0))) == ([], [(t(2, 0), t(3, 0), 1)])


def _sums(tenant, day) -> Counter:
    with in_tenant(tenant):
        rows = ApprovalWaitSince.objects.filter(day=day).values_list(
            "tool_name", "risk", "bin", "n"
        )
        return Counter({(tool, risk, b): n for tool, risk, b, n in rows})


def _quarters(tenant, lo, hi) -> Counter:
    """The quarters' histograms between `lo` and `hi` summed, per tool and over every tool."""
    found: Counter = Counter()
    with in_tenant(tenant):
        for tool, risk, b, n in ApprovalWaitQuarter.objects.filter(
            quarter__gte=lo, quarter__lt=hi
        ).values_list("tool_name", "risk", "bin", "n"):
            found[(tool, risk, b)] += n
    return found


def test_each_days_sum_is_the_one_before_plus_that_days_quarters(tenant_a):
    build_week(tenant_a)
    roll_up(tenant_a, t(31, 10))
    approvals, _ = states(tenant_a)
    # every quarter before 31 March 09:45 is closed: sums up to its midnight, KEPT days
    assert (approvals.days_from, approvals.days_through) == (t(31, 0) - KEPT * DAY, t(31, 0))
    assert _sums(tenant_a, approvals.days_from) == Counter()  # the origin
    day = approvals.days_from
    while day < approvals.days_through:
        grown = _sums(tenant_a, day + DAY)
        grown.subtract(_sums(tenant_a, day))
        assert +grown == _quarters(tenant_a, day, day + DAY), day
        day += DAY
    assert _sums(tenant_a, t(31, 0))[("refund", "high", 0)] == 0  # (no wait under 1 ms)
    # per risk over every tool: the per-tool histograms' sums
    every_tool: Counter = Counter()
    for (tool, risk, b), n in _sums(tenant_a, t(31, 0)).items():
        if tool != ALL_TOOLS:
            every_tool[(ALL_TOOLS, risk, b)] += n
    assert every_tool == Counter(
        {key: n for key, n in _sums(tenant_a, t(31, 0)).items() if key[0] == ALL_TOOLS}
    )
    # the decisions before 31 March (a-refund-3 waited past midnight)
    assert sum(n for (tool, *_), n in _sums(tenant_a, t(31, 0)).items() if tool) == 6


def test_a_month_of_paris_days_reads_a_sum_per_midnight(tenant_a):
    build_week(tenant_a)
    now = t(31, 10)
    roll_up(tenant_a, now)
    for tz, edge in ((PARIS, 1), (KOLKATA, 5.5), (UTC, 0)):
        win = window("30d", tz, now)
        with in_tenant(tenant_a):
            state = rollups(tenant_a).approvals
        (days, edges), (window_days, window_edges) = pieces(win, state)
        # the 29 whole days, each the difference of two sums; the last one is read as
        # quarters up to now; the window, two sums and its edges
        assert len(days) == 2 * 29 and len(window_days) == 2, tz
        read = sum((end - start for _, start, end, _ in edges + window_edges), timedelta())
        # the edges: about an hour either side of each day in Paris, none in UTC
        assert read <= 29 * 2 * timedelta(hours=edge + 1) + 2 * 24 * H, tz
    assert_figures_are_the_rows(tenant_a, now)


def test_a_quarter_written_anew_takes_back_the_sums_past_it(tenant_a):
    build_week(tenant_a)
    roll_up(tenant_a, t(31, 10))
    # an approval stamped on 30 March at 08:05 commits only now, already past its expiry:
    # its quarter went live again, the sums past it are dropped
    with in_tenant(tenant_a):
        ask(tenant_a, "a-late", "refund", "high", t(30, 8, 5), expires_at=t(30, 8, 10))
        decided_late = ask(tenant_a, "a-late-2", "lookup", "low", t(30, 8, 6))
        decide(tenant_a, decided_late.approval_id, t(30, 8, 7))
    roll_up(tenant_a, t(31, 10, 30))
    approvals, _ = states(tenant_a)
    assert t(30, 8) in approvals.open_quarters
    assert approvals.days_through == t(30, 0)
    with in_tenant(tenant_a):
        assert not ApprovalWaitSince.objects.filter(day__gt=t(30, 0)).exists()
    assert_figures_are_the_rows(tenant_a, t(31, 10, 30))
    with in_tenant(tenant_a):
        assert ApprovalStore(tenant_a, RUNTIME, clock=at(t(31, 10, 31))).expire_overdue() == 1
    roll_up(tenant_a, t(31, 11))
    approvals, _ = states(tenant_a)
    assert approvals.days_through == t(31, 0)
    grown = _sums(tenant_a, t(31, 0))
    grown.subtract(_sums(tenant_a, t(30, 0)))
    assert +grown == _quarters(tenant_a, t(30, 0), t(31, 0))
    assert grown[("lookup", "low", 1 + math.floor(8 * (math.log2(60) + 10)))] == 1  # a-late-2
    assert_figures_are_the_rows(tenant_a, t(31, 11))


def test_only_the_last_kept_days_are_summed(tenant_a):
    build_week(tenant_a)
    roll_up(tenant_a, t(31, 10))
    later = t(31, 10) + 40 * DAY
    with in_tenant(tenant_a):  # the week's pending approvals, past expiry: swept
        assert ApprovalStore(tenant_a, RUNTIME, clock=at(later)).expire_overdue() > 0
    roll_up(tenant_a, later)
    approvals, _ = states(tenant_a)
    midnight = later.replace(hour=0)
    assert (approvals.days_from, approvals.days_through) == (midnight - KEPT * DAY, midnight)
    with in_tenant(tenant_a):
        assert not ApprovalWaitSince.objects.filter(day__lt=approvals.days_from).exists()
    # the origin did not move: every decision of the week (one on 31 March) is in the sums
    assert sum(n for (tool, *_), n in _sums(tenant_a, midnight).items() if tool) == 7
    assert_figures_are_the_rows(tenant_a, later)


@pytest.mark.django_db
def test_a_tenant_with_no_decisions_keeps_no_rows(tenant_a):
    roll_up(tenant_a, t(31, 10))
    approvals, _ = states(tenant_a)
    assert approvals.days_through == t(31, 0)
    with in_tenant(tenant_a):
        assert not ApprovalWaitSince.objects.exists()


def _runs_since(tenant, day) -> Counter:
    with in_tenant(tenant):
        rows = RunSince.objects.filter(day=day).values_list("status", "reason", "n", "tokens")
        return Counter({(status, reason, "n"): n for status, reason, n, _ in rows}) + Counter(
            {(status, reason, "tokens"): tokens for status, reason, _, tokens in rows}
        )


def _runs_between(tenant, lo, hi) -> Counter:
    found: Counter = Counter()
    with in_tenant(tenant):
        for status, reason, n, tokens in RunQuarter.objects.filter(
            quarter__gte=lo, quarter__lt=hi
        ).values_list("status", "reason", "n", "tokens"):
            found[(status, reason, "n")] += n
            found[(status, reason, "tokens")] += tokens
    return found


def test_a_runs_quarter_opened_again_takes_back_the_sums_past_it(tenant_a):
    store = RunStateStore(tenant_a, RUNTIME, clock=at(t(29, 8)))
    with in_tenant(tenant_a):
        store.create(run_id="r-1")
        run = store.compare_and_set(
            run_id="r-1",
            expected_version=1,
            changes={"status": "failed", "error": {"code": "card_declined"}, "token_used": 9},
        )
    roll_up(tenant_a, t(31, 10))
    assert states(tenant_a)[1].days_through == t(31, 0)
    grown = _runs_since(tenant_a, t(30, 0))
    grown.subtract(_runs_since(tenant_a, t(29, 0)))
    assert +grown == _runs_between(tenant_a, t(29, 0), t(30, 0))
    assert +grown == Counter(
        {("failed", "card_declined", "n"): 1, ("failed", "card_declined", "tokens"): 9}
    )
    assert_figures_are_the_rows(tenant_a, t(31, 10))
    # the error's content deleted: its quarter is read from the rows again, and the sums
    # past it (they hold the old reason) with it
    with in_tenant(tenant_a):
        RunStateStore(tenant_a, OPERATOR, clock=at(t(31, 11))).redact_content(
            RUN_ERRORS, run.pk, after=None, limit=10, now=t(31, 11)
        )
    runs_state = states(tenant_a)[1]
    assert runs_state.open_quarters == [t(29, 8)] and runs_state.days_through == t(29, 0)
    with in_tenant(tenant_a):
        assert not RunSince.objects.filter(day__gt=t(29, 0)).exists()
    assert_figures_are_the_rows(tenant_a, t(31, 11))
    roll_up(tenant_a, t(31, 11))
    assert states(tenant_a)[1].days_through == t(31, 0)
    assert _runs_since(tenant_a, t(31, 0)) == Counter(
        {("failed", "", "n"): 1, ("failed", "", "tokens"): 9}
    )
    assert_figures_are_the_rows(tenant_a, t(31, 11))
