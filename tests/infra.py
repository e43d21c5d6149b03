"""Real processes and privileged connections for out-of-process tests.

- `admin_connection()`: a psycopg connection with the rights to create roles,
  change their connection limit and end their sessions (and, as the tables'
  owner or a superuser, to do what the app role cannot). It comes from
  `STATEROOM_ADMIN_DATABASE_URL`, else the `postgres` role on the test
  database's server.
- `web_server(env)`: the production web server (Granian) serving the project on a free port.
- `wait_for_lock_waiter(what)`: returns once a backend of the test database
  waits on a lock (the second writer of a race has reached the first's row).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import httpx
import psycopg
import pytest
from django.conf import settings

ROOT = Path(settings.BASE_DIR)


def direct(settings_dict: dict) -> dict:
    """A connection's settings with the server's own address (not the run's pooler, if any)."""
    return {**settings_dict, **settings_dict.get("DIRECT", {})}


def database_url(*, user: str | None = None, password: str | None = None) -> str:
    """The URL of this test process's (test) database, as its app role or as `user`."""
    from django.db import connection

    from stateroom.database import url_of

    if user is None:
        return url_of(connection.settings_dict)
    return url_of(connection.settings_dict, role={"USER": user, "PASSWORD": password or ""})


def admin_connection(*, database: str = "postgres") -> psycopg.Connection:
    """A superuser's connection: `STATEROOM_ADMIN_DATABASE_URL`, else `postgres` on the
    test database's server (its Unix socket for the embedded server, TCP otherwise)."""
    url = os.environ.get("STATEROOM_ADMIN_DATABASE_URL")
    if url:
        return psycopg.connect(url.rsplit("/", 1)[0] + "/" + database, autocommit=True)
    from django.db import connection

    s = direct(connection.settings_dict)
    host = str(s["HOST"] or "127.0.0.1")
    if host.startswith("/"):  # the embedded server listens on a socket only
        return psycopg.connect(
            f"postgresql://postgres@/{database}?host={quote(host, safe='')}", autocommit=True
        )
    return psycopg.connect(
        f"postgres://postgres@{host}:{s['PORT'] or 5432}/{database}", autocommit=True
    )


def wait_for_lock_waiter(what: str, *, timeout: float = 4.0) -> None:
    """Poll `pg_stat_activity` until a backend of this database waits on a Lock.

    Fails the test with `what` (e.g. "B never waited on A's row lock") when
    none does within `timeout` seconds.
    """
    from django.db import connection

    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE wait_event_type = 'Lock' AND datname = current_database()"
            )
            if cursor.fetchone()[0]:
                return
            time.sleep(0.02)
    pytest.fail(what)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def subprocess_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("STATEROOM_TEST_DB_SUFFIX", None)
    env.pop("DATABASE_OWNER_URL", None)  # the subprocess is the app, on the test database
    env.update(DJANGO_SETTINGS_MODULE="stateroom.test_settings", DATABASE_URL=database_url())
    if connection_pooler():  # the run goes through PgBouncer (--through-pooler): so does the child
        env["DB_POOLER"] = connection_pooler()
    env.update(extra)
    return env


@contextmanager
def web_server(
    env: dict[str, str], *, workers: int = 1, extra: list[str] | None = None
) -> Iterator[str]:
    """The production web server (`python -m stateroom.serve`: Granian, keep-alive) on
    127.0.0.1; its base URL. `extra`: more of Granian's options (they win over the defaults)."""
    port = free_port()
    log = Path(tempfile.mkstemp(prefix="web-server-", suffix=".log")[1])
    command = [
        sys.executable,
        "-m",
        "stateroom.serve",
        "--workers",
        str(workers),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *(extra or []),
    ]
    with log.open("w") as out:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(base + "/healthz", timeout=2)
                break
            except httpx.TransportError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        "the web server did not start:\n" + log.read_text()[-3000:]
                    ) from None
                time.sleep(0.2)
        yield base
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=40)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)
        log.unlink(missing_ok=True)


@contextmanager
def redis_server(port: int | None = None) -> Iterator[tuple[int, subprocess.Popen]]:
    """A redis-server of this test's own on 127.0.0.1 (never the machine's shared one)."""
    port = port or free_port()
    server = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start on port {port}")
            time.sleep(0.1)
        yield port, server
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)


@contextmanager
def celery_worker(broker_url: str, queue: str, *, beat: bool = False, **env: str) -> Iterator[Path]:
    """`celery -A stateroom worker` in a subprocess on `broker_url`, its own queue; yields its log.

    `beat=True`: with beat inside (`-B`), its schedule publishing to `queue`."""
    log = Path(tempfile.mkstemp(prefix="worker-", suffix=".log")[1])
    environment = subprocess_env(
        CELERY_TASK_ALWAYS_EAGER="0", CELERY_BROKER_URL=broker_url, DB_CONN_MAX_AGE="0", **env
    )
    command = [
        str(Path(sys.executable).with_name("celery")),
        "-A",
        "stateroom",
        "worker",
        "-Q",
        queue,
        "-n",
        f"{queue}@%h",
        "-P",
        "solo",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "-l",
        "INFO",
    ]
    if beat:
        schedule = Path(tempfile.mkdtemp(prefix="beat-")) / "schedule"
        command += ["-B", "-s", str(schedule)]
        environment["CELERY_TASK_DEFAULT_QUEUE"] = queue
    with log.open("w") as out:
        worker = subprocess.Popen(
            command, cwd=ROOT, env=environment, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        yield log
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(timeout=10)
        log.unlink(missing_ok=True)


@contextmanager
def producing_to(broker_url: str, queue: str) -> Iterator[None]:
    """Eager mode off: jobs published in this process go to `queue` on `broker_url`.

    Celery reads `CELERY_BROKER_URL` from the environment before its own
    setting, so both change; the cached producer pool is dropped before and after.
    """
    from kombu import pools

    from stateroom.celery import app

    def reset() -> None:
        app._pool = None
        app.__dict__.pop("amqp", None)
        pools.reset()

    keys = ("task_always_eager", "broker_url", "task_default_queue")
    saved = {key: app.conf[key] for key in keys}
    saved_env = os.environ.get("CELERY_BROKER_URL")
    reset()
    os.environ["CELERY_BROKER_URL"] = broker_url
    app.conf.update(task_always_eager=False, broker_url=broker_url, task_default_queue=queue)
    try:
        yield
    finally:
        reset()
        if saved_env is None:
            os.environ.pop("CELERY_BROKER_URL", None)
        else:
            os.environ["CELERY_BROKER_URL"] = saved_env
        app.conf.update(saved)


@contextmanager
def pgbouncer(*, pool_mode: str = "transaction", pool_size: int = 4) -> Iterator[int]:
    """Debian's pgbouncer on a free loopback port in front of the test database's server.

    Yields its port: `pooled_url(port)` is this test database through it. The bench's
    `pooler.serve` runs it (for root: as nobody, or as the owner of the embedded server's
    socket directory); it logs in to PostgreSQL as the client's role, with the role's
    password from its auth file, as a production set-up does.
    """
    from django.db import connection

    from bench import pooler
    from tests.conftest import require_infrastructure

    require_infrastructure(
        pooler.binary() is not None, "needs pgbouncer (apt-get install pgbouncer)"
    )
    s = direct(connection.settings_dict)
    owner = settings.DATABASE_OWNER or {}
    users = {s["USER"]: s.get("PASSWORD") or "", owner.get("USER"): owner.get("PASSWORD") or ""}
    with pooler.serve(
        host=str(s["HOST"] or "127.0.0.1"),
        port=s["PORT"],
        users=users,
        pool_mode=pool_mode,
        pool_size=pool_size,
    ) as port:
        yield port


def pooled_url(port: int, *, owner: bool = False) -> str:
    """This test database through the pooler on `port`, as the app role (or the owner)."""
    from django.db import connection

    from stateroom.database import url_of

    role = settings.DATABASE_OWNER if owner else {}
    return url_of({**connection.settings_dict, **role, "HOST": "127.0.0.1", "PORT": port})


def connection_pooler() -> str:
    from django.db import connection

    return connection.settings_dict.get("POOLER") or ""


@contextmanager
def through_pooler(pool_size: int = 20) -> Iterator[int]:
    """Every connection of this test process to its test database through PgBouncer in
    `pool_mode = transaction`, set up as `DB_POOLER=transaction` sets it up (prepared
    statements and server-side cursors off), for the run (`pytest --through-pooler`).

    The owner role (migrations, flush) and `admin_connection()` still go straight to
    the server (`direct`); subprocesses get the pooled URL with `DB_POOLER`.
    """
    from django.db import connections

    with pgbouncer(pool_size=pool_size) as port:
        s = connections["default"].settings_dict
        saved = {
            key: s.get(key) for key in ("HOST", "PORT", "POOLER", "DISABLE_SERVER_SIDE_CURSORS")
        }
        saved_options = s.get("OPTIONS", {})
        connections["default"].close()
        s["DIRECT"] = {"HOST": s["HOST"], "PORT": s["PORT"]}
        s.update(HOST="127.0.0.1", PORT=port, POOLER="transaction")
        s["DISABLE_SERVER_SIDE_CURSORS"] = True
        s["OPTIONS"] = {**saved_options, "prepare_threshold": None}
        try:
            yield port
        finally:
            connections["default"].close()
            s.pop("DIRECT", None)
            s.update(saved)
            s["OPTIONS"] = saved_options
