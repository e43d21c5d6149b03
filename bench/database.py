"""The bench database: a dedicated PostgreSQL database next to the app's own.

`make bench` reads DATABASE_URL (the app's database) and works in a sibling
database named `<name>_bench` (or BENCH_DATABASE_URL when set), connecting as
the same NOSUPERUSER NOBYPASSRLS role so forced row-level security applies to
everything the bench does, the data load included.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import psycopg

TENANT_SETTING = "app.tenant_id"


class BenchError(SystemExit):
    """A clear message and exit status 2 instead of a traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(f"bench: {message}")


def bench_database_url(environ: dict[str, str] | None = None) -> str:
    environ = os.environ if environ is None else environ
    explicit = environ.get("BENCH_DATABASE_URL", "")
    app_url = environ.get("DATABASE_URL", "")
    url = explicit or app_url
    if not url:
        raise BenchError(
            "DATABASE_URL is not set. The bench runs on PostgreSQL only, e.g.\n"
            "  DATABASE_URL=postgres://stateroom:stateroom@127.0.0.1:5432/stateroom make bench\n"
            "(scripts/setup_postgres.sh creates the role and prints that URL)."
        )
    parts = urlsplit(url)
    if parts.scheme not in {"postgres", "postgresql", "pgsql"}:
        raise BenchError(
            f"the bench needs PostgreSQL, and DATABASE_URL is {parts.scheme or 'not a URL'}"
            " (SQLite has no row-level security, no concurrent writers and no query"
            " planner worth measuring). Point DATABASE_URL at PostgreSQL."
        )
    if explicit:
        return url
    name = parts.path.lstrip("/") or "stateroom"
    if not name.endswith("_bench"):
        name = f"{name}_bench"
    return urlunsplit(parts._replace(path=f"/{name}"))


def database_name(url: str) -> str:
    return urlsplit(url).path.lstrip("/")


def libpq_url(url: str) -> str:
    """psycopg wants postgresql:// (dj-database-url accepts postgres:// too)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(scheme="postgresql"))


def ensure_database(url: str, *, recreate: bool) -> bool:
    """Create the bench database if missing (the app role has CREATEDB).

    Returns True when the database was (re)created empty.
    """
    name = database_name(url)
    maintenance = urlunsplit(urlsplit(libpq_url(url))._replace(path="/postgres"))
    try:
        conn = psycopg.connect(maintenance, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError:
        # Some set-ups forbid connecting to `postgres`; the app database works as well.
        app = os.environ.get("DATABASE_URL", "")
        if not app:
            raise
        conn = psycopg.connect(libpq_url(app), autocommit=True, connect_timeout=5)
    with conn:
        role = conn.execute(
            "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        if role and (role[0] or role[1]):
            raise BenchError(
                "the bench must connect as the application role (NOSUPERUSER NOBYPASSRLS):"
                " a superuser skips row-level security and would measure something else."
            )
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if exists and recreate:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            exists = None
        if not exists:
            try:
                conn.execute(f'CREATE DATABASE "{name}"')
            except psycopg.errors.InsufficientPrivilege as exc:
                raise BenchError(
                    f"cannot create database {name!r} ({exc}). Create it with\n"
                    f"  APP_DB={name} scripts/setup_postgres.sh"
                ) from None
            return True
    return False


def connect(url: str, *, client_binding: bool = False) -> psycopg.Connection:
    """An autocommit connection; `client_binding` for generated SQL that reuses parameters."""
    if client_binding:
        return psycopg.connect(libpq_url(url), autocommit=True, cursor_factory=psycopg.ClientCursor)
    return psycopg.connect(libpq_url(url), autocommit=True)


@contextmanager
def tenant_tx(conn: psycopg.Connection, tenant_id: int) -> Iterator[psycopg.Cursor]:
    """One transaction in which RLS sees `tenant_id`, as the app's middleware does."""
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT set_config(%s, %s, true)", [TENANT_SETTING, str(tenant_id)])
        yield cur
