"""Running background work tenant by tenant.

Celery tasks and commands reach tenant data only through these helpers: each
batch runs inside `in_tenant(tenant)` (django-scopes scope + a transaction
carrying the RLS setting), so a job sees exactly one tenant's rows at a time
and a batch is one short transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from .models import Tenant
from .scoping import in_tenant

logger = logging.getLogger(__name__)

# A sweep of one tenant stops after this many full batches even if rows remain;
# the next scheduled run continues (keeps one task run bounded in time).
DEFAULT_MAX_BATCHES = 100


@dataclass
class JobResult:
    """What a per-tenant job did: rows handled per tenant slug, and failures."""

    done: dict[str, int] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.done.values())

    def as_dict(self) -> dict:
        return {"done": dict(self.done), "errors": dict(self.errors), "total": self.total}


# Tenants are read in keyset pages of this many, each page one plain query.
TENANT_PAGE = 200


def tenants(tenant_id: int | None = None) -> Iterator[Tenant]:
    """All tenants in id order, or just one (a job given a tenant id).

    Pages by key, never `.iterator()`: outside a transaction Django runs that as
    a server-side `WITH HOLD` cursor, which a transaction-mode pooler
    (PgBouncer) loses between fetches, since the next fetch may land on
    another server connection (docs/scaling.md).
    """
    queryset = Tenant.objects.order_by("pk")
    if tenant_id is not None:
        queryset = queryset.filter(pk=tenant_id)
    after = 0
    while page := list(queryset.filter(pk__gt=after)[:TENANT_PAGE]):
        yield from page
        after = page[-1].pk


def get_tenant(tenant_id: int) -> Tenant | None:
    """The tenant a task was given, or None when it has been removed since."""
    return Tenant.objects.filter(pk=tenant_id).first()


@contextmanager
def tenant_scope(tenant_id: int) -> Iterator[Tenant | None]:
    """Enter a tenant's scope WITHOUT a transaction (for jobs that open their own).

    Yields None (and enters nothing) when the tenant no longer exists, so an
    idempotent task can simply return.
    """
    tenant = get_tenant(tenant_id)
    if tenant is None:
        yield None
        return
    with in_tenant(tenant, atomic=False):
        yield tenant


# The `limit` of a step that does all its work in one call (and returns how much).
ONE_CALL = 2**62


def for_each_tenant(
    step: Callable[[Tenant], int],
    *,
    limit: int,
    tenant_id: int | None = None,
    max_batches: int = DEFAULT_MAX_BATCHES,
    name: str = "job",
) -> JobResult:
    """Run `step(tenant)` in batches for every tenant (or one).

    Each call runs in its own `in_tenant(tenant)` transaction and must handle
    at most `limit` rows, returning how many it handled; a call that handles
    fewer than `limit` ends that tenant. A failing tenant is logged and
    recorded, and does not stop the others.
    """
    result = JobResult()
    for tenant in tenants(tenant_id):
        handled = 0
        try:
            for _ in range(max_batches):
                with in_tenant(tenant):
                    count = step(tenant)
                handled += count
                if count < limit:
                    break
        except Exception as exc:
            logger.exception("%s failed for tenant %s", name, tenant.slug)
            result.errors[tenant.slug] = f"{type(exc).__name__}: {exc}"
        result.done[tenant.slug] = handled
        if handled:
            logger.info("%s: %d rows for tenant %s", name, handled, tenant.slug)
    return result
