"""The console's work in a real browser: decisions the runtime declared (edit, respond),
history filters, a chat-rendered OpenAI conversation, full-text search, support's exports."""

import re
from pathlib import Path

from playwright.sync_api import expect

from approvals_app.models import ApprovalRequest
from sessions_app.store import SessionStore
from tenancy_app.scoping import in_tenant
from tests.console.approvals.test_approval_history import decide
from tests.console.conftest import RUNTIME
from tests.console.fixtures import make_pending
from tests.console.search.test_search import say
from tests.console.sessions.test_chat import OPENAI_ITEMS, append


def new_session(tenant, session_id: str) -> None:
    with in_tenant(tenant):
        SessionStore(tenant, RUNTIME).create(session_id=session_id, user_id="u-1")


def approval(tenant, approval_id: str) -> ApprovalRequest:
    with in_tenant(tenant):
        return ApprovalRequest.objects.get(approval_id=approval_id)


def test_an_edit_capable_call_approved_with_edits_and_a_respond_capable_one_answered(
    page, live_server, console_login, operator_a, tenant_a
):
    make_pending(
        tenant_a,
        run_id="r-e",
        session_id="s-e",
        approval_id="apr-edit",
        risk="medium",
        arguments={"to": "acct-9", "amount": 1200},
        allowed_decisions=["approve", "edit", "reject"],
    )
    make_pending(
        tenant_a,
        run_id="r-r",
        session_id="s-r",
        approval_id="apr-ask",
        risk="low",
        tool_name="send_email",
        arguments={"to": "ceo@example.com"},
        allowed_decisions=["respond", "reject"],
    )
    console_login(page, live_server, "otto")
    page.goto(f"{live_server.url}/t/acme/approvals/apr-edit/")
    expect(page.get_by_test_id("respond")).to_have_count(0)  # not declared: not offered
    page.get_by_text("Edit the arguments, then approve").click()
    page.get_by_label("Arguments the runtime runs instead (JSON object)").fill(
        '{"to": "acct-9", "amount": 120}'
    )
    page.get_by_test_id("approve-edited").click()
    expect(page.locator(".messages")).to_contain_text(
        "Approved send_refund (apr-edit) with edited arguments: the runtime runs those."
    )
    edited = approval(tenant_a, "apr-edit")
    assert (edited.status, edited.decision, edited.approved_arguments) == (
        "approved",
        "edit",
        {"to": "acct-9", "amount": 120},
    )

    page.goto(f"{live_server.url}/t/acme/approvals/apr-ask/")
    expect(page.get_by_test_id("approve")).to_have_count(0)
    expect(page.get_by_test_id("approve-edited")).to_have_count(0)
    page.locator("#respond-form textarea[name=response]").fill(
        "Do not email the CEO; draft it for review instead."
    )
    page.get_by_test_id("respond").click()
    expect(page.locator(".messages")).to_contain_text("Answered send_email (apr-ask)")
    answered = approval(tenant_a, "apr-ask")
    assert (answered.status, answered.decision, answered.response) == (
        "responded",
        "respond",
        "Do not email the CEO; draft it for review instead.",
    )


def test_history_filters(page, live_server, console_login, support_a, tenant_a):
    make_pending(tenant_a, run_id="r1", approval_id="a-mail", risk="low", tool_name="send_mail")
    make_pending(tenant_a, run_id="r2", approval_id="a-refund", risk="high", tool_name="refund")
    make_pending(tenant_a, run_id="r3", approval_id="a-wire", risk="high", tool_name="wire")
    decide(tenant_a, "a-mail", "approve", "otto")
    decide(tenant_a, "a-refund", "reject", "ada", reason="duplicate")
    decide(tenant_a, "a-wire", "approve", "otto", reason="verified by phone")
    console_login(page, live_server, "sue")
    page.goto(f"{live_server.url}/t/acme/approvals/")
    page.get_by_role("link", name="Decided").click()
    rows = page.get_by_test_id("history-row")
    expect(rows).to_have_count(3)
    page.get_by_label("Risk").select_option("high")
    expect(rows).to_have_count(2)
    page.evaluate(
        "window.swaps = 0; document.body.addEventListener('htmx:afterSwap', () => swaps++)"
    )
    page.get_by_label("Decided by").fill("otto")
    # Enter fires `change` and then `submit`: the second request replaces the first, so
    # the results are swapped once (two swaps moved the export link under the click).
    page.get_by_label("Decided by").press("Enter")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-id", "a-wire")
    expect(page).to_have_url(re.compile(r"risk=high.*decider=otto"))
    expect(page.locator("form.filters.htmx-request")).to_have_count(0)
    assert page.evaluate("swaps") == 1
    with page.expect_download(timeout=30_000) as download:  # a loaded CI machine
        page.get_by_test_id("history-csv").click()
    lines = Path(download.value.path()).read_text().splitlines()
    assert [line.split(",")[0] for line in lines] == ["approval_id", "a-wire"]


def test_a_chat_rendered_openai_conversation_with_a_tool_call(
    page, live_server, console_login, support_a, tenant_a
):
    new_session(tenant_a, "chat-1")
    append(tenant_a, "chat-1", OPENAI_ITEMS)
    console_login(page, live_server, "sue")
    page.goto(f"{live_server.url}/t/acme/sessions/chat-1/")
    chats = page.get_by_test_id("chat")
    expect(chats).to_have_count(5)
    expect(chats.nth(0).get_by_test_id("chat-text")).to_have_text("Refund order <A-1042>")
    call = chats.nth(2).get_by_test_id("chat-tool-call")
    expect(call.get_by_test_id("chat-tool-name")).to_have_text("lookup_order")
    expect(call).to_contain_text("order_id")
    expect(call).to_contain_text("A-1042")
    expect(chats.nth(3).get_by_test_id("chat-tool-result")).to_contain_text("paid")
    reasoning = chats.nth(1).locator("details.reasoning")
    expect(reasoning).not_to_have_attribute("open", "")  # folded
    raw = chats.nth(2).locator("details.raw")
    raw.locator("summary").click()
    expect(raw.locator("pre")).to_contain_text('"call_id": "call_7"')


def test_full_text_search_finds_a_phrase_said_in_item_3(
    page, live_server, console_login, support_a, tenant_a
):
    new_session(tenant_a, "s-42")
    say(tenant_a, "s-42", "Hi", "Can you help?", "My card was charged twice yesterday", "Thanks")
    new_session(tenant_a, "s-43")
    say(tenant_a, "s-43", "twice is fine, charged once")
    console_login(page, live_server, "sue")
    page.goto(f"{live_server.url}/t/acme/")
    page.get_by_role("link", name="Search").click()
    page.get_by_label('Words or "a phrase" in conversations, approval summaries and reasons').fill(
        '"charged twice"'
    )
    page.keyboard.press("Enter")
    hits = page.get_by_test_id("item-hit")
    expect(hits).to_have_count(1)
    expect(hits.first.locator("a")).to_have_text("s-42 #3")
    expect(hits.first.locator("mark")).to_have_text(["charged", "twice"])
    hits.first.locator("a").click()
    expect(page.locator("#item-3")).to_contain_text("My card was charged twice yesterday")


def test_support_exports_a_transcript_and_is_refused_the_audit_export(
    page, live_server, console_login, support_a, tenant_a
):
    new_session(tenant_a, "s-77")
    say(tenant_a, "s-77", "Please close my account")
    console_login(page, live_server, "sue")
    page.goto(f"{live_server.url}/t/acme/sessions/s-77/")
    with page.expect_download(timeout=30_000) as download:  # a loaded CI machine
        page.get_by_test_id("export-md").click()
    assert download.value.suggested_filename == "session-s-77.md"
    assert "Please close my account" in Path(download.value.path()).read_text()
    page.goto(f"{live_server.url}/t/acme/audit/")
    expect(page.get_by_test_id("export-csv")).to_have_count(0)
    response = page.goto(f"{live_server.url}/t/acme/audit/export.csv")
    assert response.status == 403
    expect(page.locator("main")).to_contain_text("This needs the admin role")
