"""One round trip per hot operation, row-level security included (stateroom.sql).

Outside a transaction (`in_tenant(tenant, atomic=False)`) each hot store
operation is one round trip: the scope's tenant setting and the statement,
pipelined with one Sync, one implicit transaction. These tests count the round
trips with Django's CaptureQueriesContext (the pipelined path logs one entry per
round trip) and prove that the setting of one operation never serves the next
one.
"""

from __future__ import annotations

import re
import threading

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from effects_app.models import ExternalEffect
from effects_app.store import EffectStore
from runs_app.store import RunStateStore
from sessions_app.models import SessionItem
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from stateroom.errors import Conflict, NotFound, Unprocessable
from tasks_app.store import TaskStateStore
from tenancy_app.scoping import in_tenant

pytestmark = [pytest.mark.django_db(transaction=True)]

ACTOR = Actor.system("test")


def msg(text: str) -> dict:
    return {"role": "user", "item_type": "message", "payload": {"text": text}}


@pytest.fixture
def setup(tenant_a, tenant_b):
    """A live session, a running run and a task in each tenant (made the usual way)."""
    made = {}
    for tenant in (tenant_a, tenant_b):
        with in_tenant(tenant):
            SessionStore(tenant, ACTOR).create(session_id="s-1", user_id="alice")
            runs = RunStateStore(tenant, ACTOR)
            run = runs.create(run_id="run-1")
            run = runs.compare_and_set(
                run_id="run-1", expected_version=run.version, changes={"status": "running"}
            )
            TaskStateStore(tenant, ACTOR).create(task_id="task-1", objective="Migrate")
        made[tenant.slug] = run.version
    return made


def one_message(work):
    """Run `work()`; return (result, the messages sent) and check they were one."""
    with CaptureQueriesContext(connection) as ctx:
        result = work()
    return result, [q["sql"] for q in ctx.captured_queries]


def test_each_hot_operation_is_one_message(tenant_a, setup):
    sessions = SessionStore(tenant_a, ACTOR)
    runs = RunStateStore(tenant_a, ACTOR)
    tasks = TaskStateStore(tenant_a, ACTOR)
    with in_tenant(tenant_a, atomic=False):
        for key in ("k-1", None):  # with an idempotency key and without
            appended, sent = one_message(
                lambda key=key: sessions.append_items(
                    session_id="s-1", items=[msg("a"), msg("b")], idempotency_key=key
                )
            )
            assert len(sent) == 1 and "set_config('app.tenant_id'" in sent[0]
            assert appended.created
        items, sent = one_message(
            lambda: sessions.get_items(session_id="s-1", limit=50, before_seq=2**62)
        )
        assert len(sent) == 1 and [i.seq for i in items] == [1, 2, 3, 4]
        run, sent = one_message(
            lambda: runs.compare_and_set(
                run_id="run-1", expected_version=setup["acme"], changes={"turn_index": 1}
            )
        )
        assert len(sent) == 1 and run.version == setup["acme"] + 1 and run.turn_index == 1
        saved, sent = one_message(
            lambda: tasks.append_checkpoint(task_id="task-1", schema_version=1, state={"n": 1})
        )
        assert len(sent) == 1 and saved.seq == 1
        loaded, sent = one_message(lambda: tasks.latest_checkpoint("task-1"))
        assert len(sent) == 1 and loaded["state"] == {"n": 1} and loaded["seq"] == 1
    # What the messages wrote is there, committed, for the tenant's next reader.
    with in_tenant(tenant_a):
        assert SessionItem.objects.filter(tenant=tenant_a).count() == 4
        assert runs.get("run-1").version == setup["acme"] + 1


def test_a_refused_compare_and_set_explains_itself_in_the_same_message(tenant_a, setup):
    runs = RunStateStore(tenant_a, ACTOR)
    version = setup["acme"]
    with in_tenant(tenant_a, atomic=False):
        with CaptureQueriesContext(connection) as ctx, pytest.raises(Conflict) as stale:
            runs.compare_and_set(
                run_id="run-1", expected_version=version - 1, changes={"turn_index": 9}
            )
        assert len(ctx.captured_queries) == 1
        assert stale.value.code == "version_conflict"
        assert stale.value.details["current_version"] == version
        with CaptureQueriesContext(connection) as ctx, pytest.raises(NotFound):
            runs.compare_and_set(run_id="run-404", expected_version=1, changes={"turn_index": 9})
        assert len(ctx.captured_queries) == 1
        with CaptureQueriesContext(connection) as ctx, pytest.raises(Conflict) as illegal:
            runs.compare_and_set(
                run_id="run-1", expected_version=version, changes={"status": "created"}
            )
        assert len(ctx.captured_queries) == 1
        assert illegal.value.code == "invalid_transition"
        # A claim of another worker: refused, and said so, in one message too.
        runs.claim(run_id="run-1", worker="w-1", expected_version=version)
        with CaptureQueriesContext(connection) as ctx, pytest.raises(Conflict) as claimed:
            runs.compare_and_set(
                run_id="run-1",
                expected_version=version + 1,
                changes={"turn_index": 2},
                worker="w-2",
            )
        assert len(ctx.captured_queries) == 1
        assert claimed.value.code == "run_claimed"
        assert claimed.value.details["claimed_by"] == "w-1"
    with in_tenant(tenant_a):
        run = runs.get("run-1")
    assert (run.version, run.turn_index) == (version + 1, 0)  # the refusals wrote nothing


def test_a_message_sees_and_writes_only_the_scope_tenant_after_another_tenants(
    tenant_a, tenant_b, setup
):
    """The connection's previous message was tenant A's: tenant B's message cannot see A's
    rows, even through a store built (wrongly) for A, and nothing of A's setting remains."""
    a_sessions = SessionStore(tenant_a, ACTOR)
    with in_tenant(tenant_a, atomic=False):
        a_sessions.append_items(session_id="s-1", items=[msg("secret of A")])
        a_runs = RunStateStore(tenant_a, ACTOR)
        a_runs.compare_and_set(
            run_id="run-1", expected_version=setup["acme"], changes={"turn_index": 5}
        )
    with connection.cursor() as cursor:  # on the same connection, after the message
        cursor.execute("SELECT current_setting('app.tenant_id', true)")
        assert cursor.fetchone()[0] in (None, "")
    with in_tenant(tenant_b, atomic=False):
        # The wrong store: filters on A's tenant id, but the policy is B's.
        with pytest.raises(NotFound):
            a_sessions.get_items(session_id="s-1", limit=50, before_seq=2**62)
        with pytest.raises(NotFound):
            a_sessions.append_items(session_id="s-1", items=[msg("written into A?")])
        with pytest.raises(NotFound):
            a_runs.compare_and_set(
                run_id="run-1", expected_version=setup["acme"] + 1, changes={"turn_index": 6}
            )
        with pytest.raises(NotFound):
            TaskStateStore(tenant_a, ACTOR).append_checkpoint(
                task_id="task-1", schema_version=1, state={"x": 1}
            )
        # B's own store sees only B's session, whose items are B's (none).
        b_items = SessionStore(tenant_b, ACTOR).get_items(session_id="s-1", limit=50)
        assert b_items == []
    with in_tenant(tenant_a):
        texts = [i.payload["text"] for i in a_sessions.get_items(session_id="s-1", limit=50)]
        assert texts == ["secret of A"]
        assert a_runs.get("run-1").turn_index == 5


def _prepared_on_the_server() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements")
        return cursor.fetchone()[0]


def test_a_statement_the_server_forgot_is_prepared_again(tenant_a, setup):
    sessions = SessionStore(tenant_a, ACTOR)
    with in_tenant(tenant_a, atomic=False):
        for _ in range(6):  # past DB_PREPARE_THRESHOLD (5): prepared on the server
            sessions.get_items(session_id="s-1", limit=50)
    assert _prepared_on_the_server() > 0
    # What a pooler's reset does, behind psycopg's back (it still thinks them prepared).
    connection.connection.pgconn.exec_(b"DEALLOCATE ALL")
    with in_tenant(tenant_a, atomic=False):
        sessions.append_items(session_id="s-1", items=[msg("again")])
        assert [i.payload["text"] for i in sessions.get_items(session_id="s-1", limit=50)] == [
            "again"
        ]


def test_a_prepared_hot_statement_is_never_planned_again(tenant_a, setup):
    """Its message asks for the generic plan (`plan_cache_mode`): left to PostgreSQL's
    `auto`, the first five runs of a prepared statement are planned for their values, and
    a statement whose custom plans look cheaper keeps being planned on every call."""
    sessions = SessionStore(tenant_a, ACTOR)
    connection.close()
    with in_tenant(tenant_a, atomic=False):
        for _ in range(12):  # 5 unprepared (DB_PREPARE_THRESHOLD), then 7 prepared
            sessions.get_items(session_id="s-1", limit=50)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
            " WHERE statement LIKE %s",
            ["%FROM sessions_app_sessionitem%"],
        )
        assert cursor.fetchall() == [(7, 0)]


def test_without_prepared_statements_none_is_left_on_the_server(tenant_a, setup):
    """DB_PREPARE_THRESHOLD=0 (a pooler that keeps no prepared statement): same answers,
    and the server holds no prepared statement of the connection; by default it does."""
    sessions = SessionStore(tenant_a, ACTOR)

    def appends(prefix: str) -> list:
        with in_tenant(tenant_a, atomic=False):
            done = [
                sessions.append_items(
                    session_id="s-1", items=[msg(prefix)], idempotency_key=f"{prefix}-{n}"
                )
                for n in range(7)
            ]
            replayed = sessions.append_items(
                session_id="s-1", items=[msg(prefix)], idempotency_key=f"{prefix}-0"
            )
        assert (replayed.first_seq, replayed.created) == (done[0].first_seq, False)
        return done

    connection.close()
    appends("default")
    assert _prepared_on_the_server() > 0
    connection.close()
    connection.ensure_connection()
    connection.connection.prepare_threshold = None  # what DB_PREPARE_THRESHOLD=0 configures
    try:
        done = appends("plain")
        assert [a.created for a in done] == [True] * 7
        assert _prepared_on_the_server() == 0
    finally:
        connection.close()  # the next connection has the configured threshold


def test_concurrent_messages_keep_seqs_gap_free_and_one_key_one_append(tenant_a, setup):
    """Four writers append one message each at a time; two of them share every key."""
    rounds = 25

    def writer(index: int) -> list:
        store = SessionStore(tenant_a, ACTOR)
        done = []
        try:
            barrier.wait(timeout=30)
            with in_tenant(tenant_a, atomic=False):
                for n in range(rounds):
                    key = f"shared-{n}" if index < 2 else f"own-{index}-{n}"
                    items = [msg(f"{key}:x"), msg(f"{key}:y")]
                    done.append(
                        store.append_items(session_id="s-1", items=items, idempotency_key=key)
                    )
        finally:
            connection.close()
        return done

    barrier = threading.Barrier(4)
    results: list = [None] * 4
    threads = [
        threading.Thread(target=lambda i=i: results.__setitem__(i, writer(i))) for i in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert all(isinstance(r, list) for r in results)
    # The two writers sharing keys got the same seqs for each key; exactly one created it.
    for a, b in zip(results[0], results[1], strict=True):
        assert (a.first_seq, a.last_seq) == (b.first_seq, b.last_seq)
        assert a.created != b.created
    with in_tenant(tenant_a):
        seqs = list(
            SessionItem.objects.filter(tenant=tenant_a, session__session_id="s-1")
            .order_by("seq")
            .values_list("seq", flat=True)
        )
        last_seq = SessionStore(tenant_a, ACTOR).get(session_id="s-1").last_seq
    appends = rounds * 3  # shared keys count once
    assert seqs == list(range(1, 2 * appends + 1))
    assert last_seq == 2 * appends


def test_a_query_outside_a_tenant_block_is_refused_not_answered_empty(tenant_a, setup):
    """Under atomic=False, an ORM query that no store wrapped would meet RLS with no tenant
    and find nothing; it is refused instead of answered wrongly."""
    from django_scopes.exceptions import ScopeError

    from sessions_app.models import Session

    with in_tenant(tenant_a, atomic=False):
        with pytest.raises(ScopeError):
            Session.objects.filter(tenant=tenant_a).count()
        # Store methods bring their own tenant block.
        assert RunStateStore(tenant_a, ACTOR).get("run-1").run_id == "run-1"


def test_a_prepared_statement_is_kept_per_parameter_type(tenant_a, setup):
    """psycopg sends a small int as int2 and a big one as int8 (binary): one statement text
    run with both, past the prepare threshold, is prepared once for each, never mixed."""
    from stateroom.sql import hot_cursor

    values = [7] * 6 + [70_000, 2**40, 7, None, 2**40]
    with in_tenant(tenant_a, atomic=False):
        answers = []
        for value in values:
            with hot_cursor(alone=True) as cursor:
                cursor.execute("SELECT %s::bigint + 1, current_setting('app.tenant_id')", [value])
                answers.append(cursor.fetchone())
    expected = [(None if v is None else v + 1, str(tenant_a.pk)) for v in values]
    assert answers == expected
    assert _prepared_on_the_server() >= 2


def _plan_of(tenant, logged: str) -> str:
    """EXPLAIN ANALYZE of a logged tenant message's statement, rolled back."""
    statement = logged.split("; ", 1)[1]
    with in_tenant(tenant), connection.cursor() as cursor:
        cursor.execute("SAVEPOINT plan")
        cursor.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " + statement)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("ROLLBACK TO SAVEPOINT plan")
    return plan


def test_a_compare_and_set_that_changes_the_run_does_not_read_it_again(tenant_a, setup):
    # The refusal's fresh read (runs_app_run_now) is gated on the UPDATE matching
    # nothing: a successful compare-and-set pays for no second look at the run.
    runs = RunStateStore(tenant_a, ACTOR)
    version = setup["acme"]
    with in_tenant(tenant_a, atomic=False):
        with CaptureQueriesContext(connection) as changed:
            runs.compare_and_set(
                run_id="run-1", expected_version=version, changes={"turn_index": 1}
            )
        with CaptureQueriesContext(connection) as refused, pytest.raises(Conflict):
            runs.compare_and_set(
                run_id="run-1", expected_version=version, changes={"turn_index": 2}
            )
    [changed_sql] = [q["sql"] for q in changed.captured_queries]
    [refused_sql] = [q["sql"] for q in refused.captured_queries]
    # Replayed as they were sent: the first (at `version`) now finds a newer run and
    # is refused, so it is replayed at the version it saw move, to change it again.
    changed_sql = changed_sql.replace(f'"version" = {version}', f'"version" = {version + 1}')
    function_scan = re.compile(r"Function Scan on runs_app_run_now.*")
    assert "(never executed)" in function_scan.search(_plan_of(tenant_a, changed_sql)).group()
    assert "actual rows=1" in function_scan.search(_plan_of(tenant_a, refused_sql)).group()


def test_record_or_return_an_effect_is_one_message_replays_and_refusals_included(
    tenant_a, tenant_b, setup
):
    effects = EffectStore(tenant_a, ACTOR)
    runs = RunStateStore(tenant_a, ACTOR)

    def record(request=None, worker=None, store=effects):
        return store.record(
            run_id="run-1",
            idempotency_key="T-7:n1:send",
            tool_name="send_email",
            request=request or {"to": "a@example.com"},
            worker=worker,
        )

    with in_tenant(tenant_a, atomic=False):
        (effect, created), sent = one_message(record)
        assert created and len(sent) == 1
        (again, created), sent = one_message(record)
        assert (again.effect_id, again.run.run_id, created) == (effect.effect_id, "run-1", False)
        assert again.request == {"to": "a@example.com"} and len(sent) == 1
        with CaptureQueriesContext(connection) as ctx, pytest.raises(Unprocessable) as reused:
            record(request={"to": "b@example.com"})
        assert reused.value.code == "idempotency_key_reused" and len(ctx.captured_queries) == 1
        runs.claim(run_id="run-1", worker="w-1", expected_version=setup["acme"])
        with CaptureQueriesContext(connection) as ctx, pytest.raises(Conflict) as claimed:
            record(worker="w-2")
        assert claimed.value.code == "run_claimed" and len(ctx.captured_queries) == 1
        (mine, created), sent = one_message(lambda: record(worker="w-1"))
        assert (mine.effect_id, created, len(sent)) == (effect.effect_id, False, 1)
    # The same key in another tenant is that tenant's own record.
    with in_tenant(tenant_b, atomic=False):
        other, created = record(store=EffectStore(tenant_b, ACTOR))
    assert created and other.effect_id != effect.effect_id
    with in_tenant(tenant_a):
        assert ExternalEffect.objects.filter(tenant=tenant_a).count() == 1
