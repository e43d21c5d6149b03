"""The dashboard's quarter-hour rollups (stateroom.rollup, approvals_app.rollup,
runs_app.rollup): a quarter is rolled up only once nothing in it can change, the figures
read the same before and after every refresh (against the raw rows, computed again in
the test), and the histogram's percentiles are PostgreSQL's within one bin."""

from __future__ import annotations

import random
import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from approvals_app.models import ApprovalQuarter, ApprovalRollup, ApprovalWaitQuarter
from approvals_app.store import ApprovalStore
from console_app.selectors.dashboard import dashboard, window
from runs_app.models import Run, RunQuarter, RunRollup
from runs_app.store import RunStateStore
from runs_app.store.content import RUN_ERRORS
from stateroom.rollup import BIN_SQL, COMMIT_LAG, interpolated, percentiles_sql, quarter_of
from tenancy_app.scoping import in_tenant
from tests.console.dashboard.data import (
    OPERATOR,
    PARIS,
    RUNTIME,
    ask,
    at,
    build_week,
    decide,
    expected,
    percentile,
    roll_up,
    t,
)

BIN_WIDTH = 2 ** (1 / 8) - 1  # a bin's upper edge over its lower one, less 1


def assert_figures_are_the_rows(tenant, now: datetime) -> None:
    """Every range and zone: the dashboard's figures equal the raw rows' (data.expected)."""
    for key in ("24h", "7d", "30d"):
        for tz in (UTC, PARIS):
            win = window(key, tz, now)
            with in_tenant(tenant):
                got = dashboard(tenant, win, now, with_erasures=True)
            want = expected(tenant, win, now)
            approvals, runs = got["approvals"], got["runs"]
            for figure in ("asked", "decided", "expired", "voided"):
                assert approvals[figure] == want[figure], (key, tz, figure)
            for risk, rows in want["latency"].items():
                for got_row, want_row in zip(approvals["latency"][risk], rows, strict=True):
                    if want_row is None:
                        assert got_row is None
                    else:
                        n, p50, p95 = want_row
                        assert got_row["n"] == n
                        assert got_row["p50"] == pytest.approx(p50, rel=BIN_WIDTH)
                        assert got_row["p95"] == pytest.approx(p95, rel=BIN_WIDTH)
            assert runs["by_status"] == want["runs_by_status"], (key, tz)
            assert (runs["tokens"], runs["cost"]) == (want["tokens"], want["cost"])
            assert {row["reason"]: row["n"] for row in runs["reasons"]} == want["reasons"]


def states(tenant):
    with in_tenant(tenant):
        return (
            ApprovalRollup.objects.get(tenant=tenant),
            RunRollup.objects.get(tenant=tenant),
        )


@pytest.mark.django_db
def test_a_wait_lands_in_the_bin_whose_edges_hold_it():
    """Bin k >= 1 holds [2 ** ((k - 1) / 8 - 10), 2 ** (k / 8 - 10)) seconds; bin 0 less."""
    values = [0.0, 0.0009, 2.0**-10, 0.5, 1.0, 1.5, 59.9, 60.0, 600.0, 86_400.0, 3.1e7]
    values += [random.Random(7).uniform(0, 100_000) for _ in range(200)]
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {BIN_SQL.replace('{w}', 'w')} FROM unnest(%s::float8[]) AS v(w)", [values]
        )
        bins = [row[0] for row in cursor.fetchall()]
    for value, k in zip(values, bins, strict=True):
        if k == 0:
            assert value < 2.0**-10
        else:
            low, high = 2 ** ((k - 1) / 8 - 10), 2 ** (k / 8 - 10)
            assert low * (1 - 1e-12) <= value < high * (1 + 1e-12), (value, k)


def sql_percentiles(waits: list[float]) -> tuple:
    """The dashboard's arithmetic (stateroom.rollup.percentiles_sql over binned rows, then
    `interpolated`) beside PostgreSQL's exact percentile_cont of the same values."""
    binned = (
        f"SELECT 1 AS g, {BIN_SQL.replace('{w}', 'w')} AS bin, count(*) AS n, sum(w) AS total"
        " FROM unnest(%s::float8[]) AS v(w) GROUP BY 2"
    )
    with connection.cursor() as cursor:
        cursor.execute(percentiles_sql(binned, ["g"]), [waits])
        _, n, p50_lo, p50_hi, p95_lo, p95_hi = cursor.fetchone()
        cursor.execute(
            "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY w),"
            " percentile_cont(0.95) WITHIN GROUP (ORDER BY w) FROM unnest(%s::float8[]) w",
            [waits],
        )
        exact = cursor.fetchone()
    estimated = (interpolated(n, 0.5, p50_lo, p50_hi), interpolated(n, 0.95, p95_lo, p95_hi))
    return n, estimated, exact


@pytest.mark.django_db
def test_percentiles_are_postgresqls_within_one_bin():
    rng = random.Random(35)
    for size in (1, 2, 3, 10, 101, 5_000):
        waits = [rng.lognormvariate(5, 2) for _ in range(size)]
        n, estimated, exact = sql_percentiles(waits)
        assert n == size
        assert estimated == pytest.approx(exact, rel=BIN_WIDTH)
    # one value per bin (or equal ones): exact
    n, estimated, exact = sql_percentiles([600.0, 1800.0, 1800.0])
    assert estimated == exact == (1800.0, 1800.0)
    assert estimated[0] == percentile([600.0, 1800.0, 1800.0], 0.5)


def test_the_week_rolled_up_holds_only_quarters_nothing_can_change(tenant_a):
    build_week(tenant_a)
    now = t(31, 10)
    roll_up(tenant_a, now)
    approvals, runs = states(tenant_a)
    through = quarter_of(now - COMMIT_LAG)
    assert approvals.closed_through == runs.closed_through == through == t(31, 9, 45)
    # both expiries were swept: no approval pending in the table is past its expiry
    assert approvals.open_quarters == []
    # every run still going (those that asked, r-eff since the 1st) keeps its quarter open
    with in_tenant(tenant_a):
        going = Run.objects.exclude(status__in=["succeeded", "failed", "cancelled"])
        assert runs.open_quarters == sorted({quarter_of(run.created_at) for run in going})
    assert t(1, 8) in runs.open_quarters and t(29, 11) not in runs.open_quarters
    with in_tenant(tenant_a):
        kinds = dict(ApprovalQuarter.objects.filter(quarter=t(30, 14)).values_list("kind", "n"))
        assert kinds == {"asked": 1, "voided": 1}  # a-void-1, voided at 14:05: one quarter
        assert ApprovalQuarter.objects.get(quarter=t(30, 13), kind="expired").n == 1
        waits = ApprovalWaitQuarter.objects.filter(tool_name="refund", risk="high")
        assert sorted(waits.values_list("n", "total")) == [
            (1, 60.0),
            (1, 600.0),
            (1, 1200.0),
            (1, 1800.0),
        ]
        failed = RunQuarter.objects.filter(status="failed").values_list("reason", "n")
        # r-fail-1 started in the quarter a-refund-2's run (still going) opened: read raw
        assert sorted(failed) == [("", 1), ("timeout", 1), ("tool_failed", 1)]
    assert_figures_are_the_rows(tenant_a, now)


def test_a_run_counts_where_it_started_once_it_ends(tenant_a):
    started = t(30, 10, 7)
    store = RunStateStore(tenant_a, RUNTIME, clock=at(started))
    with in_tenant(tenant_a):
        store.create(run_id="r-long", active_agent="triage")
        run = store.compare_and_set(
            run_id="r-long", expected_version=1, changes={"status": "running"}
        )
    roll_up(tenant_a, t(30, 12))
    assert states(tenant_a)[1].open_quarters == [t(30, 10)]  # live: read from the row
    assert_figures_are_the_rows(tenant_a, t(30, 12))
    with in_tenant(tenant_a):
        RunStateStore(tenant_a, RUNTIME, clock=at(t(31, 8))).compare_and_set(
            run_id="r-long",
            expected_version=run.version,
            changes={"status": "failed", "error": {"code": "oom"}, "token_used": 70},
        )
    assert_figures_are_the_rows(tenant_a, t(31, 8, 30))  # before the next refresh
    roll_up(tenant_a, t(31, 8, 30))
    assert states(tenant_a)[1].open_quarters == []
    with in_tenant(tenant_a):
        row = RunQuarter.objects.get(quarter=t(30, 10))
    assert (row.status, row.reason, row.agent, row.n, row.tokens) == (
        "failed",
        "oom",
        "triage",
        1,
        70,
    )
    assert_figures_are_the_rows(tenant_a, t(31, 8, 30))


def test_an_expiry_not_swept_keeps_its_quarter_open_until_it_is(tenant_a):
    with in_tenant(tenant_a):
        ask(tenant_a, "a-1", "refund", "high", t(30, 9), expires_at=t(30, 9, 20))
    roll_up(tenant_a, t(30, 11))
    assert states(tenant_a)[0].open_quarters == [t(30, 9, 15)]
    assert_figures_are_the_rows(tenant_a, t(30, 11))
    with in_tenant(tenant_a):
        assert ApprovalStore(tenant_a, RUNTIME, clock=at(t(30, 11, 1))).expire_overdue() == 1
    roll_up(tenant_a, t(30, 11, 30))
    assert states(tenant_a)[0].open_quarters == []
    with in_tenant(tenant_a):
        assert ApprovalQuarter.objects.get(quarter=t(30, 9, 15), kind="expired").n == 1
    assert_figures_are_the_rows(tenant_a, t(30, 11, 30))


def test_what_was_written_in_the_last_minutes_is_read_from_the_rows(tenant_a):
    now = t(30, 12, 3)
    with in_tenant(tenant_a):
        ask(tenant_a, "a-1", "refund", "low", t(30, 11, 59))
        decide(tenant_a, "a-1", t(30, 12, 1))
    roll_up(tenant_a, now)
    approvals, _ = states(tenant_a)
    assert approvals.closed_through == t(30, 11, 45)  # 11:58 less the commit lag's quarter
    with in_tenant(tenant_a):
        assert not ApprovalQuarter.objects.exists()
    assert_figures_are_the_rows(tenant_a, now)


def test_deleting_a_runs_error_reopens_its_quarter(tenant_a):
    store = RunStateStore(tenant_a, RUNTIME, clock=at(t(30, 8)))
    with in_tenant(tenant_a):
        store.create(run_id="r-1")
        run = store.compare_and_set(
            run_id="r-1",
            expected_version=1,
            changes={"status": "failed", "error": {"code": "card_declined"}},
        )
    roll_up(tenant_a, t(30, 10))
    with in_tenant(tenant_a):
        assert RunQuarter.objects.get(quarter=t(30, 8)).reason == "card_declined"
        RunStateStore(tenant_a, OPERATOR, clock=at(t(30, 11))).redact_content(
            RUN_ERRORS, run.pk, after=None, limit=10, now=t(30, 11)
        )
        assert not RunQuarter.objects.exists()  # the quarter is read from the rows again
    assert states(tenant_a)[1].open_quarters == [t(30, 8)]
    assert_figures_are_the_rows(tenant_a, t(30, 11))
    roll_up(tenant_a, t(30, 11))
    with in_tenant(tenant_a):
        assert RunQuarter.objects.get(quarter=t(30, 8)).reason == ""
    assert_figures_are_the_rows(tenant_a, t(30, 11))


def test_random_days_read_the_same_at_every_refresh(tenant_a):
    """Approvals and runs at random times, refreshes in between: the figures stay the rows'."""
    rng = random.Random(3535)
    start = datetime(2026, 3, 24, 0, tzinfo=UTC)
    live: list[tuple[str, int]] = []
    for step in range(40):
        now = start + timedelta(hours=4 * step, minutes=rng.randrange(60))
        with in_tenant(tenant_a):
            approval_id = f"a-{step}"
            ask(
                tenant_a,
                approval_id,
                rng.choice(["refund", "lookup"]),
                rng.choice(["low", "high"]),
                now,
                expires_at=now + timedelta(minutes=rng.choice([20, 300])),
            )
            if rng.random() < 0.6:
                decide(tenant_a, approval_id, now + timedelta(seconds=rng.randrange(5, 900)))
            store = RunStateStore(tenant_a, RUNTIME, clock=at(now))
            store.create(run_id=f"r-{step}", active_agent=rng.choice(["a", "b"]))
            live.append((f"r-{step}", 1))
            if rng.random() < 0.5:
                run_id, version = live.pop(rng.randrange(len(live)))
                RunStateStore(
                    tenant_a, RUNTIME, clock=at(now + timedelta(minutes=30))
                ).compare_and_set(
                    run_id=run_id,
                    expected_version=version,
                    changes={
                        "status": rng.choice(["failed", "cancelled"]),
                        "token_used": rng.randrange(1000),
                        "cost_used": str(rng.randrange(100) / 100),
                    },
                )
            if rng.random() < 0.3:
                ApprovalStore(tenant_a, RUNTIME, clock=at(now)).expire_overdue()
        later = now + timedelta(hours=1)
        if rng.random() < 0.5:
            roll_up(tenant_a, later)
        if step % 8 == 7:
            assert_figures_are_the_rows(tenant_a, later)


@pytest.mark.django_db(transaction=True)
def test_two_refreshes_at_once_take_turns(tenant_a):
    with in_tenant(tenant_a):
        for n in range(20):
            ask(tenant_a, f"a-{n}", "refund", "low", t(30, n % 24, n))
            decide(tenant_a, f"a-{n}", t(30, n % 24, n) + timedelta(minutes=n + 1))
    from approvals_app import rollup

    barrier = threading.Barrier(4)
    closed: list[int] = []
    errors: list[Exception] = []

    def worker() -> None:
        try:
            barrier.wait()
            with in_tenant(tenant_a):
                closed.append(rollup.refresh(tenant_a.pk, t(31, 10)))
        except Exception as exc:  # the test shows it
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    # one refresh closed every quarter; the others found nothing left to close
    assert sorted(closed)[:3] == [0, 0, 0] and sorted(closed)[3] > 0
    with in_tenant(tenant_a):
        assert sum(ApprovalQuarter.objects.values_list("n", flat=True)) == 20
        per_tool = ApprovalWaitQuarter.objects.exclude(tool_name="")
        assert sum(per_tool.values_list("n", flat=True)) == 20
        every_tool = ApprovalWaitQuarter.objects.filter(tool_name="")
        assert sum(every_tool.values_list("n", flat=True)) == 20


def test_the_beat_job_rolls_up_every_tenant_and_each_sees_only_its_own(tenant_a, tenant_b):
    from approvals_app.tasks import refresh_rollup as approvals_job
    from runs_app.tasks import refresh_rollup as runs_job

    for tenant, count in ((tenant_a, 3), (tenant_b, 1)):
        with in_tenant(tenant):
            for n in range(count):
                ask(tenant, f"a-{n}", "refund", "low", t(1, 8))
    assert set(approvals_job()["done"]) >= {"acme", "globex"}
    assert runs_job()["errors"] == {}
    for tenant, count in ((tenant_a, 3), (tenant_b, 1)):
        with in_tenant(tenant), connection.cursor() as cursor:
            # row-level security: the table, read without a tenant condition
            cursor.execute("SELECT sum(n) FROM approvals_app_approvalquarter WHERE kind = 'asked'")
            assert cursor.fetchone()[0] == count
            # the runs that asked wait for the answers: their quarter stays open
            cursor.execute("SELECT open_quarters FROM runs_app_runrollup")
            assert cursor.fetchall() == [([t(1, 8)],)]


def test_a_refresh_with_an_older_clock_closes_nothing_twice(tenant_a):
    with in_tenant(tenant_a):
        ask(tenant_a, "a-1", "refund", "low", t(30, 10))
        decide(tenant_a, "a-1", t(30, 10, 10))
    roll_up(tenant_a, t(30, 12))
    roll_up(tenant_a, t(30, 9))  # a clock behind the last refresh: 10:00 is not read twice
    approvals, _ = states(tenant_a)
    assert approvals.closed_through == t(30, 11, 45)
    with in_tenant(tenant_a):
        assert ApprovalQuarter.objects.get(quarter=t(30, 10), kind="asked").n == 1
    assert_figures_are_the_rows(tenant_a, t(30, 12))


def test_a_live_run_found_in_a_closed_quarter_takes_it_back(tenant_a):
    """A run stamped in a quarter an earlier refresh closed (its commit came later than the
    commit lag allows) is not counted twice: its quarter is read from the rows again."""
    store = RunStateStore(tenant_a, RUNTIME, clock=at(t(30, 8)))
    with in_tenant(tenant_a):
        store.create(run_id="r-ended")
        store.compare_and_set(run_id="r-ended", expected_version=1, changes={"status": "failed"})
    roll_up(tenant_a, t(30, 12))
    with in_tenant(tenant_a):
        RunStateStore(tenant_a, RUNTIME, clock=at(t(30, 8, 5))).create(run_id="r-late")
    roll_up(tenant_a, t(30, 12, 30))
    assert states(tenant_a)[1].open_quarters == [t(30, 8)]
    with in_tenant(tenant_a):
        assert not RunQuarter.objects.filter(quarter=t(30, 8)).exists()
    assert_figures_are_the_rows(tenant_a, t(30, 12, 30))
