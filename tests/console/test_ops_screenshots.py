"""The demo data in the console; with STATEROOM_SCREENSHOTS=1 also the README screenshots.

Files are written only on request, so CI never dirties the tree:
`STATEROOM_SCREENSHOTS=1 pytest tests/console/test_ops_screenshots.py`.
"""

import os
from pathlib import Path

from django.conf import settings
from playwright.sync_api import expect

from approvals_app.store import ApprovalStore
from demo_app.data import DEMO_PASSWORD, demo_username, ensure_people
from demo_app.scenarios import load_scenarios
from stateroom.actor import Actor
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant

SHOTS = Path(settings.BASE_DIR) / "docs" / "screenshots"


def shoot(page, name: str) -> None:
    if os.environ.get("STATEROOM_SCREENSHOTS") == "1":
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / name))


def test_demo_data_in_inbox_and_audit_log(page, live_server, console_login, transactional_db):
    ensure_people()
    made = load_scenarios(Tenant.objects.get(slug="acme"))
    console_login(page, live_server, demo_username("acme", "operator"), DEMO_PASSWORD)
    page.goto(live_server.url + "/t/acme/approvals/")
    rows = page.locator("[data-testid=inbox-row]")
    expect(rows).to_have_count(made["approvals"])
    # The most urgent first: time left over the risk's weight (approvals_app.urgency).
    tenant = Tenant.objects.get(slug="acme")
    with in_tenant(tenant):
        most_urgent = ApprovalStore(tenant, Actor.system("test")).inbox().first().approval_id
    expect(rows.first).to_have_attribute("data-id", most_urgent)
    expect(rows.first.get_by_test_id("inbox-summary")).to_contain_text("Refund €")
    expect(page).to_have_title(f"({made['approvals']}) Approvals · Acme Robotics")
    page.keyboard.press("j")
    page.keyboard.press("j")
    shoot(page, "inbox.png")

    page.goto(f"{live_server.url}/t/acme/approvals/{most_urgent}/")
    expect(page.get_by_test_id("argument-tree")).to_be_visible()
    expect(page.get_by_test_id("usual-hint").first).to_be_visible()
    shoot(page, "approval.png")

    page.goto(live_server.url + "/t/acme/audit/")
    expect(page.locator("[data-testid=audit-row]").first).to_be_visible()
    shoot(page, "audit-log.png")
