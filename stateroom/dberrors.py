"""What a database error means for the caller, read from its SQLSTATE (never from its text).

Django wraps psycopg's errors (`django.db.OperationalError` etc.) with the
driver's exception as `__cause__`; psycopg gives the server's SQLSTATE as
`.sqlstate`. A failure to connect at all (refused, too many connections for
the role, server starting up) has no SQLSTATE on the client: psycopg reports
it as an `OperationalError` with `sqlstate` None.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import DatabaseError, InterfaceError, OperationalError

# Seconds a client should wait before trying again after a 503.
OUTAGE_RETRY_AFTER = 5
BUSY_RETRY_AFTER = 1

# Classes and codes of "the database is not there for us right now".
_OUTAGE_CLASSES = ("08", "53", "57")  # connection exception, insufficient resources, operator
_BUSY = {"40001", "40P01", "55P03"}  # serialization failure, deadlock, lock not available


@dataclass(frozen=True)
class Mapped:
    status: int
    code: str
    message: str
    retry_after: int | None = None


def sqlstate(exc: BaseException | None) -> str | None:
    """The SQLSTATE of `exc` or of the driver error it wraps."""
    seen = 0
    while exc is not None and seen < 5:
        state = getattr(exc, "sqlstate", None)
        if state:
            return str(state)
        exc = exc.__cause__
        seen += 1
    return None


def classify(exc: BaseException | None) -> Mapped | None:
    """The answer a database error gets, or None when it is not one we map (a bug: 500)."""
    if exc is None or not isinstance(exc, DatabaseError):
        return None
    state = sqlstate(exc)
    if state is None:
        if isinstance(exc, OperationalError | InterfaceError):
            return _outage()
        return None
    if state.startswith(_OUTAGE_CLASSES):
        return _outage()
    if state in _BUSY:
        return Mapped(
            503,
            "database_busy",
            "The database could not serialize this request with another; try again.",
            BUSY_RETRY_AFTER,
        )
    if state == "42501":
        # Row-level security refused the row (or the append-only audit trigger
        # refused a change): to the caller that row does not exist.
        return Mapped(404, "not_found", "Not found.")
    if state.startswith("22"):
        return Mapped(422, "invalid_input", "A value is outside what the database can store.")
    return None


def _outage() -> Mapped:
    return Mapped(
        503,
        "database_unavailable",
        "The database is unavailable; try again shortly.",
        OUTAGE_RETRY_AFTER,
    )
