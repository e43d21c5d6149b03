"""The session timeline's keyset pages: every item and every side event exactly once, bounded cost."""

import re
import time

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from runs_app.store import RunStateStore
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.conftest import RUNTIME, add_items, request_queries

HX = {"HX-Request": "true"}


def entries(body: str) -> list[tuple[str, str]]:
    """(kind, seq or "") of each timeline entry, in page order."""
    return [
        (kind, seq or "")
        for kind, seq in re.findall(
            r'<li class="k-[a-z]+" data-kind="([a-z]+)"(?: data-seq="(\d+)")?', body
        )
    ]


def older_cursor(body: str) -> str | None:
    found = re.search(r'hx-get="[^"]+/items\?before_seq=(\d+)"', body)
    return found.group(1) if found else None


def build_long_session(tenant, session_id: str, *, runs: int, items_per_run: int) -> None:
    """Runs one after another, each attached, moved to running, writing a batch of items, detached.

    Each batch has its own time, so the side events fall between batches and
    the time windows of the pages decide where each one shows.
    """
    with in_tenant(tenant):
        sessions = SessionStore(tenant, RUNTIME)
        sessions.create(session_id=session_id, user_id="u-1")
    for n in range(runs):
        run_id = f"r{n}"
        with in_tenant(tenant):
            RunStateStore(tenant, RUNTIME).create(run_id=run_id, session_id=session_id)
            sessions.attach(
                session_id=session_id, run_id=run_id, user_id="u-1", expected_revision=2 * n
            )
            RunStateStore(tenant, RUNTIME).compare_and_set(
                run_id=run_id, expected_version=1, changes={"status": "running"}
            )
        add_items(tenant, session_id, items_per_run, run_id=run_id, start=n * items_per_run + 1)
        with in_tenant(tenant):
            sessions.detach(
                session_id=session_id, run_id=run_id, user_id="u-1", expected_revision=2 * n + 1
            )


def walk(client, session_id: str) -> list[list[tuple[str, str]]]:
    """Every page from the newest back to the start, as "Load older" fetches them."""
    body = client.get(f"/t/acme/sessions/{session_id}/").content.decode()
    pages = [entries(body)]
    cursor = older_cursor(body)
    while cursor:
        response = client.get(
            f"/t/acme/sessions/{session_id}/items?before_seq={cursor}", headers=HX
        )
        body = response.content.decode()
        assert "<html" not in body
        pages.append(entries(body))
        cursor = older_cursor(body)
    assert 'data-testid="timeline-start"' in body
    return pages


def test_walking_the_timeline_shows_each_item_and_event_once(tenant_a, support_a):
    build_long_session(tenant_a, "long", runs=4, items_per_run=250)
    pages = walk(login(support_a), "long")

    assert len(pages) == 20  # 1,000 items, 50 a page
    seqs = [int(seq) for page in reversed(pages) for kind, seq in page if kind == "item"]
    assert seqs == list(range(1, 1001))
    assert [int(s) for k, s in pages[0] if k == "item"] == list(range(951, 1001))
    kinds = [kind for page in pages for kind, _ in page]
    assert kinds.count("attach") == 4
    assert kinds.count("detach") == 4
    assert kinds.count("run") == 8  # created and running, per run


def test_side_events_sit_between_the_items_they_happened_between(tenant_a, support_a):
    build_long_session(tenant_a, "long", runs=2, items_per_run=75)
    pages = walk(login(support_a), "long")
    stream = [entry for page in reversed(pages) for entry in page]
    # Between item 75 (the last of r0) and item 76: r0 detached, r1 created,
    # attached and set running.
    at = stream.index(("item", "75"))
    assert stream[at : at + 6] == [
        ("item", "75"),
        ("detach", ""),
        ("run", ""),
        ("attach", ""),
        ("run", ""),
        ("item", "76"),
    ]
    assert stream[-1] == ("detach", "")


def test_each_page_costs_the_same_queries_however_deep(
    tenant_a, support_a, django_assert_num_queries
):
    build_long_session(tenant_a, "long", runs=1, items_per_run=1000)
    client = login(support_a)
    # The session, the item page (one statement), the four side streams and the
    # lifecycle events.
    for cursor in (951, 501, 51):
        with django_assert_num_queries(request_queries() + 7):
            response = client.get(f"/t/acme/sessions/long/items?before_seq={cursor}", headers=HX)
        seqs = [int(s) for k, s in entries(response.content.decode()) if k == "item"]
        assert seqs == list(range(cursor - 50, cursor))


def test_items_without_htmx_redirect_to_the_page_of_the_timeline(tenant_a, support_a):
    build_long_session(tenant_a, "long", runs=1, items_per_run=120)
    client = login(support_a)
    response = client.get("/t/acme/sessions/long/items?before_seq=71")
    assert response.status_code == 302
    assert response["Location"] == "/t/acme/sessions/long/?before_seq=71"
    body = client.get(response["Location"]).content.decode()
    seqs = [int(s) for k, s in entries(body) if k == "item"]
    assert seqs == list(range(21, 71))
    assert older_cursor(body) == "21"
    assert 'data-testid="newest"' in body


def test_items_of_another_tenants_session_is_404(tenant_a, admin_b):
    build_long_session(tenant_a, "long", runs=1, items_per_run=10)
    response = login(admin_b).get("/t/globex/sessions/long/items?before_seq=5", headers=HX)
    assert response.status_code == 404


def test_deep_page_of_a_large_session_is_an_index_range_scan(tenant_a, support_a):
    """The page reads ~52 rows through the (tenant, session, seq) index, however many there are.

    25,000 items keep the test quick; the plan, not the row count, is what
    makes a page of a 100,000-item session cost the same (the planner has
    fresh statistics, so it would pick a sequential scan if that were cheaper).
    """
    with in_tenant(tenant_a):
        SessionStore(tenant_a, RUNTIME).create(session_id="huge", user_id="u-1")
    add_items(tenant_a, "huge", 25_000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE sessions_app_sessionitem")
    client = login(support_a)
    with CaptureQueriesContext(connection) as queries:
        started = time.monotonic()
        response = client.get("/t/acme/sessions/huge/items?before_seq=12501", headers=HX)
        elapsed = time.monotonic() - started
    seqs = [int(s) for k, s in entries(response.content.decode()) if k == "item"]
    assert seqs == list(range(12451, 12501))
    item_sql = next(
        q["sql"] for q in queries.captured_queries if "sessions_app_sessionitem" in q["sql"]
    )
    with in_tenant(tenant_a), connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + item_sql)
        plan = cursor.fetchone()[0][0]["Plan"]

    def nodes(node):
        yield node
        for child in node.get("Plans", []):
            yield from nodes(child)

    scans = [n for n in nodes(plan) if n.get("Relation Name") == "sessions_app_sessionitem"]
    assert [n["Node Type"] for n in scans] == ["Index Scan"]
    assert scans[0]["Index Name"] == "item_session_seq_uniq"
    assert scans[0]["Actual Rows"] <= 52  # the page, one older probe and the boundary item
    assert elapsed < 2.0


def lifecycle_entries(body: str) -> list[str]:
    """The text of each lifecycle entry of the page, tags stripped, spaces folded."""
    found = re.findall(r'<li class="k-lifecycle" data-kind="lifecycle">(.*?)</li>', body, re.S)
    texts = [re.sub(r"<time[^>]*>.*?</time>", "", text, flags=re.S) for text in found]
    return [" ".join(re.sub(r"<[^>]+>", " ", text).split()) for text in texts]


def test_the_timeline_tells_the_lifecycle_with_who_and_why(
    tenant_a, admin_a, support_a, make_token, django_capture_on_commit_callbacks
):
    from lifecycle_app.erasure import ErasureStore

    build_long_session(tenant_a, "s-1", runs=1, items_per_run=2)
    admin = login(admin_a)
    admin.post("/t/acme/sessions/s-1/hold", {"on": "1", "reason": "case 12"})
    admin.post("/t/acme/sessions/s-1/hold", {"on": "0", "reason": "case 12 closed"})
    # A runtime closes it: its words are content, kept apart from the audit log.
    runtime = Client(headers={"Authorization": f"Bearer {make_token(tenant_a)}"})
    runtime.post("/api/v1/sessions/s-1/close", {"reason": "user said bye"}, "application/json")
    with django_capture_on_commit_callbacks(execute=True):
        admin.post("/t/acme/sessions/s-1/delete", {"reason": "GDPR request 4"})
    page = login(support_a).get("/t/acme/sessions/s-1/").content.decode()
    assert (
        lifecycle_entries(page)
        == [
            "lifecycle Legal hold placed by ada — case 12",
            "lifecycle Legal hold released by ada — case 12 closed",
            "lifecycle Session closed by token:worker — "
            "(the reason a runtime gave was deleted with the content)",
            "lifecycle Content deletion requested by ada — GDPR request 4",
            "lifecycle Content deleted : 4 records by deletion — GDPR request 4",  # 2 items, end reason, payload
        ]
    )

    with in_tenant(tenant_a):
        SessionStore(tenant_a, RUNTIME).create(session_id="s-2", user_id="u-1")
    with django_capture_on_commit_callbacks(execute=True), in_tenant(tenant_a):
        erasure = ErasureStore(tenant_a, Actor.for_user(admin_a)).request(
            user_id="u-1", reason="the user asked to be forgotten"
        )
    page = login(support_a).get("/t/acme/sessions/s-2/").content.decode()
    why = f"Erasure {erasure.erasure_id} of user u-1: the user asked to be forgotten"
    assert lifecycle_entries(page) == [
        f"lifecycle Session closed by ada — {why}",
        f"lifecycle Content deletion requested (erasure {erasure.erasure_id}) by ada — {why}",
        f"lifecycle Content deleted : 1 record by deletion — {why}",
    ]


def test_the_filter_keeps_one_kind_of_entry_and_stays_in_the_url(tenant_a, support_a):
    build_long_session(tenant_a, "long", runs=2, items_per_run=30)
    client = login(support_a)
    url = "/t/acme/sessions/long/"
    everything = entries(client.get(url).content.decode())
    body = client.get(url, {"show": "conversation"}).content.decode()
    assert entries(body) == [e for e in everything if e[0] == "item"]
    assert '<a href="/t/acme/sessions/long/?show=conversation" hx-get=' in body
    assert re.search(r'\?show=conversation"[^>]*aria-current="page">Conversation</a>', body)
    runs = entries(client.get(url, {"show": "runs"}).content.decode())
    assert runs == [e for e in everything if e[0] in ("attach", "detach", "run")]
    assert entries(client.get(url, {"show": "approvals"}).content.decode()) == []
    assert "Nothing of this kind here." in client.get(url, {"show": "approvals"}).content.decode()
    # An unknown filter shows everything (the "Everything" tab is current).
    body = client.get(url, {"show": "bogus"}).content.decode()
    assert entries(body) == everything
    assert re.search(r'aria-current="page">Everything</a>', body)


def test_load_older_keeps_the_filter_and_reads_only_what_it_shows(
    tenant_a, support_a, django_assert_num_queries
):
    build_long_session(tenant_a, "long", runs=2, items_per_run=60)
    client = login(support_a)
    body = client.get("/t/acme/sessions/long/", {"show": "conversation"}).content.decode()
    link = re.search(r'hx-get="([^"]+/items\?before_seq=\d+&amp;show=conversation)"', body)
    assert link, "Load older carries the filter"
    # The session and the item page only: the side streams are not read.
    with django_assert_num_queries(request_queries() + 2):
        older = client.get(link.group(1).replace("&amp;", "&"), headers=HX)
    assert {kind for kind, _ in entries(older.content.decode())} == {"item"}
    # + attachments, run changes and effects: not approvals, not lifecycle events.
    with django_assert_num_queries(request_queries() + 5):
        client.get("/t/acme/sessions/long/items?before_seq=61&show=runs", headers=HX)
    # Without htmx, the items URL goes to the page with the same filter.
    response = client.get("/t/acme/sessions/long/items?before_seq=61&show=runs")
    assert response["Location"] == "/t/acme/sessions/long/?show=runs&before_seq=61"
