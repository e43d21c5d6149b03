"""Audit log and settings in a real browser."""

import re

from playwright.sync_api import expect

from stateroom.actor import Actor
from tenancy_app.models import Tenant
from tests.console.fixtures import record_audit  # noqa: F401 - fixture

LOG = "/t/acme/audit/"


def test_audit_log_filters_pages_verifies_and_exports(
    page,
    live_server,
    console_login,
    admin_a,
    tenant_a,
    record_audit,  # noqa: F811
):
    record_audit(tenant_a, 55)
    record_audit(
        tenant_a,
        2,
        actor=Actor("user", "7", "otto"),
        action="approval.rejected",
        target_type="approval",
        reason="too <b>big</b>",
    )
    console_login(page, live_server, "ada")
    page.goto(live_server.url + LOG)
    rows = page.locator("[data-testid=audit-row]")
    expect(rows).to_have_count(50)
    expect(rows.first).to_have_attribute("data-seq", "57")

    page.get_by_test_id("audit-older").click()
    expect(rows).to_have_count(57)
    expect(rows.last).to_have_attribute("data-seq", "1")
    expect(page.get_by_test_id("audit-older")).to_have_count(0)

    page.get_by_label("Actor").fill("otto")
    expect(rows).to_have_count(2)
    expect(page).to_have_url(re.compile(r"\?actor=otto"))
    expect(rows.first.locator("td").last).to_have_text("too <b>big</b>")

    with page.expect_download() as download:
        page.get_by_test_id("export-csv").click()
    assert download.value.suggested_filename == "audit-acme.csv"
    lines = download.value.path().read_text(encoding="utf-8").splitlines()
    assert [line.split(",")[0] for line in lines] == ["seq", "56", "57"]

    page.get_by_test_id("verify-chain").click()
    expect(page.get_by_test_id("verify-ok")).to_have_text(
        "Chain intact: 57 events verified, each linked to the one before."
    )


def test_operator_has_no_settings(page, live_server, console_login, operator_a):
    console_login(page, live_server, "otto")
    page.goto(live_server.url + "/t/acme/")
    expect(page.locator(".mainnav a", has_text="Settings")).to_have_count(0)
    assert page.goto(live_server.url + "/t/acme/settings/").status == 403


def test_admin_puts_the_tenant_on_legal_hold(page, live_server, console_login, admin_a, tenant_a):
    console_login(page, live_server, "ada")
    page.goto(live_server.url + "/t/acme/settings/")
    hold = page.get_by_test_id("legal-hold")
    hold.get_by_label("Reason (recorded in the audit log)").fill("Litigation 2024-17")
    hold.get_by_role("button", name="Put tenant on legal hold").click()
    expect(page).to_have_url(live_server.url + "/t/acme/settings/")  # the checkbox is required
    hold.get_by_label("I confirm: put the whole tenant on hold.").check()
    hold.get_by_role("button", name="Put tenant on legal hold").click()
    expect(page.locator(".messages")).to_contain_text("Legal hold is on")
    expect(hold.get_by_role("button", name="Release legal hold")).to_be_visible()
    page.goto("about:blank")
    assert Tenant.objects.get(pk=tenant_a.pk).legal_hold is True
