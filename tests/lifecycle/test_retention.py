"""Retention policy: the daily job deletes content of ended sessions, unless held."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from approvals_app.models import ApprovalRequest
from lifecycle_app import retention
from lifecycle_app.deletion import DeletionStore
from lifecycle_app.models import Deletion
from lifecycle_app.tasks import apply_retention
from runs_app.models import RunEvent, RunStatus
from runs_app.store import RunStateStore
from sessions_app.models import SessionItem
from sessions_app.store import SessionStore
from stateroom.errors import Conflict
from tenancy_app.scoping import in_tenant
from tenancy_app.store import TenancyStore

from .conftest import ADMIN, audit_actions

pytestmark = pytest.mark.django_db
# What each policy field schedules, in build_session's default session.
ITEMS = {"session_items": 3, "session_metadata": 1}
RUN_EVENTS = {
    "run_event_payloads": 2,
    "run_errors": 0,
    "run_transition_errors": 0,
    "node_errors": 0,
    "approval_payloads": 0,
    "audit_payloads": 0,
}
CHECKPOINTS = {
    "checkpoint_bodies": 2,
    "task_descriptions": 1,
    "graph_values": 0,
    "graph_writes": 0,
    "graph_checkpoint_metadata": 0,
}
EFFECTS = {"effect_payloads": 1}


def days_ago(n: float):
    return timezone.now() - timedelta(days=n)


def set_policy(tenant, **days):
    with in_tenant(tenant):
        TenancyStore(tenant, ADMIN).set_retention(**days)


def receipts(tenant) -> dict[str, tuple[str, str, dict]]:
    with in_tenant(tenant):
        return {
            d.session.session_id: (d.status, d.policy, d.counts)
            for d in Deletion.objects.filter(tenant=tenant).select_related("session")
        }


def run_retention(tenant, django_capture_on_commit_callbacks, **kw) -> dict:
    with django_capture_on_commit_callbacks(execute=True):
        return apply_retention.delay(tenant_id=tenant.pk, **kw).get()


def test_sessions_ended_before_the_cutoff_lose_that_class_only(
    tenant_a, make_session, django_capture_on_commit_callbacks
):
    make_session(tenant_a, "old", ended_at=days_ago(31))
    make_session(tenant_a, "old-expired", end="expire", ended_at=days_ago(40))
    make_session(tenant_a, "recent", ended_at=days_ago(29))
    make_session(tenant_a, "live", end=None)
    set_policy(tenant_a, session_items_days=30)

    result = run_retention(tenant_a, django_capture_on_commit_callbacks)

    assert result == {"done": {"acme": 2}, "errors": {}, "total": 2}
    assert receipts(tenant_a) == {
        "old": ("done", "retention:session_items=30", ITEMS),
        "old-expired": ("done", "retention:session_items=30", ITEMS),
    }
    with in_tenant(tenant_a):
        left = SessionItem.objects.filter(tenant=tenant_a).values_list("session__session_id")
        assert sorted({s for (s,) in left}) == ["live", "recent"]
        # Run events are another class with no policy: kept.
        assert RunEvent.objects.filter(tenant=tenant_a, payload__isnull=False).count() == 8
        # Only items were due, other content remains: not marked as content-deleted.
        assert SessionStore(tenant_a, ADMIN).get("old").content_deleted_at is None
    actions = audit_actions(tenant_a, "old")
    assert actions == [
        "session.closed",
        "session.content_deletion_requested",
        "session.content_deleted",
    ]


def test_all_classes_due_combine_into_one_job_per_session(
    tenant_a, make_session, django_capture_on_commit_callbacks
):
    make_session(tenant_a, "old", ended_at=days_ago(100))
    make_session(tenant_a, "mid", ended_at=days_ago(20))
    set_policy(
        tenant_a,
        session_items_days=10,
        run_events_days=30,
        checkpoints_days=10,
        effect_payloads_days=90,
    )

    run_retention(tenant_a, django_capture_on_commit_callbacks)

    assert receipts(tenant_a) == {
        "old": (
            "done",
            "retention:session_items=10,run_events=30,checkpoints=10,effect_payloads=90",
            {**ITEMS, **RUN_EVENTS, **CHECKPOINTS, **EFFECTS},
        ),
        "mid": (
            "done",
            "retention:session_items=10,checkpoints=10",
            {**ITEMS, **CHECKPOINTS},
        ),
    }
    with in_tenant(tenant_a):
        sessions = SessionStore(tenant_a, ADMIN)
        assert sessions.get("old").content_deleted_at is not None
        assert sessions.get("mid").content_deleted_at is None


def test_extra_days_for_sessions_with_failed_runs_or_approvals(
    tenant_a, make_session, django_capture_on_commit_callbacks
):
    make_session(tenant_a, "plain", ended_at=days_ago(35))
    make_session(tenant_a, "failed", ended_at=days_ago(35), run_status=RunStatus.FAILED)
    make_session(tenant_a, "failed-older", ended_at=days_ago(45), run_status=RunStatus.FAILED)
    make_session(
        tenant_a,
        "failed-attached",
        ended_at=days_ago(35),
        run_status=RunStatus.FAILED,
        attach_only=True,
    )
    approved = make_session(tenant_a, "approved", ended_at=days_ago(35))
    with in_tenant(tenant_a):
        ApprovalRequest.objects.create(
            tenant=tenant_a,
            approval_id="ap1",
            run=approved.runs[0],
            tool_name="charge_card",
            call_digest="d",
            run_version=1,
            risk="high",
            risk_rank=3,
            status="approved",
            created_at=days_ago(36),
        )
    set_policy(tenant_a, session_items_days=30, extra_days_failed_or_approved=10)

    run_retention(tenant_a, django_capture_on_commit_callbacks)

    assert sorted(receipts(tenant_a)) == ["failed-older", "plain"]


@pytest.mark.parametrize("holder", ["session", "tenant"])
def test_legal_hold_blocks_scheduled_deletion(
    tenant_a, make_session, django_capture_on_commit_callbacks, holder
):
    make_session(tenant_a, "held", ended_at=days_ago(60))
    make_session(tenant_a, "free", ended_at=days_ago(60))
    set_policy(tenant_a, session_items_days=30)
    with in_tenant(tenant_a):
        if holder == "session":
            SessionStore(tenant_a, ADMIN).set_legal_hold(session_id="held", on=True, reason="case")
        else:
            TenancyStore(tenant_a, ADMIN).set_legal_hold(on=True, reason="case")

    run_retention(tenant_a, django_capture_on_commit_callbacks)

    expected = ["free"] if holder == "session" else []
    assert sorted(receipts(tenant_a)) == expected
    with in_tenant(tenant_a):
        assert SessionItem.objects.filter(tenant=tenant_a, session__session_id="held").count() == 3


def test_hold_set_after_the_job_was_requested_stops_it(tenant_a, make_session):
    """Retention requested the job; a hold arrives before the worker runs it."""
    make_session(tenant_a, "s1", ended_at=days_ago(60))
    set_policy(tenant_a, session_items_days=30)
    with in_tenant(tenant_a):
        [job] = retention.apply(tenant_a)  # on_commit never fires inside the test transaction
        SessionStore(tenant_a, ADMIN).set_legal_hold(session_id="s1", on=True, reason="case")
        result = DeletionStore(tenant_a, ADMIN).run(deletion_id=job.deletion_id)
        assert SessionItem.objects.filter(tenant=tenant_a).count() == 3
    assert (result.status, result.policy) == ("refused", "retention:session_items=30")


def test_retention_is_idempotent_and_bounded_per_batch(
    tenant_a, tenant_b, make_session, django_capture_on_commit_callbacks
):
    for n in range(5):
        make_session(tenant_a, f"s{n}", ended_at=days_ago(60), runs=0)
    make_session(tenant_b, "theirs", ended_at=days_ago(60), runs=0)
    set_policy(tenant_a, session_items_days=30)

    with django_capture_on_commit_callbacks(execute=True):
        first = apply_retention.delay(limit=2).get()
        second = apply_retention.delay().get()

    assert first == {"done": {"acme": 5, "globex": 0}, "errors": {}, "total": 5}
    assert second == {"done": {"acme": 0, "globex": 0}, "errors": {}, "total": 0}
    assert len(receipts(tenant_a)) == 5
    assert receipts(tenant_b) == {}
    with in_tenant(tenant_b):
        assert SessionItem.objects.filter(tenant=tenant_b).count() == 3


def test_open_jobs_are_not_requested_twice(tenant_a, make_session):
    make_session(tenant_a, "s1", ended_at=days_ago(60))
    set_policy(tenant_a, session_items_days=30)
    with in_tenant(tenant_a):
        first = retention.apply(tenant_a)
        second = retention.apply(tenant_a)
    assert (len(first), second) == (1, [])


def test_a_covered_group_stays_empty_and_is_not_requested_again(
    tenant_a, make_session, django_capture_on_commit_callbacks
):
    """The deletion fenced the session's runs: a late writer is refused, nothing comes back."""
    built = make_session(tenant_a, "s1", ended_at=days_ago(60), run_status=RunStatus.RUNNING)
    set_policy(tenant_a, run_events_days=30)
    run_retention(tenant_a, django_capture_on_commit_callbacks)
    with in_tenant(tenant_a), pytest.raises(Conflict) as late:
        RunStateStore(tenant_a, ADMIN).append_events(
            run_id=built.runs[0].run_id, events=[{"type": "late", "payload": {"x": 1}}]
        )
    assert late.value.code == "content_deleted"
    second = run_retention(tenant_a, django_capture_on_commit_callbacks)
    with in_tenant(tenant_a):
        counts = [d.counts for d in Deletion.objects.filter(tenant=tenant_a).order_by("id")]
        assert RunEvent.objects.filter(tenant=tenant_a, payload__isnull=False).count() == 0
    assert second["total"] == 0
    assert counts == [RUN_EVENTS]


def test_preview_shows_next_sweep_and_retention_without_changing_anything(
    tenant_a, tenant_b, make_session
):
    make_session(tenant_a, "old1", ended_at=days_ago(60))
    make_session(tenant_a, "old2", ended_at=days_ago(50), items=0)
    make_session(tenant_a, "recent", ended_at=days_ago(5))
    make_session(tenant_a, "held", ended_at=days_ago(60))
    make_session(tenant_b, "theirs", ended_at=days_ago(60))
    with in_tenant(tenant_a):
        past = timezone.now() - timedelta(hours=2)
        SessionStore(tenant_a, ADMIN, clock=lambda: past).create(
            session_id="overdue", user_id="u", lease_seconds=60
        )
        SessionStore(tenant_a, ADMIN).create(session_id="fresh", user_id="u")
        SessionStore(tenant_a, ADMIN).set_legal_hold(session_id="held", on=True, reason="case")
    set_policy(tenant_a, session_items_days=30, run_events_days=30)

    with in_tenant(tenant_a):
        preview = retention.preview(tenant_a, sample_size=1)
        assert Deletion.objects.filter(tenant=tenant_a).count() == 0

    assert preview["sweep"] == {
        "sessions_to_expire": {"count": 1, "sample": ["overdue"]},
        "approvals_to_expire": {"count": 0, "sample": []},
        "runs_to_fail": {"count": 0, "sample": []},
    }
    assert preview["retention"] == {
        "configured": True,
        "tenant_legal_hold": False,
        "sessions_on_legal_hold": 1,
        "classes": {
            "session_items": {
                "policy": "session_items=30",
                "days": 30,
                "classes": ["session_items", "session_metadata"],
                "sessions": 2,
                "sample": ["old1"],
            },
            "run_events": {
                "policy": "run_events=30",
                "days": 30,
                "classes": list(RUN_EVENTS),
                "sessions": 2,
                "sample": ["old1"],
            },
        },
        "sessions": 2,
        "sample": ["old1"],
    }


def test_preview_without_policy_or_under_tenant_hold(tenant_a, make_session):
    make_session(tenant_a, "old", ended_at=days_ago(60))
    with in_tenant(tenant_a):
        unconfigured = retention.preview(tenant_a)["retention"]
        TenancyStore(tenant_a, ADMIN).set_retention(session_items_days=1)
        TenancyStore(tenant_a, ADMIN).set_legal_hold(on=True, reason="case")
        held = retention.preview(tenant_a)["retention"]
    assert (unconfigured["configured"], unconfigured["classes"], unconfigured["sessions"]) == (
        False,
        {},
        0,
    )
    assert (held["tenant_legal_hold"], held["classes"], held["sessions"]) == (True, {}, 0)
