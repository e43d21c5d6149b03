"""Debian's PgBouncer in `pool_mode = transaction` in front of the bench database.

For the API load row through the pooler (bench/api.py): the same gunicorn and
load as the production row, with `DATABASE_URL` at PgBouncer and
`DB_POOLER=transaction` (prepared statements and server-side cursors off), as
README's production section tells an operator to run it (docs/scaling.md).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

POOL_SIZE = 8  # server connections: gunicorn's 2 sync workers need 2; room for the checks


def binary() -> str | None:
    found = os.environ.get("STATEROOM_PGBOUNCER") or shutil.which("pgbouncer")
    if found:
        return found
    return "/usr/sbin/pgbouncer" if Path("/usr/sbin/pgbouncer").exists() else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def pgbouncer(url: str) -> Iterator[str]:
    """PgBouncer on a free loopback port in front of `url`'s server; yields `url` through it."""
    program = binary()
    if program is None:
        raise RuntimeError("pgbouncer is not installed (apt-get install pgbouncer)")
    parts = urlsplit(url)
    port = _free_port()
    workdir = Path(tempfile.mkdtemp(prefix="bench-pgbouncer-"))
    workdir.chmod(0o777)
    user, password = parts.username or "", parts.password or ""
    (workdir / "userlist.txt").write_text(f'"{user}" "{password}"\n')
    (workdir / "pgbouncer.ini").write_text(
        f"""[databases]
* = host={parts.hostname or "127.0.0.1"} port={parts.port or 5432}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {workdir}/userlist.txt
pool_mode = transaction
default_pool_size = {POOL_SIZE}
max_client_conn = 500
server_reset_query =
ignore_startup_parameters = extra_float_digits,options
logfile = {workdir}/pgbouncer.log
pidfile = {workdir}/pgbouncer.pid
"""
    )
    for name in ("userlist.txt", "pgbouncer.ini"):
        (workdir / name).chmod(0o644)
    command = [program, str(workdir / "pgbouncer.ini")]
    if os.geteuid() == 0:  # pgbouncer refuses to run as root
        command = ["runuser", "-u", "nobody", "--", *command]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log = workdir / "pgbouncer.log"
                    raise RuntimeError(
                        "pgbouncer did not start:\n" + (log.read_text() if log.exists() else "")
                    ) from None
                time.sleep(0.05)
        credentials = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
        yield urlunsplit(parts._replace(netloc=f"{credentials}127.0.0.1:{port}"))
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)
