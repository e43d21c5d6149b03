"""Data for the EXPLAIN checks: two tenants with enough rows that a missing index shows.

Loaded with the bench's own generator (bench/generate/) on Django's
cursor as the app role, committed, then ANALYZEd by the owner role (only a
table's owner may) so the planner knows the sizes.
"""

import dataclasses

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from bench import generate
from bench.scale import Scale
from tenancy_app.models import GroupMember, MemberGroup, Membership, Role, Tenant, TenantOwned
from tenancy_app.scoping import in_tenant

# The tenant the checks run as holds ~10,000 items (a 5,000-item timeline
# included), 500 sessions, 1,000 runs, 3,150 approvals (150 pending) and
# 2,000 audit events; a second tenant shares the tables with more of each
# (40 times the sessions), so the checked tenant is one among many, as in
# production where a query that walks a whole table is not cheap.
# At this size a query no index serves scans the whole tenant or table (see
# the two control tests in test_explain.py). Tasks and checkpoints are
# enough that finding one by its id is an index lookup, not a scan.
SCALE = Scale(
    name="explain",
    factor=0.0,
    tenants=2,
    sessions_per_tenant=500,
    items_per_session=10,
    timeline_items=5000,
    runs_per_tenant=1000,
    pending_per_tenant=150,
    decided_per_tenant=3000,
    tasks_per_tenant=500,
    checkpoints_per_task=2,
    audit_per_tenant=2000,
    effects_per_tenant=500,
    op_iterations=0,
    page_iterations=0,
    load_seconds=0,
)
BIG = dataclasses.replace(
    SCALE,
    sessions_per_tenant=20000,
    items_per_session=1,
    runs_per_tenant=3000,
    pending_per_tenant=450,
    decided_per_tenant=6000,
    tasks_per_tenant=1500,
    audit_per_tenant=6000,
    effects_per_tenant=300,
)


CHUNKS = 8


def tenant_tables() -> set[str]:
    return {
        model._meta.db_table
        for model in apps.get_models()
        if issubclass(model, TenantOwned) and not model._meta.proxy
    }


@pytest.fixture
def bench_data(transactional_db, owner_sql):
    """(tenant, admin user) of the checked tenant; a bigger second tenant shares the tables.

    Committed (the owner's ANALYZE must see the rows) and flushed after the
    test. One test uses it, so under pytest-xdist the load happens once, on
    one worker.
    """
    now = timezone.now()
    user = get_user_model().objects.create_user(username="explain-admin")
    tenants = [Tenant.objects.create(slug=f"explain-{n}", name=f"Explain {n}") for n in "ab"]
    with in_tenant(tenants[0]):  # memberships have row-level security
        Membership.objects.create(user=user, tenant=tenants[0], role=Role.ADMIN)
    scales = dict(zip(tenants, [SCALE, BIG], strict=True))
    chains = {
        t: generate.audit_rows(t.pk, scale.audit_per_tenant, user.pk, now)
        for t, scale in scales.items()
    }
    # Interleaved like the bench's own load, so each tenant's rows are spread
    # over the tables as in a real database (see generate.load_tenant_rows).
    for phase in generate.PHASES:
        for chunk in range(CHUNKS):
            for tenant, scale in scales.items():
                with in_tenant(tenant), connection.cursor() as cursor:
                    generate.load_tenant_rows(
                        cursor,
                        tenant.pk,
                        scale,
                        audit_rows=chains[tenant],
                        main=tenant == tenants[0],
                        now=now,
                        phase=phase,
                        part=(chunk, CHUNKS),
                    )
    _member_groups(tenants, user, now)
    owner_sql("ANALYZE " + ", ".join(sorted(tenant_tables())))
    return tenants[0], user


def _member_groups(tenants, admin, now, *, groups: int = 30, size: int = 10) -> None:
    """Each tenant's member groups, as a big tenant has them (the inbox's "my groups"
    reads the admin's); the admin is in two of the first tenant's."""
    people = get_user_model().objects.bulk_create(
        get_user_model()(username=f"explain-member-{n}") for n in range(groups * size // 3)
    )
    for tenant in tenants:
        with in_tenant(tenant):
            made = MemberGroup.objects.bulk_create(
                MemberGroup(tenant=tenant, slug=f"group-{n}", name=f"Group {n}", created_at=now)
                for n in range(groups)
            )
            rows = [
                GroupMember(
                    tenant=tenant, group=group, user=people[(g * 7 + m) % len(people)], position=m
                )
                for g, group in enumerate(made)
                for m in range(size)
            ]
            if tenant == tenants[0]:
                rows += [GroupMember(tenant=tenant, group=made[n], user=admin) for n in (0, 1)]
            GroupMember.objects.bulk_create(rows)
