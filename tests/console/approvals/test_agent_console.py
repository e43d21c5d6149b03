"""Issue 7 end to end through the console: an Agents SDK run waits for approval,
an operator approves it in the browser, and a fresh process resumes the run
from the stored checkpoint alone; the tool runs exactly once."""

from playwright.sync_api import expect

from tests.runtime.agents.payments import refunds_made

REFUND = "Refund 1200 cents on order A-1"
APPROVAL = "pay-ui:scripted-u1-s0-0"  # <run_id>:<the scripted model's first call id>


def test_operator_approves_an_sdk_agents_refund_in_the_console_and_a_new_process_finishes_it(
    page, live_server, console_login, operator_a, server, worker, refund_log
):
    code, started = worker("start", REFUND, "--run-id", "pay-ui", "--session-id", "chat-ui")
    assert (code, started["status"], started["approvals"]) == (0, "waiting_approval", [APPROVAL])

    console_login(page, live_server, "otto")
    page.goto(f"{live_server.url}/t/acme/approvals/")
    row = page.locator("[data-testid=inbox-row]")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("issue_refund")
    row.locator("a", has_text="issue_refund").first.click()
    expect(page.locator("main")).to_contain_text('"amount_cents"')
    page.fill("#approve-form textarea[name=reason]", "Order A-1 was charged twice")
    page.get_by_test_id("approve").click()
    page.wait_for_url(f"{live_server.url}/t/acme/approvals/")  # back to the inbox
    expect(page.locator(".messages")).to_contain_text("Approved issue_refund")
    expect(page.locator("[data-testid=inbox-row]")).to_have_count(0)
    page.goto("about:blank")  # nothing polls while the other process works
    assert refunds_made(refund_log) == []

    code, resumed = worker("resume", "--run-id", "pay-ui")
    assert (code, resumed["status"], resumed["executed"], resumed["replayed"]) == (
        0,
        "succeeded",
        ["scripted-u1-s0-0"],
        [],
    )
    assert refunds_made(refund_log) == ["A-1 1200"]

    page.goto(f"{live_server.url}/t/acme/runs/pay-ui/")
    expect(page.locator("main")).to_contain_text("succeeded")
    expect(page.locator("main")).to_contain_text("committed")
