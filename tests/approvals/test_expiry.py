"""Expiry does not wait for a sweep: an approval past its expires_at reads expired at once.

The store's injected clock moves; no sweep runs unless a test runs one. The
sweep, a late decision or cancellation, or the run's end only make the expiry
durable, audited once, with the time the approval expired (its expires_at).
"""

from datetime import timedelta

import pytest

from actions_app.runs import RunActions
from audit_app.models import AuditEvent
from stateroom.actor import Actor
from stateroom.errors import Conflict
from tenancy_app.scoping import in_tenant

from ..runs.conftest import reload
from .conftest import approval_store, make_approval, reload_approval


def audit_actions(tenant) -> list[tuple[str, str]]:
    with in_tenant(tenant):
        return list(
            AuditEvent.objects.filter(tenant=tenant, action__startswith="approval.")
            .order_by("seq")
            .values_list("action", "target_id")
        )


@pytest.fixture
def due(tenant_a, clock):
    """apr-1 expires 30 s after it was asked; the clock is then moved past it (no sweep)."""
    expires_at = clock.current + timedelta(seconds=30)
    make_approval(tenant_a, approval_id="apr-1", expires_at=expires_at, clock=clock)
    make_approval(
        tenant_a,
        run_id="run-2",
        approval_id="apr-2",
        expires_at=expires_at + timedelta(hours=1),
        clock=clock,
    )
    make_approval(tenant_a, run_id="run-3", approval_id="apr-3")
    clock.advance(30)  # exactly at expires_at: expired (it can no longer happen)
    return expires_at


def test_at_its_expires_at_an_approval_reads_expired_and_nothing_is_written(tenant_a, clock, due):
    before = audit_actions(tenant_a)
    with in_tenant(tenant_a):
        store = approval_store(tenant_a, clock=clock)
        approval = store.get("apr-1")
        assert (approval.status, approval.decided_at, approval.decided_by) == ("expired", due, "")
        assert store.get("apr-2").status == "pending"
        assert not store.can_still_happen(approval)

        def ids(queryset) -> list[str]:
            return sorted(a.approval_id for a in queryset)

        assert ids(store.list_approvals(status="pending")) == ["apr-2", "apr-3"]
        assert ids(store.list_approvals(status="expired")) == ["apr-1"]
        assert [(a.approval_id, a.status) for a in store.list_approvals().order_by("id")] == [
            ("apr-1", "expired"),
            ("apr-2", "pending"),
            ("apr-3", "pending"),
        ]
        assert [a.approval_id for a in store.inbox()] == ["apr-2", "apr-3"]
        assert store.inbox().count() == 2
        assert ids(store.history(tab="pending")) == ["apr-2", "apr-3"]
        assert [(a.approval_id, a.status) for a in store.history(tab="expired")] == [
            ("apr-1", "expired")
        ]
        # The expired tab's dates bound when it expired: its expires_at.
        assert ids(store.history(tab="expired", since=due, until=due + timedelta(seconds=1))) == [
            "apr-1"
        ]
        assert ids(store.history(tab="expired", until=due)) == []
        assert store.unswept(now=clock()).count() == 1
    # Reading changed nothing: the row is as stored, the run still waits, no audit event.
    assert reload_approval(tenant_a, "apr-1")["status"] == "pending"
    assert reload(tenant_a, "run-1")["status"] == "waiting_approval"
    assert audit_actions(tenant_a) == before


def test_a_second_before_its_expires_at_it_is_still_pending(tenant_a, clock, due):
    clock.advance(-1)
    with in_tenant(tenant_a):
        store = approval_store(tenant_a, clock=clock)
        assert store.get("apr-1").status == "pending"
        assert [a.approval_id for a in store.inbox()] == ["apr-1", "apr-2", "apr-3"]
        assert store.list_approvals(status="expired").count() == 0


def test_the_sweep_makes_it_durable_once_and_reads_do_not_change(tenant_a, clock, due):
    clock.advance(600)  # the sweep runs ten minutes late
    with in_tenant(tenant_a):
        sweeper = approval_store(tenant_a, Actor.system("sweep"), clock=clock)
        assert sweeper.expire_overdue() == 1
        assert sweeper.expire_overdue() == 0
        approval = approval_store(tenant_a, clock=clock).get("apr-1")
    assert (approval.status, approval.decided_at) == ("expired", due)
    stored = reload_approval(tenant_a, "apr-1")
    assert (stored["status"], stored["decided_at"], stored["decided_by"]) == (
        "expired",
        due,
        "sweep",
    )
    assert reload(tenant_a, "run-1")["status"] == "suspended"
    assert [a for a in audit_actions(tenant_a) if a[0] != "approval.requested"] == [
        ("approval.expired", "apr-1")
    ]


def test_a_late_decision_is_409_and_records_the_expiry_once(tenant_a, operator_a, clock, due):
    with in_tenant(tenant_a):
        store = approval_store(tenant_a, Actor.for_user(operator_a), clock=clock)
        with pytest.raises(Conflict) as exc:
            store.decide(approval_id="apr-1", decision="approve")
        assert (exc.value.code, exc.value.details["status"]) == ("approval_expired", "expired")
        with pytest.raises(Conflict) as again:
            store.decide(approval_id="apr-1", decision="reject", reason="too late")
        assert again.value.code == "already_decided"
        assert approval_store(tenant_a, Actor.system("sweep"), clock=clock).expire_overdue() == 0
    assert reload_approval(tenant_a, "apr-1")["decided_at"] == due
    expired = [a for a in audit_actions(tenant_a) if a[0] == "approval.expired"]
    assert expired == [("approval.expired", "apr-1")]


def test_a_late_cancellation_is_409_already_decided_and_it_stays_expired(tenant_a, clock, due):
    with in_tenant(tenant_a):
        with pytest.raises(Conflict) as exc:
            approval_store(tenant_a, clock=clock).cancel(approval_id="apr-1", reason="no longer")
    assert (exc.value.code, exc.value.details["status"]) == ("already_decided", "expired")
    assert exc.value.keep_changes is True
    assert reload_approval(tenant_a, "apr-1")["status"] == "expired"
    assert reload(tenant_a, "run-1")["status"] == "suspended"
    assert [a[0] for a in audit_actions(tenant_a) if a[1] == "apr-1"] == [
        "approval.requested",
        "approval.expired",
    ]


def test_a_run_that_ends_after_the_expiry_leaves_it_expired_not_cancelled(tenant_a, clock, due):
    """The gate ends its run failed when it sees the expiry; what read expired stays so."""
    run = reload(tenant_a, "run-1")
    with in_tenant(tenant_a):
        RunActions(tenant_a, Actor.system("runtime"), clock=clock).compare_and_set(
            run_id="run-1",
            expected_version=run["version"],
            changes={"status": "failed", "error": {"code": "approval_expired"}},
        )
        RunActions(tenant_a, Actor.system("runtime"), clock=clock).cancel(
            run_id="run-2", reason="operator stopped it"
        )
    stored = reload_approval(tenant_a, "apr-1")
    assert (stored["status"], stored["decided_at"]) == ("expired", due)
    assert reload_approval(tenant_a, "apr-2")["status"] == "cancelled"  # not due: withdrawn
    assert [a for a in audit_actions(tenant_a) if a[0] != "approval.requested"] == [
        ("approval.expired", "apr-1"),
        ("approval.cancelled", "apr-2"),
    ]
