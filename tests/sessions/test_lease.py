"""Memory lives while it is used: every activity renews the session's lease for its length.

Time comes from the store's injected clock (no sleeps). A session with a
3-second lease that is used every second (append, attach, detach, heartbeat)
outlives its lease many times over; left alone, it expires, terminal, as
seed 004 says.
"""

from __future__ import annotations

import itertools

import pytest

from lifecycle_app.endings import SessionEndings
from sessions_app.models import Session
from sessions_app.store import SessionRefusal
from stateroom.errors import Conflict, Unprocessable
from tenancy_app.scoping import in_tenant
from tenancy_app.store import TenancyStore

from .conftest import Clock, item, make_run, store_for

LEASE = 3


def test_a_session_used_every_second_outlives_a_three_second_lease_by_far(tenant_a, clock):
    make_run(tenant_a, "run-1")
    store = store_for(tenant_a, clock=clock)
    with in_tenant(tenant_a):
        store.create(session_id="s-a", user_id="alice", lease_seconds=LEASE)
    activities = itertools.cycle(["append", "attach", "append", "detach", "heartbeat"])
    revision = 0
    for second in range(1, 61):  # a minute: twenty leases long
        clock.advance(1)
        activity = next(activities)
        with in_tenant(tenant_a):
            if activity == "append":
                store.append_items(session_id="s-a", items=[item(f"second {second}")])
            elif activity in ("attach", "detach"):
                call = store.attach if activity == "attach" else store.detach
                call(session_id="s-a", user_id="alice", run_id="run-1", expected_revision=revision)
                revision += 1
            else:
                store.heartbeat(session_id="s-a")
            session = Session.objects.get(tenant=tenant_a, session_id="s-a")
        assert (session.status, session.lease_until) == ("active", clock.now + _seconds(LEASE))

    # Left alone, it expires: the next write finds the lease passed...
    clock.advance(LEASE + 1)
    with in_tenant(tenant_a), pytest.raises(SessionRefusal) as refused:
        store.append_items(session_id="s-a", items=[item("too late")])
    assert (refused.value.code, refused.value.details["status"]) == ("session_terminal", "expired")
    with in_tenant(tenant_a):
        session = Session.objects.get(tenant=tenant_a, session_id="s-a")
        # ...and nothing brings it back: expired is terminal.
        with pytest.raises(Conflict) as again:
            store.heartbeat(session_id="s-a")
    assert (session.status, session.last_seq) == ("expired", 24)  # 2 appends in each 5 seconds
    assert again.value.code == "session_terminal"


def test_left_alone_the_sweep_expires_it(tenant_a, clock):
    store = store_for(tenant_a, clock=clock)
    with in_tenant(tenant_a):
        store.create(session_id="s-a", user_id="alice", lease_seconds=LEASE)
        store.create(session_id="s-b", user_id="alice", lease_seconds=LEASE)
    clock.advance(2)
    with in_tenant(tenant_a):
        store.append_items(session_id="s-b", items=[item()])
    clock.advance(2)  # s-a: 4 s without activity; s-b: 2 s
    with in_tenant(tenant_a):
        expired = SessionEndings(tenant_a, store.actor, clock=clock).expire_overdue()
        statuses = dict(Session.objects.values_list("session_id", "status"))
    assert (expired, statuses) == (1, {"s-a": "expired", "s-b": "active"})


def test_the_default_lease_is_the_tenants_thirty_days_unless_set(tenant_a):
    clock = Clock()
    store = store_for(tenant_a, clock=clock)
    with in_tenant(tenant_a):
        first = store.create(session_id="s-a", user_id="alice")
        TenancyStore(tenant_a, store.actor).set_session_lease(seconds=600)
        second = store_for(tenant_a, clock=clock).create(session_id="s-b", user_id="alice")
        with pytest.raises(Unprocessable) as too_long:
            TenancyStore(tenant_a, store.actor).set_session_lease(seconds=30 * 86400 + 1)
    assert (first.lease_seconds, first.lease_until) == (
        30 * 86400,
        clock.now + _seconds(30 * 86400),
    )
    assert (second.lease_seconds, second.lease_until) == (600, clock.now + _seconds(600))
    assert too_long.value.status == 422


def _seconds(n: int):
    from datetime import timedelta

    return timedelta(seconds=n)
