"""Loading the whole data set: tenants in interleaved chunks and phases, two connections."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from ..database import connect, tenant_tx
from ..scale import Scale
from .approvals import approvals, effects
from .audit import audit_rows, copy_audit
from .names import (
    BENCH_USER,
    INSPECT_RUN,
    INSPECT_TASK,
    TENANT_PREFIX,
    TIMELINE_SESSION,
    tenant_slug,
)
from .runs import run_children, run_history_for, runs, some_runs
from .sessions import session_items, sessions
from .sql import insert_select, number_of, part_of, tables
from .tasks import one_task, tasks

CHUNKS = 4  # each tenant's rows land in this many places of each table
PHASES = (1, 2, 3)  # sessions and tasks; runs; what points at them


def _load_slice(url: str, tenant_pk: int, scale: Scale, rows, main: bool, now, phase, part):
    with connect(url, client_binding=True) as conn, tenant_tx(conn, tenant_pk) as cur:
        load_tenant_rows(
            cur, tenant_pk, scale, audit_rows=rows, main=main, now=now, phase=phase, part=part
        )


def load_tenant_rows(
    cur,
    tenant_pk: int,
    scale: Scale,
    *,
    audit_rows: list[tuple],
    main: bool,
    now: datetime,
    phase: int | None = None,
    part: tuple[int, int] = (0, 1),
) -> None:
    """Rows of one tenant, on a cursor already in that tenant's transaction.

    `phase` (1: sessions and tasks, 2: runs, 3: everything that points at
    them) and `part` (chunk index, chunk count) load a slice, so the caller
    can interleave tenants: in a real database the rows of many tenants are
    mixed on disk, and a data set loaded one tenant after the other would
    make a whole-tenant index scan look cheap to the planner (perfect
    correlation of `tenant_id`). Also used by tests/bench, on Django's cursor.
    """
    t = tables()
    phases = PHASES if phase is None else (phase,)
    if 1 in phases:
        sessions(cur, t, tenant_pk, scale, now, part_of("g", part))
        tasks(cur, t, tenant_pk, scale, now, part)
    if 2 in phases:
        runs(cur, t, tenant_pk, scale, now, part_of("g", part))
    if 3 in phases:
        number = number_of("s.session_id")
        session_items(
            cur,
            t,
            tenant_pk,
            f"{number} IS NOT NULL AND {part_of(number, part)}",
            scale.items_per_session,
            now,
        )
        run_children(cur, t, tenant_pk, scale, now, part)
        approvals(cur, t, tenant_pk, scale, now, part_of("g", part))
        effects(cur, t, tenant_pk, scale, now, part_of("g", part))
        index, count = part
        copy_audit(cur, t, tenant_pk, [row for row in audit_rows if row[1] % count == index])
        if main and index == 0:
            _main_tenant_extras(cur, t, tenant_pk, scale, now)


def _main_tenant_extras(cur, t, tenant_pk: int, scale: Scale, now) -> None:
    """The long timeline session and the run the inspector page shows."""
    insert_select(
        cur,
        t["session"],
        {
            "tenant_id": "%(t)s",
            "session_id": "%(sid)s",
            "user_id": "'user_1'",
            "status": "'active'",
            "lease_until": "%(now)s + interval '2 days'",
            "revision": "3",
            "metadata": """'{"channel": "web", "note": "long-running support thread"}'::jsonb""",
            "legal_hold": "false",
            "last_seq": "%(n)s",
            "search_pending": "%(n)s > 0",  # its items wait for the indexer
            "created_at": "%(now)s - interval '20 days'",
            "last_active_at": "%(now)s",
            "ended_at": "NULL",
            "end_reason": "''",
        },
        "",
        {"t": tenant_pk, "now": now, "sid": TIMELINE_SESSION, "n": scale.timeline_items},
    )
    session_items(
        cur,
        t,
        tenant_pk,
        "s.session_id = %(sid)s",
        scale.timeline_items,
        now,
        {"sid": TIMELINE_SESSION},
    )
    one_task(cur, t, tenant_pk, INSPECT_TASK, status="active", checkpoints=10, now=now)
    some_runs(
        cur,
        t,
        tenant_pk,
        run_id="%(run)s",
        count=1,
        session_id=TIMELINE_SESSION,
        task_id=INSPECT_TASK,
        status="running",
        now=now,
        extra={"run": INSPECT_RUN},
    )
    run_history_for(cur, t, tenant_pk, INSPECT_RUN, events=200, transitions=50, now=now)


def generate(url: str, scale: Scale, log: Callable[[str], None], *, owner_url: str) -> dict:
    """Load the whole data set into an empty, migrated bench database.

    The rows go in as the app role (`url`), through row-level security; the
    statistics and the final VACUUM are the owner's (`owner_url`): PostgreSQL
    lets only a table's owner ANALYZE or VACUUM it, and skips the others'
    tables with a warning. The VACUUM also flushes the GIN indexes' pending
    lists, which a bulk load leaves long (the items' search index held 1 GB
    of them after a load at scale 10, read by every search) and which
    autovacuum would flush in a running deployment.
    """
    from django.contrib.auth import get_user_model

    from stateroom.actor import Actor
    from tenancy_app.models import Role, Tenant
    from tenancy_app.scoping import in_tenant
    from tenancy_app.store import TenancyStore

    started = time.perf_counter()
    now = datetime.now(UTC)
    Tenant.objects.bulk_create(
        [Tenant(slug=tenant_slug(i), name=f"Bench tenant {i}") for i in range(scale.tenants)]
    )
    tenants = list(Tenant.objects.filter(slug__startswith=TENANT_PREFIX).order_by("slug"))
    user = get_user_model().objects.create_user(username=BENCH_USER, password=uuid.uuid4().hex)
    log(f"hashing {scale.audit_per_tenant * scale.tenants:,} audit events into chains ...")
    chains = {t.pk: audit_rows(t.pk, scale.audit_per_tenant, user.pk, now) for t in tenants}
    _load_phases(url, owner_url, scale, [t.pk for t in tenants], chains, now, log, started)
    main = tenants[0]
    with in_tenant(main):
        TenancyStore(main, Actor.system("bench")).set_member(username=BENCH_USER, role=Role.ADMIN)
    log("indexing the items for search, as the indexer does after appends ...")
    from sessions_app.tasks import index_items

    # Until nothing waits: one run stops a tenant after its batch budget, as beat's next
    # run would go on (at 10 M the timeline's million items take several runs).
    while index_items()["total"]:
        pass
    loaded = time.perf_counter() - started
    log("VACUUM ANALYZE ...")
    with connect(owner_url) as conn:
        conn.execute("VACUUM ANALYZE")
    vacuumed = time.perf_counter() - started - loaded
    _verify_chains(tenants, log)
    return {
        "load_seconds": round(loaded, 1),
        "vacuum_analyze_seconds": round(vacuumed, 1),
        "audit_chains_verified": f"{len(tenants)}/{len(tenants)}",
    }


def _load_phases(url, owner_url, scale: Scale, tenant_pks, chains, now, log, started) -> None:
    """Every tenant's rows, phase by phase, in `CHUNKS` interleaved slices on 2 connections;
    the first tenant gets the main tenant's extras. ANALYZE (as the owner) after each phase."""
    log(f"loading {scale.tenants} tenants in {CHUNKS} interleaved chunks, 2 connections ...")
    with ThreadPoolExecutor(max_workers=2) as pool:
        for phase in PHASES:
            futures = [
                pool.submit(
                    _load_slice, url, pk, scale, chains[pk], i == 0, now, phase, (c, CHUNKS)
                )
                for c in range(CHUNKS)
                for i, pk in enumerate(tenant_pks)
            ]
            for future in futures:
                future.result()
            with connect(owner_url) as conn:
                # Fresh statistics, or the next phase's joins are planned as nested loops.
                conn.execute("ANALYZE")
            log(f"  phase {phase}/3 loaded ({time.perf_counter() - started:.0f} s)")


def _verify_chains(tenants, log: Callable[[str], None]) -> None:
    """What manage.py verify_audit does, for every tenant; raises if a chain is broken."""
    from audit_app.services import verify_chain
    from tenancy_app.scoping import in_tenant

    log("verifying every tenant's audit chain (what manage.py verify_audit does) ...")
    broken = []
    for tenant in tenants:
        with in_tenant(tenant):
            if verify_chain(tenant) is not None:
                broken.append(tenant.slug)
    if broken:
        raise RuntimeError(f"generated audit chains do not verify: {broken}")
