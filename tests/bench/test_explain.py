"""The hot queries use indexes: EXPLAIN every SQL statement they send.

Each check runs the real code path (a store method, or a console page
through the test Client) under CaptureQueriesContext, then EXPLAINs every
captured statement on PostgreSQL with the data of `bench_data` analyzed.
No statement may plan a Seq Scan on a tenant-owned table, and the statement
that does the work must use the index named for it.
"""

import json
import re
from functools import cache

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from bench.generate import TIMELINE_SESSION, pid
from effects_app.store import EffectStore
from runs_app.store import RunStateStore
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from tasks_app.store import TaskStateStore
from tenancy_app.scoping import in_tenant
from tests.conftest import login

from .conftest import tenant_tables

pytestmark = [pytest.mark.django_db(transaction=True)]

_SKIP = ("SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK", "BEGIN", "COMMIT")
_SKIP_CALLS = ("SELECT set_config(", "SELECT current_setting(", "SELECT pg_advisory_xact_lock(")


def explained(queries: list[dict]) -> list[tuple[str, dict]]:
    """(sql, plan) for every captured statement that has a plan worth reading."""
    out = []
    with connection.cursor() as cursor:
        for query in queries:
            sql = query["sql"]
            if sql.startswith(_SKIP) or sql.startswith(_SKIP_CALLS):
                continue
            cursor.execute("EXPLAIN (FORMAT JSON) " + sql)
            plan = cursor.fetchone()[0]
            if isinstance(plan, str):
                plan = json.loads(plan)
            out.append((sql, plan[0]["Plan"]))
    return out


def nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", []):
        yield from nodes(child)


def tenant_only_indexes() -> set[str]:
    """Indexes on `tenant_id` alone (Django's FK index): using one scans a whole tenant."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
            " JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]"
            " WHERE i.indnkeyatts = 1 AND a.attname = 'tenant_id'"
        )
        return {row[0] for row in cursor.fetchall()}


@cache
def partial_indexes() -> frozenset[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
            " WHERE i.indpred IS NOT NULL"
        )
        return frozenset(row[0] for row in cursor.fetchall())


def tenant_only(node: dict) -> bool:
    """An index scan whose only condition is the tenant, on a full index: a key that leads
    with `tenant_id` walked over the whole tenant (the hot tables keep no index on
    `tenant_id` alone). A partial index reads only the rows it was built for."""
    if node.get("Index Name") in partial_indexes():
        return False
    conditions = re.findall(r"\b(\w+) (?:=|<>|<|>|<=|>=|~~\*?|@>|&&) ", node.get("Index Cond", ""))
    return set(conditions) == {"tenant_id"}


def full_scans(plan: dict) -> list[str]:
    """Plan nodes that read a whole tenant-owned table, or a whole tenant, to keep a few rows.

    - a Seq Scan of a tenant-owned table;
    - an index scan on `tenant_id` alone (Django's FK index, or a key led by the
      tenant whose only condition is the tenant) with a Filter, or a Bitmap Heap
      Scan with a Filter fed only by such scans: every row of the tenant is read,
      the index the query needed is missing or unusable;
    - an index scan without an Index Cond that filters on `tenant_id` (e.g.
      walking the primary key across all tenants for an ORDER BY id).

    A whole-tenant read without a Filter (e.g. building a hash join over a
    small table) is a cost choice the planner revisits as tables grow; it is
    not flagged.
    """
    tables = tenant_tables()
    tenant_wide = tenant_only_indexes()
    found = []
    for n in nodes(plan):
        kind, index = n["Node Type"], n.get("Index Name")
        if kind == "Seq Scan" and n.get("Relation Name") in tables:
            found.append(f"Seq Scan on {n['Relation Name']}")
        elif kind in ("Index Scan", "Index Only Scan") and n.get("Relation Name") in tables:
            if (index in tenant_wide or tenant_only(n)) and "Filter" in n:
                found.append(f"{kind} using {index} (the whole tenant)")
            elif "Index Cond" not in n and "tenant_id" in n.get("Filter", ""):
                found.append(f"{kind} using {index} (the whole table)")
        elif kind == "Bitmap Heap Scan" and "Filter" in n:
            feeding = [c for c in nodes(n) if c is not n and "Index Name" in c]
            if feeding and all(c["Index Name"] in tenant_wide or tenant_only(c) for c in feeding):
                found.append(f"Bitmap Heap Scan on {n['Relation Name']} (the whole tenant)")
    return found


def index_names(plan: dict) -> set[str]:
    return {n["Index Name"] for n in nodes(plan) if "Index Name" in n}


def outline(plan: dict, depth: int = 0) -> str:
    """A plan as indented lines: node, index, relation, conditions."""
    parts = [plan["Node Type"]]
    if "Index Name" in plan:
        parts.append(f"using {plan['Index Name']}")
    if "Relation Name" in plan:
        parts.append(f"on {plan['Relation Name']}")
    for key in ("Index Cond", "Filter", "Sort Key"):
        if key in plan:
            parts.append(f"{key}: {plan[key]}")
    parts.append(f"(rows {plan['Plan Rows']}, cost {plan['Total Cost']})")
    lines = ["  " * depth + " ".join(parts)]
    lines += [outline(child, depth + 1) for child in plan.get("Plans", [])]
    return "\n".join(lines)


def check(queries: list[dict], *, uses: str | set[str], what: str) -> None:
    plans = explained(queries)
    assert plans, f"{what}: no statement captured"
    for sql, plan in plans:
        scans = full_scans(plan)
        assert not scans, f"{what}: {scans} in\n{sql}\n{outline(plan)}"
    used = set().union(*(index_names(plan) for _, plan in plans))
    wanted = {uses} if isinstance(uses, str) else uses
    assert wanted & used, f"{what}: expected index {wanted!r}, plans:\n" + "\n\n".join(
        f"{sql[:300]}\n{outline(plan)}" for sql, plan in plans
    )


def control_scans(tenant, *, index_scans: bool) -> list[list[str]]:
    """What `full_scans` finds for a filter no index serves (the controls)."""
    with in_tenant(tenant), CaptureQueriesContext(connection) as ctx:
        with connection.cursor() as cursor:
            if not index_scans:
                cursor.execute("SET LOCAL enable_indexscan = off")
                cursor.execute("SET LOCAL enable_bitmapscan = off")
            cursor.execute(
                "SELECT id FROM runs_app_runtransition WHERE tenant_id = %s"
                " AND changes->>'turn_index' = '7' LIMIT 50",  # no index serves the changes
                [tenant.pk],
            )
        plans = explained(ctx.captured_queries[0 if index_scans else 2 :])
        if not index_scans:  # SET LOCAL lasts until the end of the test's transaction
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL enable_indexscan = on")
                cursor.execute("SET LOCAL enable_bitmapscan = on")
    return [full_scans(plan) for _, plan in plans]


def runtime_checks(tenant) -> list[tuple[str, str | set[str], list[dict]]]:
    """(what, index it must use, captured queries) of the runtime hot paths."""
    actor = Actor("token", "1", "token:test")
    sessions = SessionStore(tenant, actor)
    runs = RunStateStore(tenant, actor)
    tasks = TaskStateStore(tenant, actor)
    effects = EffectStore(tenant, actor)
    item = {"role": "user", "item_type": "message", "payload": {"text": "hi"}}
    out = []
    with in_tenant(tenant):
        with CaptureQueriesContext(connection) as ctx:
            sessions.append_items(session_id=pid("sess", 0), items=[item], idempotency_key="k-1")
        out.append(
            ("append items (seq allocation)", "session_public_id_uniq", ctx.captured_queries)
        )

        with CaptureQueriesContext(connection) as ctx:
            items = sessions.get_items(session_id=TIMELINE_SESSION, limit=50, before_seq=10**9)
        assert [i.seq for i in items] == list(range(4951, 5001))
        out.append(("read last 50 items", "item_session_seq_uniq", ctx.captured_queries))

        run = runs.list_runs(status="running").order_by("id").first()
        with CaptureQueriesContext(connection) as ctx:
            runs.compare_and_set(
                run_id=run.run_id, expected_version=run.version, changes={"turn_index": 9}
            )
        out.append(("run compare-and-set", "run_public_id_uniq", ctx.captured_queries))

        task = tasks.list_tasks(status="active").order_by("id").first()
        with CaptureQueriesContext(connection) as ctx:
            tasks.append_checkpoint(task_id=task.task_id, schema_version=1, state={"k": 1})
        out.append(("save checkpoint", "task_public_id_uniq", ctx.captured_queries))

        with CaptureQueriesContext(connection) as ctx:
            assert tasks.latest_checkpoint(task.task_id)["state"] == {"k": 1}
        out.append(("load latest checkpoint", "checkpoint_seq_uniq", ctx.captured_queries))

        for attempt in ("record effect", "return the recorded effect"):
            with CaptureQueriesContext(connection) as ctx:
                effects.record(
                    run_id=run.run_id, idempotency_key="k-1", tool_name="t", request={"n": 1}
                )
            out.append((attempt, {"run_public_id_uniq", "effect_key_uniq"}, ctx.captured_queries))
    return out


# (console path under /t/<slug>/, index the page's main query must use, text it shows)
PAGES = [
    # Each fetches exactly the tenant's pending approvals; the planner may take
    # any and sort them (pending approvals are few by nature).
    (
        "approvals/",
        {"approval_inbox_idx", "approval_expiry_idx", "approval_one_pending_per_run"},
        "apr_",
    ),
    ("sessions/?status=active", "session_status_id_idx", "sess_"),
    (f"sessions/{TIMELINE_SESSION}/?before_seq=2500", "item_session_seq_uniq", "2499"),
    ("audit/?action=approval.approved", "audit_action_idx", "approval.approved"),
]


def test_hot_queries_use_indexes(bench_data):
    """One test (one data load, one xdist worker); every failing check is reported."""
    tenant, admin = bench_data

    # The controls: the checker does catch a scan of the whole tenant and a Seq Scan.
    assert control_scans(tenant, index_scans=True) == [
        ["Bitmap Heap Scan on runs_app_runtransition (the whole tenant)"]
    ]
    assert control_scans(tenant, index_scans=False) == [["Seq Scan on runs_app_runtransition"]]

    checks = runtime_checks(tenant)
    client = login(admin)
    for path, index, expect in PAGES:
        with CaptureQueriesContext(connection) as ctx:
            response = client.get(f"/t/{tenant.slug}/{path}")
        assert response.status_code == 200, path
        assert expect in response.content.decode(), path
        checks.append((path, index, ctx.captured_queries))

    failures = []
    with in_tenant(tenant):
        for what, index, queries in checks:
            try:
                check(queries, uses=index, what=what)
            except AssertionError as exc:
                failures.append(str(exc))
    assert not failures, "\n\n".join(failures)
