"""bench.console: the once-a-minute idle-clock write is the session's, not the page's query."""

import time

from django.db import connection
from django.test.utils import CaptureQueriesContext

from bench.console import _idle_clock
from stateroom.edge import SEEN_AT
from tests.conftest import login


def test_only_the_idle_clocks_write_is_left_out_of_a_pages_count(admin_a, tenant_a):
    client = login(admin_a)
    client.get("/t/acme/")
    with CaptureQueriesContext(connection) as quiet:
        client.get("/t/acme/")
    session = client.session
    session[SEEN_AT] = time.time() - 61  # the clock is due: this request writes it back
    session.save()
    with CaptureQueriesContext(connection) as due:
        client.get("/t/acme/")
    left_out = [q["sql"] for q in due.captured_queries if _idle_clock(q["sql"])]
    assert len(left_out) == 1 and "django_session" in left_out[0]
    assert not any(_idle_clock(q["sql"]) for q in quiet.captured_queries)
    # What else the due request sent: the savepoint pair the test's own transaction puts
    # around that write (in production the write is a transaction of its own: no savepoint).
    extra = [q["sql"].split()[0] for q in due.captured_queries[len(quiet.captured_queries) :]]
    assert len(due.captured_queries) == len(quiet.captured_queries) + 3
    assert sorted(extra) == ["RELEASE", "SAVEPOINT", "UPDATE"]


def test_the_idle_clocks_own_transaction_is_left_out_too():
    from bench.console import _page_queries

    update = 'UPDATE "django_session" SET "session_data" = %s'
    page = ['SELECT "approvals"', "BEGIN", update, "COMMIT", 'SELECT "runs"']
    assert _page_queries(page) == ['SELECT "approvals"', 'SELECT "runs"']
    # a BEGIN/COMMIT of the page's own stays
    assert _page_queries(["BEGIN", 'SELECT "x"', "COMMIT"]) == ["BEGIN", 'SELECT "x"', "COMMIT"]
