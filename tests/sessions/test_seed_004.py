"""Seed 004's local simulation ("租户隔离和租约"), replayed through SessionStore.

The seed counts time in integer ticks and gives every lease 3 ticks; here a
tick is one second of an injected clock. Its printed outcomes are:

    KeyError 'session id already exists'
    active 2
    PermissionError session scope mismatch      (another tenant's attach)
    PermissionError session scope mismatch      (another tenant's detach)
    RuntimeError session is not attachable      (attach at tick 9, lease passed)

Stateroom answers another tenant's id as not found (DESIGN.md section 2: no
existence leak), and the lease check expires the session on the way.
"""

import pytest

from sessions_app.models import SessionStatus
from stateroom.errors import Conflict, Forbidden, NotFound
from tenancy_app.scoping import in_tenant

from .conftest import audit_events, store_for

LEASE = 3


def test_seed_004_simulation_replayed(tenant_a, tenant_b, clock):
    store = store_for(tenant_a, clock=clock)
    other = store_for(tenant_b, clock=clock)

    clock.at(1)
    with in_tenant(tenant_a):
        created = store.create(session_id="s-a", user_id="alice", lease_seconds=LEASE)
        assert (created.status, created.revision, created.lease_until) == ("active", 0, clock.at(4))
        clock.at(1)
        with pytest.raises(Conflict) as duplicate:
            store.create(session_id="s-a", user_id="alice", lease_seconds=LEASE)
        assert duplicate.value.code == "session_exists"
        assert duplicate.value.details == {"session_id": "s-a"}

        clock.at(2)
        attached = store.attach(
            session_id="s-a",
            user_id="alice",
            run_id="run-1",
            expected_revision=0,
            lease_seconds=LEASE,
        )
        assert (attached.revision, attached.lease_until) == (1, clock.at(5))
        clock.at(2)
        store.detach(session_id="s-a", user_id="alice", run_id="run-1", expected_revision=1)
        session = store.get("s-a")
        assert (session.status, session.revision) == ("active", 2)
        assert store.attached_run_ids(session) == []

    with in_tenant(tenant_b):
        with pytest.raises(NotFound):
            other.attach(session_id="s-a", user_id="bob", run_id="run-x", expected_revision=2)
        with pytest.raises(NotFound):
            other.detach(session_id="s-a", user_id="bob", run_id="run-1", expected_revision=2)

    clock.at(9)
    with in_tenant(tenant_a):
        with pytest.raises(Conflict) as refused:
            store.attach(
                session_id="s-a",
                user_id="alice",
                run_id="run-2",
                expected_revision=2,
                lease_seconds=LEASE,
            )
        assert refused.value.code == "session_not_attachable"
        assert refused.value.keep_changes is True
        assert refused.value.details["status"] == "expired"
        session = store.get("s-a")
        assert (session.status, session.revision, session.ended_at) == (
            SessionStatus.EXPIRED,
            2,
            clock.now,
        )
        assert store.attached_run_ids(session) == []
    [event] = audit_events(tenant_a)
    assert (event.action, event.actor_type, event.target_id, event.reason) == (
        "session.expired",
        "system",
        "s-a",
        "lease passed",
    )
    assert event.before["status"] == "active" and event.after == {"status": "expired"}
    # Another tenant's attempts left nothing in its own audit log either.
    assert audit_events(tenant_b) == []


def test_seed_004_scope_mismatch_is_refused_for_the_same_tenant(tenant_a, clock):
    """The seed's PermissionError, for a caller inside the tenant: another user."""
    store = store_for(tenant_a, clock=clock)
    with in_tenant(tenant_a):
        store.create(session_id="s-a", user_id="alice", lease_seconds=LEASE)
        with pytest.raises(Forbidden) as attach:
            store.attach(session_id="s-a", user_id="bob", run_id="run-x", expected_revision=0)
        store.attach(session_id="s-a", user_id="alice", run_id="run-1", expected_revision=0)
        with pytest.raises(Forbidden) as detach:
            store.detach(session_id="s-a", user_id="bob", run_id="run-1", expected_revision=1)
        session = store.get("s-a")
        assert (session.revision, store.attached_run_ids(session)) == (1, ["run-1"])
    assert attach.value.code == detach.value.code == "session_scope_mismatch"
    assert attach.value.status == 403


def test_seed_004_does_not_help_an_expired_session_back(tenant_a, clock):
    """No silent re-activation: once expired, heartbeat and attach stay refused."""
    store = store_for(tenant_a, clock=clock)
    with in_tenant(tenant_a):
        store.create(session_id="s-a", user_id="alice", lease_seconds=LEASE)
        clock.advance(LEASE + 1)
        with pytest.raises(Conflict) as heartbeat:
            store.heartbeat(session_id="s-a", lease_seconds=LEASE)
        with pytest.raises(Conflict) as attach:
            store.attach(session_id="s-a", user_id="alice", run_id="run-1", expected_revision=0)
        with pytest.raises(Conflict) as again:
            store.heartbeat(session_id="s-a")
        assert store.get("s-a").status == "expired"
    assert (heartbeat.value.code, heartbeat.value.keep_changes) == ("session_terminal", True)
    assert (attach.value.code, attach.value.keep_changes) == ("session_not_attachable", False)
    assert (again.value.code, again.value.details) == ("session_terminal", {"status": "expired"})
    assert [e.action for e in audit_events(tenant_a)] == ["session.expired"]
