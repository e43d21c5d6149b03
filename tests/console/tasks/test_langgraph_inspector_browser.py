"""Support inspects a LangGraph thread: checkpoints and their parents, a diff, an interrupt."""

from playwright.sync_api import expect

from tests.console.tasks.test_langgraph_inspector import make_thread


def test_support_follows_parents_and_diffs_two_langgraph_checkpoints(
    page, live_server, console_login, tenant_a, support_a
):
    ids = make_thread(tenant_a)
    console_login(page, live_server, "sue")
    page.goto(f"{live_server.url}/t/acme/tasks/order-A-1/")

    section = page.locator('[data-testid="langgraph-thread"]')
    rows = section.locator('[data-testid="graph-row"]')
    expect(rows).to_have_count(4)
    expect(rows.nth(1).locator('[data-testid="graph-parent"]')).to_have_text(ids[1])
    expect(rows.nth(2).locator('[data-testid="graph-interrupt"]')).to_have_text("1 interrupt")

    # Follow the newest root checkpoint's parent link: the interrupted checkpoint.
    rows.nth(1).locator('[data-testid="graph-parent"] a').click()
    expect(page.locator("h1")).to_contain_text(ids[1])
    interrupts = page.locator('[data-testid="graph-interrupts"]')
    expect(interrupts).to_contain_text("issue_refund")
    expect(interrupts).to_contain_text("Refund 1200 cents on order A-1?")
    expect(page.locator('[data-testid="graph-parent"]')).to_have_text(ids[0])

    # Diff it with its own parent, then compare the first and the last with the form.
    page.click('[data-testid="graph-diff-parent"]')
    changes = page.locator('[data-testid="diff-changes"] tbody tr')
    expect(changes.filter(has_text="channel_values.state.decision")).to_have_count(1)
    expect(changes.filter(has_text="metadata.source")).to_contain_text("input")

    page.goto(f"{live_server.url}/t/acme/tasks/order-A-1/")
    form = page.locator('[data-testid="graph-diff-form"]')
    form.locator('select[name="a"]').select_option(ids[0])
    form.locator('select[name="b"]').select_option(ids[2])
    form.locator("button").click()
    expect(page.locator("h1")).to_have_text("LangGraph checkpoint diff")
    amount = page.locator('[data-testid="diff-changes"] tr', has_text="state.amount_cents")
    expect(amount).to_contain_text("1200")
    expect(amount).to_contain_text("800")
