"""Racing writers on one task, on PostgreSQL with real threads and connections."""

import threading
from collections.abc import Callable

import pytest
from django.db import connection

from stateroom.actor import Actor
from stateroom.errors import StateroomError
from tasks_app.models import Task, TaskCheckpoint
from tasks_app.store import TaskStateStore
from tenancy_app.scoping import in_tenant
from tests.infra import wait_for_lock_waiter

WORKERS = 6


def race(tenant, calls: list[Callable[[TaskStateStore], object]]):
    barrier = threading.Barrier(len(calls))
    results: list = []
    errors: list[StateroomError] = []

    def worker(call) -> None:
        try:
            barrier.wait()
            with in_tenant(tenant):
                results.append(call(TaskStateStore(tenant, Actor.system("worker"))))
        except StateroomError as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(c,)) for c in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return results, errors


@pytest.mark.django_db(transaction=True)
def test_one_of_several_concurrent_saves_wins(tenant_a, make_task):
    make_task(tenant_a)
    calls = [
        lambda store, i=i: store.save(task_id="T-7", expected_version=1, pending_nodes=[f"w{i}"])
        for i in range(WORKERS)
    ]
    results, errors = race(tenant_a, calls)
    assert len(results) == 1
    assert [(e.code, e.details["current_version"]) for e in errors] == [("version_conflict", 2)] * (
        WORKERS - 1
    )
    with in_tenant(tenant_a):
        assert Task.objects.values_list("version", "pending_nodes").get() == (
            2,
            results[0].pending_nodes,
        )


@pytest.mark.django_db(transaction=True)
def test_concurrent_checkpoints_get_gap_free_seqs(tenant_a, make_task):
    make_task(tenant_a)
    calls = [
        lambda store, i=i: store.append_checkpoint(
            task_id="T-7", schema_version=1, state={"writer": i}
        )
        for i in range(WORKERS)
    ]
    results, errors = race(tenant_a, calls)
    assert errors == []
    assert sorted(c.seq for c in results) == list(range(1, WORKERS + 1))
    with in_tenant(tenant_a):
        task = Task.objects.get()
        last = TaskCheckpoint.objects.get(seq=WORKERS)
    assert (task.last_checkpoint_seq, task.latest_checkpoint_id) == (WORKERS, last.checkpoint_id)


@pytest.mark.django_db(transaction=True)
def test_checkpoint_waiting_on_a_save_that_finishes_the_task_is_refused(tenant_a, make_task):
    """The seq UPDATE re-checks the status under the row lock: no checkpoint after `completed`."""
    make_task(tenant_a)
    saved, release = threading.Event(), threading.Event()
    outcome: list = []

    def finish() -> None:
        try:
            with in_tenant(tenant_a):
                TaskStateStore(tenant_a, Actor.system("saver")).save(
                    task_id="T-7", expected_version=1, status="completed"
                )
                saved.set()
                release.wait(10)
        finally:
            connection.close()

    def checkpoint() -> None:
        try:
            with in_tenant(tenant_a):
                outcome.append(
                    TaskStateStore(tenant_a, Actor.system("writer")).append_checkpoint(
                        task_id="T-7", schema_version=1, state={"k": 1}
                    )
                )
        except StateroomError as exc:
            outcome.append(exc)
        finally:
            connection.close()

    saver = threading.Thread(target=finish)
    saver.start()
    assert saved.wait(10)
    writer = threading.Thread(target=checkpoint)
    writer.start()
    wait_for_lock_waiter("the checkpoint never waited on the task's row lock")
    release.set()
    saver.join(10)
    writer.join(10)
    [refusal] = outcome
    assert isinstance(refusal, StateroomError)
    assert (refusal.code, refusal.details) == ("invalid_transition", {"status": "completed"})
    with in_tenant(tenant_a):
        assert not TaskCheckpoint.objects.exists()
        assert Task.objects.values_list("status", "last_checkpoint_seq").get() == ("completed", 0)
