"""Full-text search: conversation text, approval summaries and reasons; tenant-scoped,
keyset-paged, escaped; content deletion takes the search text with it; user search by
case-insensitive prefix."""

import re

import pytest
from django.db import connection

from approvals_app.store import ApprovalStore
from audit_app.actor import Actor
from sessions_app.models import SessionItem
from sessions_app.store import SessionStore
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console_data.conftest import RUNTIME, layout_queries
from tests.console_ops.conftest import make_pending

SEARCH = "/t/acme/search/"


def say(tenant, session_id: str, *texts: str, role="user") -> None:
    with in_tenant(tenant):
        SessionStore(tenant, RUNTIME).append_items(
            session_id=session_id,
            items=[{"role": role, "item_type": "message", "payload": {"text": t}} for t in texts],
        )


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
        cursor.execute(
            "SELECT count(*) FROM sessions_app_sessionitem"
            " WHERE search @@ to_tsquery('english', 'passport')"
        )
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
    # Items: matching ids, then the page with snippets; approvals: the same two.
    with django_assert_num_queries(layout_queries(client, tenant_a) + 4):
        body = client.get(SEARCH, {"q": "parcel"}).content.decode()
    assert len(item_hits(body)) == hits


def test_user_search_is_a_case_insensitive_prefix(make_session, support_a):
    make_session("s-1", user_id="Customer-42")
    make_session("s-2", user_id="customer-7")
    make_session("s-3", user_id="vip-customer")
    body = login(support_a).get("/t/acme/sessions/", {"user_id": "CUSTOMER"}).content.decode()
    assert sorted(set(re.findall(r">(s-\d)</a>", body))) == ["s-1", "s-2"]
