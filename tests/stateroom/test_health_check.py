"""The connection health check skipped for a connection just used (stateroom/postgres).

Each test drives a connection of its own (a second wrapper for the default
alias), ends its server process from a superuser's connection, and moves the
backend's injected clock instead of waiting.
"""

from __future__ import annotations

import pytest
from django.core.signals import request_finished
from django.db import OperationalError, connection, connections

from stateroom.postgres import base
from tests.infra import admin_connection


@pytest.fixture
def now(monkeypatch):
    clock = {"t": 1000.0}
    monkeypatch.setattr(base, "clock", lambda: clock["t"])
    return clock


@pytest.fixture
def wrapper(transactional_db):
    settings_dict = {**connections["default"].settings_dict, "HEALTH_CHECK_IDLE": 1.0}
    assert settings_dict["CONN_HEALTH_CHECKS"]
    conn = base.DatabaseWrapper(settings_dict, "default")
    try:
        yield conn
    finally:
        conn.close()


def backend_pid(conn) -> int:
    with conn.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def end_server_process(pid: int) -> None:
    with admin_connection() as admin:
        # With a timeout, pg_terminate_backend returns once the process is gone.
        assert admin.execute("SELECT pg_terminate_backend(%s, 5000)", [pid]).fetchone()[0]


def request_ends(conn) -> None:
    """What Django does when a request ends, then our stamp."""
    conn.close_if_unusable_or_obsolete()
    conn.mark_used()


def dropped_after_a_request(conn) -> int:
    """A request ends on `conn`, then the server ends its process; the old pid."""
    pid = backend_pid(conn)
    request_ends(conn)
    end_server_process(pid)
    return pid


def test_the_engine_is_ours_and_a_finished_request_stamps_the_connection(db, now):
    assert isinstance(connections["default"], base.DatabaseWrapper)
    backend_pid(connection)
    now["t"] = 1234.5
    request_finished.send(sender=None)
    assert connections["default"].used_at == 1234.5


def test_a_connection_used_within_the_window_is_not_checked(wrapper, now):
    pid = dropped_after_a_request(wrapper)
    now["t"] += 0.5
    wrapper.close_if_health_check_failed()
    # No SELECT 1 went out: the dead connection is still held, and the next
    # statement is the one that finds it dead.
    assert wrapper.connection is not None
    with pytest.raises(OperationalError):
        backend_pid(wrapper)
    # When that request ends, Django drops the broken connection; the next connects afresh.
    request_ends(wrapper)
    assert wrapper.connection is None
    assert backend_pid(wrapper) != pid


def test_a_connection_idle_past_the_window_is_checked_and_replaced(wrapper, now):
    pid = dropped_after_a_request(wrapper)
    now["t"] += 1.5
    wrapper.close_if_health_check_failed()
    assert wrapper.connection is None  # the check found it dead and closed it
    assert backend_pid(wrapper) != pid  # the request goes on, on a new connection


def test_a_connection_that_never_finished_a_request_is_checked(wrapper, now):
    pid = backend_pid(wrapper)
    wrapper.close_if_unusable_or_obsolete()  # a request starts: no stamp
    end_server_process(pid)
    wrapper.close_if_health_check_failed()
    assert wrapper.connection is None
    assert backend_pid(wrapper) != pid


def test_a_window_of_zero_checks_every_request(wrapper, now):
    wrapper.settings_dict["HEALTH_CHECK_IDLE"] = 0
    pid = dropped_after_a_request(wrapper)
    wrapper.close_if_health_check_failed()
    assert wrapper.connection is None
    assert backend_pid(wrapper) != pid


def test_the_window_setting_is_a_number_of_seconds(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    from stateroom.settings import env_float

    monkeypatch.setenv("DB_HEALTH_CHECK_IDLE", "2.5")
    assert env_float("DB_HEALTH_CHECK_IDLE", 1.0) == 2.5
    monkeypatch.setenv("DB_HEALTH_CHECK_IDLE", "")
    assert env_float("DB_HEALTH_CHECK_IDLE", 1.0) == 1.0
    for bad in ("soon", "-1", "nan"):
        monkeypatch.setenv("DB_HEALTH_CHECK_IDLE", bad)
        with pytest.raises(ImproperlyConfigured, match="DB_HEALTH_CHECK_IDLE must be a number"):
            env_float("DB_HEALTH_CHECK_IDLE", 1.0)
