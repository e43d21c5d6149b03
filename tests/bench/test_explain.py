"""The hot queries use indexes: EXPLAIN every SQL statement they send.

Each check runs the real code path (a store method, or a console page
through the test Client) under CaptureQueriesContext, then EXPLAINs every
captured statement on PostgreSQL with the data of `bench_data` analyzed.
No statement may plan a Seq Scan on a tenant-owned table, and the statement
that does the work must use the index named for it.
"""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit_app.actor import Actor
from bench.generate import TIMELINE_SESSION, pid
from runs_app.store import RunStateStore
from sessions_app.store import SessionStore
from tenancy_app.scoping import in_tenant
from tests.conftest import login

from .conftest import tenant_tables

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

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


def full_scans(plan: dict) -> list[str]:
    """Plan nodes that read a whole tenant-owned table, or a whole tenant, to keep a few rows.

    - a Seq Scan of a tenant-owned table;
    - an index scan on `tenant_id` alone (Django's FK index) with a Filter, or
      a Bitmap Heap Scan with a Filter fed only by such indexes: every row of
      the tenant is read, the index the query needed is missing or unusable;
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
            if index in tenant_wide and "Filter" in n:
                found.append(f"{kind} using {index} (the whole tenant)")
            elif "Index Cond" not in n and "tenant_id" in n.get("Filter", ""):
                found.append(f"{kind} using {index} (the whole table)")
        elif kind == "Bitmap Heap Scan" and "Filter" in n:
            feeding = {c.get("Index Name") for c in nodes(n) if c is not n and "Index Name" in c}
            if feeding and feeding <= tenant_wide:
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


def test_unindexed_query_is_caught(bench_data):
    tenant_a, _ = bench_data
    """The control: a filter no index serves is caught (here: the tenant's FK index + Filter)."""
    with in_tenant(tenant_a), CaptureQueriesContext(connection) as ctx:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT id FROM sessions_app_sessionitem WHERE tenant_id = %s"
                " AND payload->>'tokens' = '7' LIMIT 50",
                [tenant_a.pk],
            )
        plans = explained(ctx.captured_queries)
    assert [full_scans(plan) for _, plan in plans] == [
        ["Bitmap Heap Scan on sessions_app_sessionitem (the whole tenant)"]
    ]


def test_seq_scan_is_caught(bench_data):
    tenant_a, _ = bench_data
    """The control for plain Seq Scans: the same query with index scans off."""
    with in_tenant(tenant_a), CaptureQueriesContext(connection) as ctx:
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_indexscan = off")
            cursor.execute("SET LOCAL enable_bitmapscan = off")
            cursor.execute(
                "SELECT id FROM sessions_app_sessionitem WHERE tenant_id = %s"
                " AND payload->>'tokens' = '7' LIMIT 50",
                [tenant_a.pk],
            )
        plans = explained(ctx.captured_queries[2:])
    assert [full_scans(plan) for _, plan in plans] == [["Seq Scan on sessions_app_sessionitem"]]


def test_runtime_hot_queries_use_indexes(bench_data):
    tenant_a, _ = bench_data
    actor = Actor("token", "1", "token:test")
    sessions = SessionStore(tenant_a, actor)
    runs = RunStateStore(tenant_a, actor)
    item = {"role": "user", "item_type": "message", "payload": {"text": "hi"}}
    with in_tenant(tenant_a):
        with CaptureQueriesContext(connection) as ctx:
            sessions.append_items(session_id=pid("sess", 0), items=[item], idempotency_key="k-1")
        check(ctx.captured_queries, uses="session_public_id_uniq", what="append items")

        with CaptureQueriesContext(connection) as ctx:
            items = sessions.get_items(session_id=TIMELINE_SESSION, limit=50, before_seq=10**9)
        assert [i.seq for i in items] == list(range(4951, 5001))
        check(ctx.captured_queries, uses="item_session_seq_uniq", what="read last 50 items")

        run = runs.list_runs(status="running").order_by("id").first()
        with CaptureQueriesContext(connection) as ctx:
            runs.compare_and_set(
                run_id=run.run_id, expected_version=run.version, changes={"turn_index": 9}
            )
        check(ctx.captured_queries, uses="run_public_id_uniq", what="run compare-and-set")


@pytest.mark.parametrize(
    ("path", "index", "expect"),
    [
        # Each fetches exactly the tenant's pending ones; the planner may take any
        # and sort them (pending approvals are few by nature).
        (
            "approvals/",
            {"approval_inbox_idx", "approval_expiry_idx", "approval_one_pending_per_run"},
            "apr_",
        ),
        ("sessions/?status=active", "session_status_id_idx", "sess_"),
        (f"sessions/{TIMELINE_SESSION}/?before_seq=2500", "item_session_seq_uniq", "2499"),
        pytest.param(
            "audit/?action=approval.approved",
            "audit_action_idx",
            "approval.approved",
        ),
    ],
    ids=["approval-inbox", "sessions-by-status", "timeline-page", "audit-filter"],
)
def test_console_pages_use_indexes(bench_data, path, index, expect):
    tenant_a, admin_a = bench_data
    client = login(admin_a)
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(f"/t/{tenant_a.slug}/{path}")
    assert response.status_code == 200
    assert expect in response.content.decode()
    with in_tenant(tenant_a):
        check(ctx.captured_queries, uses=index, what=path)
