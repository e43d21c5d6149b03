"""SessionStore rules: attach/detach checks, appends, items paging, lifecycle, audit, sweep."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from runs_app.models import Run
from sessions_app.models import ItemAppend, Session, SessionAttachment, SessionItem
from sessions_app.store import SessionRefusal
from stateroom.actor import Actor
from stateroom.errors import Conflict, NotFound, Unprocessable
from tenancy_app.scoping import in_tenant

from .conftest import T0, admin_actor, audit_events, item, make_run, snapshot, store_for


@pytest.fixture
def store(tenant_a, clock):
    return store_for(tenant_a, clock=clock)


@pytest.fixture
def session(tenant_a, store):
    """A session with a one-hour lease (what these tests count in)."""
    with in_tenant(tenant_a):
        return store.create(session_id="s-a", user_id="alice", lease_seconds=3600)


def attach(store, run_id="run-1", revision=0, **kw):
    return store.attach(
        session_id="s-a", user_id="alice", run_id=run_id, expected_revision=revision, **kw
    )


# --- create -----------------------------------------------------------------
def test_create_sets_lease_revision_and_generates_an_id(tenant_a, store, clock):
    with in_tenant(tenant_a):
        session = store.create(
            session_id=None, user_id="alice", metadata={"channel": "web"}, lease_seconds=60
        )
        stored = Session.objects.get(pk=session.pk)
    assert stored.session_id.startswith("sess_") and len(stored.session_id) == 25
    assert (stored.user_id, stored.status, stored.revision, stored.last_seq) == (
        "alice",
        "active",
        0,
        0,
    )
    assert (stored.created_at, stored.last_active_at, stored.lease_until) == (
        T0,
        T0,
        T0 + timedelta(seconds=60),
    )
    assert (stored.metadata, stored.legal_hold, stored.content_deleted_at) == (
        {"channel": "web"},
        False,
        None,
    )


def test_same_session_id_in_two_tenants_is_two_sessions(tenant_a, tenant_b):
    for tenant in (tenant_a, tenant_b):
        with in_tenant(tenant):
            store_for(tenant).create(session_id="shared", user_id="alice")
    with in_tenant(tenant_a):
        assert Session.objects.filter(session_id="shared").count() == 1


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"session_id": "has space"}, "session_id"),
        ({"session_id": "x" * 129}, "session_id"),
        ({"user_id": ""}, "user_id"),
        ({"user_id": 7}, "user_id"),
        ({"metadata": ["a"]}, "metadata"),
        ({"metadata": {"a": float("inf")}}, "metadata"),
        ({"user_id": "al\x00ice"}, "user_id"),
        ({"lease_seconds": 0}, "lease_seconds"),
        ({"lease_seconds": 30 * 86400 + 1}, "lease_seconds"),
        ({"lease_seconds": True}, "lease_seconds"),
    ],
)
def test_create_validates_fields(tenant_a, store, kwargs, field):
    args = {"session_id": "s-a", "user_id": "alice", **kwargs}
    with in_tenant(tenant_a), pytest.raises(Unprocessable) as refused:
        store.create(**args)
    assert list(refused.value.details) == [field]
    assert snapshot(tenant_a)["sessions"] == []


# --- attach / detach --------------------------------------------------------
def test_attach_renews_lease_and_bumps_revision(tenant_a, store, session, clock):
    clock.advance(100)
    with in_tenant(tenant_a):
        attached = attach(store, lease_seconds=500)
        stored = Session.objects.get(pk=session.pk)
        attachment = SessionAttachment.objects.get()
    assert (stored.revision, stored.lease_until, stored.last_active_at) == (
        1,
        clock.now + timedelta(seconds=500),
        clock.now,
    )
    assert (attachment.run_id, attachment.attached_at, attachment.detached_at) == (
        "run-1",
        clock.now,
        None,
    )
    assert store.attached_run_ids(attached) == ["run-1"]


def test_attach_with_stale_revision_reports_the_current_one(tenant_a, store, session):
    with in_tenant(tenant_a):
        attach(store)
        before = snapshot(tenant_a)
        with pytest.raises(Conflict) as refused:
            attach(store, run_id="run-2", revision=0)
    assert (refused.value.code, refused.value.details) == (
        "revision_conflict",
        {"current_revision": 1},
    )
    assert snapshot(tenant_a) == before


def test_serial_policy_refuses_a_second_run(tenant_a, store, session):
    with in_tenant(tenant_a):
        attach(store)
        before = snapshot(tenant_a)
        with pytest.raises(Conflict) as refused:
            attach(store, run_id="run-2", revision=1)
    assert (refused.value.code, refused.value.details) == (
        "session_busy",
        {"attached_run_ids": ["run-1"]},
    )
    assert snapshot(tenant_a) == before


def test_concurrent_policy_allows_several_runs(tenant_a, store, session):
    tenant_a.allow_concurrent_runs = True
    tenant_a.save(update_fields=["allow_concurrent_runs"])
    with in_tenant(tenant_a):
        attach(store)
        session = attach(store, run_id="run-2", revision=1)
        with pytest.raises(Conflict) as again:
            attach(store, run_id="run-2", revision=2)
    assert store.attached_run_ids(session) == ["run-1", "run-2"]
    assert session.revision == 2
    assert again.value.code == "run_already_attached"


def test_run_of_another_session_is_not_attachable(tenant_a, store, session):
    with in_tenant(tenant_a):
        other = store.create(session_id="s-b", user_id="alice")
    make_run(tenant_a, "run-other", session=other)
    make_run(tenant_a, "run-mine", session=session)
    make_run(tenant_a, "run-free")
    with in_tenant(tenant_a):
        with pytest.raises(Conflict) as refused:
            attach(store, run_id="run-other")
        # Mounted (not created) on another session is another session's run too.
        store.attach(session_id="s-b", user_id="alice", run_id="run-x", expected_revision=0)
        with pytest.raises(Conflict) as mounted:
            attach(store, run_id="run-x")
        attach(store, run_id="run-mine")
        store.detach(session_id="s-a", user_id="alice", run_id="run-mine", expected_revision=1)
        attach(store, run_id="run-free", revision=2)
        store.detach(session_id="s-a", user_id="alice", run_id="run-free", expected_revision=3)
        # A run the tenant does not know is not found, like a path id.
        with pytest.raises(NotFound) as unknown:
            attach(store, run_id="run-unknown", revision=4)
        session = attach(store, run_id="run-new", revision=4)
    assert refused.value.code == mounted.value.code == "run_not_attachable"
    assert unknown.value.details == {"run_id": "run-unknown"}
    assert store.attached_run_ids(session) == ["run-new"]


def test_attach_refused_on_terminal_sessions_without_change(tenant_a, store, session):
    with in_tenant(tenant_a):
        store.close(session_id="s-a", reason="done")
        before = snapshot(tenant_a)
        with pytest.raises(Conflict) as refused:
            attach(store)
    assert (refused.value.code, refused.value.details, refused.value.keep_changes) == (
        "session_not_attachable",
        {"status": "closed"},
        False,
    )
    assert snapshot(tenant_a) == before


def test_attach_after_lease_passed_expires_the_session(tenant_a, store, session, clock):
    clock.advance(3600 + 1)
    with in_tenant(tenant_a):
        with pytest.raises(SessionRefusal) as refused:
            attach(store)
        stored = Session.objects.get(pk=session.pk)
    assert refused.value.code == "session_not_attachable"
    assert refused.value.details == {
        "status": "expired",
        "lease_until": (T0 + timedelta(seconds=3600)).isoformat(),
    }
    assert (stored.status, stored.revision, stored.end_reason) == ("expired", 0, "lease passed")
    assert [e.action for e in audit_events(tenant_a)] == ["session.expired"]


def test_lease_boundary_is_inclusive(tenant_a, store, session, clock):
    clock.advance(3600)
    with in_tenant(tenant_a):
        assert attach(store).revision == 1


def test_detach_keeps_session_active_and_records_detached_at(tenant_a, store, session, clock):
    with in_tenant(tenant_a):
        attach(store)
        clock.advance(5)
        detached = store.detach(
            session_id="s-a", user_id="alice", run_id="run-1", expected_revision=1
        )
        attachment = SessionAttachment.objects.get()
    assert (detached.status, detached.revision, attachment.detached_at) == (
        "active",
        2,
        clock.now,
    )
    assert store.attached_run_ids(detached) == []


def test_detach_of_a_run_not_attached_is_refused(tenant_a, store, session):
    with in_tenant(tenant_a):
        attach(store)
        before = snapshot(tenant_a)
        with pytest.raises(Conflict) as refused:
            store.detach(session_id="s-a", user_id="alice", run_id="run-9", expected_revision=1)
    assert (refused.value.code, refused.value.details) == (
        "run_not_attached",
        {"run_id": "run-9", "attached_run_ids": ["run-1"]},
    )
    assert snapshot(tenant_a) == before


def test_close_detaches_open_runs(tenant_a, store, session):
    with in_tenant(tenant_a):
        attach(store)
        closed = store.close(session_id="s-a")
        with pytest.raises(Conflict) as refused:
            store.detach(session_id="s-a", user_id="alice", run_id="run-1", expected_revision=1)
        assert SessionAttachment.objects.get().detached_at is not None
    assert store.attached_run_ids(closed) == []
    assert (refused.value.code, refused.value.details) == ("session_terminal", {"status": "closed"})


# --- heartbeat / idle ---------------------------------------------------------
def test_heartbeat_renews_the_lease(tenant_a, store, session, clock):
    clock.advance(1000)
    with in_tenant(tenant_a):
        beat = store.heartbeat(session_id="s-a", lease_seconds=120)
        assert beat.lease_until == clock.now + timedelta(seconds=120)
        clock.advance(100)
        # Without a length, the session's own (the last one given) is renewed.
        default = store.heartbeat(session_id="s-a")
    assert (default.lease_until, default.lease_seconds) == (
        clock.now + timedelta(seconds=120),
        120,
    )
    assert (default.revision, default.last_active_at) == (0, clock.now)


def test_idle_session_wakes_on_heartbeat_attach_and_append(tenant_a, store, session):
    with in_tenant(tenant_a):
        assert store.mark_idle(session_id="s-a").status == "idle"
        with pytest.raises(Conflict) as twice:
            store.mark_idle(session_id="s-a")
        assert store.heartbeat(session_id="s-a").status == "active"
        store.mark_idle(session_id="s-a")
        assert attach(store).status == "active"
        with pytest.raises(Conflict) as busy:
            store.mark_idle(session_id="s-a")
        store.detach(session_id="s-a", user_id="alice", run_id="run-1", expected_revision=1)
        store.mark_idle(session_id="s-a")
        store.append_items(session_id="s-a", items=[item()])
        assert store.get("s-a").status == "active"
    assert (twice.value.code, twice.value.details) == (
        "invalid_transition",
        {"status": "idle", "target": "idle"},
    )
    assert busy.value.code == "session_busy"


# --- lifecycle and audit ------------------------------------------------------
def test_close_writes_exactly_one_audit_event(tenant_a, store, session, admin_a):
    admin = store_for(tenant_a, clock=store.now, actor=admin_actor(admin_a))
    with in_tenant(tenant_a):
        attach(store)
        closed = admin.close(session_id="s-a", reason="customer asked")
        with pytest.raises(Conflict) as again:
            admin.close(session_id="s-a", reason="twice")
    [event] = audit_events(tenant_a)
    assert (event.action, event.actor_type, event.actor_label, event.reason) == (
        "session.closed",
        "user",
        "ada",
        "customer asked",
    )
    assert event.before == {
        "status": "active",
        "lease_until": closed.lease_until.isoformat(),
        "attached_run_ids": ["run-1"],
    }
    assert event.after == {"status": "closed"}
    assert (closed.status, closed.ended_at, closed.end_reason) == (
        "closed",
        T0,
        "customer asked",
    )
    assert (again.value.code, again.value.details) == ("session_terminal", {"status": "closed"})


def test_expire_writes_exactly_one_audit_event(tenant_a, store, session, admin_a):
    admin = store_for(tenant_a, actor=admin_actor(admin_a))
    with in_tenant(tenant_a):
        expired = admin.expire(session_id="s-a", reason="abuse")
        with pytest.raises(Conflict):
            admin.expire(session_id="s-a")
        with pytest.raises(Conflict):
            admin.close(session_id="s-a")
    [event] = audit_events(tenant_a)
    assert (event.action, event.actor_type, event.reason, event.after) == (
        "session.expired",
        "user",
        "abuse",
        {"status": "expired"},
    )
    assert expired.status == "expired"


def test_legal_hold_on_and_off_each_write_one_audit_event(tenant_a, store, session, admin_a):
    admin = store_for(tenant_a, actor=admin_actor(admin_a))
    with in_tenant(tenant_a):
        store.close(session_id="s-a")
        held = admin.set_legal_hold(session_id="s-a", on=True, reason="litigation 42")
        with pytest.raises(Conflict) as again:
            admin.set_legal_hold(session_id="s-a", on=True, reason="again")
        released = admin.set_legal_hold(session_id="s-a", on=False, reason="case closed")
    assert (held.legal_hold, released.legal_hold) == (True, False)
    assert again.value.code == "no_change"
    events = audit_events(tenant_a)
    assert [(e.action, e.reason, e.before, e.after) for e in events] == [
        ("session.closed", "", events[0].before, {"status": "closed"}),
        ("session.legal_hold_on", "litigation 42", {"legal_hold": False}, {"legal_hold": True}),
        ("session.legal_hold_off", "case closed", {"legal_hold": True}, {"legal_hold": False}),
    ]


def test_unknown_and_other_tenants_sessions_are_not_found(tenant_a, tenant_b, session):
    other = store_for(tenant_b)
    calls = [
        lambda: other.get("s-a"),
        lambda: other.close(session_id="s-a"),
        lambda: other.expire(session_id="s-a"),
        lambda: other.set_legal_hold(session_id="s-a", on=True, reason="x"),
        lambda: other.heartbeat(session_id="s-a"),
        lambda: other.append_items(session_id="s-a", items=[item()]),
        lambda: other.get_items(session_id="s-a"),
        lambda: other.mark_idle(session_id="s-a"),
    ]
    before = snapshot(tenant_a)
    with in_tenant(tenant_b):
        for call in calls:
            with pytest.raises(NotFound):
                call()
        assert list(other.list_sessions()) == []
    assert snapshot(tenant_a) == before


# --- append -------------------------------------------------------------------
def test_append_numbers_items_gap_free(tenant_a, store, session, clock):
    with in_tenant(tenant_a):
        first = store.append_items(session_id="s-a", items=[item("a"), item("b", role="assistant")])
        clock.advance(3)
        second = store.append_items(session_id="s-a", items=[item("c")])
        rows = list(
            SessionItem.objects.order_by("seq").values_list("seq", "role", "payload", "created_at")
        )
        stored = Session.objects.get(pk=session.pk)
    assert (first.first_seq, first.last_seq, first.created) == (1, 2, True)
    assert (second.first_seq, second.last_seq, second.created) == (3, 3, True)
    assert rows == [
        (1, "user", {"text": "a"}, T0),
        (2, "assistant", {"text": "b"}, T0),
        (3, "user", {"text": "c"}, clock.now),
    ]
    # Every append is activity: the lease runs for its length again from then.
    assert (stored.last_seq, stored.last_active_at, stored.lease_until) == (
        3,
        clock.now,
        clock.now + timedelta(seconds=3600),
    )


def test_append_with_a_key_twice_appends_once(tenant_a, store, session):
    items = [item("a"), item("b")]
    with in_tenant(tenant_a):
        first = store.append_items(session_id="s-a", items=items, idempotency_key="k1")
        store.append_items(session_id="s-a", items=[item("c")])
        again = store.append_items(session_id="s-a", items=items, idempotency_key="k1")
        count = SessionItem.objects.count()
        last_seq = Session.objects.get(pk=session.pk).last_seq
        record = ItemAppend.objects.get()
    assert (first.first_seq, first.last_seq, first.created) == (1, 2, True)
    assert (again.first_seq, again.last_seq, again.created) == (1, 2, False)
    assert (count, last_seq) == (3, 3)
    assert (record.idempotency_key, record.first_seq, record.last_seq) == ("k1", 1, 2)


def test_append_key_reused_with_other_items_is_422(tenant_a, store, session):
    with in_tenant(tenant_a):
        store.append_items(session_id="s-a", items=[item("a")], idempotency_key="k1")
        before = snapshot(tenant_a)
        with pytest.raises(Unprocessable) as reused:
            store.append_items(session_id="s-a", items=[item("b")], idempotency_key="k1")
        with pytest.raises(Unprocessable) as other_run:
            attach(store)
            store.append_items(
                session_id="s-a", items=[item("a")], idempotency_key="k1", run_id="run-1"
            )
    assert reused.value.code == other_run.value.code == "idempotency_key_reused"
    assert snapshot(tenant_a)["items"] == before["items"]


def test_append_key_is_per_session(tenant_a, store, session):
    with in_tenant(tenant_a):
        store.create(session_id="s-b", user_id="alice")
        a = store.append_items(session_id="s-a", items=[item()], idempotency_key="k")
        b = store.append_items(session_id="s-b", items=[item()], idempotency_key="k")
    assert (a.created, b.created, b.first_seq) == (True, True, 1)


def test_append_key_replays_after_the_session_closed(tenant_a, store, session):
    with in_tenant(tenant_a):
        store.append_items(session_id="s-a", items=[item()], idempotency_key="k")
        store.close(session_id="s-a")
        replay = store.append_items(session_id="s-a", items=[item()], idempotency_key="k")
        with pytest.raises(Conflict) as fresh:
            store.append_items(session_id="s-a", items=[item()], idempotency_key="k2")
    assert (replay.first_seq, replay.created) == (1, False)
    assert (fresh.value.code, fresh.value.details) == ("session_terminal", {"status": "closed"})


@pytest.mark.parametrize(
    ("items", "details"),
    [
        ([], {"items": ["must be a non-empty list"]}),
        ("nope", {"items": ["must be a non-empty list"]}),
        (
            [{"role": "user", "item_type": "message", "payload": {}}, "x"],
            {"items[1]": ["must be an object"]},
        ),
        (
            [{"role": 1, "item_type": "", "payload": []}],
            {
                "items[0].role": ["must be a non-empty string of at most 32 characters"],
                "items[0].item_type": ["must be a non-empty string of at most 64 characters"],
                "items[0].payload": ["must be an object"],
            },
        ),
        (
            [{"role": "r" * 33, "item_type": "message"}],
            {
                "items[0].role": ["must be a non-empty string of at most 32 characters"],
                "items[0].payload": ["must be an object"],
            },
        ),
        (
            [{"role": "user", "item_type": "m", "payload": {"x": [1.5, float("nan")]}}],
            {"items[0].payload": ["must not contain NaN or Infinity"]},
        ),
        (
            [{"role": "user", "item_type": "m", "payload": {"x": {"y": "a\x00b"}}}],
            {"items[0].payload": ["must not contain NUL characters"]},
        ),
        (
            [{"role": "user", "item_type": "m", "payload": {"\ud800": 1}}],
            {"items[0].payload": ["must be valid Unicode (no lone surrogates)"]},
        ),
        (
            [{"role": "us\x00er", "item_type": "m", "payload": {}}],
            {"items[0].role": ["must be a non-empty string of at most 32 characters"]},
        ),
        (  # the second item's key: found in the encoded text, named by the walk
            [
                {"role": "user", "item_type": "m", "payload": {"a": "\\u0000"}},
                {"role": "user", "item_type": "m", "payload": {"k\x00": 1}},
            ],
            {"items[1].payload": ["must not contain NUL characters"]},
        ),
    ],
)
def test_append_validates_items(tenant_a, store, session, items, details):
    with in_tenant(tenant_a), pytest.raises(Unprocessable) as refused:
        store.append_items(session_id="s-a", items=items)
    assert refused.value.details == details
    assert snapshot(tenant_a)["items"] == []


def test_a_payload_that_spells_a_nul_escape_is_kept_as_written(tenant_a, store, session):
    """Its JSON text shows `\\u0000` as a NUL would: the walk clears it, and it is stored."""
    payload = {"text": "a\\u0000b", "\\u0000": ["\\\\u0000"]}
    with in_tenant(tenant_a):
        store.append_items(
            session_id="s-a", items=[{"role": "user", "item_type": "m", "payload": payload}]
        )
        assert SessionItem.objects.get().payload == payload


def test_append_by_a_run_needs_the_run_on_the_session(tenant_a, store, session):
    with in_tenant(tenant_a):
        with pytest.raises(NotFound) as unknown:  # a run id names a run of the tenant
            store.append_items(session_id="s-a", items=[item()], run_id="run-nowhere")
        with pytest.raises(Conflict) as elsewhere:
            store.append_items(session_id="s-a", items=[item()], run_id="run-1")
        attach(store)
        store.append_items(session_id="s-a", items=[item()], run_id="run-1")
        store.detach(session_id="s-a", user_id="alice", run_id="run-1", expected_revision=1)
        with pytest.raises(Conflict) as detached:
            store.append_items(session_id="s-a", items=[item()], run_id="run-1")
    make_run(tenant_a, "run-created-here", session=session)
    with in_tenant(tenant_a):
        created_here = store.append_items(
            session_id="s-a", items=[item()], run_id="run-created-here"
        )
        assert list(SessionItem.objects.order_by("seq").values_list("seq", "run_id")) == [
            (1, "run-1"),
            (2, "run-created-here"),
        ]
    assert unknown.value.details == {"run_id": "run-nowhere"}
    assert elsewhere.value.code == detached.value.code == "run_not_attached"
    assert created_here.first_seq == 2


def test_append_after_lease_passed_expires_and_refuses(tenant_a, store, session, clock):
    clock.advance(3601)
    with in_tenant(tenant_a):
        with pytest.raises(SessionRefusal) as refused:
            store.append_items(session_id="s-a", items=[item()])
        stored = Session.objects.get(pk=session.pk)
        assert SessionItem.objects.count() == 0
    assert (refused.value.code, refused.value.details["status"]) == ("session_terminal", "expired")
    assert (stored.status, stored.last_seq) == ("expired", 0)
    [event] = audit_events(tenant_a)
    assert (event.action, event.actor_type) == ("session.expired", "system")


def test_append_to_deleted_content_is_refused(tenant_a, store, session):
    with in_tenant(tenant_a):
        store.fence_content(session)  # what a deletion request does first
        with pytest.raises(Conflict) as refused:
            store.append_items(session_id="s-a", items=[item()])
    assert refused.value.code == "content_deleted"


# --- reads ------------------------------------------------------------------
def test_get_items_pages_forward_and_backward(tenant_a, store, session):
    with in_tenant(tenant_a):
        store.append_items(session_id="s-a", items=[item(str(n)) for n in range(1, 11)])

        def seqs(**kw):
            return [i.seq for i in store.get_items(session_id="s-a", **kw)]

        assert seqs() == list(range(1, 11))
        assert seqs(limit=3) == [1, 2, 3]
        assert seqs(limit=3, after_seq=3) == [4, 5, 6]
        assert seqs(limit=3, before_seq=8) == [5, 6, 7]
        assert seqs(limit=5, before_seq=3) == [1, 2]
        assert seqs(limit=5, after_seq=4, before_seq=8) == [5, 6, 7]
        assert seqs(after_seq=10) == []
        with pytest.raises(Unprocessable):
            seqs(limit=0)


def test_list_sessions_filters(tenant_a, tenant_b, store, clock):
    with in_tenant(tenant_a):
        store.create(session_id="s-1", user_id="alice")
        clock.advance(10)
        store.create(session_id="s-2", user_id="bob")
        store.create(session_id="other-3", user_id="alice")
        store.close(session_id="other-3")

        def ids(**kw):
            return sorted(s.session_id for s in store.list_sessions(**kw))

        assert ids() == ["other-3", "s-1", "s-2"]
        assert ids(status="closed") == ["other-3"]
        assert ids(user_id="alice") == ["other-3", "s-1"]
        assert ids(created_from=T0 + timedelta(seconds=5)) == ["other-3", "s-2"]
        assert ids(created_to=T0 + timedelta(seconds=5)) == ["s-1"]
        assert ids(search="BOB") == ["s-2"]
        assert ids(search="other") == ["other-3"]
        with pytest.raises(Unprocessable) as bogus:
            ids(status="bogus")
    assert list(bogus.value.details) == ["status"]
    with in_tenant(tenant_b):
        store_b = store_for(tenant_b)
        store_b.create(session_id="s-1", user_id="alice")
        assert [s.session_id for s in store_b.list_sessions()] == ["s-1"]


def test_list_sessions_prefetches_attached_runs(tenant_a, store):
    tenant_a.allow_concurrent_runs = True
    with in_tenant(tenant_a):
        for n in range(5):
            store.create(session_id=f"s-{n}", user_id="alice")
            for r in range(n % 3):
                Run.objects.create(
                    tenant=tenant_a, run_id=f"r-{n}-{r}", created_at=T0, updated_at=T0
                )
                store.attach(
                    session_id=f"s-{n}", user_id="alice", run_id=f"r-{n}-{r}", expected_revision=r
                )
        store.detach(session_id="s-2", user_id="alice", run_id="r-2-0", expected_revision=2)
        with CaptureQueriesContext(connection) as queries:
            runs = {s.session_id: store.attached_run_ids(s) for s in store.list_sessions()}
    assert len(queries) == 2
    assert runs == {
        "s-0": [],
        "s-1": ["r-1-0"],
        "s-2": ["r-2-1"],
        "s-3": [],
        "s-4": ["r-4-0"],
    }


# --- sweep ------------------------------------------------------------------
def test_expire_overdue_expires_live_sessions_past_lease(tenant_a, tenant_b, store, clock):
    with in_tenant(tenant_a):
        store.create(session_id="short", user_id="alice", lease_seconds=10)
        store.create(session_id="idle", user_id="alice", lease_seconds=10)
        store.mark_idle(session_id="idle")
        store.create(session_id="long", user_id="alice", lease_seconds=1000)
        store.create(session_id="closed", user_id="alice", lease_seconds=10)
        store.attach(
            session_id="short",
            user_id="alice",
            run_id="run-1",
            expected_revision=0,
            lease_seconds=10,
        )
        store.close(session_id="closed")
    with in_tenant(tenant_b):
        store_for(tenant_b, clock=clock).create(session_id="b", user_id="x", lease_seconds=10)
    clock.advance(11)
    sweeper = store_for(tenant_a, clock=clock, actor=Actor.system("sweep"))
    with in_tenant(tenant_a):
        assert len(sweeper.expire_overdue(limit=1)) == 1
        assert len(sweeper.expire_overdue()) == 1
        assert sweeper.expire_overdue() == []
        statuses = dict(Session.objects.values_list("session_id", "status"))
        assert SessionAttachment.objects.get().detached_at == clock.now
    assert statuses == {"short": "expired", "idle": "expired", "long": "active", "closed": "closed"}
    expired = audit_events(tenant_a, "session.expired")
    assert sorted(e.target_id for e in expired) == ["idle", "short"]
    assert {(e.actor_type, e.actor_label, e.reason) for e in expired} == {
        ("system", "sweep", "lease passed")
    }
    short = next(e for e in expired if e.target_id == "short")
    assert short.before["attached_run_ids"] == ["run-1"]
    with in_tenant(tenant_b):
        assert Session.objects.get().status == "active"


@pytest.mark.parametrize("reason", [None, 5, "nul\x00"])
def test_lifecycle_reasons_are_validated(tenant_a, store, session, reason):
    before = snapshot(tenant_a)
    with in_tenant(tenant_a):
        for call in (store.close, store.expire):
            with pytest.raises(Unprocessable) as refused:
                call(session_id="s-a", reason=reason)
            assert list(refused.value.details) == ["reason"]
        with pytest.raises(Unprocessable):
            store.set_legal_hold(session_id="s-a", on=True, reason=reason)
    assert snapshot(tenant_a) == before
