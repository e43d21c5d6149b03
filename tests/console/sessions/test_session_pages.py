"""Sessions list and session detail: filters, keyset pages, roles, tenants, query counts."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.store import SessionStore
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.conftest import RUNTIME, layout_queries, populate_session


def session_ids(response) -> list[str]:
    return re.findall(
        r'data-testid="session-row"[^>]*>\s*<td class="mono"><a href="[^"]+">([^<]+)</a>',
        response.content.decode(),
    )


def test_list_shows_sessions_newest_first(make_session, support_a):
    for sid in ("s-1", "s-2", "s-3"):
        make_session(sid)
    response = login(support_a).get("/t/acme/sessions/")
    assert response.status_code == 200
    assert session_ids(response) == ["s-3", "s-2", "s-1"]
    assert 'data-testid="bulk-actions"' not in response.content.decode()


def test_list_shows_bulk_actions_to_admins_only(make_session, admin_a, operator_a):
    make_session("s-1")
    assert 'data-testid="bulk-actions"' in login(admin_a).get("/t/acme/sessions/").content.decode()
    assert (
        'data-testid="bulk-actions"'
        not in login(operator_a).get("/t/acme/sessions/").content.decode()
    )


def test_list_filters_by_status_user_and_search(make_session, tenant_a, support_a):
    make_session("alpha-1", user_id="u-1")
    make_session("alpha-2", user_id="u-2")
    make_session("beta-1", user_id="u-1")
    with in_tenant(tenant_a):
        SessionStore(tenant_a, RUNTIME).close(session_id="alpha-2", reason="done")
    client = login(support_a)
    assert session_ids(client.get("/t/acme/sessions/?status=closed")) == ["alpha-2"]
    assert session_ids(client.get("/t/acme/sessions/?user_id=u-1")) == ["beta-1", "alpha-1"]
    assert session_ids(client.get("/t/acme/sessions/?q=alpha")) == ["alpha-2", "alpha-1"]
    assert session_ids(client.get("/t/acme/sessions/?status=active&q=alpha")) == ["alpha-1"]


def test_list_search_finds_a_session_by_one_of_its_run_ids(world, make_session, support_a):
    make_session("other")
    client = login(support_a)
    assert session_ids(client.get(f"/t/acme/sessions/?q={world.run_id}")) == [world.session_id]
    assert session_ids(client.get("/t/acme/sessions/?q=run-")) == [world.session_id]
    assert session_ids(client.get("/t/acme/sessions/?q=run-&status=closed")) == []


def test_list_filters_by_date_range(make_session, tenant_a, support_a):
    today = timezone.now().date()
    make_session("s-today")
    response = login(support_a).get(f"/t/acme/sessions/?created_from={today}&created_to={today}")
    assert session_ids(response) == ["s-today"]
    tomorrow = today + timedelta(days=1)
    response = login(support_a).get(f"/t/acme/sessions/?created_from={tomorrow}")
    assert session_ids(response) == []
    assert "No session matches these filters." in response.content.decode()


def test_list_invalid_filter_shows_the_error_and_no_rows(make_session, support_a):
    make_session("s-1")
    response = login(support_a).get("/t/acme/sessions/?status=bogus&created_from=yesterday")
    body = response.content.decode()
    assert response.status_code == 200
    assert session_ids(response) == []
    assert "Select a valid choice. bogus is not one of the available choices." in body
    assert "Enter a valid date." in body


def test_list_empty_state(tenant_a, support_a):
    response = login(support_a).get("/t/acme/sessions/")
    assert 'data-testid="empty"' in response.content.decode()
    assert "No sessions yet." in response.content.decode()


def test_list_keyset_pages_through_every_session_once(make_session, support_a):
    for n in range(120):
        make_session(f"s-{n:03d}")
    client = login(support_a)
    seen, url = [], "/t/acme/sessions/?status=active"
    while url:
        response = client.get(url)
        seen += session_ids(response)
        found = re.search(r'href="([^"]+)"[^>]*data-testid="next-page"', response.content.decode())
        url = found.group(1).replace("&amp;", "&") if found else None
        if url:
            assert "status=active" in url and "cursor=" in url
    assert seen == [f"s-{n:03d}" for n in reversed(range(120))]


def test_list_htmx_request_gets_the_results_fragment(make_session, support_a):
    make_session("s-1")
    response = login(support_a).get("/t/acme/sessions/", headers={"HX-Request": "true"})
    body = response.content.decode()
    assert "<html" not in body
    assert session_ids(response) == ["s-1"]


@pytest.mark.parametrize("rows", [1, 20])
def test_list_query_count_does_not_grow_with_rows(
    make_session, tenant_a, support_a, rows, django_assert_num_queries
):
    for n in range(rows):
        make_session(f"s-{n}")
    client = login(support_a)
    # The page of sessions and their open attachments (prefetched).
    with django_assert_num_queries(layout_queries(client, tenant_a) + 2):
        response = client.get("/t/acme/sessions/")
    assert len(session_ids(response)) == rows


def test_list_of_another_tenant_is_404(make_session, admin_b):
    make_session("s-1")
    assert login(admin_b).get("/t/acme/sessions/").status_code == 404


def test_detail_shows_session_fields(world, support_a):
    response = login(support_a).get(f"/t/acme/sessions/{world.session_id}/")
    body = response.content.decode()
    assert response.status_code == 200
    fields = body[body.index('data-testid="session-fields"') : body.index("</dl>")]
    assert "<dt>Revision</dt><dd>1</dd>" in fields
    assert "<dt>Items</dt><dd>3</dd>" in fields
    assert "<dt>Legal hold</dt><dd>off</dd>" in fields
    assert "<dt>Content deleted</dt><dd>no</dd>" in fields
    assert f'/t/acme/runs/{world.run_id}/">{world.run_id}</a>' in fields
    assert 'data-testid="admin-actions"' not in body  # support reads, admins act


def test_detail_shows_admin_actions_to_admins(world, admin_a):
    body = login(admin_a).get(f"/t/acme/sessions/{world.session_id}/").content.decode()
    for testid in ("action-close", "action-expire", "action-hold-on", "action-delete", "export-md"):
        assert f'data-testid="{testid}"' in body


def test_detail_escapes_agent_text(make_session, tenant_a, support_a):
    make_session("s-1")
    with in_tenant(tenant_a):
        SessionStore(tenant_a, RUNTIME).append_items(
            session_id="s-1",
            items=[
                {
                    "role": "assistant",
                    "item_type": "message",
                    "payload": {"text": "<script>x()</script>"},
                },
                {
                    "role": "<b>r</b>",
                    "item_type": "tool",
                    "payload": {"args": "<img src=x onerror=y>"},
                },
            ],
        )
    body = login(support_a).get("/t/acme/sessions/s-1/").content.decode()
    assert "<script>x()" not in body and "&lt;script&gt;x()&lt;/script&gt;" in body
    assert "<img src=x" not in body and "&lt;img src=x onerror=y&gt;" in body
    assert "<b>r</b>" not in body and "&lt;b&gt;r&lt;/b&gt;" in body


@pytest.mark.parametrize("runs", [1, 20])
def test_detail_query_count_does_not_grow_with_entries(
    make_session, tenant_a, support_a, runs, django_assert_num_queries
):
    make_session("s-busy")
    populate_session(tenant_a, "s-busy", runs)
    client = login(support_a)
    # session, attached runs, the item page (one statement), the four side
    # streams, its lifecycle events (no detached payload among them here), and
    # the latest deletion (session + deletions).
    with django_assert_num_queries(layout_queries(client, tenant_a) + 10):
        response = client.get("/t/acme/sessions/s-busy/")
    body = response.content.decode()
    assert body.count('data-kind="item"') == runs
    assert body.count('data-kind="attach"') == runs
    assert body.count('data-kind="detach"') == runs
    assert body.count('data-kind="run"') == 3 * runs  # created, running, waiting_approval
    assert body.count('data-kind="approval"') == runs
    assert body.count('data-kind="effect"') == runs


def test_detail_of_unknown_session_is_404(tenant_a, support_a):
    assert login(support_a).get("/t/acme/sessions/nope/").status_code == 404


def test_detail_of_another_tenants_session_is_404(make_session, tenant_b, admin_b):
    make_session("s-acme")
    make_session("s-globex", tenant=tenant_b)
    client = login(admin_b)
    assert client.get("/t/globex/sessions/s-acme/").status_code == 404
    assert client.get("/t/acme/sessions/s-acme/").status_code == 404
    assert client.get("/t/globex/sessions/s-globex/").status_code == 200
