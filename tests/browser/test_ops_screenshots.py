"""The demo data in the console; with STATEROOM_SCREENSHOTS=1 also the README screenshots.

Files are written only on request, so CI never dirties the tree:
`STATEROOM_SCREENSHOTS=1 pytest tests/browser/test_ops_screenshots.py`.
"""

import os
from pathlib import Path

from django.conf import settings
from playwright.sync_api import expect

from demo_app.data import DEMO_PASSWORD, demo_username, ensure_people
from demo_app.scenarios import load_scenarios
from tenancy_app.models import Tenant

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
    expect(rows.first.locator(".badge").first).to_have_text("critical")
    expect(page).to_have_title(f"({made['approvals']}) Approvals · Acme Robotics")
    page.keyboard.press("j")
    page.keyboard.press("j")
    shoot(page, "inbox.png")

    page.goto(live_server.url + "/t/acme/audit/")
    expect(page.locator("[data-testid=audit-row]").first).to_be_visible()
    shoot(page, "audit-log.png")
