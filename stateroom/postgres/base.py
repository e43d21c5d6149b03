"""Django's PostgreSQL backend, with the health check skipped for a connection just used.

Django's `CONN_HEALTH_CHECKS` sends `SELECT 1` before the first query of every
request: on the API's hot reads that is a second round trip and about a
fifth of the request's CPU. A connection that finished a request less than
`DB_HEALTH_CHECK_IDLE` seconds ago is taken as alive, as connection pools do
(HikariCP's `aliveBypassWindowMs`, psycopg_pool's `check` on borrow); one
idle for longer is checked as before, and reconnected when it is dead.

What that leaves: a connection the server dropped inside the window fails
the next request's first statement, which answers 503 `database_unavailable`
with `Retry-After` (nothing half-written: the request's statement never
ran); Django closes the broken connection when that request ends and the
next one connects afresh.
"""

import time

from django.core.signals import request_finished
from django.db import connections
from django.db.backends.postgresql import base

from stateroom import metrics

from . import route

# The clock the window is read on; tests replace it.
clock = time.monotonic


class DatabaseWrapper(base.DatabaseWrapper):
    # When this connection last finished a request (None: not since it connected).
    used_at: float | None = None

    def connect(self) -> None:
        super().connect()
        self.used_at = None
        metrics.connection_created(self)

    def close(self) -> None:
        try:
            super().close()
        finally:
            metrics.update_connections()

    def init_connection_state(self) -> None:
        super().init_connection_state()
        route.check(self.connection, self.settings_dict)  # refuses an undeclared pooler

    def close_if_health_check_failed(self) -> None:
        window = self.settings_dict.get("HEALTH_CHECK_IDLE", 0)
        if (
            self.connection is not None
            and not self.health_check_done
            and self.used_at is not None
            and clock() - self.used_at < window
        ):
            self.health_check_done = True
            return
        super().close_if_health_check_failed()

    def mark_used(self) -> None:
        """A request has just finished on this connection (it answered until then)."""
        if self.connection is not None:
            self.used_at = clock()


def _stamp_used(**kwargs) -> None:
    for connection in connections.all(initialized_only=True):
        if isinstance(connection, DatabaseWrapper):
            connection.mark_used()
    metrics.update_connections()


# After Django's own receiver (close_old_connections), which may close the connection.
request_finished.connect(_stamp_used, dispatch_uid="stateroom.postgres.stamp_used")
