"""Racing LangGraph writers on one thread, on PostgreSQL with real threads and connections.

Two processes that resume one thread write the same checkpoint, the same
channel versions and the same pending writes: each lands once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connection

from stateroom.actor import Actor
from tasks_app.langgraph_store import Blob, GraphThreadStore, Value, Write
from tasks_app.models import GraphBlob, GraphCheckpoint, GraphWrite, Task
from tenancy_app.scoping import in_tenant

WORKERS = 6


def race(tenant, call: Callable[[GraphThreadStore, int], object]) -> list:
    barrier = threading.Barrier(WORKERS)
    results: list = []
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            barrier.wait()
            with in_tenant(tenant):
                results.append(call(GraphThreadStore(tenant, Actor.system("worker")), n))
        except BaseException as exc:  # reported by the test
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    return results


@pytest.mark.django_db(transaction=True)
def test_the_same_checkpoint_and_writes_from_racing_writers_land_once(tenant_a, make_task):
    make_task(tenant_a, task_id="th-1")
    checkpoint = {
        "v": 1,
        "id": "c1",
        "ts": "",
        "channel_versions": {"a": 1, "b": 1},
        "versions_seen": {},
    }

    def put(store: GraphThreadStore, n: int) -> bool:
        return store.put(
            thread_id="th-1",
            checkpoint_ns="",
            checkpoint=checkpoint,
            metadata={"writer": n},
            blobs=[Blob("a", 1, Value("json", value="A")), Blob("b", 1, Value("json", value="B"))],
        )

    created = race(tenant_a, put)
    assert sorted(created) == [False] * (WORKERS - 1) + [True]

    def write(store: GraphThreadStore, n: int) -> int:
        return store.put_writes(
            thread_id="th-1",
            checkpoint_ns="",
            checkpoint_id="c1",
            graph_task_id="t",
            writes=[
                Write(0, "a", Value("json", value=n)),
                Write(-1, "__error__", Value("json", value=n)),
            ],
        )

    written = race(tenant_a, write)
    assert sum(written) == WORKERS + 1  # the regular write once, the special one by each
    with in_tenant(tenant_a):
        assert GraphCheckpoint.objects.count() == 1
        assert sorted(GraphBlob.objects.values_list("channel", "value")) == [("a", "A"), ("b", "B")]
        assert sorted(GraphWrite.objects.values_list("idx", flat=True)) == [-1, 0]


@pytest.mark.django_db(transaction=True)
def test_racing_first_calls_of_a_new_thread_make_one_task(tenant_a):
    """LangGraph sends a new thread's first put and writes at once: one task, with what
    Django would have written, and every call gets it."""

    def ensure(store: GraphThreadStore, n: int) -> int:
        return store.ensure_thread("user 7/chat").pk

    made = race(tenant_a, ensure)
    with in_tenant(tenant_a):
        [task] = Task.objects.filter(thread_id="user 7/chat")
        assert task.objective == "LangGraph thread user 7/chat"
        assert (task.status, task.version, task.constraints) == ("active", 1, [])
    assert made == [task.pk] * WORKERS
