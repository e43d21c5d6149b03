"""A real PostgreSQL primary and its streaming replica, on loopback ports, for one test module.

`primary_and_replica()` runs `initdb` for a primary of its own (the machine's
server is not set up for replication, and changing that would need a restart
and a `pg_hba.conf` edit), creates the two roles and the database there,
migrates it as the owner, then makes a hot standby of it with
`pg_basebackup -R` and starts it. `recovery_min_apply_delay` on the standby
(`Pair.lag`) holds back what the primary commits, as a lagging replica would.

PostgreSQL's programs come from `STATEROOM_PG_BINDIR`, else the newest
`/usr/lib/postgresql/*/bin` (Debian's `postgresql` package), else the PATH.
As root they run as the `postgres` user (initdb refuses root).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from stateroom.database import APP_ROLE, OWNER_ROLE, apply_roles
from tests.infra import ROOT, free_port

DATABASE = "stateroom_replica"


def bindir() -> Path | None:
    if os.environ.get("STATEROOM_PG_BINDIR"):
        return Path(os.environ["STATEROOM_PG_BINDIR"])
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name)
    )
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def url(port: int, role: str, database: str = DATABASE) -> str:
    return f"postgres://{role}@127.0.0.1:{port}/{database}"


@dataclass
class Pair:
    primary_port: int
    replica_port: int
    directory: Path
    seeded: object = field(default=None)

    def primary_url(self, role: str = APP_ROLE) -> str:
        return url(self.primary_port, role)

    def replica_url(self, role: str = APP_ROLE) -> str:
        return url(self.replica_port, role)

    def superuser(self, port: int, database: str = DATABASE) -> psycopg.Connection:
        return psycopg.connect(url(port, "postgres", database), autocommit=True)

    def stop_replica(self) -> None:
        pg = bindir()
        assert pg is not None
        _run(
            [str(pg / "pg_ctl"), "-D", str(self.directory / "standby"), "-m", "fast", "-w", "stop"]
        )

    def lag(self, delay: str) -> None:
        """Hold back on the standby every commit younger than `delay` ('0' applies them all)."""
        with self.superuser(self.replica_port) as conn:
            conn.execute(f"ALTER SYSTEM SET recovery_min_apply_delay = '{delay}'")
            conn.execute("SELECT pg_reload_conf()")

    def caught_up(self, timeout: float = 30.0) -> None:
        """Returns once the standby has replayed all the primary had written when called."""
        with self.superuser(self.primary_port) as primary:
            target = primary.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
        with self.superuser(self.replica_port) as replica:
            deadline = time.monotonic() + timeout
            while True:
                behind = replica.execute(
                    "SELECT pg_wal_lsn_diff(%s::pg_lsn, pg_last_wal_replay_lsn()) > 0", [target]
                ).fetchone()[0]
                if not behind:
                    return
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the standby did not replay up to {target} in {timeout}s")
                time.sleep(0.02)


def _as_postgres(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def _run(command: list[str]) -> None:
    done = subprocess.run(_as_postgres(command), capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} failed:\n{done.stdout}\n{done.stderr}")


def _configure(data: Path, port: int, socket_dir: Path) -> None:
    with (data / "postgresql.conf").open("a") as conf:
        conf.write(
            f"\nlisten_addresses = '127.0.0.1'\nport = {port}\n"
            f"unix_socket_directories = '{socket_dir}'\n"
            "wal_level = replica\nmax_wal_senders = 4\nhot_standby = on\n"
            "fsync = off\nfull_page_writes = off\nshared_buffers = 32MB\n"
        )
    (data / "pg_hba.conf").write_text(
        "local all all trust\nhost all all 127.0.0.1/32 trust\n"
        "host replication all 127.0.0.1/32 trust\n"
    )


def _start(pg: Path, data: Path, log: Path) -> None:
    _run([str(pg / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60", "start"])


def _migrate(pair: Pair) -> None:
    env = dict(os.environ)
    for name in ("STATEROOM_TEST_DB_SUFFIX", "DATABASE_REPLICA_URL"):
        env.pop(name, None)
    env.update(
        DJANGO_SETTINGS_MODULE="stateroom.test_settings",
        DATABASE_URL=pair.primary_url(APP_ROLE),
        DATABASE_OWNER_URL=pair.primary_url(OWNER_ROLE),
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError("migrate on the primary failed:\n" + done.stderr[-4000:])


@contextmanager
def primary_and_replica(
    seed: Callable[[Pair], object] | None = None, *, delay: str = "0"
) -> Iterator[Pair]:
    """A migrated primary, `seed(pair)` run on it (its result is `pair.seeded`), then the
    standby copied from it, started with `recovery_min_apply_delay = delay`: everything
    committed after the copy reaches the standby's readers `delay` later."""
    from tests.conftest import require_infrastructure

    pg = bindir()
    require_infrastructure(
        pg is not None and (pg / "pg_basebackup").exists(),
        "needs PostgreSQL's server programs (apt-get install postgresql)",
    )
    assert pg is not None
    directory = Path(tempfile.mkdtemp(prefix="stateroom-replica-"))
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(directory, user.pw_uid, user.pw_gid)
    pair = Pair(free_port(), free_port(), directory)
    primary, standby = directory / "primary", directory / "standby"
    started: list[Path] = []
    try:
        _run([str(pg / "initdb"), "-D", str(primary), "-U", "postgres", "-A", "trust", "-E",
              "UTF8", "--no-sync"])  # fmt: skip
        _configure(primary, pair.primary_port, directory)
        _start(pg, primary, directory / "primary.log")
        started.append(primary)
        with pair.superuser(pair.primary_port, "postgres") as conn:
            apply_roles(conn, owner_password="", app_password="")
            conn.execute(f'CREATE DATABASE "{DATABASE}" OWNER "{OWNER_ROLE}"')
        _migrate(pair)
        if seed is not None:
            pair.seeded = seed(pair)
        _run([str(pg / "pg_basebackup"), "-h", "127.0.0.1", "-p", str(pair.primary_port), "-U",
              "postgres", "-D", str(standby), "-R", "-X", "stream", "-c", "fast", "--no-sync"])  # fmt: skip
        with (standby / "postgresql.conf").open("a") as conf:
            conf.write(f"\nport = {pair.replica_port}\nrecovery_min_apply_delay = '{delay}'\n")
        _start(pg, standby, directory / "standby.log")
        started.append(standby)
        yield pair
    finally:
        for data in reversed(started):
            subprocess.run(
                _as_postgres(
                    [str(pg / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]
                ),
                capture_output=True,
                timeout=60,
            )
        shutil.rmtree(directory, ignore_errors=True)
