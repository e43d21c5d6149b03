"""The session state machine under random operation sequences (hypothesis).

Each step is one store call on one session. An oracle says whether it must
succeed, be refused (and change nothing at all), or be refused after expiring
the session (the lease had passed: only the expiry is kept). Every success
must follow `SESSION_TRANSITIONS`, and seqs stay gap-free throughout.
"""

import itertools
from datetime import timedelta

from django.utils import timezone
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from runs_app.models import Run
from sessions_app.models import TERMINAL_SESSION_STATUSES, Session, SessionAttachment, SessionItem
from sessions_app.store import SESSION_TRANSITIONS, SessionRefusal
from stateroom.errors import StateroomError
from tenancy_app.scoping import in_tenant

from .conftest import Clock, item, store_for

LEASE = 60
RUNS = ["run-0", "run-1", "run-2"]

STALE = st.sampled_from([False, False, False, True])  # a stale expected_revision, sometimes
RUNTIME_OPERATIONS = st.one_of(
    st.tuples(st.just("attach"), st.sampled_from(RUNS), STALE),
    st.tuples(st.just("detach"), st.sampled_from(RUNS), STALE),
    st.tuples(st.just("heartbeat")),
    st.tuples(st.just("idle")),
    st.tuples(st.just("append"), st.integers(1, 3)),
    st.tuples(st.just("advance"), st.sampled_from([10, LEASE + 10])),
)
# Ending a session is one step in ten, so sequences spend time in active/idle.
OPERATIONS = st.one_of(*[RUNTIME_OPERATIONS] * 9, st.tuples(st.sampled_from(["close", "expire"])))
_ids = itertools.count()


def state_of(session_pk: int) -> dict:
    return {
        "row": Session.objects.filter(pk=session_pk).values().get(),
        "attachments": list(
            SessionAttachment.objects.filter(session_id=session_pk)
            .order_by("id")
            .values("run_id", "detached_at")
        ),
        "seqs": list(
            SessionItem.objects.filter(session_id=session_pk)
            .order_by("seq")
            .values_list("seq", flat=True)
        ),
    }


def attached(state: dict) -> list[str]:
    """Open runs, by their short name (run ids are made unique per example)."""
    return [
        a["run_id"].rsplit(":", 1)[-1] for a in state["attachments"] if a["detached_at"] is None
    ]


def expected_outcome(op: tuple, state: dict, now, concurrent: bool) -> str:
    """'ok', 'refused' (nothing changes) or 'kept' (refused after expiring the session)."""
    row = state["row"]
    name = op[0]
    if row["status"] in TERMINAL_SESSION_STATUSES:
        return "refused"
    if name in ("close", "expire"):
        return "ok"
    if name in ("attach", "detach") and op[2]:  # stale expected_revision: checked first
        return "refused"
    if row["lease_until"] < now:
        return "kept"
    runs = attached(state)
    if name == "attach":
        return "ok" if op[1] not in runs and (concurrent or not runs) else "refused"
    if name == "detach":
        return "ok" if op[1] in runs else "refused"
    if name == "idle":
        return "ok" if row["status"] == "active" and not runs else "refused"
    return "ok"  # heartbeat, append


def perform(store, op: tuple, session_id: str, revision: int) -> None:
    name = op[0]
    if name in ("attach", "detach"):
        call = store.attach if name == "attach" else store.detach
        kwargs = {"lease_seconds": LEASE} if name == "attach" else {}
        call(
            session_id=session_id,
            user_id="alice",
            run_id=f"{session_id}:{op[1]}",
            expected_revision=revision - 1 if op[2] else revision,
            **kwargs,
        )
    elif name == "heartbeat":
        store.heartbeat(session_id=session_id, lease_seconds=LEASE)
    elif name == "idle":
        store.mark_idle(session_id=session_id)
    elif name == "append":
        store.append_items(session_id=session_id, items=[item()] * op[1])
    elif name == "close":
        store.close(session_id=session_id, reason="done")
    elif name == "expire":
        store.expire(session_id=session_id, reason="admin")


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(OPERATIONS, max_size=20), concurrent=st.booleans())
def test_random_operation_sequences_follow_the_state_machine(tenant_a, ops, concurrent):
    tenant_a.allow_concurrent_runs = concurrent
    clock = Clock()
    store = store_for(tenant_a, clock=clock)
    session_id = f"prop-{next(_ids)}"
    with in_tenant(tenant_a):
        session_pk = store.create(session_id=session_id, user_id="alice", lease_seconds=LEASE).pk
        now = timezone.now()
        Run.objects.bulk_create(  # the runs it attaches exist (an unknown run is 404)
            Run(tenant=tenant_a, run_id=f"{session_id}:{run}", created_at=now, updated_at=now)
            for run in RUNS
        )

    for op in ops:
        if op[0] == "advance":
            clock.advance(op[1])
            continue
        with in_tenant(tenant_a):
            before = state_of(session_pk)
            expected = expected_outcome(op, before, clock.now, concurrent)
            try:
                perform(store, op, session_id, before["row"]["revision"])
                outcome = "ok"
            except SessionRefusal:
                outcome = "kept"
            except StateroomError:
                outcome = "refused"
            after = state_of(session_pk)
        assert outcome == expected, (op, before["row"]["status"])
        event(f"{op[0]}: {outcome}")
        old, new = before["row"], after["row"]

        if outcome == "refused":
            assert after == before, op
        elif outcome == "kept":
            assert (new["status"], new["ended_at"], new["end_reason"]) == (
                "expired",
                clock.now,
                "lease passed",
            )
            assert attached(after) == []
            unchanged = ("revision", "last_seq", "lease_until", "legal_hold", "metadata")
            assert {k: new[k] for k in unchanged} == {k: old[k] for k in unchanged}
        else:
            assert (
                new["status"] == old["status"]
                or new["status"] in SESSION_TRANSITIONS[old["status"]]
            ), (op, old["status"], new["status"])
            bump = 1 if op[0] in ("attach", "detach") else 0
            assert new["revision"] == old["revision"] + bump
            added = op[1] if op[0] == "append" else 0
            assert new["last_seq"] == old["last_seq"] + added
            if op[0] in ("attach", "detach", "heartbeat", "append"):  # activity renews it
                assert new["lease_until"] == clock.now + timedelta(seconds=LEASE)
            if op[0] == "attach":
                assert attached(after) == [*attached(before), op[1]]
            if op[0] == "detach":
                assert attached(after) == [r for r in attached(before) if r != op[1]]
        assert after["seqs"] == list(range(1, new["last_seq"] + 1))
        if old["status"] in TERMINAL_SESSION_STATUSES:
            assert new["status"] == old["status"]
