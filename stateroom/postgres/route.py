"""Is there a pooler between this process and PostgreSQL that nobody declared?

A transaction-mode pooler (PgBouncer's `pool_mode = transaction`) hands each
transaction to whichever server connection is free. Stateroom works behind
one when told (`DB_POOLER=transaction` turns off prepared statements and
server-side cursors), and answers wrong when not: a prepared statement of
another client under the same name returned 200 with no rows where rows had
been written. So a connection through anything undeclared is refused, loudly.

How it is seen: PostgreSQL names the client it talks to
(`inet_client_addr()`, `inet_client_port()`); on a direct connection that is
this process's own end of the socket. Through a pooler or proxy it is the
pooler's. One query, on the first connection of each process.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

from django.core.exceptions import ImproperlyConfigured

# (host, port, name) of each database this process has checked.
_checked: set[tuple[Any, ...]] = set()


class UndeclaredPooler(ImproperlyConfigured):
    pass


def _this_end(raw: Any) -> tuple[str, int] | None:
    """This process's end of the connection's socket; None for a Unix socket."""
    sock = socket.socket(fileno=raw.pgconn.socket)
    try:
        address = sock.getsockname()
    finally:
        sock.detach()  # the socket belongs to libpq
    if not isinstance(address, tuple):
        return None
    host = ipaddress.ip_address(address[0].split("%", 1)[0])
    if isinstance(host, ipaddress.IPv6Address) and host.ipv4_mapped:
        host = host.ipv4_mapped
    return str(host), address[1]


def _server_sees(raw: Any) -> tuple[str, int] | None:
    idle = raw.info.transaction_status == 0  # psycopg.pq.TransactionStatus.IDLE
    row = raw.execute("SELECT host(inet_client_addr()), inet_client_port()").fetchone()
    if idle and not raw.autocommit:
        raw.rollback()
    if row[0] is None:
        return None
    host = ipaddress.ip_address(row[0])
    if isinstance(host, ipaddress.IPv6Address) and host.ipv4_mapped:
        host = host.ipv4_mapped
    return str(host), row[1]


def check(raw: Any, settings_dict: dict[str, Any]) -> None:
    """Refuse a connection that goes through an undeclared pooler or proxy."""
    key = (settings_dict.get("HOST"), settings_dict.get("PORT"), settings_dict.get("NAME"))
    if settings_dict.get("POOLER") or key in _checked:
        return
    here, seen = _this_end(raw), _server_sees(raw)
    if here != seen:
        raise UndeclaredPooler(
            "The database connection goes through a pooler or proxy: PostgreSQL sees its "
            f"client at {_shown(seen)}, this process is at {_shown(here)}. Declare it: "
            "DB_POOLER=transaction for PgBouncer in pool_mode=transaction (prepared "
            "statements and server-side cursors off), DB_POOLER=session for a session-mode "
            "pooler or a plain TCP proxy. Stateroom refuses to run behind an undeclared "
            "pooler, where it would answer wrong (docs/scaling.md)."
        )
    _checked.add(key)


def _shown(end: tuple[str, int] | None) -> str:
    return "a Unix socket" if end is None else f"{end[0]}:{end[1]}"


def verify_at_start(alias: str = "default") -> None:
    """Connect once at a process's start, so an undeclared pooler stops it there.

    A database that is down is not this check's business: the process starts
    and answers 503 until it is back (the check runs at the first connection).
    """
    from django.db import connections

    try:
        connections[alias].ensure_connection()
    except UndeclaredPooler:
        raise
    except Exception:  # down, or not to be touched here (a test's collection): checked later
        return
    finally:
        connections[alias].close()
