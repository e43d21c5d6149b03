"""Expiry sweeps: per tenant, in batches, audited as the system, safe to run twice at once."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from actions_app.tasks import sweep_overdue_runs
from approvals_app.models import ApprovalRequest
from approvals_app.store import ApprovalStore
from approvals_app.tasks import sweep_expired_approvals
from audit_app.models import AuditEvent
from lifecycle_app.deletion import DeletionStore
from lifecycle_app.tasks import sweep_expired_sessions
from runs_app.models import Run
from runs_app.store import RunStateStore
from sessions_app.models import Session
from sessions_app.store import SessionStore
from stateroom.celery import app
from tenancy_app.jobs import for_each_tenant
from tenancy_app.rls import TENANT_SETTING
from tenancy_app.scoping import in_tenant

from .conftest import ADMIN, build_session

pytestmark = pytest.mark.django_db


def past(minutes: int = 120):
    moment = timezone.now() - timedelta(minutes=minutes)
    return lambda: moment


def overdue_session(tenant, session_id: str) -> None:
    with in_tenant(tenant):
        SessionStore(tenant, ADMIN, clock=past()).create(
            session_id=session_id, user_id="u", lease_seconds=60
        )


def overdue_run(tenant, run_id: str) -> None:
    with in_tenant(tenant):
        runs = RunStateStore(tenant, ADMIN, clock=past())
        runs.create(run_id=run_id, deadline_at=timezone.now() - timedelta(minutes=1))


def overdue_approval(tenant, approval_id: str) -> None:
    with in_tenant(tenant):
        clock = past()
        runs = RunStateStore(tenant, ADMIN, clock=clock)
        run = runs.create(run_id=f"run-{approval_id}")
        run = runs.compare_and_set(
            run_id=run.run_id, expected_version=run.version, changes={"status": "running"}
        )
        ApprovalStore(tenant, ADMIN, clock=clock).request(
            run_id=run.run_id,
            expected_version=run.version,
            tool_name="wire_money",
            arguments={"amount": 10},
            risk="high",
            expires_at=timezone.now() - timedelta(minutes=1),
            approval_id=approval_id,
        )


def audit_rows(tenant, action: str) -> list[tuple[str, str, str]]:
    with in_tenant(tenant):
        return list(
            AuditEvent.objects.filter(tenant=tenant, action=action)
            .order_by("target_id")
            .values_list("target_id", "actor_type", "actor_label")
        )


def test_beat_schedule_and_jobs_name_registered_tasks():
    app.loader.import_default_modules()
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert scheduled == {
        "lifecycle_app.tasks.sweep_expired_sessions",
        "approvals_app.tasks.sweep_expired_approvals",
        "approvals_app.tasks.sweep_approval_schedule",
        "actions_app.tasks.sweep_overdue_runs",
        "lifecycle_app.tasks.reap_stalled_jobs",
        "lifecycle_app.tasks.apply_retention",
        "outbox_app.tasks.relay_outbox",
        "audit_app.tasks.anchor_audit_heads",
        "sessions_app.tasks.index_items",
        "approvals_app.tasks.refresh_rollup",
        "runs_app.tasks.refresh_rollup",
    }
    on_demand = {
        "lifecycle_app.tasks.delete_session_content",
        "approvals_app.webhooks.notify_decision",
    }
    assert (scheduled | on_demand) <= set(app.tasks)


def test_session_sweep_expires_overdue_sessions_of_every_tenant_in_batches(tenant_a, tenant_b):
    for n in range(5):
        overdue_session(tenant_a, f"a{n}")
    overdue_session(tenant_b, "b0")
    with in_tenant(tenant_a):
        SessionStore(tenant_a, ADMIN).create(session_id="fresh", user_id="u")

    result = sweep_expired_sessions.delay(limit=2).get()

    assert result == {"done": {"acme": 5, "globex": 1}, "errors": {}, "total": 6}
    with in_tenant(tenant_a):
        statuses = dict(Session.objects.filter(tenant=tenant_a).values_list("session_id", "status"))
    assert statuses == {
        "a0": "expired",
        "a1": "expired",
        "a2": "expired",
        "a3": "expired",
        "a4": "expired",
        "fresh": "active",
    }
    assert audit_rows(tenant_a, "session.expired") == [
        (f"a{n}", "system", "sweep") for n in range(5)
    ]
    assert audit_rows(tenant_b, "session.expired") == [("b0", "system", "sweep")]
    # A second sweep finds nothing and audits nothing.
    assert sweep_expired_sessions.delay().get()["total"] == 0
    assert len(audit_rows(tenant_a, "session.expired")) == 5


def test_sweep_can_target_one_tenant(tenant_a, tenant_b):
    overdue_session(tenant_a, "a0")
    overdue_session(tenant_b, "b0")
    assert sweep_expired_sessions.delay(tenant_id=tenant_b.pk).get() == {
        "done": {"globex": 1},
        "errors": {},
        "total": 1,
    }
    assert audit_rows(tenant_a, "session.expired") == []


def test_run_sweep_fails_runs_past_their_deadline(tenant_a):
    overdue_run(tenant_a, "late")
    with in_tenant(tenant_a):
        RunStateStore(tenant_a, ADMIN).create(
            run_id="on-time", deadline_at=timezone.now() + timedelta(hours=1)
        )

    assert sweep_overdue_runs.delay().get() == {"done": {"acme": 1}, "errors": {}, "total": 1}

    with in_tenant(tenant_a):
        runs = {r.run_id: r for r in Run.objects.filter(tenant=tenant_a)}
    assert (runs["late"].status, runs["late"].error["code"]) == ("failed", "deadline_exceeded")
    assert runs["on-time"].status == "created"
    assert audit_rows(tenant_a, "run.deadline_exceeded") == [("late", "system", "sweep")]
    assert sweep_overdue_runs.delay().get()["total"] == 0


def test_approval_sweep_expires_and_suspends_the_waiting_run(tenant_a):
    overdue_approval(tenant_a, "ap1")

    assert sweep_expired_approvals.delay().get() == {
        "done": {"acme": 1},
        "errors": {},
        "total": 1,
    }

    with in_tenant(tenant_a):
        approval = ApprovalRequest.objects.select_related("run").get(tenant=tenant_a)
    assert (approval.status, approval.run.status, approval.run.pending_approval_id) == (
        "expired",
        "suspended",
        "",
    )
    assert audit_rows(tenant_a, "approval.expired") == [("ap1", "system", "sweep")]
    assert sweep_expired_approvals.delay().get()["total"] == 0


def test_a_failing_tenant_does_not_stop_the_others(tenant_a, tenant_b):
    seen = []

    def step(tenant):
        if tenant == tenant_a:
            raise RuntimeError("boom")
        seen.append(tenant.slug)
        return 0

    result = for_each_tenant(step, limit=10)
    assert result.as_dict() == {
        "done": {"acme": 0, "globex": 0},
        "errors": {"acme": "RuntimeError: boom"},
        "total": 0,
    }
    assert seen == ["globex"]


def test_each_batch_runs_under_the_tenants_rls_setting(tenant_a, tenant_b):
    settings_seen = []

    def step(tenant):
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting(%s, true)", [TENANT_SETTING])
            settings_seen.append((tenant.slug, cursor.fetchone()[0]))
        return 0

    for_each_tenant(step, limit=10)
    assert settings_seen == [("acme", str(tenant_a.pk)), ("globex", str(tenant_b.pk))]


def _run_together(workers: int, work) -> list:
    """Run `work()` in `workers` threads started together; returns their results."""
    barrier = threading.Barrier(workers)
    results: list = [None] * workers
    errors: list = []

    def target(index: int) -> None:
        try:
            barrier.wait(timeout=10)
            results[index] = work()
        except Exception as exc:  # surfaced below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=target, args=(i,)) for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    return results


@pytest.mark.django_db(transaction=True)
def test_concurrent_sweeps_make_each_transition_and_audit_event_once(tenant_a, tenant_b):
    for n in range(12):
        overdue_session(tenant_a, f"s{n:02}")
        overdue_run(tenant_a, f"r{n:02}")
    for n in range(6):
        overdue_approval(tenant_a, f"ap{n}")
    overdue_session(tenant_b, "b0")

    def sweep_all() -> tuple[int, int, int]:
        return (
            sweep_expired_sessions(limit=3)["total"],
            sweep_overdue_runs(limit=3)["total"],
            sweep_expired_approvals(limit=2)["total"],
        )

    results = _run_together(3, sweep_all)
    # A sweep that finds rows locked by another skips them and may stop
    # early (the next scheduled run gets the rest): one more sweep finishes.
    results.append(sweep_all())

    assert [sum(r[i] for r in results) for i in range(3)] == [13, 12, 6]
    with in_tenant(tenant_a):
        assert set(Session.objects.filter(tenant=tenant_a).values_list("status", flat=True)) == {
            "expired"
        }
        failed = Run.objects.filter(tenant=tenant_a, run_id__startswith="r", status="failed")
        assert failed.count() == 12
        assert set(
            ApprovalRequest.objects.filter(tenant=tenant_a).values_list("status", flat=True)
        ) == {"expired"}
    assert [t for t, _, _ in audit_rows(tenant_a, "session.expired")] == [
        f"s{n:02}" for n in range(12)
    ]
    assert [t for t, _, _ in audit_rows(tenant_a, "run.deadline_exceeded")] == [
        f"r{n:02}" for n in range(12)
    ]
    assert [t for t, _, _ in audit_rows(tenant_a, "approval.expired")] == [
        f"ap{n}" for n in range(6)
    ]
    assert [t for t, _, _ in audit_rows(tenant_b, "session.expired")] == ["b0"]


@pytest.mark.django_db(transaction=True)
def test_two_workers_running_one_deletion_count_each_row_once(tenant_a):
    with in_tenant(tenant_a):
        build_session(tenant_a, "s1", items=40, runs=2, events=15, checkpoints=5, effects=3)
        deletion = DeletionStore(tenant_a, ADMIN).request(
            session_id="s1", reason="asked", enqueue=False
        )

    def run_job():
        with in_tenant(tenant_a, atomic=False):
            job = DeletionStore(tenant_a, ADMIN).run(deletion_id=deletion.deletion_id, batch_size=3)
            return job.status, job.counts

    results = _run_together(2, run_job)

    expected = {
        "session_items": 40,
        "session_metadata": 1,
        "run_event_payloads": 30,
        "run_errors": 0,
        "run_transition_errors": 0,
        "node_errors": 0,
        "checkpoint_bodies": 10,
        "task_descriptions": 2,
        "graph_values": 0,
        "graph_writes": 0,
        "graph_checkpoint_metadata": 0,
        "approval_payloads": 0,
        "effect_payloads": 6,
        "audit_payloads": 0,
    }
    assert results == [("done", expected), ("done", expected)]
    assert [t for t, _, _ in audit_rows(tenant_a, "session.content_deleted")] == ["s1"]
