"""The embedded PostgreSQL is made once and reused: a second start is no second initdb."""

from pathlib import Path

import psycopg
import pytest

from stateroom.database import (
    APP_ROLE,
    DATABASE_NAME,
    configured_databases,
    ensure_embedded,
    socket_url,
    stop_embedded,
)

pytestmark = pytest.mark.embedded_db  # also run on the embedded server (CI, .ci/run)


def _postmaster_pid(pgdata: Path) -> int:
    return int((pgdata / "postmaster.pid").read_text().split()[0])


def _cluster_identity(pgdata: Path) -> tuple[int, int]:
    """initdb writes PG_VERSION once; a second initdb would write it again."""
    stat = (pgdata / "PG_VERSION").stat()
    return stat.st_ino, stat.st_mtime_ns


def _app_role(socket_dir: Path) -> tuple:
    with psycopg.connect(socket_url(APP_ROLE, socket_dir, DATABASE_NAME)) as conn:
        return conn.execute(
            "SELECT current_user, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
        ).fetchone()


@pytest.fixture
def pgdata(tmp_path):
    pgdata = tmp_path / "pgdata"
    yield pgdata
    stop_embedded(pgdata)


def test_a_second_start_reuses_the_running_server_and_a_restart_reuses_its_data(pgdata):
    socket_dir = ensure_embedded(pgdata)
    first_pid, identity = _postmaster_pid(pgdata), _cluster_identity(pgdata)
    assert _app_role(socket_dir) == (APP_ROLE, False, False)
    marker = (pgdata.parent / "roles.sha256").read_text()

    assert ensure_embedded(pgdata) == socket_dir  # running: found, not started again
    assert _postmaster_pid(pgdata) == first_pid

    assert stop_embedded(pgdata) is True
    assert not (pgdata / "postmaster.pid").exists()
    assert stop_embedded(pgdata) is False  # nothing left to stop

    socket_dir = ensure_embedded(pgdata)  # stopped: started again on the same data
    assert _postmaster_pid(pgdata) != first_pid
    assert _cluster_identity(pgdata) == identity
    assert (pgdata.parent / "roles.sha256").read_text() == marker
    assert _app_role(socket_dir) == (APP_ROLE, False, False)


def test_without_database_url_the_app_gets_the_embedded_server_on_a_socket_only(pgdata):
    app, owner = configured_databases({"STATEROOM_PGDATA": str(pgdata)})
    socket_dir = ensure_embedded(pgdata)
    assert (app["NAME"], app["USER"], app["HOST"]) == (DATABASE_NAME, APP_ROLE, str(socket_dir))
    assert owner is not None and owner["USER"] != APP_ROLE
    with psycopg.connect(socket_url(APP_ROLE, socket_dir, DATABASE_NAME)) as conn:
        listen, backend = conn.execute(
            "SELECT current_setting('listen_addresses'), pg_backend_pid()"
        ).fetchone()
        # The backend serving us is a child of the postmaster that runs on the given
        # data directory (its postmaster.pid), not of another cluster's.
        status = Path(f"/proc/{backend}/status").read_text()
    assert listen == ""  # a Unix socket only: it cannot meet the machine's cluster on :5432
    parent = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("PPid:"))
    assert parent == _postmaster_pid(pgdata)
