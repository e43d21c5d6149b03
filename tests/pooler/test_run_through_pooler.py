"""`pytest --through-pooler` (make test-pooler): the run's own connections go through PgBouncer.

The subset CI runs that way (API, stores, console, concurrency, tenant isolation)
would prove nothing if the option quietly connected straight to PostgreSQL.
"""

from __future__ import annotations

from django.db import connection

from stateroom.postgres.route import _server_sees, _this_end


def test_the_runs_connection_goes_where_the_option_says(request, db):
    connection.ensure_connection()
    here, seen = _this_end(connection.connection), _server_sees(connection.connection)
    s = connection.settings_dict
    if request.config.getoption("--through-pooler"):
        assert here != seen  # PostgreSQL's client is PgBouncer, not this process
        assert s["POOLER"] == "transaction"
        assert s["OPTIONS"]["prepare_threshold"] is None
        assert s["DISABLE_SERVER_SIDE_CURSORS"] is True
        assert (s["HOST"], s["PORT"]) != (s["DIRECT"]["HOST"], s["DIRECT"]["PORT"])
    else:
        assert "DIRECT" not in s
        if here is not None:  # TCP: PostgreSQL sees this process's own end of the socket
            assert here == seen
