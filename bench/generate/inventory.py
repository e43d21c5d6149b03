"""What the measurements find in the loaded data: the catalogue of the first tenant, row counts."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..database import connect, tenant_tx
from ..scale import Scale
from .names import BENCH_USER, INSPECT_RUN, TIMELINE_SESSION, tenant_slug
from .sql import tables


@dataclass
class Catalogue:
    """What the measurements need to know about the generated data."""

    tenant_slug: str
    tenant_pk: int
    user_pk: int
    active_sessions: list[str] = field(default_factory=list)
    running_runs: list[str] = field(default_factory=list)
    active_tasks: list[str] = field(default_factory=list)
    timeline_session: str = TIMELINE_SESSION
    timeline_items: int = 0
    inspect_run: str = INSPECT_RUN


def catalogue(url: str, scale: Scale) -> Catalogue:
    """Find the objects the measurements use, in the first tenant."""
    from django.contrib.auth import get_user_model

    from tenancy_app.models import Tenant

    t = tables()
    tenant = Tenant.objects.get(slug=tenant_slug(0))
    user = get_user_model().objects.get(username=BENCH_USER)
    cat = Catalogue(tenant_slug=tenant.slug, tenant_pk=tenant.pk, user_pk=user.pk)
    with connect(url) as conn, tenant_tx(conn, tenant.pk) as cur:
        cat.active_sessions = [
            r[0]
            for r in cur.execute(
                f"SELECT session_id FROM {t['session']} WHERE status = 'active'"
                " AND session_id ~ '^sess_[0-9]' AND NOT legal_hold ORDER BY session_id"
            )
        ]
        cat.running_runs = [
            r[0]
            for r in cur.execute(
                f"SELECT run_id FROM {t['run']} WHERE status = 'running'"
                " AND run_id ~ '^run_[0-9]' ORDER BY run_id"
            )
        ]
        cat.active_tasks = [
            r[0]
            for r in cur.execute(
                f"SELECT task_id FROM {t['task']} WHERE status = 'active'"
                " AND task_id ~ '^task_[0-9]' ORDER BY task_id"
            )
        ]
        cat.timeline_items = cur.execute(
            f"SELECT last_seq FROM {t['session']} WHERE session_id = %s", [TIMELINE_SESSION]
        ).fetchone()[0]
    return cat


def row_counts(url: str) -> dict[str, int]:
    """Exact row counts per table, summed over tenants (read per tenant: RLS)."""
    from tenancy_app.models import Tenant

    t = tables()
    totals = dict.fromkeys(t, 0)
    pks = list(Tenant.objects.values_list("pk", flat=True))
    with connect(url) as conn:
        for tenant_pk in pks:
            with tenant_tx(conn, tenant_pk) as cur:
                for key, table in t.items():
                    totals[key] += cur.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    return totals
