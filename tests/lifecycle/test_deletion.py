"""Content deletion: receipts, batches, legal hold, crash and resume (lifecycle_app.deletion)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from audit_app.models import AuditEvent
from effects_app.models import ExternalEffect
from effects_app.store import EffectStore
from lifecycle_app.content import CLASS_NAMES
from lifecycle_app.deletion import DeletionStore
from lifecycle_app.deletion import progress as progress_at
from lifecycle_app.models import Deletion, DeletionStatus
from runs_app.models import RunEvent
from runs_app.store import RunStateStore
from sessions_app.models import Session, SessionItem
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from stateroom.errors import Conflict, NotFound, Unprocessable
from tasks_app.models import TaskCheckpoint
from tasks_app.store import TaskStateStore
from tenancy_app.scoping import in_tenant
from tenancy_app.store import TenancyStore

from .conftest import ADMIN, audit_actions, build_session

pytestmark = pytest.mark.django_db

ZERO = dict.fromkeys(CLASS_NAMES, 0)


def counts(**nonzero: int) -> dict[str, int]:
    """A plan or counts of every content class: zero but for these."""
    assert set(nonzero) <= set(CLASS_NAMES)
    return {**ZERO, **nonzero}


# What build_session's default session holds: 3 items, its end reason, 2 event
# payloads, 2 checkpoint bodies, its task's objective and 1 effect record.
FULL = counts(
    session_items=3,
    session_metadata=1,
    run_event_payloads=2,
    checkpoint_bodies=2,
    task_descriptions=1,
    effect_payloads=1,
)


def progress(deletion):
    return progress_at(deletion, timezone.now())


class Crash(Exception):
    pass


def store(tenant, actor=ADMIN) -> DeletionStore:
    return DeletionStore(tenant, actor)


def test_preview_counts_what_would_go_and_what_stays(tenant_a, make_session):
    built = make_session(tenant_a, "s1", items=4, runs=2, events=3, checkpoints=1, effects=2)
    with in_tenant(tenant_a):
        preview = store(tenant_a).preview(session_id="s1")
    assert preview == {
        "session_id": "s1",
        "status": "closed",
        "delete": counts(
            session_items=4,
            session_metadata=1,
            run_event_payloads=6,
            checkpoint_bodies=2,
            task_descriptions=2,
            effect_payloads=4,
        ),
        "retain": {"audit_events": 1, "effect_records": 4, "approvals": 0, "runs": 2, "tasks": 2},
        "legal_hold": None,
        "deletion_in_progress": None,
        "content_deleted_at": None,
    }
    assert built.session.status == "closed"


def test_request_records_job_audits_and_enqueues_on_commit(
    tenant_a, make_session, django_capture_on_commit_callbacks
):
    make_session(tenant_a, "s1")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        with in_tenant(tenant_a):
            deletion = store(tenant_a).request(session_id="s1", reason="user asked (GDPR art. 17)")
    assert len(callbacks) == 1
    assert deletion.status == DeletionStatus.QUEUED
    assert deletion.planned == FULL
    assert deletion.counts == ZERO
    assert (deletion.requested_by, deletion.requested_by_id) == ("ada", "1")
    assert deletion.policy == "manual"
    assert deletion.reason == "user asked (GDPR art. 17)"
    with in_tenant(tenant_a):
        event = AuditEvent.objects.get(tenant=tenant_a, action="session.content_deletion_requested")
        assert SessionItem.objects.filter(tenant=tenant_a).count() == 3  # nothing deleted yet
    assert (event.actor_type, event.actor_label, event.target_id) == ("user", "ada", "s1")
    assert event.after == {
        "deletion_id": deletion.deletion_id,
        "policy": "manual",
        "planned": FULL,
    }
    assert event.reason == "user asked (GDPR art. 17)"


def test_request_runs_the_job_eagerly_after_commit(
    tenant_a, make_session, django_capture_on_commit_callbacks
):
    make_session(tenant_a, "s1")
    with django_capture_on_commit_callbacks(execute=True):
        with in_tenant(tenant_a):
            deletion = store(tenant_a).request(session_id="s1", reason="asked")
    with in_tenant(tenant_a):
        deletion = store(tenant_a).get(deletion.deletion_id)
    assert deletion.status == DeletionStatus.DONE
    assert deletion.counts == FULL


def test_run_removes_content_keeps_tombstone_audit_and_effect_records(tenant_a, make_session):
    built = make_session(tenant_a, "s1")
    with in_tenant(tenant_a):
        audit_before = AuditEvent.objects.filter(tenant=tenant_a).count()
        deletion = store(tenant_a).request(session_id="s1", reason="asked")
        done = store(tenant_a, Actor.system("deletion")).run(
            deletion_id=deletion.deletion_id, batch_size=1
        )
        assert done.status == DeletionStatus.DONE
        assert done.counts == FULL
        assert done.started_at is not None and done.finished_at is not None
        session = Session.objects.get(tenant=tenant_a, session_id="s1")
        assert session.content_deleted_at == done.finished_at
        assert (session.status, session.user_id) == ("closed", "u1")
        assert SessionItem.objects.filter(tenant=tenant_a).count() == 0
        events = list(RunEvent.objects.filter(tenant=tenant_a).order_by("seq"))
        assert [(e.seq, e.type, e.payload) for e in events] == [
            (1, "tool_output", None),
            (2, "tool_output", None),
        ]
        assert all(e.payload_deleted_at is not None for e in events)
        checkpoints = list(TaskCheckpoint.objects.filter(tenant=tenant_a).order_by("seq"))
        assert [(c.checkpoint_id, c.state) for c in checkpoints] == [
            ("s1-run0-cp1", None),
            ("s1-run0-cp2", None),
        ]
        assert all(c.body_deleted_at is not None for c in checkpoints)
        effect = ExternalEffect.objects.get(tenant=tenant_a)
        assert (effect.request, effect.result, effect.error) == (None, None, None)
        assert (effect.idempotency_key, effect.status, effect.tool_name, effect.request_digest) == (
            "s1-run0-key1",
            "committed",
            "charge_card",
            "digest1",
        )
        assert effect.redacted_at is not None
        assert AuditEvent.objects.filter(tenant=tenant_a).count() == audit_before + 2
        final = AuditEvent.objects.filter(tenant=tenant_a).order_by("-seq").first()
    assert built.runs[0].run_id == "s1-run0"
    assert (final.action, final.actor_type, final.target_id) == (
        "session.content_deleted",
        "system",
        "s1",
    )
    assert final.after == {
        "deletion_id": deletion.deletion_id,
        "policy": "manual",
        "counts": FULL,
    }
    assert audit_actions(tenant_a, "s1") == [
        "session.closed",
        "session.content_deletion_requested",
        "session.content_deleted",
    ]


def test_store_reads_show_no_content_after_deletion(tenant_a, make_session):
    make_session(tenant_a, "s1")
    with in_tenant(tenant_a):
        deletion = store(tenant_a).request(session_id="s1", reason="asked")
        store(tenant_a).run(deletion_id=deletion.deletion_id)
        sessions = SessionStore(tenant_a, ADMIN)
        assert sessions.get_items(session_id="s1") == []
        assert sessions.get_items(session_id="s1", before_seq=10) == []
        assert sessions.get("s1").content_deleted_at is not None


def test_run_twice_is_harmless(tenant_a, make_session):
    make_session(tenant_a, "s1")
    with in_tenant(tenant_a):
        deletion = store(tenant_a).request(session_id="s1", reason="asked")
        first = store(tenant_a).run(deletion_id=deletion.deletion_id)
        second = store(tenant_a).run(deletion_id=deletion.deletion_id)
    assert (second.status, second.counts, second.finished_at) == (
        "done",
        FULL,
        first.finished_at,
    )
    assert audit_actions(tenant_a, "s1").count("session.content_deleted") == 1


SHOWN = ("session_items", "session_metadata", "run_event_payloads", "task_descriptions")
SHOWN += ("effect_payloads",)


def test_batches_are_bounded_filled_across_classes_and_runs(tenant_a, make_session):
    make_session(tenant_a, "s1", items=5, runs=3, events=1, checkpoints=0, effects=1)
    seen = []
    with in_tenant(tenant_a):
        deletion = store(tenant_a).request(session_id="s1", reason="asked")
        store(tenant_a).run(
            deletion_id=deletion.deletion_id,
            batch_size=2,
            on_batch=lambda d: seen.append(tuple(d.counts[cls] for cls in SHOWN)),
        )
    # After each batch of 2, in deletion order: the items, the session's end
    # reason, one event per run, each run's task objective, one effect per run.
    assert seen == [
        (2, 0, 0, 0, 0),
        (4, 0, 0, 0, 0),
        (5, 1, 0, 0, 0),
        (5, 1, 2, 0, 0),
        (5, 1, 3, 1, 0),
        (5, 1, 3, 3, 0),
        (5, 1, 3, 3, 2),
        (5, 1, 3, 3, 3),
    ]


def test_a_batch_visits_a_bounded_number_of_containers(tenant_a, make_session, monkeypatch):
    # Many small containers (each run's events and task, each effect): rows alone
    # would put them all in one transaction of a statement or two each.
    make_session(tenant_a, "s1", items=5, runs=3, events=1, checkpoints=0, effects=1)
    with in_tenant(tenant_a):
        deletion = store(tenant_a).request(session_id="s1", reason="asked")
    planned = dict(deletion.planned)
    monkeypatch.setattr("lifecycle_app.deletion.MAX_CONTAINERS_PER_BATCH", 4)
    seen = []

    def batch_done(d):
        seen.append(dict(d.counts))

    with in_tenant(tenant_a):
        done = store(tenant_a).run(
            deletion_id=deletion.deletion_id, batch_size=1000, on_batch=batch_done
        )
    # Every row fits one batch of 1000 (without the bound the job takes one),
    # yet it took several: the session's own containers first, 4 at a time.
    assert len(seen) >= 3
    assert seen[0]["session_items"] == 5 and seen[0]["run_event_payloads"] < 3
    assert done.status == DeletionStatus.DONE and done.counts == planned
    with in_tenant(tenant_a):
        assert not SessionItem.objects.filter(tenant=tenant_a).exists()
        assert not RunEvent.objects.filter(tenant=tenant_a, payload__isnull=False).exists()


def test_unknown_and_other_tenants_session_is_404(tenant_a, tenant_b, make_session):
    make_session(tenant_b, "theirs")
    with in_tenant(tenant_a):
        for session_id in ("missing", "theirs"):
            with pytest.raises(NotFound) as exc:
                store(tenant_a).request(session_id=session_id, reason="x")
            assert exc.value.status == 404
            with pytest.raises(NotFound):
                store(tenant_a).preview(session_id=session_id)
            with pytest.raises(NotFound):
                store(tenant_a).for_session(session_id)
        with pytest.raises(NotFound):
            store(tenant_a).get("del_missing")
    with in_tenant(tenant_b):
        deletion = store(tenant_b).request(session_id="theirs", reason="x")
    with in_tenant(tenant_a), pytest.raises(NotFound):
        store(tenant_a).get(deletion.deletion_id)
    with in_tenant(tenant_a), pytest.raises(NotFound):
        store(tenant_a).run(deletion_id=deletion.deletion_id)


def test_request_refuses_live_session_missing_reason_and_open_job(tenant_a, make_session):
    make_session(tenant_a, "live", end=None)
    make_session(tenant_a, "s1")
    with in_tenant(tenant_a):
        with pytest.raises(Conflict) as exc:
            store(tenant_a).request(session_id="live", reason="x")
        assert (exc.value.code, exc.value.details) == ("session_not_ended", {"status": "active"})
        with pytest.raises(Unprocessable) as exc:
            store(tenant_a).request(session_id="s1", reason="  ")
        assert exc.value.details == {"reason": ["required"]}
        with pytest.raises(Unprocessable):
            store(tenant_a).request(session_id="s1", reason="x", classes=["memories"])
        first = store(tenant_a).request(session_id="s1", reason="x")
        with pytest.raises(Conflict) as exc:
            store(tenant_a).request(session_id="s1", reason="again")
        assert (exc.value.code, exc.value.details) == (
            "deletion_running",
            {"deletion_id": first.deletion_id},
        )
        assert list(store(tenant_a).for_session("s1")) == [first]


@pytest.mark.parametrize("holder", ["session", "tenant"])
def test_legal_hold_refuses_request_with_audited_receipt(tenant_a, make_session, holder):
    make_session(tenant_a, "s1")
    with in_tenant(tenant_a):
        if holder == "session":
            SessionStore(tenant_a, ADMIN).set_legal_hold(session_id="s1", on=True, reason="case 7")
        else:
            TenancyStore(tenant_a, ADMIN).set_legal_hold(on=True, reason="case 7")
        with pytest.raises(Conflict) as exc:
            store(tenant_a).request(session_id="s1", reason="asked")
        assert exc.value.code == "legal_hold"
        assert exc.value.keep_changes is True
        refused = store(tenant_a).get(exc.value.details["deletion_id"])
        assert SessionItem.objects.filter(tenant=tenant_a).count() == 3
        assert store(tenant_a).preview(session_id="s1")["legal_hold"] == holder
    assert (refused.status, refused.error, refused.counts) == (
        "refused",
        f"legal hold on the {holder}",
        ZERO,
    )
    assert audit_actions(tenant_a, "s1")[-1] == "session.content_deletion_refused"


def test_hold_placed_mid_job_stops_it_between_batches(tenant_a, make_session):
    make_session(tenant_a, "s1", items=6)

    def hold_after_first_batch(deletion):
        if deletion.counts["session_items"] == 2:
            SessionStore(tenant_a, ADMIN).set_legal_hold(session_id="s1", on=True, reason="case")

    with in_tenant(tenant_a):
        deletion = store(tenant_a).request(session_id="s1", reason="asked")
        result = store(tenant_a).run(
            deletion_id=deletion.deletion_id, batch_size=2, on_batch=hold_after_first_batch
        )
        assert SessionItem.objects.filter(tenant=tenant_a).count() == 4
        assert Session.objects.get(tenant=tenant_a).content_deleted_at is None
        # A refused job stays refused: releasing the hold does not silently resume it.
        SessionStore(tenant_a, ADMIN).set_legal_hold(session_id="s1", on=False, reason="closed")
        again = store(tenant_a).run(deletion_id=deletion.deletion_id)
        assert SessionItem.objects.filter(tenant=tenant_a).count() == 4
    assert (result.status, result.counts["session_items"]) == ("refused", 2)
    assert again.status == "refused"
    assert audit_actions(tenant_a, "s1")[-3:] == [
        "session.legal_hold_on",
        "session.content_deletion_refused",
        "session.legal_hold_off",
    ]


def test_job_refuses_to_start_when_hold_came_after_the_request(tenant_a, make_session):
    make_session(tenant_a, "s1")
    with in_tenant(tenant_a):
        deletion = store(tenant_a).request(session_id="s1", reason="asked")
        TenancyStore(tenant_a, ADMIN).set_legal_hold(on=True, reason="litigation")
        result = store(tenant_a).run(deletion_id=deletion.deletion_id)
        assert SessionItem.objects.filter(tenant=tenant_a).count() == 3
    assert (result.status, result.counts, result.error) == (
        "refused",
        ZERO,
        "legal hold on the tenant",
    )


@pytest.mark.django_db(transaction=True)
def test_crash_mid_job_then_rerun_finishes_with_exact_counts(tenant_a, make_session):
    """The 3rd batch raises inside its transaction: it is rolled back, the first two stay."""
    make_session(tenant_a, "s1", items=5, events=4, checkpoints=2, effects=1)
    batches = []

    def crash_on_third(deletion):
        batches.append(dict(deletion.counts))
        if len(batches) == 3:
            raise Crash("worker died")

    with in_tenant(tenant_a):
        deletion = store(tenant_a).request(session_id="s1", reason="asked", enqueue=False)
    with in_tenant(tenant_a, atomic=False), pytest.raises(Crash):
        store(tenant_a).run(deletion_id=deletion.deletion_id, batch_size=2, on_batch=crash_on_third)
    with in_tenant(tenant_a):
        half = store(tenant_a).get(deletion.deletion_id)
        assert half.status == "running"
        assert half.counts == counts(session_items=4)
        assert SessionItem.objects.filter(tenant=tenant_a).count() == 1
    with in_tenant(tenant_a, atomic=False):
        done = store(tenant_a).run(deletion_id=deletion.deletion_id, batch_size=2)
    assert done.status == "done"
    assert done.counts == counts(
        session_items=5,
        session_metadata=1,
        run_event_payloads=4,
        checkpoint_bodies=2,
        task_descriptions=1,
        effect_payloads=1,
    )
    assert done.counts == done.planned
    with in_tenant(tenant_a):
        assert SessionItem.objects.filter(tenant=tenant_a).count() == 0
        assert RunEvent.objects.filter(tenant=tenant_a, payload__isnull=False).count() == 0
        assert TaskCheckpoint.objects.filter(tenant=tenant_a, state__isnull=False).count() == 0


def test_progress_reports_planned_vs_counts_and_done_only_at_the_end(tenant_a, make_session):
    make_session(tenant_a, "s1", items=4, runs=0)
    snapshots = []
    with in_tenant(tenant_a):
        deletion = store(tenant_a).request(session_id="s1", reason="asked")
        assert progress(deletion)["percent"] == 0
        store(tenant_a).run(
            deletion_id=deletion.deletion_id,
            batch_size=2,
            on_batch=lambda d: snapshots.append(progress(d)),
        )
        final = store(tenant_a).progress(store(tenant_a).get(deletion.deletion_id))
    assert [(s["percent"], s["done"], s["deleted_total"]) for s in snapshots] == [
        (40, False, 2),
        (80, False, 4),
        (99, False, 5),
    ]
    assert (final["percent"], final["done"], final["finished"], final["planned_total"]) == (
        100,
        True,
        True,
        5,
    )
    assert final["planned"] == counts(session_items=4, session_metadata=1)
    assert final["elapsed_seconds"] is not None


def test_runs_linked_only_by_attachment_are_covered(tenant_a, make_session):
    make_session(tenant_a, "s1", attach_only=True)
    with in_tenant(tenant_a):
        assert store(tenant_a).preview(session_id="s1")["delete"] == FULL


def test_task_shared_with_a_held_session_keeps_its_checkpoints(tenant_a, make_session):
    shared = make_session(tenant_a, "held", checkpoints=1).tasks[0]
    with in_tenant(tenant_a):
        build_session(tenant_a, "s1", checkpoints=1, task=shared)
        SessionStore(tenant_a, ADMIN).set_legal_hold(session_id="held", on=True, reason="case")
        deletion = store(tenant_a).request(session_id="s1", reason="asked")
        done = store(tenant_a).run(deletion_id=deletion.deletion_id)
        assert TaskCheckpoint.objects.filter(tenant=tenant_a, state__isnull=False).count() == 2
    assert done.counts == {**FULL, "checkpoint_bodies": 0, "task_descriptions": 0}


def test_other_sessions_and_tenants_keep_their_content(tenant_a, tenant_b, make_session):
    make_session(tenant_a, "s1")
    make_session(tenant_a, "s2")
    make_session(tenant_b, "s1")
    with in_tenant(tenant_a):
        deletion = store(tenant_a).request(session_id="s1", reason="asked")
        store(tenant_a).run(deletion_id=deletion.deletion_id)
        assert SessionItem.objects.filter(tenant=tenant_a, session__session_id="s2").count() == 3
        assert RunEvent.objects.filter(tenant=tenant_a, payload__isnull=False).count() == 2
    with in_tenant(tenant_b):
        assert SessionItem.objects.filter(tenant=tenant_b).count() == 3
        assert ExternalEffect.objects.filter(tenant=tenant_b, redacted_at__isnull=True).count() == 1


def test_late_run_writes_show_up_as_remaining_and_a_new_deletion_removes_them(
    tenant_a, make_session
):
    built = make_session(tenant_a, "s1")
    with in_tenant(tenant_a):
        first = store(tenant_a).request(session_id="s1", reason="asked")
        store(tenant_a).run(deletion_id=first.deletion_id)
        RunEvent.objects.create(
            tenant=tenant_a,
            run=built.runs[0],
            seq=3,
            type="late",
            payload={"x": 1},
            created_at=built.session.ended_at,
        )
        assert store(tenant_a).preview(session_id="s1")["delete"] == {
            **ZERO,
            "run_event_payloads": 1,
        }
        with pytest.raises(Conflict) as exc:
            SessionStore(tenant_a, ADMIN).append_items(
                session_id="s1", items=[{"role": "user", "item_type": "message", "payload": {}}]
            )
        second = store(tenant_a).request(session_id="s1", reason="late writes")
        done = store(tenant_a).run(deletion_id=second.deletion_id)
    assert exc.value.status == 409
    assert done.counts == {**ZERO, "run_event_payloads": 1}


def test_fail_marks_the_job_failed_and_audits(tenant_a, make_session):
    make_session(tenant_a, "s1")
    with in_tenant(tenant_a):
        deletion = store(tenant_a).request(session_id="s1", reason="asked")
        failed = store(tenant_a, Actor.system("deletion")).fail(
            deletion_id=deletion.deletion_id, error="OperationalError: gone"
        )
        # A failed job is finished: a new request may start over.
        again = store(tenant_a).request(session_id="s1", reason="retry")
    assert (failed.status, failed.error) == ("failed", "OperationalError: gone")
    assert again.status == "queued"
    assert audit_actions(tenant_a, "s1")[-2:] == [
        "session.content_deletion_failed",
        "session.content_deletion_requested",
    ]


def test_request_is_atomic_with_the_callers_transaction(tenant_a, make_session):
    make_session(tenant_a, "s1")
    with pytest.raises(Crash), in_tenant(tenant_a):
        store(tenant_a).request(session_id="s1", reason="asked")
        raise Crash
    with in_tenant(tenant_a):
        assert Deletion.objects.filter(tenant=tenant_a).count() == 0
        assert "session.content_deletion_requested" not in audit_actions(tenant_a)


def test_every_store_read_shows_the_content_gone_and_idempotency_still_holds(tenant_a):
    with in_tenant(tenant_a):
        sessions = SessionStore(tenant_a, ADMIN)
        sessions.create(session_id="s1", user_id="u1")
        sessions.append_items(
            session_id="s1",
            items=[
                {"role": "user", "item_type": "message", "payload": {"text": "my card is 4242"}}
            ],
        )
        TaskStateStore(tenant_a, ADMIN).create(task_id="t1", objective="refund")
        checkpoint = TaskStateStore(tenant_a, ADMIN).append_checkpoint(
            task_id="t1", schema_version=1, state={"card": "4242"}
        )
        runs = RunStateStore(tenant_a, ADMIN)
        runs.create(run_id="r1", session_id="s1", task_id="t1")
        runs.append_events(
            run_id="r1", events=[{"type": "tool_output", "payload": {"card": "4242"}}]
        )
        effects = EffectStore(tenant_a, ADMIN)
        effect, _ = effects.record(
            run_id="r1", idempotency_key="refund-1", tool_name="refund", request={"card": "4242"}
        )
        effects.commit(effect_id=effect.effect_id, result={"refund": "re_1"})
        sessions.close(session_id="s1", reason="done")

        deletion = store(tenant_a).request(session_id="s1", reason="asked", enqueue=False)
        done = store(tenant_a).run(deletion_id=deletion.deletion_id)

        assert sessions.get_items(session_id="s1") == []
        [event] = runs.get_events(run_id="r1")
        assert (event.type, event.payload) == ("tool_output", None)
        kept = TaskStateStore(tenant_a, ADMIN).get_checkpoint(
            task_id="t1", checkpoint_id=checkpoint.checkpoint_id
        )
        assert (kept.seq, kept.state) == (1, None)
        # The deleted session's run takes no more effects, not even a replay...
        with pytest.raises(Conflict) as fenced:
            effects.record(
                run_id="r1",
                idempotency_key="refund-1",
                tool_name="refund",
                request={"card": "4242"},
            )
        assert fenced.value.code == "content_deleted"
        # ...but idempotency holds: a later run of the task asking "did this happen?" is told.
        sessions.create(session_id="s2", user_id="u1")
        runs.create(run_id="r2", session_id="s2")
        again, created = effects.record(
            run_id="r2", idempotency_key="refund-1", tool_name="refund", request={"card": "4242"}
        )
        assert (again.effect_id, created, again.status, again.result) == (
            effect.effect_id,
            False,
            "committed",
            None,
        )
        with pytest.raises(Unprocessable) as other_request:
            effects.record(
                run_id="r2", idempotency_key="refund-1", tool_name="refund", request={"card": "1"}
            )
        assert other_request.value.code == "idempotency_key_reused"
    assert done.counts == counts(
        session_items=1,
        session_metadata=1,
        run_event_payloads=1,
        checkpoint_bodies=1,
        task_descriptions=1,
        effect_payloads=1,
    )


def test_a_held_session_with_a_taskless_run_does_not_keep_other_checkpoints(tenant_a, make_session):
    """`NOT IN (…, NULL)` is never true: a held run without a task must not block all tasks."""
    make_session(tenant_a, "s1", checkpoints=2)
    with in_tenant(tenant_a):
        held = SessionStore(tenant_a, ADMIN).create(session_id="held", user_id="u9")
        # A task-less run of the held session, as most runtimes make them.
        RunStateStore(tenant_a, ADMIN).create(run_id="held-run", session_id=held.session_id)
        SessionStore(tenant_a, ADMIN).set_legal_hold(session_id="held", on=True, reason="case")
        deletion = store(tenant_a).request(session_id="s1", reason="asked")
        done = store(tenant_a).run(deletion_id=deletion.deletion_id)
        assert done.counts == FULL
        assert not TaskCheckpoint.objects.filter(tenant=tenant_a, state__isnull=False).exists()


def test_the_last_check_counts_items_past_the_sweeps_cursor_only(tenant_a):
    """Items are append-only and fenced: below the key a sweep reached none can hold content.

    So the check before "done" starts at that key instead of walking the index
    entries of every item the sweep just deleted (1.5 s for a 1 M-item session).
    """
    from lifecycle_app.content import Owners, content_left, resolve

    with in_tenant(tenant_a):
        built = build_session(tenant_a, "s", items=10)
        other = build_session(tenant_a, "t", items=4)
        owners = Owners.build(tenant_a, ADMIN, timezone.now)
        scope = resolve(owners, built.session)
        pk = built.session.pk
        items = ["session_items"]
        assert content_left(owners, scope, items) == {"session_items": 10}
        swept = {("session_items", pk): 7, ("session_items", other.session.pk): 1}
        assert content_left(owners, scope, items, swept) == {"session_items": 3}
        # Metadata is not append-only: a cursor there changes nothing.
        metadata = ["session_metadata"]
        assert content_left(owners, scope, metadata, {("session_metadata", pk): 99}) == (
            content_left(owners, scope, metadata)
        )


def test_a_deletion_finishes_with_the_cursor_check_and_counts_exactly(tenant_a):
    with in_tenant(tenant_a):
        build_session(tenant_a, "s", items=23, events=3, checkpoints=2, effects=1)
        deletion = DeletionStore(tenant_a, ADMIN).request(
            session_id="s", reason="asked", enqueue=False
        )
    with in_tenant(tenant_a, atomic=False):
        done = DeletionStore(tenant_a, ADMIN).run(deletion_id=deletion.deletion_id, batch_size=5)
    assert (done.status, done.counts["session_items"]) == ("done", 23)
    with in_tenant(tenant_a):
        assert SessionItem.objects.filter(tenant=tenant_a).count() == 0
        assert SessionStore(tenant_a, ADMIN).get("s").content_deleted_at is not None


def test_a_resumed_job_starts_past_the_items_its_batches_deleted(tenant_a):
    """The items' cursor is saved with each batch: a job resumed after a crash (or a new
    time slice) neither walks the deleted items' index entries again in its batches nor in
    its finishing check, and still removes everything, counted exactly."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with in_tenant(tenant_a):
        built = build_session(tenant_a, "s", items=23, events=3, checkpoints=2, effects=1)
        deletion = store(tenant_a).request(session_id="s", reason="asked", enqueue=False)
    batches = []

    def crash_on_third(deletion):
        batches.append(dict(deletion.swept))
        if len(batches) == 3:
            raise Crash("worker died")

    with in_tenant(tenant_a, atomic=False), pytest.raises(Crash):
        store(tenant_a).run(deletion_id=deletion.deletion_id, batch_size=5, on_batch=crash_on_third)
    key = f"session_items:{built.session.pk}"
    assert batches == [{key: 5}, {key: 10}, {key: 15}]
    with in_tenant(tenant_a):
        half = store(tenant_a).get(deletion.deletion_id)
        assert (half.swept, half.counts["session_items"]) == ({key: 10}, 10)  # 3rd rolled back
        assert SessionItem.objects.filter(tenant=tenant_a).count() == 13

    with (
        in_tenant(tenant_a, atomic=False),
        CaptureQueriesContext(connection) as queries,
    ):
        done = store(tenant_a).run(deletion_id=deletion.deletion_id, batch_size=5)
    on_items = [q["sql"] for q in queries if '"sessions_app_sessionitem"' in q["sql"]]
    assert on_items, "the resumed job never read the items"
    for sql in on_items:  # every statement on the items starts past what was deleted
        assert '"sessions_app_sessionitem"."seq" > ' in sql, sql
    assert '"sessions_app_sessionitem"."seq" > 10' in on_items[0]
    assert done.status == "done"
    assert done.counts == done.planned
    assert done.counts["session_items"] == 23
    with in_tenant(tenant_a):
        assert SessionItem.objects.filter(tenant=tenant_a).count() == 0
        assert SessionStore(tenant_a, ADMIN).get("s").content_deleted_at is not None
        assert RunEvent.objects.filter(tenant=tenant_a, payload__isnull=False).count() == 0
