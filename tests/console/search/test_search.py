"""Full-text search: conversation text, approval summaries and reasons; tenant-scoped,
keyset-paged, escaped; content deletion takes the search text with it; user search by
case-insensitive prefix."""

import re

import pytest
from django.db import DatabaseError, connection, transaction

from approvals_app.store import ApprovalStore
from sessions_app.models import SessionItem
from sessions_app.store import SessionStore, reads
from sessions_app.tasks import index_items
from stateroom.actor import Actor
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.conftest import RUNTIME, layout_queries
from tests.console.fixtures import make_pending

SEARCH = "/t/acme/search/"


def say(tenant, session_id: str, *texts: str, role="user") -> None:
    """Append, then index as the indexer does a second later (sessions_app.search_index)."""
    with in_tenant(tenant):
        SessionStore(tenant, RUNTIME).append_items(
            session_id=session_id,
            items=[{"role": role, "item_type": "message", "payload": {"text": t}} for t in texts],
        )
    index_items(tenant_id=tenant.pk)


def item_hits(body: str) -> list[str]:
    return re.findall(r'data-testid="item-hit"><a class="mono" href="[^"]+">([^<]+)</a>', body)


def test_finds_a_phrase_said_in_item_3(make_session, tenant_a, support_a):
    make_session("s-1")
    say(
        tenant_a,
        "s-1",
        "Hello there",
        "I need help with an order",
        "I was charged twice for order #4512 & more",
        "Let me check",
    )
    make_session("s-2")
    say(tenant_a, "s-2", "charged for shipping twice? no, once")
    body = login(support_a).get(SEARCH, {"q": '"charged twice"'}).content.decode()
    assert item_hits(body) == ["s-1 #3"]
    assert "<mark>charged</mark> <mark>twice</mark>" in body
    assert "#4512 &amp; more" in body
    # Word forms: "charges" finds both sessions' "charged".
    assert item_hits(login(support_a).get(SEARCH, {"q": "charges"}).content.decode()) == [
        "s-2 #1",
        "s-1 #3",
    ]


def test_searches_openai_item_text_and_tool_arguments(make_session, tenant_a, support_a):
    make_session("s-1")
    with in_tenant(tenant_a):
        SessionStore(tenant_a, RUNTIME).append_items(
            session_id="s-1",
            items=[
                {
                    "role": "assistant",
                    "item_type": "function_call",
                    "payload": {
                        "type": "function_call",
                        "name": "refund",
                        "call_id": "c1",
                        "arguments": '{"reason": "duplicate payment"}',
                    },
                },
                {
                    "role": "user",
                    "item_type": "message",
                    "payload": {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": "Where is my parcel?"}],
                    },
                },
            ],
        )
    client = login(support_a)
    # Not yet indexed: search finds it once the indexer has run (about a second later).
    assert item_hits(client.get(SEARCH, {"q": "parcel"}).content.decode()) == []
    index_items(tenant_id=tenant_a.pk)
    assert item_hits(client.get(SEARCH, {"q": "parcel"}).content.decode()) == ["s-1 #2"]
    assert item_hits(client.get(SEARCH, {"q": "duplicate"}).content.decode()) == ["s-1 #1"]
    # Keys are not text: "arguments" and "call_id" find nothing.
    assert item_hits(client.get(SEARCH, {"q": "arguments"}).content.decode()) == []


def test_finds_approval_summaries_and_reasons(tenant_a, support_a):
    make_pending(
        tenant_a,
        run_id="r1",
        approval_id="a-1",
        summary="Wire 5,000 to a new payee",
        reason="Payee was added yesterday",
    )
    make_pending(tenant_a, run_id="r2", approval_id="a-2", reason="routine")
    with in_tenant(tenant_a):
        ApprovalStore(tenant_a, Actor("user", "1", "otto")).decide(
            approval_id="a-2", decision="reject", reason="Suspicious payee in Lagos"
        )
    client = login(support_a)
    body = client.get(SEARCH, {"q": "payee"}).content.decode()
    assert re.findall(
        r'data-testid="approval-hit"><a class="mono" href="[^"]+">([^<]+)</a>', body
    ) == [
        "a-2",
        "a-1",
    ]
    assert "<mark>Payee</mark>" in body


def test_search_is_tenant_scoped(make_session, tenant_a, tenant_b, admin_b):
    make_session("s-1")
    say(tenant_a, "s-1", "secret merger plans")
    body = login(admin_b).get("/t/globex/search/", {"q": "merger"}).content.decode()
    assert item_hits(body) == []
    assert 'data-testid="no-item-hits"' in body


def test_keyset_pages(make_session, tenant_a, support_a):
    make_session("s-1")
    say(tenant_a, "s-1", *[f"refund request {n}" for n in range(23)])
    client = login(support_a)
    body = client.get(SEARCH, {"q": "refund"}).content.decode()
    assert item_hits(body) == [f"s-1 #{n}" for n in range(23, 3, -1)]
    more = re.search(r'href="([^"]+)" data-testid="more-items"', body).group(1)
    assert item_hits(client.get(more.replace("&amp;", "&")).content.decode()) == [
        "s-1 #3",
        "s-1 #2",
        "s-1 #1",
    ]


def test_deleted_content_leaves_no_search_text(
    make_session, tenant_a, admin_a, support_a, django_capture_on_commit_callbacks
):
    make_session("s-1")
    say(tenant_a, "s-1", "my passport number is X123")
    client = login(admin_a)
    client.post("/t/acme/sessions/s-1/close", {"reason": "done"})
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/t/acme/sessions/s-1/delete", {"reason": "erasure"})
    assert item_hits(login(support_a).get(SEARCH, {"q": "passport"}).content.decode()) == []
    with in_tenant(tenant_a), connection.cursor() as cursor:
        # Nor the search index (migration 0006): its rows went with the items.
        cursor.execute("SELECT set_config('app.item_search', 'passport', true)")
        cursor.execute("SELECT count(*) FROM sessions_app_itemsearch")
        assert cursor.fetchone() == (0,)
    with in_tenant(tenant_a):
        assert not SessionItem.objects.filter(tenant=tenant_a).exists()


def test_empty_query_searches_nothing(support_a, tenant_a, django_assert_num_queries):
    client = login(support_a)
    with django_assert_num_queries(layout_queries(client, tenant_a)):
        body = client.get(SEARCH).content.decode()
    assert 'data-testid="item-hits"' not in body


@pytest.mark.parametrize("hits", [1, 15])
def test_search_query_count(make_session, tenant_a, support_a, hits, django_assert_num_queries):
    make_session("s-1")
    say(tenant_a, "s-1", *["lost parcel"] * hits)
    make_pending(tenant_a, run_id="r1", approval_id="a-1", summary="Resend the lost parcel")
    client = login(support_a)
    # Items: the index's tsquery, matching ids, then the page with snippets; approvals: two.
    with django_assert_num_queries(layout_queries(client, tenant_a) + 5):
        body = client.get(SEARCH, {"q": "parcel"}).content.decode()
    assert len(item_hits(body)) == hits


def test_user_search_is_a_case_insensitive_prefix(make_session, support_a):
    make_session("s-1", user_id="Customer-42")
    make_session("s-2", user_id="customer-7")
    make_session("s-3", user_id="vip-customer")
    body = login(support_a).get("/t/acme/sessions/", {"user_id": "CUSTOMER"}).content.decode()
    assert sorted(set(re.findall(r">(s-\d)</a>", body))) == ["s-1", "s-2"]


@pytest.fixture
def small_window(monkeypatch):
    """Test only the newest 3 items one by one; older hits come from the index."""
    monkeypatch.setattr(reads, "SEARCH_WINDOW", 3)


def test_older_hits_come_from_the_index_newest_first(
    small_window, make_session, tenant_a, tenant_b, support_a, django_assert_num_queries
):
    make_session("s-1")
    say(tenant_a, "s-1", *[f"turn {n}" for n in range(1, 31)])  # seq n says "turn n"
    say(tenant_a, "s-1", "the rare phrase: lost parcel")  # #31
    say(tenant_a, "s-1", *[f"turn {n}" for n in range(32, 36)])
    make_session("s-9", tenant=tenant_b)
    say(tenant_b, "s-9", *["lost parcel"] * 30)
    client = login(support_a)
    # Items: the index's tsquery, the window, the index, the page with snippets; approvals:
    # no matching ids.
    with django_assert_num_queries(layout_queries(client, tenant_a) + 5):
        body = client.get(SEARCH, {"q": '"turn 5"'}).content.decode()
    assert item_hits(body) == ["s-1 #5"]
    assert 'data-testid="more-items"' not in body
    # Within the window, then below it; another tenant's matches never show.
    assert item_hits(client.get(SEARCH, {"q": "parcel"}).content.decode()) == ["s-1 #31"]
    assert item_hits(client.get(SEARCH, {"q": "turn 3"}).content.decode()) == ["s-1 #3"]
    with in_tenant(tenant_a):
        store = SessionStore(tenant_a, RUNTIME)
        # 34 hits: 3 from the window (#35-#33), then #32, #30 ... by the index.
        hits, more = store.search_items(query="turn", limit=20)
        seqs = [hit.seq for hit in hits]
        assert seqs == [35, 34, 33, 32, *range(30, 14, -1)] and more
        hits, more = store.search_items(query="turn", before_id=hits[-1].id, limit=20)
        assert [hit.seq for hit in hits] == list(range(14, 0, -1)) and not more
        # Exactly a page: no "more".
        hits, more = store.search_items(query="turn", before_id=None, limit=34)
        assert len(hits) == 34 and not more
        # The web-search syntax holds below the window too: -not, or.
        assert [h.seq for h in store.search_items(query="-turn", limit=20)[0]] == [31]
        assert [
            h.seq for h in store.search_items(query='"lost parcel" or "turn 7"', limit=5)[0]
        ] == [31, 7]


def test_index_table_shows_only_matches_of_the_tenant(make_session, tenant_a, tenant_b):
    make_session("s-1")
    say(tenant_a, "s-1", "lost parcel", "hello")
    make_session("s-9", tenant=tenant_b)
    say(tenant_b, "s-9", "lost parcel")
    with in_tenant(tenant_a), connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM sessions_app_itemsearch")
        assert cursor.fetchone() == (0,)  # no tsquery set: nothing visible
        cursor.execute("SELECT set_config('app.item_search', 'parcel', true)")
        cursor.execute("SELECT tenant_id FROM sessions_app_itemsearch")
        assert cursor.fetchall() == [(tenant_a.pk,)]
        # An item's text changed: so did its row.
        SessionItem.objects.filter(tenant=tenant_a, seq=2).update(payload={"text": "parcel"})
        cursor.execute("SELECT count(*) FROM sessions_app_itemsearch")
        assert cursor.fetchone() == (2,)
        # The app role may read it only: rows are the triggers' to write.
        with pytest.raises(DatabaseError), transaction.atomic():
            cursor.execute(
                "INSERT INTO sessions_app_itemsearch VALUES (0, %s, 'x'::tsvector)", [tenant_a.pk]
            )


@pytest.mark.django_db(transaction=True)
def test_the_index_serves_the_match_under_row_level_security(make_session, tenant_a, owner_sql):
    """The reason for sessions_app_itemsearch: on the items, `@@` is no LEAKPROOF operator,
    so under their policy a GIN index could not serve it even when nothing else may (0007
    dropped theirs); the index table's match is its policy's, and its GIN index can. With
    statistics (as autovacuum keeps them), a rare word goes to the GIN index, not to a walk
    of the tenant's rows by the key (item_id, tenant_id)."""
    make_session("s-1")
    say(tenant_a, "s-1", *[f"hello number {n}" for n in range(300)], "lost parcel")
    owner_sql("ANALYZE sessions_app_itemsearch")

    def plan(sql: str) -> str:
        with in_tenant(tenant_a), connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("SELECT set_config('app.item_search', 'parcel', true)")
            cursor.execute("EXPLAIN " + sql, [tenant_a.pk])
            return "\n".join(row[0] for row in cursor.fetchall())

    assert "itemsearch_gin" in plan(
        "SELECT item_id FROM sessions_app_itemsearch WHERE tenant_id = %s"
    )
