"""Support walks a long session timeline with "Load older" (htmx pages, keyset by seq)."""

import pytest
from playwright.sync_api import expect

from sessions_app.store import SessionStore
from tenancy_app.scoping import in_tenant
from tests.console.conftest import RUNTIME, add_items, build_world
from tests.console.widths import WIDTHS, at_width


def test_support_walks_a_long_timeline_back_to_the_start(
    page, live_server, console_login, tenant_a, support_a
):
    world = build_world(tenant_a)
    add_items(tenant_a, world.session_id, 147, start=4)  # 150 items: three pages of 50
    console_login(page, live_server, "sue")
    page.goto(f"{live_server.url}/t/acme/sessions/{world.session_id}/")

    items = page.locator('[data-testid="timeline"] li[data-kind="item"]')
    expect(items).to_have_count(50)
    expect(items.first).to_have_attribute("data-seq", "101")
    expect(page.locator('[data-testid="admin-actions"]')).to_have_count(0)

    for expected in (100, 150):
        page.click('[data-testid="load-older"]')
        expect(items).to_have_count(expected)
    expect(page.locator('[data-testid="load-older"]')).to_have_count(0)
    expect(page.locator('[data-testid="timeline-start"]')).to_be_visible()
    seqs = [int(s) for s in items.evaluate_all("els => els.map(e => e.dataset.seq)")]
    assert seqs == list(range(1, 151))
    # The run's attach, status changes, approval and effects show once each, among the items.
    kinds = page.locator('[data-testid="timeline"] li').evaluate_all(
        "els => els.map(e => e.dataset.kind)"
    )
    assert [k for k in kinds if k and k != "item"] == [
        "run",
        "attach",
        "run",
        "approval",
        "run",
        "effect",
        "effect",
    ]
    # The URL did not change: "Load older" swapped pages in.
    assert page.url == f"{live_server.url}/t/acme/sessions/{world.session_id}/"


def test_agent_text_in_the_timeline_is_shown_as_text(
    page, live_server, console_login, tenant_a, support_a
):
    with in_tenant(tenant_a):
        store = SessionStore(tenant_a, RUNTIME)
        store.create(session_id="s-xss", user_id="u-1")
        store.append_items(
            session_id="s-xss",
            items=[
                {
                    "role": "assistant",
                    "item_type": "message",
                    "payload": {"text": "<img src=x onerror=\"document.title='pwned'\">"},
                }
            ],
        )
    console_login(page, live_server, "sue")
    page.goto(f"{live_server.url}/t/acme/sessions/s-xss/")
    expect(page.locator(".item-text")).to_have_text(
        "<img src=x onerror=\"document.title='pwned'\">"
    )
    assert page.title() != "pwned"
    assert page.locator('[data-testid="timeline"] img').count() == 0


def test_another_tenants_session_url_is_404(page, live_server, console_login, tenant_a, admin_b):
    world = build_world(tenant_a)
    console_login(page, live_server, "bob")
    for tenant in ("acme", "globex"):
        response = page.goto(f"{live_server.url}/t/{tenant}/sessions/{world.session_id}/")
        assert response.status == 404
        expect(page.locator("h1")).to_have_text("404")
        expect(page.locator("body")).not_to_contain_text("message 1")


@pytest.mark.parametrize("width", WIDTHS)
def test_support_filters_the_timeline_and_the_filter_stays_in_the_url(
    page, live_server, console_login, tenant_a, support_a, width
):
    world = build_world(tenant_a)
    at_width(page, width)
    console_login(page, live_server, "sue")
    url = f"{live_server.url}/t/acme/sessions/{world.session_id}/"
    page.goto(url)
    entries = page.locator('[data-testid="timeline"] li[data-kind]')
    kinds = lambda: set(entries.evaluate_all("els => els.map(e => e.dataset.kind)"))  # noqa: E731
    assert {"item", "run", "approval"} <= kinds()
    tabs = page.get_by_test_id("timeline-filter")
    tabs.get_by_role("link", name="Conversation").click()
    expect(page).to_have_url(f"{url}?show=conversation")
    expect(tabs.get_by_role("link", name="Conversation")).to_have_attribute("aria-current", "page")
    expect(page.locator('[data-testid="timeline"] li[data-kind="run"]')).to_have_count(0)
    assert kinds() == {"item"}
    tabs.get_by_role("link", name="Approvals").click()
    expect(page).to_have_url(f"{url}?show=approvals")
    expect(page.locator('[data-testid="timeline"] li[data-kind="item"]')).to_have_count(0)
    assert kinds() <= {"approval", "decision"} and kinds()
    # The URL is the filter: a reload (or a shared link) shows the same.
    page.reload()
    assert kinds() <= {"approval", "decision"} and kinds()
    page.go_back()
    expect(page).to_have_url(f"{url}?show=conversation")
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTHS[width][0]


@pytest.mark.parametrize("width", WIDTHS)
def test_demo_and_chat_completions_items_read_as_chat_with_raw_json_a_click_away(
    page, live_server, console_login, tenant_a, support_a, width
):
    from tests.console.sessions.test_chat import COMPLETIONS_ITEMS, DEMO_ITEMS, append

    with in_tenant(tenant_a):
        SessionStore(tenant_a, RUNTIME).create(session_id="chat-1", user_id="u-9")
    append(tenant_a, "chat-1", [*COMPLETIONS_ITEMS, *DEMO_ITEMS])
    at_width(page, width)
    console_login(page, live_server, "sue")
    page.goto(f"{live_server.url}/t/acme/sessions/chat-1/")
    chats = page.get_by_test_id("chat")
    expect(chats).to_have_count(9)
    expect(page.locator('[data-testid=chat][data-kind="raw"]')).to_have_count(0)
    calls = page.get_by_test_id("chat-tool-call")
    expect(calls).to_have_count(2)
    expect(calls.first).to_be_visible()
    expect(page.get_by_test_id("chat-tool-name")).to_have_text(["lookup_order", "lookup_order"])
    raw = chats.nth(2).locator("details.raw")
    expect(raw.locator("pre")).to_be_hidden()
    raw.locator("summary").click()
    expect(raw.locator("pre")).to_be_visible()
    expect(raw.locator("pre")).to_contain_text('"tool_calls"')
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTHS[width][0]
