"""The approvals console in a real browser: keyboard, live inbox, races, roles.

The test writes to the database while no page is polling (`park(page)`), so
what a page shows is what was there when it asked.
"""

import re

from playwright.sync_api import expect

from approvals_app.models import ApprovalRequest
from audit_app.models import AuditEvent
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant
from tests.console.fixtures import make_pending

INBOX = "/t/acme/approvals/"


def park(*pages) -> None:
    for page in pages:
        page.goto("about:blank")


def status_of(tenant, approval_id: str) -> tuple[str, str, str]:
    with in_tenant(tenant):
        approval = ApprovalRequest.objects.get(approval_id=approval_id)
        return approval.status, approval.decided_by, approval.decision_reason


def decisions(tenant) -> list[tuple[str, str]]:
    with in_tenant(tenant):
        return list(
            AuditEvent.objects.filter(action__in=["approval.approved", "approval.rejected"])
            .order_by("seq")
            .values_list("action", "actor_label")
        )


def test_operator_approves_and_rejects_from_the_inbox_with_the_keyboard(
    page, live_server, console_login, operator_a, tenant_a
):
    # This tenant lets operators approve low and medium risk from the inbox.
    Tenant.objects.filter(pk=tenant_a.pk).update(quick_approve_max_risk="medium")
    make_pending(tenant_a, run_id="r1", session_id="s1", approval_id="apr-high", risk="high")
    make_pending(tenant_a, run_id="r2", session_id="s2", approval_id="apr-low", risk="low")
    make_pending(tenant_a, run_id="r3", session_id="s3", approval_id="apr-mid", risk="medium")
    console_login(page, live_server, "otto")
    page.goto(live_server.url + INBOX)
    expect(page).to_have_title("(3) Approvals · Acme")
    rows = page.locator("[data-testid=inbox-row]")
    expect(rows).to_have_count(3)

    # j j selects the second row (medium); a approves it at once.
    page.keyboard.press("j")
    page.keyboard.press("j")
    expect(rows.nth(1)).to_have_class(re.compile("selected"))
    expect(rows.nth(1)).to_have_attribute("data-id", "apr-mid")
    page.keyboard.press("a")
    expect(page.get_by_test_id("inbox-notice")).to_have_text("Approved send_refund (apr-mid).")
    expect(rows).to_have_count(2)
    expect(page).to_have_title("(2) Approvals · Acme")
    expect(page.locator("#nav-pending")).to_have_text("2")

    # r on the selected (high) row opens the reject form, focused on the reason.
    page.keyboard.press("k")
    expect(rows.nth(0)).to_have_attribute("data-id", "apr-high")
    expect(rows.nth(0)).to_have_class(re.compile("selected"))
    page.keyboard.press("r")
    page.wait_for_url(re.compile(r"/approvals/apr-high/\?decide=reject"))
    reason = page.locator("#reject-form textarea[name=reason]")
    expect(reason).to_be_focused()
    page.keyboard.type("Amount is above the customer's order")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.wait_for_url(live_server.url + INBOX)
    expect(page.locator(".messages")).to_contain_text("Rejected send_refund (apr-high).")
    expect(rows).to_have_count(1)
    expect(page).to_have_title("(1) Approvals · Acme")

    park(page)
    assert status_of(tenant_a, "apr-mid") == ("approved", "otto", "")
    assert status_of(tenant_a, "apr-high") == (
        "rejected",
        "otto",
        "Amount is above the customer's order",
    )
    assert decisions(tenant_a) == [("approval.approved", "otto"), ("approval.rejected", "otto")]


def test_a_on_a_critical_row_opens_the_approve_form(
    page, live_server, console_login, operator_a, tenant_a
):
    make_pending(tenant_a, approval_id="apr-crit", risk="critical")
    console_login(page, live_server, "otto")
    page.goto(live_server.url + INBOX)
    page.keyboard.press("j")
    page.keyboard.press("a")
    page.wait_for_url(re.compile(r"/approvals/apr-crit/\?decide=approve"))
    expect(page.locator("#approve-form textarea[name=reason]")).to_be_focused()
    # The browser refuses to submit without the required reason.
    page.get_by_test_id("approve").click()
    expect(page).to_have_url(re.compile(r"\?decide=approve"))
    park(page)
    assert status_of(tenant_a, "apr-crit") == ("pending", "", "")


def test_inbox_updates_itself(page, live_server, console_login, operator_a, tenant_a):
    make_pending(tenant_a, run_id="r1", session_id="s1", approval_id="first", risk="low")
    console_login(page, live_server, "otto")
    page.goto(live_server.url + INBOX)
    expect(page).to_have_title("(1) Approvals · Acme")
    # Write between two polls.
    with page.expect_response(lambda r: INBOX in r.url and "hx-request" in r.request.headers):
        pass
    make_pending(tenant_a, run_id="r2", session_id="s2", approval_id="second", risk="critical")
    expect(page.locator("[data-testid=inbox-row]").first).to_have_attribute(
        "data-id", "second", timeout=12_000
    )
    expect(page).to_have_title("(2) Approvals · Acme")
    expect(page.locator("#nav-pending")).to_have_text("2")


def test_two_operators_race_for_one_approval(
    new_page, live_server, console_login, operator_a, admin_a, tenant_a
):
    make_pending(tenant_a, approval_id="apr-1", risk="medium")
    otto, ada = new_page(), new_page()
    console_login(otto, live_server, "otto")
    console_login(ada, live_server, "ada")
    for page in (otto, ada):
        page.goto(f"{live_server.url}{INBOX}apr-1/")
        expect(page.get_by_test_id("decision-panel")).to_be_visible()

    otto.get_by_test_id("approve").click()
    otto.wait_for_url(live_server.url + INBOX)

    ada.locator("#reject-form textarea[name=reason]").fill("Looks like fraud")
    ada.get_by_test_id("reject").click()
    expect(ada.locator(".messages")).to_contain_text(
        re.compile(
            r"Not recorded: this approval was already approved by otto at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\."
        )
    )
    expect(ada.get_by_test_id("decided")).to_contain_text("Approved by otto")
    expect(ada.get_by_test_id("approval-status")).to_have_text("approved")
    expect(ada.get_by_test_id("reject")).to_have_count(0)
    park(otto, ada)
    assert decisions(tenant_a) == [("approval.approved", "otto")]


def test_double_click_decides_once(page, live_server, console_login, operator_a, tenant_a):
    make_pending(tenant_a, approval_id="apr-1", risk="low")
    console_login(page, live_server, "otto")
    page.goto(f"{live_server.url}{INBOX}apr-1/")
    page.get_by_test_id("approve").dblclick()
    page.wait_for_url(live_server.url + INBOX)
    expect(page.locator(".messages li")).to_have_count(1)
    park(page)
    assert decisions(tenant_a) == [("approval.approved", "otto")]


def test_edited_arguments_are_checked_in_the_browser_and_the_diff_shown(
    page, live_server, console_login, operator_a, tenant_a
):
    make_pending(
        tenant_a,
        approval_id="apr-1",
        arguments={"amount": 1200, "to": "acct-9"},
        allowed_decisions=["approve", "edit", "reject"],
    )
    console_login(page, live_server, "otto")
    page.goto(f"{live_server.url}{INBOX}apr-1/")
    page.get_by_text("Edit the arguments, then approve").click()
    field = page.get_by_label("Arguments the runtime runs instead (JSON object)")
    field.fill('{"amount": 12')
    expect(page.locator("[data-json-status]")).to_contain_text("Not valid JSON")
    page.get_by_test_id("approve-edited").click()
    expect(page).to_have_url(f"{live_server.url}{INBOX}apr-1/")  # not submitted
    field.fill('{"amount": 120, "to": "acct-9"}')
    expect(page.locator("[data-json-status]")).to_have_text("Valid JSON. Changed: amount.")
    page.get_by_test_id("approve-edited").click()
    page.wait_for_url(live_server.url + INBOX)
    page.goto(f"{live_server.url}{INBOX}apr-1/")
    expect(page.get_by_test_id("decided")).to_contain_text("Approved with edited arguments")
    expect(page.locator(".decided ul.changes")).to_have_text("amount 1200 → 120")


def test_support_sees_no_actions_and_a_forged_post_is_refused(
    page, live_server, console_login, support_a, tenant_a
):
    make_pending(tenant_a, approval_id="apr-1", risk="low")
    console_login(page, live_server, "sue")
    page.goto(live_server.url + INBOX)
    expect(page.locator("[data-testid=inbox-row]")).to_have_count(1)
    expect(page.locator("[data-hotkey-approve], [data-hotkey-reject]")).to_have_count(0)
    page.keyboard.press("j")
    page.keyboard.press("a")
    page.goto(f"{live_server.url}{INBOX}apr-1/")
    expect(page.get_by_test_id("read-only")).to_be_visible()
    expect(page.locator("form[action$='/decide']")).to_have_count(0)
    csrf = re.search(r'"X-CSRFToken": "([^"]+)"', page.locator("body").get_attribute("hx-headers"))
    response = page.request.post(
        f"{live_server.url}{INBOX}apr-1/decide",
        form={"decision": "approve", "digest": "x" * 64, "run_version": "3"},
        headers={"X-CSRFToken": csrf.group(1)},
    )
    assert response.status == 403
    park(page)
    assert status_of(tenant_a, "apr-1") == ("pending", "", "")


def test_another_tenants_approval_is_not_found(
    page, live_server, console_login, operator_a, tenant_b
):
    make_pending(tenant_b, approval_id="apr-b")
    console_login(page, live_server, "otto")
    response = page.goto(f"{live_server.url}{INBOX}apr-b/")
    assert response.status == 404
    response = page.goto(f"{live_server.url}/t/globex/approvals/")
    assert response.status == 404
    expect(page.locator("h1")).to_have_text("404")
