"""Fixtures and helpers for the runs domain: stores, runs in a given status, sessions, tasks."""

from datetime import timedelta

import pytest
from django.utils import timezone

from audit_app.models import AuditEvent
from runs_app.models import Run
from runs_app.store import RunStateStore
from sessions_app.models import Session
from stateroom.actor import Actor
from tasks_app.models import Task, TaskCheckpoint
from tenancy_app.scoping import in_tenant

# How to bring a fresh run (created, v1) to each status with CAS steps.
PATHS = {
    "created": [],
    "running": ["running"],
    "waiting_approval": ["running", "waiting_approval"],
    "suspended": ["running", "suspended"],
    "succeeded": ["running", "succeeded"],
    "failed": ["running", "failed"],
    "cancelled": ["cancelled"],
}


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.current = timezone.now()

    def __call__(self):
        return self.current

    def advance(self, seconds: float) -> None:
        self.current += timedelta(seconds=seconds)


def run_store(tenant, actor: Actor | None = None, **kw) -> RunStateStore:
    return RunStateStore(tenant, actor or Actor.system("test"), **kw)


def make_run(tenant, status: str = "created", **kw) -> Run:
    deadline = kw.get("deadline_at")
    with in_tenant(tenant):
        store = run_store(tenant)
        if deadline is not None and deadline <= store.now():
            # Created while its deadline still lay ahead (a past deadline is refused).
            store = RunStateStore(tenant, store.actor, clock=lambda: deadline - timedelta(hours=1))
        run = store.create(**kw)
        for step in PATHS[status]:
            run = store.compare_and_set(
                run_id=run.run_id, expected_version=run.version, changes={"status": step}
            )
    return run


def reload(tenant, run_id: str) -> dict:
    """Every column of the run, to assert that a refused write changed nothing."""
    with in_tenant(tenant):
        return Run.objects.filter(tenant=tenant, run_id=run_id).values().get()


def audit_actions(tenant) -> list[tuple]:
    with in_tenant(tenant):
        return list(
            AuditEvent.objects.filter(tenant=tenant)
            .order_by("seq")
            .values_list("action", "target_id", "actor_type")
        )


def make_session(tenant, session_id: str = "sess-1", user_id: str = "alice") -> Session:
    now = timezone.now()
    with in_tenant(tenant):
        return Session.objects.create(
            tenant=tenant,
            session_id=session_id,
            user_id=user_id,
            lease_until=now + timedelta(hours=1),
            created_at=now,
            last_active_at=now,
        )


def make_task(tenant, task_id: str = "task-1") -> Task:
    now = timezone.now()
    with in_tenant(tenant):
        return Task.objects.create(
            tenant=tenant, task_id=task_id, objective="migrate", created_at=now, updated_at=now
        )


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def run_a(tenant_a) -> Run:
    return make_run(tenant_a, run_id="run-a")


def in_threads(count: int, work) -> list:
    """Run `work(i, barrier)` in `count` threads started together; return results in order.

    Each thread has its own database connection, closed when it is done; an
    exception in a thread fails the test.
    """
    import threading

    from django.db import connection

    barrier = threading.Barrier(count)
    results: list = [None] * count
    errors: list[BaseException] = []

    def target(i: int) -> None:
        try:
            results[i] = work(i, barrier)
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)
            barrier.abort()
        finally:
            connection.close()

    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    if errors:
        raise errors[0]
    return results


def make_checkpoint(tenant, checkpoint_id: str, task_id: str = "task-cp") -> TaskCheckpoint:
    """A checkpoint a run's `last_checkpoint_id` may name (ids in a body must exist)."""
    now = timezone.now()
    with in_tenant(tenant):
        task, _ = Task.objects.get_or_create(
            tenant=tenant,
            task_id=task_id,
            defaults={"objective": "o", "created_at": now, "updated_at": now},
        )
        seq = TaskCheckpoint.objects.filter(tenant=tenant, task=task).count() + 1
        return TaskCheckpoint.objects.create(
            tenant=tenant,
            task=task,
            checkpoint_id=checkpoint_id,
            seq=seq,
            schema_version=1,
            state={},
            created_at=now,
        )
