"""The one home of tenant scoping.

`in_tenant(tenant)` is what jobs, commands, the demo and tests use; the
request middleware does the same for each request. It enters the
django-scopes scope (ORM layer) and a transaction whose PostgreSQL setting
`app.tenant_id` the RLS policies read (database layer).
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from django.db import transaction
from django_scopes import scope, scopes_disabled

from stateroom.sql import hot_cursor

from .models import Tenant
from .rls import TENANT_SETTING

__all__ = ["in_tenant", "read_in_chunks", "scopes_disabled", "tenant_transaction"]

Row = TypeVar("Row")


@contextmanager
def tenant_transaction(tenant_id: int, using: str = "default") -> Iterator[None]:
    """A transaction (or savepoint) in which RLS sees only `tenant_id`'s rows.

    The setting is transaction-local (`set_config(..., true)`), so it cannot
    leak to the next user of a pooled connection. When nested inside another
    tenant's transaction, the outer tenant is restored on exit.
    """
    connection = transaction.get_connection(using)
    nested = connection.in_atomic_block
    with transaction.atomic(using=using):
        with hot_cursor(using, tenant_owned=False) as cursor:
            previous = None
            if nested:
                cursor.execute("SELECT current_setting(%s, true)", [TENANT_SETTING])
                previous = cursor.fetchone()[0]
            cursor.execute("SELECT set_config(%s, %s, true)", [TENANT_SETTING, str(tenant_id)])
        yield
        # After a failure marked for rollback (an API error), the savepoint's
        # rollback restores the setting itself; no query may run before it.
        if nested and previous != str(tenant_id) and not connection.needs_rollback:
            with hot_cursor(using, tenant_owned=False) as cursor:
                cursor.execute("SELECT set_config(%s, %s, true)", [TENANT_SETTING, previous or ""])


@contextmanager
def in_tenant(tenant: Tenant, *, atomic: bool = True) -> Iterator[None]:
    with scope(tenant=tenant):
        if atomic:
            with tenant_transaction(tenant.pk):
                yield
        else:
            yield


def read_in_chunks(
    tenant: Tenant,
    read: Callable[[Any, int], list[Row]],
    *,
    key: Callable[[Row], Any],
    size: int = 500,
    start: Any = 0,
) -> Iterator[Row]:
    """Every row `read(after, size)` returns, chunk after chunk, for streamed responses.

    A streamed body is produced after the view has returned, outside the
    request's tenant scope and transaction: each chunk is read in its own
    short `in_tenant`, so no transaction stays open between chunks. `read`
    returns the next `size` rows whose keyset position is past `after`, in
    order; `key(row)` is that position.
    """
    after = start
    while True:
        with in_tenant(tenant):
            chunk = read(after, size)
        yield from chunk
        if len(chunk) < size:
            return
        after = key(chunk[-1])
