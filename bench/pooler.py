"""Debian's PgBouncer in `pool_mode = transaction` in front of a PostgreSQL server.

For the API load row through the pooler (bench/api.py): the same web server and
load as the production row, with `DATABASE_URL` at PgBouncer and
`DB_POOLER=transaction` (prepared statements and server-side cursors off), as
README's production section tells an operator to run it (docs/scaling.md).
The test suite's pooler runs (tests/infra.py) start it through `serve` too.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

POOL_SIZE = 8  # server connections: the 2 workers need 2; room for the checks


def binary() -> str | None:
    found = os.environ.get("STATEROOM_PGBOUNCER") or shutil.which("pgbouncer")
    if found:
        return found
    return "/usr/sbin/pgbouncer" if Path("/usr/sbin/pgbouncer").exists() else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _unprivileged_user(host: str) -> str:
    """Who runs pgbouncer for root (it refuses to run as root): nobody, or for a server on
    its socket, the owner of the socket's directory (the embedded server keeps it in its
    data directory, open to its own user only)."""
    if host.startswith("/"):
        owner = pwd.getpwuid(Path(host).stat().st_uid).pw_name
        if owner != "root":
            return owner
    return "nobody"


@contextmanager
def serve(
    *,
    host: str,
    port: int | str | None,
    users: Mapping[str, str],
    pool_mode: str = "transaction",
    pool_size: int = POOL_SIZE,
) -> Iterator[int]:
    """PgBouncer on a free loopback port in front of the server at `host` (a name, an
    address or a socket directory) and `port`; yields its port. It logs in to PostgreSQL
    as the client's role, with that role's password from `users` (its auth file)."""
    program = binary()
    if program is None:
        raise RuntimeError("pgbouncer is not installed (apt-get install pgbouncer)")
    listen = _free_port()
    workdir = Path(tempfile.mkdtemp(prefix="pgbouncer-"))
    workdir.chmod(0o777)
    _configure(workdir, f"host={host} port={port or 5432}", users, listen, pool_mode, pool_size)
    command = [program, str(workdir / "pgbouncer.ini")]
    if os.geteuid() == 0:
        command = ["runuser", "-u", _unprivileged_user(host), "--", *command]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        _wait_until_listening(process, listen, workdir / "pgbouncer.log")
        yield listen
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


def _configure(
    workdir: Path,
    server: str,
    users: Mapping[str, str],
    listen: int,
    pool_mode: str,
    pool_size: int,
) -> None:
    (workdir / "userlist.txt").write_text(
        "".join(f'"{user}" "{password}"\n' for user, password in users.items() if user)
    )
    (workdir / "pgbouncer.ini").write_text(
        f"""[databases]
* = {server}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {listen}
unix_socket_dir =
auth_type = trust
auth_file = {workdir}/userlist.txt
pool_mode = {pool_mode}
default_pool_size = {pool_size}
max_client_conn = 500
server_reset_query =
ignore_startup_parameters = extra_float_digits,options
logfile = {workdir}/pgbouncer.log
pidfile = {workdir}/pgbouncer.pid
"""
    )
    for name in ("userlist.txt", "pgbouncer.ini"):
        (workdir / name).chmod(0o644)


def _wait_until_listening(process: subprocess.Popen, listen: int, log: Path) -> None:
    deadline = time.monotonic() + 15
    while True:
        try:
            socket.create_connection(("127.0.0.1", listen), timeout=1).close()
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    "pgbouncer did not start:\n" + (log.read_text() if log.exists() else "")
                ) from None
            time.sleep(0.05)


@contextmanager
def pgbouncer(url: str) -> Iterator[str]:
    """PgBouncer in front of `url`'s server (on its socket too: the embedded server);
    yields `url` through it."""
    import dj_database_url

    server = dj_database_url.parse(url)
    with serve(
        host=server["HOST"] or "127.0.0.1",
        port=server["PORT"],
        users={server["USER"]: server["PASSWORD"] or ""},
    ) as port:
        parts = urlsplit(url)
        credentials = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
        yield urlunsplit(parts._replace(netloc=f"{credentials}127.0.0.1:{port}"))
