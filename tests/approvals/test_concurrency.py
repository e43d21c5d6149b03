"""Real concurrency on PostgreSQL: decisions, sweeps and the long-poll across threads."""

import time
from datetime import timedelta

import pytest
from django.db import connection

from audit_app.models import AuditEvent
from stateroom.actor import Actor
from stateroom.errors import Conflict
from tenancy_app.scoping import in_tenant

from ..runs.conftest import in_threads, make_run, reload
from .conftest import approval_store, make_approval, reload_approval

pytestmark = [pytest.mark.django_db(transaction=True)]


def actions(tenant, prefix: str) -> list[str]:
    with in_tenant(tenant):
        return list(
            AuditEvent.objects.filter(tenant=tenant, action__startswith=prefix)
            .order_by("seq")
            .values_list("action", flat=True)
        )


def test_two_concurrent_decisions_record_exactly_one(tenant_a, operator_a, admin_a):
    people = [operator_a, admin_a]
    decisions = ["approve", "reject"]
    for round_ in range(5):
        make_approval(tenant_a, run_id=f"run-{round_}", approval_id=f"apr-{round_}")

        def decide(i, barrier, approval_id=f"apr-{round_}"):
            store = approval_store(tenant_a, Actor.for_user(people[i]))
            barrier.wait()
            try:
                with in_tenant(tenant_a):
                    store.decide(approval_id=approval_id, decision=decisions[i], reason="mine")
                return "decided"
            except Conflict as exc:
                return exc

        outcomes = in_threads(2, decide)
        winner = outcomes.index("decided")
        loser = outcomes[1 - winner]
        assert loser.code == "already_decided"
        assert loser.details["decided_by"] == people[winner].username
        approval = reload_approval(tenant_a, f"apr-{round_}")
        assert approval["status"] == ("approved", "rejected")[winner]
        run = reload(tenant_a, f"run-{round_}")
        assert (run["status"], run["version"], run["pending_approval_id"]) == ("running", 4, "")
    decided = actions(tenant_a, "approval.approved") + actions(tenant_a, "approval.rejected")
    assert len(decided) == 5  # one audit event per approval


def test_two_expiry_sweeps_at_once_expire_each_approval_once(tenant_a, clock):
    soon = clock.current + timedelta(minutes=1)
    for n in range(12):
        make_approval(
            tenant_a, run_id=f"run-{n}", approval_id=f"apr-{n}", expires_at=soon, clock=clock
        )
    clock.advance(120)

    def sweeper(i, barrier):
        store = approval_store(tenant_a, Actor.system("sweep"), clock=clock)
        barrier.wait()
        total = 0
        for _ in range(20):
            with in_tenant(tenant_a):
                total += store.expire_overdue(limit=4)
        return total

    assert sum(in_threads(2, sweeper)) == 12
    assert actions(tenant_a, "approval.expired") == ["approval.expired"] * 12
    assert {reload(tenant_a, f"run-{n}")["status"] for n in range(12)} == {"suspended"}


def test_a_late_decision_racing_the_sweep_gets_one_outcome(tenant_a, operator_a, clock):
    """Both find it past due: whichever locks it first records the expiry, once; the
    decision is refused either way (approval_expired, or already_decided: expired)."""
    for n in range(5):
        make_approval(
            tenant_a,
            run_id=f"run-{n}",
            approval_id=f"apr-{n}",
            expires_at=clock.current + timedelta(seconds=30),
            clock=clock,
        )
    clock.advance(31)

    def race(i, barrier):
        if i == 0:
            store = approval_store(tenant_a, Actor.system("sweep"), clock=clock)
            barrier.wait()
            with in_tenant(tenant_a):
                return sum(store.expire_overdue(limit=1) for _ in range(10))
        store = approval_store(tenant_a, Actor.for_user(operator_a), clock=clock)
        barrier.wait()
        refusals = []
        for n in reversed(range(5)):
            # Caught inside the transaction, which then commits: as the API does with a
            # refusal that keeps its changes (the expiry it recorded).
            with in_tenant(tenant_a):
                try:
                    store.decide(approval_id=f"apr-{n}", decision="approve", reason="ok")
                except Conflict as exc:
                    refusals.append((exc.code, exc.details["status"]))
        return refusals

    swept, refusals = in_threads(2, race)
    assert len(refusals) == 5
    assert {status for _, status in refusals} == {"expired"}
    assert {code for code, _ in refusals} <= {"approval_expired", "already_decided"}
    late = sum(code == "approval_expired" for code, _ in refusals)
    assert swept + late == 5  # each expiry recorded by exactly one of them
    assert actions(tenant_a, "approval.expired") == ["approval.expired"] * 5
    assert actions(tenant_a, "approval.approved") == []
    assert {reload_approval(tenant_a, f"apr-{n}")["status"] for n in range(5)} == {"expired"}
    assert {reload(tenant_a, f"run-{n}")["status"] for n in range(5)} == {"suspended"}


def idle_in_transaction() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%%'"
        )
        return cursor.fetchone()[0]


def test_long_poll_returns_promptly_after_a_decision_from_another_thread(
    api_a, tenant_a, operator_a
):
    make_approval(tenant_a, approval_id="apr-1")
    seen: dict = {}

    def operator(i, barrier):
        if i == 0:  # the runtime's long-poll
            barrier.wait()
            started = time.monotonic()
            response = api_a.get("/api/v1/approvals/apr-1?wait=20")
            return response.status_code, response.json()["status"], time.monotonic() - started
        barrier.wait()
        time.sleep(1.5)
        # While the long-poll waits it holds no transaction open.
        seen["idle_in_transaction"] = idle_in_transaction()
        with in_tenant(tenant_a):
            approval_store(tenant_a, Actor.for_user(operator_a)).decide(
                approval_id="apr-1", decision="approve"
            )
        seen["decided_at"] = time.monotonic()
        return None

    (status, approval_status, elapsed), _ = in_threads(2, operator)
    assert (status, approval_status) == (200, "approved")
    assert seen["idle_in_transaction"] == 0
    assert 1.5 <= elapsed < 5  # answered within a poll interval of the decision, not at 20 s


def test_long_poll_times_out_when_nobody_decides(api_a, tenant_a):
    make_approval(tenant_a, approval_id="apr-1")
    started = time.monotonic()
    response = api_a.get("/api/v1/approvals/apr-1?wait=2")
    elapsed = time.monotonic() - started
    assert (response.status_code, response.json()["status"]) == (200, "pending")
    assert 2 <= elapsed < 5


def test_a_request_that_loses_the_insert_race_leaves_its_run_untouched(tenant_a):
    """Usually both pass the id check and move their run, and the second insert fails on
    the unique id: its run move is rolled back with it (one transaction). Whichever way
    the race goes, the loser's run is exactly as it was."""
    for run_id in ("r1", "r2"):
        make_run(tenant_a, "running", run_id=run_id)

    def requester(i, barrier):
        store = approval_store(tenant_a)
        barrier.wait()
        try:
            with in_tenant(tenant_a):
                store.request(
                    run_id=f"r{i + 1}",
                    expected_version=2,
                    tool_name="t",
                    arguments={"i": i},
                    risk="low",
                    approval_id="same-id",
                )
            return "created"
        except Conflict as exc:
            return exc.code

    outcomes = in_threads(2, requester)
    assert sorted(outcomes) == ["approval_exists", "created"]
    winner, loser = (f"r{outcomes.index(o) + 1}" for o in ("created", "approval_exists"))
    assert reload_approval(tenant_a, "same-id")["arguments"] == {"i": int(winner[1]) - 1}
    assert (reload(tenant_a, winner)["status"], reload(tenant_a, winner)["version"]) == (
        "waiting_approval",
        3,
    )
    lost = reload(tenant_a, loser)
    assert (lost["status"], lost["version"], lost["pending_approval_id"]) == ("running", 2, "")
