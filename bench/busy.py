"""A busy tenant's dashboard: where the quarter-hour rollups earn their keep (issue 35).

The bench's tenants each have ~1,000 runs over a day: a window's raw scan is cheap
there, whatever the data set's size. A tenant that works all month is another matter:
this one (`BUSY_SLUG`) gets `busy_rows(scale)` runs and as many approvals, spread evenly
over the last 30 days (200,000 of each at the default scale), decided by people after
waits from seconds to hours over 20 tools and 4 risks, a tenth expired undecided, a
fifth of the runs failed with one of three codes, the newest percent still running.

Its dashboard is timed twice, through the console like the other pages: from the rows
alone (the rollups emptied), then rolled up (after one refresh, timed too: closing the
whole month's quarters at once is what a deployment's first refresh does).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from .database import bench_database, connect
from .generate.sql import insert_select, tables
from .scale import Scale

BUSY_SLUG = "bench-busy"
WINDOW = timedelta(days=30)


def busy_rows(scale: Scale) -> int:
    return max(2_000, int(200_000 * scale.factor))


def ensure_busy_tenant(scale: Scale, log):
    """The busy tenant, its rows loaded once (a reused data set keeps them)."""
    from runs_app.models import Run
    from stateroom.actor import Actor
    from tenancy_app.models import Role, Tenant
    from tenancy_app.scoping import in_tenant
    from tenancy_app.store import TenancyStore

    from .generate.names import BENCH_USER

    tenant, _ = Tenant.objects.get_or_create(slug=BUSY_SLUG, defaults={"name": "Bench busy tenant"})
    with in_tenant(tenant):
        if Run.objects.filter(tenant=tenant, run_id="busy_run_0").exists():
            return tenant  # loaded by an earlier run of a reused data set
    n = busy_rows(scale)
    log(f"busy tenant: {n:,} runs and {n:,} approvals over 30 days ...")
    with in_tenant(tenant):  # one transaction: the rows and the membership, or nothing
        TenancyStore(tenant, Actor.system("bench")).set_member(username=BENCH_USER, role=Role.ADMIN)
        from django.db import connection

        with connection.cursor() as cursor:
            _load(cursor, tables(), tenant.pk, n, datetime.now(UTC))
    with connect(bench_database().owner_url) as conn:
        conn.execute("ANALYZE")
    return tenant


def _load(cur, t, tenant_pk: int, n: int, now: datetime) -> None:
    params = {"t": tenant_pk, "n": n, "now": now, "step": WINDOW.total_seconds() / n}
    insert_select(
        cur,
        t["run"],
        {
            "tenant_id": "%(t)s",
            "run_id": "'busy_run_' || g",
            "status": """CASE WHEN g < %(n)s / 100 THEN 'running'
                         ELSE (ARRAY['succeeded','succeeded','succeeded','succeeded',
                               'succeeded','succeeded','failed','failed','cancelled',
                               'succeeded'])[1 + g %% 10] END""",
            "active_agent": "(ARRAY['triage','billing','research','support','ops'])[1 + g %% 5]",
            "token_used": "(g::bigint * 131) %% 20000",
            "cost_used": "((g * 7) %% 1000) / 1000.0",
            "error": """CASE WHEN g >= %(n)s / 100 AND g %% 10 IN (6, 7) THEN jsonb_build_object(
                        'code', (ARRAY['tool_error','timeout','rate_limited'])[1 + g %% 3]) END""",
            "version": "2",
            "claimed_by": "''",
            "last_event_seq": "0",
            "created_at": "%(now)s - make_interval(secs => (g + 1) * %(step)s)",
            "updated_at": "%(now)s - make_interval(secs => (g + 1) * %(step)s) + interval '9 minutes'",
        },
        "FROM generate_series(0, %(n)s - 1) g",
        params,
    )
    tool = "(ARRAY[" + ",".join(f"'tool_{i:02d}'" for i in range(20)) + "])[1 + g %% 20]"
    # a tenth expired undecided, the others decided: every tool and risk pair both ways
    wait = "make_interval(secs => 5 + (g::bigint * 7919) %% 7200)"  # g * 7919: past int4
    insert_select(
        cur,
        t["approval"],
        {
            "tenant_id": "%(t)s",
            "approval_id": "'busy_apr_' || g",
            "run_id": "r.id",
            "tool_name": tool,
            "arguments": "'{}'::jsonb",
            "call_digest": "md5(g::text) || md5(g::text)",
            "run_version": "1",
            "risk": "(ARRAY['low','medium','high','critical'])[1 + (g / 7) %% 4]",
            "risk_rank": "1 + (g / 7) %% 4",
            "reason": "'The agent wants to act'",
            "status": """CASE WHEN (g / 3) %% 10 = 9 THEN 'expired'
                         WHEN g %% 2 = 0 THEN 'approved' ELSE 'rejected' END""",
            "decision": "CASE WHEN (g / 3) %% 10 = 9 THEN '' WHEN g %% 2 = 0 THEN 'approve' ELSE 'reject' END",
            "expires_at": "r.created_at + interval '1 minute' + interval '3 hours'",
            "created_at": "r.created_at + interval '1 minute'",
            "first_approved_by": "''",
            "first_approved_by_id": "''",
            "decided_by": "CASE WHEN (g / 3) %% 10 = 9 THEN '' ELSE 'bench-operator' END",
            "decided_by_id": "CASE WHEN (g / 3) %% 10 = 9 THEN '' ELSE '1' END",
            "decided_at": f"""CASE WHEN (g / 3) %% 10 = 9 THEN r.created_at + interval '3 hours 1 minute'
                             ELSE r.created_at + interval '1 minute' + {wait} END""",
            "decision_reason": "''",
        },
        f"""FROM generate_series(0, %(n)s - 1) g
        JOIN {t["run"]} r ON r.tenant_id = %(t)s AND r.run_id = 'busy_run_' || g""",
        params,
    )


def measure(client, scale: Scale, log, measure_page, page_type) -> list[dict]:
    """The busy tenant's dashboard (30 days, Paris days) from the rows, then rolled up."""
    from approvals_app import rollup as approvals_rollup
    from approvals_app.models import (
        ApprovalQuarter,
        ApprovalRollup,
        ApprovalWaitQuarter,
        ApprovalWaitSince,
    )
    from runs_app import rollup as runs_rollup
    from runs_app.models import RunQuarter, RunRollup, RunSessionQuarter, RunSince
    from tenancy_app.scoping import in_tenant

    tenant = ensure_busy_tenant(scale, log)
    n = busy_rows(scale)
    path = f"/t/{BUSY_SLUG}/dashboard/?range=30d&tz=Europe/Paris"
    rows = []
    with in_tenant(tenant):
        for model in (ApprovalRollup, ApprovalQuarter, ApprovalWaitQuarter, ApprovalWaitSince):
            model.objects.filter(tenant=tenant).delete()
        for model in (RunRollup, RunQuarter, RunSessionQuarter, RunSince):
            model.objects.filter(tenant=tenant).delete()
    for mode in ("from the rows alone", "rolled up"):
        if mode == "rolled up":
            started = time.perf_counter()
            with in_tenant(tenant):
                closed = approvals_rollup.refresh(tenant.pk, datetime.now(UTC))
                runs_rollup.refresh(tenant.pk, datetime.now(UTC))
            seconds = time.perf_counter() - started
            log(f"  busy tenant: the first refresh closed {closed:,} quarters in {seconds:.1f} s")
            # What autovacuum does after the first refresh's inserts: the planner then knows
            # the rollup tables' sizes (the bench analyzed every other table after its load).
            with connect(bench_database().owner_url) as conn:
                conn.execute("ANALYZE")
        name = f"dashboard ?range=30d, busy tenant ({n:,} runs and approvals in 30 d), {mode}"
        row: dict = {"page": name, "path": path, "target_p95_ms": 150.0}
        # The page without its rollups: what they save, not a page anyone is served.
        row["reference"] = mode == "from the rows alone"
        if mode == "rolled up":
            row["first_refresh_s"] = round(seconds, 2)
        measure_page(client, page_type(name, path, "chart-decision-time"), row, scale)
        log(
            f"  {name}: p50 {row.get('p50_ms')} ms, p95 {row.get('p95_ms')} ms,"
            f" {row.get('queries')} queries {row.get('error', '')}"
            + (f" (varying: {row['queries_varying']})" if "queries_varying" in row else "")
        )
        rows.append(row)
    return rows
