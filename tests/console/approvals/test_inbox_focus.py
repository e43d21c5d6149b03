"""After a decision from the keyboard, focus stays in the inbox (the next row, or the
confirmation when none is left) and the confirmation is announced by the page's live region."""

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from tenancy_app.models import Tenant
from tests.console.fixtures import make_pending
from tests.console.widths import WIDTHS, at_width

INBOX = "/t/acme/approvals/"


@pytest.mark.parametrize("width", WIDTHS)
def test_focus_moves_to_the_next_row_then_the_confirmation_and_both_are_announced(
    page, live_server, console_login, operator_a, tenant_a, width
):
    Tenant.objects.filter(pk=tenant_a.pk).update(quick_approve_max_risk="medium")
    make_pending(tenant_a, run_id="r1", session_id="s1", approval_id="apr-1", risk="low")
    make_pending(tenant_a, run_id="r2", session_id="s2", approval_id="apr-2", risk="low")
    at_width(page, width)
    console_login(page, live_server, "otto")
    page.goto(live_server.url + INBOX)
    first = page.locator("[data-testid=inbox-row]").first
    page.keyboard.press("j")
    expect(first).to_be_focused()
    decided = first.get_attribute("data-id")
    other = "apr-2" if decided == "apr-1" else "apr-1"
    page.keyboard.press("a")
    # The persistent live region (present since the page loaded) says what happened.
    status = page.get_by_test_id("inbox-status")
    expect(status).to_have_attribute("role", "status")
    expect(status).to_contain_text(f"Approved send_refund ({decided}).")
    expect(page.locator(f"#inbox-row-{other}")).to_be_focused()
    page.keyboard.press("a")  # the focused row is the current one: a acts on it
    expect(status).to_contain_text(f"Approved send_refund ({other}).")
    notice = page.get_by_test_id("inbox-notice")
    expect(notice).to_be_focused()  # no row left: focus on the confirmation, not <body>
    assert page.evaluate("document.activeElement !== document.body")


@pytest.mark.parametrize("width", WIDTHS)
def test_after_rejecting_on_the_approval_page_focus_is_on_the_confirmation(
    page, live_server, console_login, operator_a, tenant_a, width
):
    make_pending(tenant_a, run_id="r1", session_id="s1", approval_id="apr-1", risk="high")
    make_pending(tenant_a, run_id="r2", session_id="s2", approval_id="apr-2", risk="low")
    at_width(page, width)
    console_login(page, live_server, "otto")
    page.goto(live_server.url + INBOX)
    page.keyboard.press("j")
    page.keyboard.press("r")
    page.wait_for_url("**/approvals/apr-1/?decide=reject")
    page.keyboard.type("Not during the freeze")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.wait_for_url(live_server.url + INBOX)
    messages = page.get_by_test_id("messages")
    expect(messages).to_contain_text("Rejected send_refund (apr-1).")
    expect(messages).to_be_focused()
    page.keyboard.press("j")  # the keyboard carries on from there
    expect(page.locator("#inbox-row-apr-2")).to_be_focused()


# A key pressed between a poll's swap and its settle (htmx waits 20 ms between them):
# the page dispatches it itself, at exactly that moment.
PRESS_DURING_SWAP = """
document.addEventListener("htmx:afterSwap", function () {
  var key = window.pressDuringSwap;
  if (!key) { return; }
  window.pressDuringSwap = null;
  (document.activeElement || document.body).dispatchEvent(
    new KeyboardEvent("keydown", {key: key, bubbles: true}));
});
"""


def test_a_key_pressed_while_a_poll_settles_is_not_undone_by_it(
    page, live_server, console_login, operator_a, tenant_a
):
    make_pending(tenant_a, run_id="r1", session_id="s1", approval_id="apr-1", risk="high")
    make_pending(tenant_a, run_id="r2", session_id="s2", approval_id="apr-2", risk="low")
    page.add_init_script(PRESS_DURING_SWAP)
    console_login(page, live_server, "otto")
    page.goto(live_server.url + INBOX)
    page.keyboard.press("j")
    page.keyboard.press("j")
    expect(page.locator("#inbox-row-apr-2")).to_be_focused()
    page.evaluate("window.pressDuringSwap = 'k'")
    # A new row (last: low risk, due in two days) makes the next poll swap the rows.
    make_pending(
        tenant_a,
        run_id="r3",
        session_id="s3",
        approval_id="apr-3",
        risk="low",
        expires_at=timezone.now() + timedelta(days=2),
    )
    expect(page.locator("#inbox-row-apr-3")).to_be_visible(timeout=12_000)
    # The k moved the selection up; the settle that followed kept it there.
    expect(page.locator("#inbox-row-apr-1")).to_be_focused()
    expect(page.locator("#inbox-row-apr-1")).to_have_class("selected")
    page.keyboard.press("r")
    page.wait_for_url("**/approvals/apr-1/?decide=reject")
