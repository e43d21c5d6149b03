"""The one home of tenant scoping.

`in_tenant(tenant)` is what jobs, commands, the demo and tests use; the
request middleware does the same for each request. It enters the
django-scopes scope (ORM layer) and a transaction whose PostgreSQL setting
`app.tenant_id` the RLS policies read (database layer).
"""

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections
from django_scopes import scope, scopes_disabled
from django_scopes.exceptions import ScopeError

from stateroom.sql import tenant_block

from .models import Tenant

__all__ = ["as_a_job", "in_tenant", "read_in_chunks", "scopes_disabled", "tenant_transaction"]

Row = TypeVar("Row")


@contextmanager
def tenant_transaction(tenant_id: int, using: str = "default") -> Iterator[None]:
    """A transaction (or savepoint) in which RLS sees only `tenant_id`'s rows.

    The setting is transaction-local (`set_config(..., true)`), so it cannot
    leak to the next user of a pooled connection. When nested inside another
    tenant's transaction, the outer tenant is restored on exit
    (`stateroom.sql.tenant_block`).
    """
    with tenant_block(tenant_id, using):
        yield


@contextmanager
def in_tenant(tenant: Tenant, *, atomic: bool = True) -> Iterator[None]:
    """The tenant's scope, and (`atomic=True`) one transaction carrying its RLS setting.

    With `atomic=False` no transaction is opened: each store call opens its
    own (`BaseStore.atomic`), and a hot operation is one message, one round
    trip (`stateroom.sql.hot_cursor(tenant=…)`).
    """
    with scope(tenant=tenant):
        if atomic:
            with tenant_transaction(tenant.pk):
                yield
        else:
            connection = connections[DEFAULT_DB_ALIAS]
            with connection.execute_wrapper(_refuse_outside_a_transaction):
                yield


@contextmanager
def as_a_job() -> Iterator[None]:
    """Run a job in-process (eager mode, right after a commit) as a worker would: without
    the committing caller's `in_tenant(atomic=False)` guard, so the job opens its own
    tenant transactions as it does in a worker."""
    connection = connections[DEFAULT_DB_ALIAS]
    saved = connection.execute_wrappers
    connection.execute_wrappers = [w for w in saved if w is not _refuse_outside_a_transaction]
    try:
        yield
    finally:
        connection.execute_wrappers = saved


def _refuse_outside_a_transaction(execute, sql, params, many, context):
    """Under `in_tenant(atomic=False)`, a query outside a transaction would run with no
    tenant setting (RLS would answer it with nothing): refuse it loudly instead. Store
    methods open their own tenant block (`BaseStore.atomic`/`reading`) or send one message."""
    if not context["connection"].in_atomic_block:
        raise ScopeError(
            "A query ran outside a transaction under in_tenant(atomic=False);"
            " use a store method, or in_tenant(tenant)."
        )
    return execute(sql, params, many, context)


def read_in_chunks(
    tenant: Tenant,
    read: Callable[[Any, int], list[Row]],
    *,
    key: Callable[[Row], Any],
    size: int = 500,
    start: Any = 0,
    reads: Callable[[], AbstractContextManager[Any]] = nullcontext,
) -> Iterator[Row]:
    """Every row `read(after, size)` returns, chunk after chunk, for streamed responses.

    A streamed body is produced after the view has returned, outside the
    request's tenant scope and transaction: each chunk is read in its own
    short `in_tenant`, so no transaction stays open between chunks. `read`
    returns the next `size` rows whose keyset position is past `after`, in
    order; `key(row)` is that position. `reads()` is entered around each chunk's read
    (`stateroom.replica.chunk_reads`: the chunk's reads on the replica).
    """
    after = start
    while True:
        with in_tenant(tenant), reads():
            chunk = read(after, size)
        yield from chunk
        if len(chunk) < size:
            return
        after = key(chunk[-1])
