"""The bench database: a dedicated PostgreSQL database next to the app's own.

`make bench` finds the app's database as the app does (DATABASE_URL and
DATABASE_OWNER_URL, or the embedded server when DATABASE_URL is unset) and
works in a sibling database named `<name>_bench` (or BENCH_DATABASE_URL with
BENCH_DATABASE_OWNER_URL). The owner role creates and migrates it; the bench
connects as the app role (NOSUPERUSER NOBYPASSRLS, owns no table), so forced
row-level security applies to everything it measures, the data load included.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import psycopg

TENANT_SETTING = "app.tenant_id"


class BenchError(SystemExit):
    """A clear message and exit status 2 instead of a traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(f"bench: {message}")


@dataclass(frozen=True)
class BenchDatabase:
    url: str  # the app role's
    owner_url: str

    @property
    def name(self) -> str:
        return database_name(self.url)


def bench_database(environ: Mapping[str, str] | None = None) -> BenchDatabase:
    from stateroom.database import DatabaseConfigError, configured_databases, url_of

    environ = os.environ if environ is None else environ
    explicit = environ.get("BENCH_DATABASE_URL", "")
    if explicit:
        owner = environ.get("BENCH_DATABASE_OWNER_URL", "")
        if not owner:
            raise BenchError("BENCH_DATABASE_URL needs BENCH_DATABASE_OWNER_URL (the owner role).")
        return BenchDatabase(explicit, owner)
    try:
        app, owner = configured_databases(environ)
    except DatabaseConfigError as exc:
        raise BenchError(str(exc)) from None
    if owner is None:
        raise BenchError(
            "DATABASE_OWNER_URL is not set: the bench creates its database as the owner role"
            ' and measures as the app role (eval "$(scripts/setup_postgres.sh)" sets both).'
        )
    name = app["NAME"] if app["NAME"].endswith("_bench") else f"{app['NAME']}_bench"
    return BenchDatabase(url_of({**app, "NAME": name}), url_of({**app, **owner, "NAME": name}))


def database_name(url: str) -> str:
    return urlsplit(url).path.lstrip("/")


def libpq_url(url: str) -> str:
    """psycopg wants postgresql:// (dj-database-url accepts postgres:// too)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(scheme="postgresql"))


def ensure_database(database: BenchDatabase, *, recreate: bool) -> bool:
    """Create the bench database as the owner role if missing (or anew).

    Returns True when the database was (re)created empty.
    """
    name = database.name
    maintenance = urlunsplit(urlsplit(libpq_url(database.owner_url))._replace(path="/postgres"))
    app_maintenance = urlunsplit(urlsplit(libpq_url(database.url))._replace(path="/postgres"))
    with psycopg.connect(app_maintenance, autocommit=True, connect_timeout=5) as app:
        role = app.execute(
            "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
    if role and (role[0] or role[1]):
        raise BenchError(
            "the bench must connect as the application role (NOSUPERUSER NOBYPASSRLS):"
            " a superuser skips row-level security and would measure something else."
        )
    with psycopg.connect(maintenance, autocommit=True, connect_timeout=5) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if exists and recreate:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            exists = None
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')
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
