"""axe-core (WCAG 2.1 A/AA and best practice) finds no serious or critical violation on any
console page, for any role, also after opening the edit form, deciding, and an inbox refresh;
a keyboard-only operator rejects the most urgent approval and keeps focus through a refresh.
"""

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from approvals_app.models import ApprovalRequest
from sessions_app.store import SessionStore
from tenancy_app.scoping import in_tenant
from tests.actions.test_run_control import make_run
from tests.console.axe import assert_accessible
from tests.console.conftest import RUNTIME, build_world
from tests.console.fixtures import make_pending
from tests.console.sessions.test_chat import OPENAI_ITEMS, append

PAGES_FOR_ALL = [
    "/t/acme/",
    "/t/acme/approvals/",
    "/t/acme/approvals/history/?tab=decided",
    "/t/acme/approvals/history/?tab=cancelled",
    "/t/acme/approvals/apr-edit/",
    "/t/acme/approvals/{approval}/",
    "/t/acme/sessions/",
    "/t/acme/sessions/{session}/",
    "/t/acme/sessions/{session}/?show=approvals",
    "/t/acme/sessions/chat-1/",
    "/t/acme/runs/",
    "/t/acme/runs/{run}/",
    "/t/acme/tasks/",
    "/t/acme/tasks/{task}/",
    "/t/acme/tasks/{task}/checkpoints/{checkpoint}/",
    "/t/acme/tasks/{task}/diff?a={checkpoint0}&b={checkpoint}",
    "/t/acme/effects/",
    "/t/acme/audit/",
    "/t/acme/search/?q=order",
    "/t/acme/no-such-page/",
    "/t/acme/preferences/",
    "/t/acme/dashboard/",
    "/t/acme/dashboard/?range=24h&tz=Europe/Paris",
]
PAGES_FOR_OPERATORS = [
    "/t/acme/runs/{run}/suspend",
    "/t/acme/runs/bulk?action=cancel",
    "/t/acme/effects/{effect}/settle",
]
PAGES_FOR_ADMINS = [
    "/t/acme/settings/",
    "/t/acme/settings/members/",
    "/t/acme/settings/tokens/",
    "/t/acme/settings/retention/",
    "/t/acme/settings/groups/",
    "/t/acme/settings/groups/new",
    "/t/acme/settings/routing/",
    "/t/acme/settings/routing/new",
    "/t/acme/settings/routing/preview?tool_name=x&risk=low",
    "/t/acme/settings/channels/",
    "/t/acme/settings/channels/new/slack",
    "/t/acme/sessions/bulk?action=close",
    "/t/acme/sessions/{session}/close",
    "/t/acme/sessions/closed-1/delete",
]


@pytest.fixture
def console_world(tenant_a):
    return every_page_world(tenant_a)


def every_page_world(tenant_a) -> dict[str, str]:
    """What the pages above show (the ids their paths take): a world, an approval to edit,
    a chat session, a closed session and a suspended run."""
    world = build_world(tenant_a)
    make_pending(
        tenant_a,
        run_id="r-edit",
        session_id="s-edit",
        approval_id="apr-edit",
        risk="high",
        allowed_decisions=["approve", "edit", "respond", "reject"],
        summary="Refund 1,200 to acct-9",
        usual_arguments={"amount": 100, "to": "acct-9"},
    )
    with in_tenant(tenant_a):
        sessions = SessionStore(tenant_a, RUNTIME)
        sessions.create(session_id="chat-1", user_id="u-9")
        sessions.create(session_id="closed-1", user_id="u-9")
        sessions.close(session_id="closed-1", reason="done")
    append(tenant_a, "chat-1", OPENAI_ITEMS)
    make_run(tenant_a, run_id="r-susp", status="suspended")
    return {
        "session": world.session_id,
        "run": world.run_id,
        "task": world.task_id,
        "approval": world.approval_id,
        "effect": world.unknown_effect_id,
        "checkpoint0": world.checkpoint_ids[0],
        "checkpoint": world.checkpoint_ids[1],
    }


@pytest.mark.parametrize(
    ("username", "role"), [("sue", "support"), ("otto", "operator"), ("ada", "admin")]
)
def test_every_console_page_for_every_role(
    page,
    live_server,
    console_login,
    console_world,
    support_a,
    operator_a,
    admin_a,
    username,
    role,
):
    pages = list(PAGES_FOR_ALL)
    if role in ("operator", "admin"):
        pages += PAGES_FOR_OPERATORS
    if role == "admin":
        pages += PAGES_FOR_ADMINS
    console_login(page, live_server, username)
    for path in pages:
        page.goto(live_server.url + path.format(**console_world))
        assert_accessible(page, f"{path} as {role}")


def test_after_opening_the_edit_form_deciding_and_an_inbox_refresh(
    page, live_server, console_login, console_world, operator_a, tenant_a
):
    console_login(page, live_server, "otto")
    page.goto(f"{live_server.url}/t/acme/approvals/apr-edit/")
    page.get_by_text("Edit the arguments, then approve").click()
    expect(page.get_by_label("Arguments the runtime runs instead (JSON object)")).to_be_visible()
    assert_accessible(page, "the approval page with the edit form open")
    page.locator("#respond-form").get_by_label(
        "Response to the model (required; the tool does not run, the model gets this as its result)"
    ).fill("Please ask the customer for the order number first.")
    page.locator("#respond-form").get_by_label("Reason (required for high risk)").fill("policy")
    page.get_by_test_id("respond").click()
    expect(page.locator(".messages")).to_contain_text("Answered send_refund")
    assert_accessible(page, "the inbox after deciding")
    # A refresh that brings a new row.
    with page.expect_response(
        lambda r: "/approvals/" in r.url and "hx-request" in r.request.headers
    ):
        pass
    make_pending(tenant_a, run_id="r-new", session_id="s-new", approval_id="apr-new", risk="low")
    expect(page.locator("#inbox-row-apr-new")).to_be_visible(timeout=12_000)
    assert_accessible(page, "the inbox after a refresh")


def test_keyboard_only_rejects_the_most_urgent_and_keeps_focus_through_a_refresh(
    page, live_server, console_login, operator_a, tenant_a
):
    now = timezone.now()
    make_pending(
        tenant_a,
        run_id="r1",
        session_id="s1",
        approval_id="crit-3h",
        risk="critical",
        expires_at=now + timedelta(hours=3),
    )
    make_pending(
        tenant_a,
        run_id="r2",
        session_id="s2",
        approval_id="high-8m",
        risk="high",
        expires_at=now + timedelta(minutes=8),
    )
    make_pending(tenant_a, run_id="r3", session_id="s3", approval_id="low-1", risk="low")
    console_login(page, live_server, "otto")
    page.goto(f"{live_server.url}/t/acme/approvals/")
    page.keyboard.press("j")  # the first row: the most urgent (high, due in 8 minutes)
    first = page.locator("#inbox-row-high-8m")
    expect(first).to_be_focused()
    expect(first).to_have_attribute("tabindex", "0")
    # A poll arrives with a new row above; focus stays on the same row.
    with page.expect_response(
        lambda r: "/approvals/" in r.url and "hx-request" in r.request.headers
    ):
        pass
    make_pending(
        tenant_a,
        run_id="r4",
        session_id="s4",
        approval_id="crit-now",
        risk="critical",
        expires_at=now + timedelta(minutes=2),
    )
    expect(page.locator("#inbox-row-crit-now")).to_be_visible(timeout=12_000)
    expect(first).to_be_focused()
    expect(page.get_by_test_id("inbox-status")).to_contain_text("4 pending, 1 new")
    # Up to the new most urgent one, and reject it with a reason: keyboard only.
    page.keyboard.press("k")
    expect(page.locator("#inbox-row-crit-now")).to_be_focused()
    page.keyboard.press("r")
    page.wait_for_url("**/approvals/crit-now/?decide=reject")
    expect(page.locator("#reject-form textarea[name=reason]")).to_be_focused()
    page.keyboard.type("Not during the freeze")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/t/acme/approvals/")
    expect(page.locator(".messages")).to_contain_text("Rejected send_refund (crit-now).")
    with in_tenant(tenant_a):
        approval = ApprovalRequest.objects.get(approval_id="crit-now")
    assert (approval.status, approval.decision_reason) == ("rejected", "Not during the freeze")


def test_escape_closes_the_tenant_switcher_and_panels(
    page, live_server, console_login, operator_a, tenant_a
):
    make_run(tenant_a, run_id="r-1")
    console_login(page, live_server, "otto")
    page.goto(f"{live_server.url}/t/acme/runs/r-1/")
    page.locator(".switcher summary").click()
    expect(page.locator(".switcher")).to_have_attribute("open", "")
    page.keyboard.press("Escape")
    expect(page.locator(".switcher")).not_to_have_attribute("open", "")
    opener = page.get_by_test_id("control-cancel-open")
    opener.click()
    expect(page.get_by_test_id("control-cancel")).to_be_visible()
    expect(page.locator("#control-reason")).to_be_focused()
    page.keyboard.press("Escape")  # the field gives up focus
    page.keyboard.press("Escape")  # the panel closes, focus returns to what opened it
    expect(page.get_by_test_id("control-cancel")).to_have_count(0)
    expect(opener).to_be_focused()
    # The skip link is the first stop and leads into <main>.
    page.keyboard.press("Tab")
    page.goto(f"{live_server.url}/t/acme/runs/r-1/")
    page.keyboard.press("Tab")
    expect(page.locator(".skip-link")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("main")).to_be_focused()


def test_the_axe_harness_reports_what_it_should(page):
    """The check above can fail: an image without a text alternative is a critical violation."""
    from tests.console.axe import violations

    page.set_content('<html lang="en"><title>t</title><main><img src="x.png"></main></html>')
    assert [v["id"] for v in violations(page)] == ["image-alt"]
