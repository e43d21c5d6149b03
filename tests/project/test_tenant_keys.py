"""The schema stays distributable by tenant (Citus; docs/scaling.md, issue 38).

1. The catalog of the migrated test database: every primary key, unique
   constraint, unique index and foreign key between tenant tables (tables with a
   `tenant_id` column, less the identity tables Citus keeps as reference
   tables) includes `tenant_id`.
2. The statements the stores send, captured while a representative workload
   runs through every store (sessions, runs, tasks, approvals, effects, audit,
   notifications): each names the tenant of each tenant table it touches
   (tests/tenant_sql.py, parsed by PostgreSQL's own parser through pglast).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from approvals_app import rollup as approvals_rollup
from approvals_app.store import ApprovalStore
from audit_app.store import AuditStore
from effects_app.store import EffectStore
from runs_app import rollup as runs_rollup
from runs_app.store import RunStateStore
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from stateroom.sql import PIPELINED_STATEMENT_CHECKS
from tasks_app.store import TaskStateStore
from tenancy_app.models import Role
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.test_accessibility import (
    PAGES_FOR_ADMINS,
    PAGES_FOR_ALL,
    PAGES_FOR_OPERATORS,
    every_page_world,
)
from tests.tenant_sql import REFERENCE_TABLES, TenantConditions, tenant_tables, unfiltered

# Keys the lead's item-table migration (issue 40) rewrites; the session's own primary key
# waits for it too (the items' foreign key to the session holds on to `PRIMARY KEY (id)`).

KEYS = """
WITH tenant AS (
  SELECT c.oid, a.attnum FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
  WHERE n.nspname = %(schema)s AND c.relkind IN ('r', 'p') AND NOT c.relname = ANY(%(reference)s)
)
SELECT k.contype::text, k.conrelid::regclass::text, k.conname::text,
       pg_get_constraintdef(k.oid), t.attnum = ANY(k.conkey)
FROM pg_constraint k JOIN tenant t ON t.oid = k.conrelid
WHERE k.contype IN ('p', 'u') OR (k.contype = 'f' AND k.confrelid IN (SELECT oid FROM tenant))
UNION ALL
SELECT 'i', i.indrelid::regclass::text, i.indexrelid::regclass::text,
       pg_get_indexdef(i.indexrelid), t.attnum = ANY(i.indkey::int2[])
FROM pg_index i JOIN tenant t ON t.oid = i.indrelid
WHERE i.indisunique AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)
ORDER BY 1, 2, 3
"""


def keys(schema: str = "public") -> list[tuple[str, str, str, str, bool]]:
    with connection.cursor() as cursor:
        cursor.execute(KEYS, {"schema": schema, "reference": sorted(REFERENCE_TABLES)})
        return cursor.fetchall()


def without_tenant(rows) -> list[tuple[str, str, str]]:
    return [(kind, table, definition) for kind, table, _, definition, ok in rows if not ok]


@pytest.mark.django_db
def test_every_key_between_tenant_tables_carries_the_tenant():
    rows = keys()
    constraints = [row for row in rows if row[0] != "i"]
    carrying = sum(1 for row in constraints if row[4])
    missing = without_tenant(rows)
    summary = f"{carrying} of {len(constraints)} keys carry tenant_id"
    assert missing == [], f"{summary}; these do not:\n" + "\n".join(map(str, missing))
    # The count the closing note reports, and that the catalog is really read.
    assert len(constraints) >= 80, summary
    assert {r[1] for r in rows if r[0] == "p"} >= {"runs_app_run", "audit_app_auditevent"}


@pytest.mark.django_db
def test_the_catalog_check_finds_a_key_without_the_tenant():
    """The same query on tables made the old way (temporary, in this test's schema)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TEMP TABLE parent (id bigint PRIMARY KEY, tenant_id bigint NOT NULL,"
            " name text, UNIQUE (tenant_id, name), UNIQUE (name));"
            "CREATE TEMP TABLE child (id bigint, tenant_id bigint NOT NULL,"
            " parent_id bigint REFERENCES parent (id), PRIMARY KEY (tenant_id, id))"
        )
        cursor.execute("SELECT nspname FROM pg_namespace WHERE oid = pg_my_temp_schema()")
        schema = cursor.fetchone()[0]
    found = {(kind, table.rpartition(".")[2]) for kind, table, _ in without_tenant(keys(schema))}
    assert found == {("p", "parent"), ("u", "parent"), ("f", "child")}


@pytest.mark.parametrize(
    "sql, missing",
    [
        ("SELECT * FROM runs_app_run WHERE tenant_id = $1 AND run_id = $2", []),
        ("SELECT * FROM runs_app_run WHERE run_id = $1", ["runs_app_run"]),
        ("SELECT * FROM runs_app_run WHERE tenant_id = $1 OR run_id = $2", ["runs_app_run"]),
        ("SELECT * FROM runs_app_run r WHERE r.tenant_id = ANY($1)", []),
        (
            "SELECT * FROM runs_app_run r JOIN tasks_app_task k ON k.id = r.task_id"
            " WHERE r.tenant_id = $1",
            ["tasks_app_task"],
        ),
        (
            "SELECT * FROM runs_app_run r LEFT JOIN tasks_app_task k"
            " ON k.tenant_id = r.tenant_id AND k.id = r.task_id WHERE r.tenant_id = $1",
            [],
        ),
        (
            "SELECT * FROM runs_app_run r WHERE r.tenant_id = $1"
            " AND r.task_id IN (SELECT id FROM tasks_app_task WHERE objective = $2)",
            ["tasks_app_task"],
        ),
        (
            'UPDATE "runs_app_run" SET "status" = $1 WHERE "runs_app_run"."id" = $2',
            ["runs_app_run"],
        ),
        ("DELETE FROM runs_app_run WHERE tenant_id = $1 AND id = $2", []),
        ("INSERT INTO runs_app_run (run_id, status) VALUES ($1, $2)", ["runs_app_run"]),
        ("INSERT INTO runs_app_run (tenant_id, run_id) VALUES ($1, $2)", []),
        ("SELECT * FROM tenancy_app_runtimetoken WHERE secret_hash = $1", []),  # reference
    ],
)
def test_the_statement_check(sql, missing):
    tables = {"runs_app_run", "tasks_app_task"}
    assert unfiltered(sql, tables) == missing


@pytest.fixture
def captured():
    with connection.cursor() as cursor:
        guard = TenantConditions(tenant_tables(cursor))
    PIPELINED_STATEMENT_CHECKS.append(guard.check)
    try:
        with connection.execute_wrapper(guard):
            yield guard
    finally:
        PIPELINED_STATEMENT_CHECKS.remove(guard.check)


def workload(tenant, operator) -> None:
    """One of each kind of store call the runtime and the console make."""
    system = Actor.system("test")
    with in_tenant(tenant):
        sessions = SessionStore(tenant, system)
        sessions.create(session_id="s-1", user_id="alice")
        TaskStateStore(tenant, system).create(task_id="task-1", objective="Migrate")
        runs = RunStateStore(tenant, system)
        run = runs.create(run_id="run-1", session_id="s-1", task_id="task-1")
        run = runs.compare_and_set(
            run_id="run-1", expected_version=run.version, changes={"status": "running"}
        )
        runs.append_events(run_id="run-1", events=[{"type": "node.started", "node_id": "n1"}])
        list(runs.list_runs())
        approvals = ApprovalStore(tenant, system)
        approval = approvals.request(
            run_id="run-1",
            expected_version=run.version,
            tool_name="send_refund",
            arguments={"amount": 5},
            risk="low",
        )
        approvals.pending_page(limit=10)
        ApprovalStore(tenant, Actor.for_user(operator)).decide(
            approval_id=approval.approval_id, decision="approve", reason="ok"
        )
        approvals.get(approval.approval_id)
        effects = EffectStore(tenant, system)
        effect, _ = effects.record(
            run_id="run-1", idempotency_key="k-1", tool_name="send_refund", request={"a": 1}
        )
        effects.commit(effect_id=effect.effect_id, result={"ok": True})
        effects.find("k-1")
        sessions.get("s-1")
        list(AuditStore(tenant, system).list_events())
        # the dashboard's rollups (beat's minute jobs), an hour on: each closes quarters
        later = timezone.now() + timedelta(hours=1)
        assert approvals_rollup.refresh(tenant.pk, later) > 0
        assert runs_rollup.refresh(tenant.pk, later) >= 0
    with in_tenant(tenant, atomic=False):
        sessions.append_items(
            session_id="s-1",
            items=[{"role": "user", "item_type": "message", "payload": {"text": "hi"}}],
            idempotency_key="a-1",
        )
        sessions.get_items(session_id="s-1", limit=50)
        runs.get("run-1")
        tasks = TaskStateStore(tenant, system)
        tasks.append_checkpoint(task_id="task-1", schema_version=1, state={"n": 1})
        tasks.latest_checkpoint("task-1")


@pytest.mark.django_db(transaction=True)
def test_store_statements_name_their_tenant(tenant_a, make_user, captured):
    operator = make_user("olga", tenant_a, Role.OPERATOR)
    with CaptureQueriesContext(connection):  # the pipelined path logs, and checks, its SQL
        workload(tenant_a, operator)
    stores = {store.partition(".")[0] for store, _ in captured.seen}
    assert stores >= {"sessions_app", "runs_app", "tasks_app", "approvals_app", "effects_app"}
    rollups = {store for store, sql in captured.seen if "INSERT INTO" in sql and "quarter" in sql}
    assert rollups == {"approvals_app.rollup", "runs_app.rollup"}
    assert len(captured.seen) >= 40
    missing = [
        (store, table, " ".join(sql.split())[:300])
        for store, sql, tables in captured.missing
        for table in tables
    ]
    assert missing == [], "store statements without their tenant:\n" + "\n".join(map(str, missing))


@pytest.mark.django_db
def test_console_statements_name_their_tenant(tenant_a, admin_a):
    """Every console page, as an admin sees it: each statement names the tenant of each
    tenant table it reads, its joins included (stateroom.fields)."""
    ids = every_page_world(tenant_a)
    client = login(admin_a)
    with connection.cursor() as cursor:
        guard = TenantConditions(tenant_tables(cursor), every=True)
    for path in [*PAGES_FOR_ALL, *PAGES_FOR_OPERATORS, *PAGES_FOR_ADMINS]:
        with connection.execute_wrapper(guard):
            response = client.get(path.format(**ids))
        assert response.status_code == (404 if "no-such-page" in path else 200), path
    assert len(guard.seen) > 300
    missing = sorted(
        {
            (table, " ".join(sql.split())[:400])
            for _, sql, tables in guard.missing
            for table in tables
        }
    )
    assert missing == [], "\n".join(map(str, missing))


def test_every_key_between_tenant_models_joins_on_the_tenant():
    """A new foreign key between two tenant tables is a `stateroom.fields` one (or the
    console test above finds its joins)."""
    from django.apps import apps

    from stateroom.fields import TenantForeignKey, TenantOneToOneField

    keys, plain = 0, []
    for model in apps.get_models():
        for field in model._meta.concrete_fields:
            target = field.related_model
            if target is None or target._meta.db_table in REFERENCE_TABLES:
                continue
            names = {f.name for f in target._meta.concrete_fields}
            if "tenant" not in names or "tenant" not in {f.name for f in model._meta.fields}:
                continue
            keys += 1
            if not isinstance(field, TenantForeignKey | TenantOneToOneField):
                plain.append(f"{model._meta.label}.{field.name}")
    assert plain == []
    assert keys >= 20
