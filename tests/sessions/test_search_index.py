"""Search off the append path (sessions_app.search_index, migration 0009).

An append writes no index row; the indexer finds the items by the sessions'
marks (`indexed_seq` behind `last_seq`) and indexes them. Nothing is left
unindexed: not when indexers and appenders run at once, not when a worker is
killed mid-batch, not when Redis is down; a session fenced for deletion is
never indexed again, and its deletion takes the index rows it had.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from django.db import connection, connections, transaction

from lifecycle_app.deletion import DeletionStore
from sessions_app.models import Session
from sessions_app.search_index import index_pending, index_tenant
from sessions_app.store import SessionStore
from sessions_app.tasks import index_items
from stateroom.actor import Actor
from tenancy_app.scoping import in_tenant
from tests.infra import celery_worker, database_url, producing_to, redis_server

ADMIN = Actor.system("test")


def make(tenant, session_id: str) -> None:
    with in_tenant(tenant):
        SessionStore(tenant, ADMIN).create(session_id=session_id, user_id="u1")


def say(tenant, session_id: str, *texts: str) -> None:
    with in_tenant(tenant):
        SessionStore(tenant, ADMIN).append_items(
            session_id=session_id,
            items=[{"role": "user", "item_type": "message", "payload": {"text": t}} for t in texts],
        )


def found(tenant, query: str) -> list[tuple[str, int]]:
    with in_tenant(tenant):
        hits, _more = SessionStore(tenant, ADMIN).search_items(query=query, limit=100)
    return sorted((hit.session_id, hit.seq) for hit in hits)


def pending(tenant, session_id: str) -> bool:
    """The session's flag on the indexer's work list (`session_search_pending_idx`)."""
    with in_tenant(tenant):
        return Session.objects.get(tenant=tenant, session_id=session_id).search_pending


def hot_updates(table: str) -> tuple[int, int]:
    """This transaction's updates of `table` so far: (all, HOT)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables WHERE relname = %s",
            [table],
        )
        return cursor.fetchone()


def marks(tenant, session_id: str) -> tuple[int, int]:
    with in_tenant(tenant):
        session = Session.objects.get(tenant=tenant, session_id=session_id)
    return session.indexed_seq, session.last_seq


def index_rows(tenant, query: str) -> int:
    """The index rows of `tenant` that match `query`, read through the index's own policy."""
    with in_tenant(tenant), connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('app.item_search', to_tsquery('english', %s)::text, true)", [query]
        )
        cursor.execute("SELECT count(*) FROM sessions_app_itemsearch")
        return cursor.fetchone()[0]


def test_an_append_writes_no_index_row_and_the_indexer_makes_it_findable(tenant_a, tenant_b):
    make(tenant_a, "s-1")
    say(tenant_a, "s-1", "the parcel is lost", "hello")
    make(tenant_b, "s-9")
    say(tenant_b, "s-9", "another parcel")
    assert found(tenant_a, "parcel") == []
    assert marks(tenant_a, "s-1") == (0, 2)
    assert pending(tenant_a, "s-1")

    with in_tenant(tenant_a):
        done = index_tenant()
    assert (done.sessions, done.items) == (1, 2)  # tenant A only: B's session waits
    assert found(tenant_a, "parcel") == [("s-1", 1)]
    assert marks(tenant_a, "s-1") == (2, 2)
    assert not pending(tenant_a, "s-1")
    assert marks(tenant_b, "s-9") == (0, 1)
    assert pending(tenant_b, "s-9")
    with in_tenant(tenant_a):
        assert index_tenant().sessions == 0  # nothing waits: nothing done

    say(tenant_a, "s-1", "a second parcel")
    assert found(tenant_a, "parcel") == [("s-1", 1)]
    index_items()  # every tenant, as beat runs it
    assert found(tenant_a, "parcel") == [("s-1", 1), ("s-1", 3)]
    assert found(tenant_b, "parcel") == [("s-9", 1)]


def test_batches_are_bounded_and_each_goes_on_where_the_last_stopped(tenant_a):
    for n in range(3):
        make(tenant_a, f"s-{n}")
        say(tenant_a, f"s-{n}", *[f"word{n} item {k}" for k in range(5)])
    with in_tenant(tenant_a):
        first = index_pending(max_sessions=2, max_items=3)
    assert (first.sessions, first.items) == (2, 6)
    assert [marks(tenant_a, f"s-{n}") for n in range(3)] == [(3, 5), (3, 5), (0, 5)]
    assert [pending(tenant_a, f"s-{n}") for n in range(3)] == [True] * 3  # 4 and 5 wait
    assert found(tenant_a, "word0") == [("s-0", k) for k in (1, 2, 3)]
    with in_tenant(tenant_a):
        while index_pending(max_sessions=2, max_items=3).sessions:
            pass
    assert [marks(tenant_a, f"s-{n}") for n in range(3)] == [(5, 5)] * 3
    assert [pending(tenant_a, f"s-{n}") for n in range(3)] == [False] * 3
    assert found(tenant_a, "word2") == [("s-2", k) for k in range(1, 6)]


@pytest.mark.django_db(transaction=True)
def test_an_append_to_a_session_on_the_work_list_changes_no_indexed_value(tenant_a, owner_sql):
    """The append's UPDATE of its session is HOT (migration 0012): it moves `last_seq` and
    the lease, which no index holds, and sets a flag already set.

    A HOT update also needs room on the row's page for the new version: the table is
    vacuumed first, so rows that earlier tests on this database rolled back do not fill
    the page (they made this test depend on which tests ran before it)."""
    owner_sql("VACUUM sessions_app_session")
    with transaction.atomic():  # the six versions in one transaction, counted in it
        make(tenant_a, "s-1")
        say(tenant_a, "s-1", "first")  # puts the session on the work list: not HOT
        before = hot_updates("sessions_app_session")
        for n in range(5):
            say(tenant_a, "s-1", f"turn {n}")
        after = hot_updates("sessions_app_session")
    assert (after[0] - before[0], after[1] - before[1]) == (5, 5)
    assert marks(tenant_a, "s-1") == (0, 6)


def test_a_session_fenced_for_deletion_is_never_indexed_and_its_deletion_takes_its_rows(
    tenant_a,
):
    make(tenant_a, "s-1")
    say(tenant_a, "s-1", "passport X123")
    index_items(tenant_id=tenant_a.pk)
    say(tenant_a, "s-1", "passport Y456")  # not indexed yet when the deletion comes
    with in_tenant(tenant_a):
        SessionStore(tenant_a, ADMIN).close(session_id="s-1", reason="done")
    with in_tenant(tenant_a):
        # The fence is set at once; the job runs after the commit (not captured: it waits).
        deletion = DeletionStore(tenant_a, ADMIN).request(session_id="s-1", reason="erasure")
    assert index_rows(tenant_a, "passport") == 1  # the indexed item, until its deletion
    index_items(tenant_id=tenant_a.pk)
    assert marks(tenant_a, "s-1")[0] == 1  # the fenced session's item 2 was never indexed
    assert index_rows(tenant_a, "passport") == 1
    with in_tenant(tenant_a):
        DeletionStore(tenant_a, ADMIN).run(deletion_id=deletion.deletion_id)
    assert index_rows(tenant_a, "passport") == 0
    index_items(tenant_id=tenant_a.pk)
    assert index_rows(tenant_a, "passport") == 0


@pytest.mark.django_db(transaction=True)
def test_appenders_and_indexers_at_once_leave_no_item_unindexed(tenant_a):
    """Two appenders and two indexers on one session, on real connections: every item is
    indexed once, and the mark ends at the last seq."""
    make(tenant_a, "busy")
    stop = threading.Event()
    errors: list[BaseException] = []

    def appender(name: str) -> None:
        try:
            for n in range(40):
                say(tenant_a, "busy", f"{name} turn{n} zebra", f"{name} reply{n}")
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    def indexer() -> None:
        try:
            while not stop.is_set():
                with in_tenant(tenant_a):
                    index_pending(max_items=7)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    indexers = [threading.Thread(target=indexer) for _ in range(2)]
    appenders = [threading.Thread(target=appender, args=(f"w{k}",)) for k in range(2)]
    for thread in indexers + appenders:
        thread.start()
    for thread in appenders:
        thread.join()
    stop.set()
    for thread in indexers:
        thread.join()
    assert errors == []
    index_items(tenant_id=tenant_a.pk)
    assert marks(tenant_a, "busy") == (160, 160)
    assert index_rows(tenant_a, "zebra") == 80
    assert len(found(tenant_a, "zebra")) == 80


def worker_pid(queue: str) -> int:
    """The pid of the worker named `<queue>@…` (its command line, from /proc)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if proc.name.isdigit() and any(arg.startswith(f"{queue}@".encode()) for arg in argv):
            pids.append(int(proc.name))
    assert len(pids) == 1, pids
    return pids[0]


def wait_until(condition, what, timeout: float = 60.0):
    """Poll `condition` (real processes at work); `what()` says why it failed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.1)
    pytest.fail(what())


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_batch_leaves_the_marks_and_the_next_run_indexes_everything(
    tenant_a,
):
    make(tenant_a, "s-1")
    say(tenant_a, "s-1", "first zebra", "second zebra", "third zebra")
    queue = f"index-{uuid.uuid4().hex[:12]}"
    broker = os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/15")
    # Hold item 2 so the worker's batch (which reads the items FOR SHARE) waits on it.
    with in_tenant(tenant_a), connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM sessions_app_sessionitem WHERE tenant_id = %s AND seq = 2 FOR UPDATE",
            [tenant_a.pk],
        )
        with producing_to(broker, queue), celery_worker(broker, queue) as log:
            index_items.delay(tenant_id=tenant_a.pk)
            backend = wait_until(
                _lock_waiter, lambda: "the batch never waited on the item" + _tail(log)
            )
            os.kill(worker_pid(queue), signal.SIGKILL)
    # The test's transaction ends and frees the item: the dead worker's backend finishes its
    # statement, finds nobody to answer, and ends without a commit. The batch wrote nothing.
    wait_until(lambda: not _backend_alive(backend), lambda: "the dead worker's backend stayed")
    assert marks(tenant_a, "s-1") == (0, 3)
    assert index_rows(tenant_a, "zebra") == 0
    index_items(tenant_id=tenant_a.pk)
    assert marks(tenant_a, "s-1") == (3, 3)
    assert index_rows(tenant_a, "zebra") == 3


def _lock_waiter() -> int | None:
    """The pid of a backend of the test database waiting on a lock, seen from a connection of
    its own (inside a transaction pg_stat_activity keeps the snapshot of its first read)."""
    with psycopg.connect(database_url(), autocommit=True) as conn:
        row = conn.execute(
            "SELECT pid FROM pg_stat_activity"
            " WHERE wait_event_type = 'Lock' AND datname = current_database() LIMIT 1"
        ).fetchone()
    return row[0] if row else None


def _backend_alive(pid: int) -> bool:
    with psycopg.connect(database_url(), autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone()
    return found is not None


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_with_redis_down_appends_go_on_and_the_first_tick_after_indexes_them(tenant_a):
    """A worker with beat (interval 0.5 s) indexes appends; Redis stops: appends still
    succeed and wait; Redis starts again: beat's next tick indexes every one of them."""
    make(tenant_a, "s-1")
    queue = f"index-{uuid.uuid4().hex[:12]}"
    with redis_server() as (port, server):
        broker = f"redis://127.0.0.1:{port}/0"
        with celery_worker(broker, queue, beat=True, STATEROOM_SEARCH_INDEX_INTERVAL="0.5") as log:
            say(tenant_a, "s-1", "before the outage zebra")
            wait_until(
                lambda: marks(tenant_a, "s-1") == (1, 1), lambda: "beat never indexed" + _tail(log)
            )
            server.send_signal(signal.SIGKILL)  # Redis is gone
            server.wait(timeout=10)
            for n in range(5):
                say(tenant_a, "s-1", f"during the outage {n} zebra")  # the appends succeed
            assert marks(tenant_a, "s-1") == (1, 6)
            assert index_rows(tenant_a, "zebra") == 1
            with redis_server(port):
                wait_until(
                    lambda: marks(tenant_a, "s-1") == (6, 6),
                    lambda: "nothing indexed after Redis came back" + _tail(log),
                    timeout=90,
                )
    assert index_rows(tenant_a, "zebra") == 6


def _tail(log) -> str:
    return "; worker log:\n" + log.read_text()[-3000:]


def test_the_request_digest_is_the_canonical_digest_of_items_and_run_id():
    """Taken from the items' canonical text the statement sends, it equals RFC 8785's digest
    of {"items": …, "run_id": …}: keys recorded before keep replaying."""
    from sessions_app.store.appends import _request_digest
    from stateroom.canonical import canonical_bytes, digest

    rows = [
        {"role": "user", "item_type": "message", "payload": {"text": "é ✓", "n": 1, "z": [None]}},
        {"role": "assistant", "item_type": "message", "payload": {"b": 1.5, "a": "x"}},
    ]
    for run_id in ("", "run-1"):
        assert _request_digest(canonical_bytes(rows), run_id) == digest(
            {"items": rows, "run_id": run_id}
        )


def test_items_without_a_canonical_form_are_refused_and_nothing_is_written(tenant_a):
    """The items' one JSON parameter is their RFC 8785 text: a number JSON readers do not
    keep exactly is 422 naming it, at the store too (not only at the API's JSON gate)."""
    from stateroom.errors import Unprocessable

    make(tenant_a, "s-1")
    say(tenant_a, "s-1", "fine")  # a first, good append
    with pytest.raises(Unprocessable) as refused:
        with in_tenant(tenant_a):
            SessionStore(tenant_a, ADMIN).append_items(
                session_id="s-1",
                items=[{"role": "user", "item_type": "message", "payload": {"n": 2**60}}],
            )
    assert refused.value.code == "not_serializable"
    assert "items[0].payload.n" in refused.value.message
    assert marks(tenant_a, "s-1") == (0, 1)
