"""Run control in a real browser: resume and cancel a suspended run; bulk cancel by filter."""

from playwright.sync_api import expect

from runs_app.models import Run
from tenancy_app.scoping import in_tenant
from tests.actions.test_run_control import make_run


def status(tenant, run_id: str) -> str:
    with in_tenant(tenant):
        return Run.objects.get(run_id=run_id).status


def test_operator_resumes_then_cancels_a_suspended_run(
    page, live_server, console_login, operator_a, tenant_a
):
    make_run(tenant_a, run_id="r-susp", status="suspended")
    console_login(page, live_server, "otto")
    page.goto(f"{live_server.url}/t/acme/runs/?status=suspended")
    page.get_by_role("link", name="r-susp").click()
    expect(page.get_by_test_id("run-status")).to_have_text("Suspended")
    page.get_by_test_id("control-resume-open").click()
    panel = page.get_by_test_id("control-resume")
    expect(panel).to_be_visible()
    panel.get_by_label("Reason (recorded in the audit log; the runtime is told)").fill(
        "Customer confirmed"
    )
    panel.get_by_test_id("control-submit").click()
    expect(page.locator(".messages")).to_contain_text("Resumed run r-susp.")
    expect(page.get_by_test_id("run-status")).to_have_text("Running")
    assert status(tenant_a, "r-susp") == "running"

    page.get_by_test_id("control-cancel-open").click()
    panel = page.get_by_test_id("control-cancel")
    panel.get_by_label("Reason (recorded in the audit log; the runtime is told)").fill("Duplicate")
    panel.get_by_test_id("control-submit").click()
    expect(page.get_by_test_id("run-status")).to_have_text("Cancelled")
    expect(page.get_by_test_id("run-control")).to_have_count(0)  # nothing applies any more
    assert status(tenant_a, "r-susp") == "cancelled"


def test_bulk_cancel_by_filter_with_a_changed_count_refusal(
    page, live_server, console_login, operator_a, tenant_a
):
    for n in range(3):
        make_run(tenant_a, run_id=f"s-{n}", status="suspended")
    make_run(tenant_a, run_id="busy", status="running")
    console_login(page, live_server, "otto")
    page.goto(f"{live_server.url}/t/acme/runs/?status=suspended")
    page.get_by_test_id("bulk-cancel").click()
    expect(page.get_by_test_id("bulk-count")).to_have_text("3")
    make_run(tenant_a, run_id="s-late", status="suspended")  # someone else meanwhile
    page.get_by_label("Reason (recorded in the audit log of each run; each runtime is told)").fill(
        "Incident 42"
    )
    page.get_by_test_id("bulk-submit").click()
    expect(page.get_by_test_id("count-changed")).to_be_visible()
    expect(page.get_by_test_id("bulk-count")).to_have_text("4")
    assert status(tenant_a, "s-0") == "suspended"
    page.get_by_label("Reason (recorded in the audit log of each run; each runtime is told)").fill(
        "Incident 42"
    )
    page.get_by_test_id("bulk-submit").click()
    expect(page.locator(".messages")).to_contain_text("Cancelled 4 runs.")
    assert [status(tenant_a, r) for r in ("s-0", "s-1", "s-2", "s-late", "busy")] == [
        "cancelled"
    ] * 4 + ["running"]


def test_a_run_nobody_holds_is_flagged_on_its_page_and_in_the_lists_filter(
    page, live_server, console_login, operator_a, tenant_a
):
    from tests.console.axe import assert_accessible
    from tests.console.runs.test_run_control_pages import _resumed_long_ago

    _resumed_long_ago(tenant_a, "r-idle")  # resumed 15 minutes ago, claimed by nobody
    make_run(tenant_a, run_id="r-busy")
    console_login(page, live_server, "otto")
    page.goto(f"{live_server.url}/t/acme/runs/")
    expect(page.get_by_test_id("run-row")).to_have_count(2)
    page.get_by_test_id("filter-unclaimed").check()  # htmx: the list follows the filter
    expect(page.get_by_test_id("run-row")).to_have_count(1)
    expect(page.get_by_test_id("unclaimed-badge")).to_contain_text("waiting for a worker since")
    assert "unclaimed=1" in page.url
    assert_accessible(page, "the runs list, filtered")
    page.get_by_role("link", name="r-idle").click()
    expect(page.get_by_test_id("unclaimed-warning")).to_contain_text(
        "No worker holds this run: waiting for a worker since"
    )
    expect(page.get_by_test_id("last-control")).to_contain_text("Resumed by otto at")
    expect(page.get_by_test_id("last-control")).to_contain_text("customer <b>fixed</b> the card")
    assert_accessible(page, "a run nobody holds")
