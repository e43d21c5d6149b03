"""A read replica for the console's heavy reads (docs/scaling.md).

With `DATABASE_REPLICA_URL` set, settings add a `replica` alias: a streaming
(physical) replica of the primary, so the same roles, tables and row-level
security policies are there. The views that read much and write nothing (the
lists, the audit log, the approvals history, the exports) run their ORM reads
on it inside `replica_reads(request)` (or `@reads_replica`); everything else,
and every write anywhere, stays on the primary (`ReplicaRouter`).

Row-level security on the replica: the chosen reads run in a transaction of
the replica connection that carries the request's tenant
(`stateroom.sql.tenant_block` on the `replica` alias: a read-only transaction
is allowed on a hot standby, and `set_config(..., true)` is local to it), as
the primary's reads do.

Read your own writes: a replica lags. After a request that may have written
(any method but GET, HEAD, OPTIONS, TRACE) the browser gets a signed cookie
that pins it to the primary for `DB_REPLICA_PIN_SECONDS` (default 5): the page
it is sent to next, and the lists it opens within the pin, show the write.
Without a replica configured nothing here does anything.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from functools import wraps

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, OperationalError, connections

from stateroom.sql import tenant_block

logger = logging.getLogger(__name__)

REPLICA = "replica"
PIN_COOKIE = "stateroom_primary_until"
_PIN_SALT = "stateroom.replica.pin"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
_API_PREFIX = "/api/"

# The wall clock the pin is set and read on; tests replace it.
clock = time.time

# Set inside `replica_reads`: the ORM's reads of this context go to the replica.
_on_replica: ContextVar[bool] = ContextVar("stateroom_on_replica", default=False)


def configured() -> bool:
    return REPLICA in settings.DATABASES


class ReplicaRouter:
    """Reads inside `replica_reads` go to the replica; every write, and every other read, to
    the primary. A queryset meant to write (`select_for_update`, `update`, `get_or_create`)
    asks `db_for_write`, so it never lands on the replica either."""

    def db_for_read(self, model, **hints) -> str:
        return REPLICA if _on_replica.get() else DEFAULT_DB_ALIAS

    def db_for_write(self, model, **hints) -> str:
        # Explicit: else Django would write an object back where it was read from.
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1, obj2, **hints) -> bool:
        return True  # one database, two copies of it

    def allow_migrate(self, db, app_label, model_name=None, **hints) -> bool:
        return db == DEFAULT_DB_ALIAS


# --- the pin: read your own writes -------------------------------------------------------


def pinned(request) -> bool:
    """Whether this browser wrote less than the pin's length ago (its cookie says until when)."""
    value = request.get_signed_cookie(PIN_COOKIE, default=None, salt=_PIN_SALT)
    if value is None:
        return False
    try:
        return clock() < float(value)
    except ValueError:
        return False


def pin(response) -> None:
    seconds = settings.DB_REPLICA_PIN_SECONDS
    response.set_signed_cookie(
        PIN_COOKIE,
        repr(clock() + seconds),
        salt=_PIN_SALT,
        max_age=max(1, int(seconds + 1)),
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )


class ReplicaPinMiddleware:
    """After a console request that may have written, pin the browser to the primary."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (
            configured()
            and request.method not in _SAFE_METHODS
            and not request.path.startswith(_API_PREFIX)
            and settings.DB_REPLICA_PIN_SECONDS > 0
        ):
            pin(response)
        return response


# --- the chosen reads ----------------------------------------------------------------------


def may_read_replica(request) -> bool:
    """A replica is configured, the request only reads, has a tenant, and is not pinned."""
    return (
        configured()
        and request.method in ("GET", "HEAD")
        and getattr(request, "tenant", None) is not None
        and not pinned(request)
    )


def _replica_up() -> bool:
    """Connect the replica now; a replica that is down sends the reads to the primary.

    A kept connection is checked (`SELECT 1`) every time, unlike the primary's
    (stateroom/postgres/base.py): a replica can go away on its own (a failover,
    a rebuild), and a page read there is heavy enough not to notice the check.
    """
    replica = connections[REPLICA]
    try:
        if replica.connection is not None and not replica.is_usable():
            replica.close()
        replica.ensure_connection()
    except OperationalError:
        logger.warning("the read replica is unreachable; reading the primary", exc_info=True)
        return False
    return True


@contextmanager
def on_replica(tenant_id: int) -> Iterator[bool]:
    """The ORM's reads in the block go to the replica, in a transaction of `tenant_id`.

    Yields False (and reads stay on the primary) when the replica cannot be reached.
    """
    if not _replica_up():
        yield False
        return
    token = _on_replica.set(True)
    try:
        with tenant_block(tenant_id, using=REPLICA):
            yield True
    finally:
        _on_replica.reset(token)


def replica_reads(request) -> AbstractContextManager[bool]:
    """The request's ORM reads in the block go to the replica when `may_read_replica`."""
    if not may_read_replica(request):
        return nullcontext(False)
    return on_replica(request.tenant.pk)


def chunk_reads(request) -> Callable[[], AbstractContextManager[bool]]:
    """For a streamed export (each chunk read after the view returned, in a transaction of
    its own): decided once, when the view runs, whether every chunk reads the replica."""
    if not may_read_replica(request):
        return lambda: nullcontext(False)
    tenant_id = request.tenant.pk
    return lambda: on_replica(tenant_id)


def reads_replica(view):
    """A view whose ORM reads may go to the replica (`replica_reads`)."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        with replica_reads(request):
            return view(request, *args, **kwargs)

    return wrapped
