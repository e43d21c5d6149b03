"""The session timeline as the README shows it (docs/screenshots/session-timeline.png).

The page is the demo's own (`load_demo`'s data: a refund an operator approved),
rendered and captured on every run; the file is written only with
STATEROOM_SCREENSHOTS=1, so ordinary test runs leave the working tree alone.
"""

import os
import struct
from pathlib import Path

from playwright.sync_api import expect

from demo_app.data import DEMO_PASSWORD, demo_username, ensure_people
from demo_app.scenarios import load_scenarios
from tenancy_app.models import Tenant

SCREENSHOT = Path(__file__).resolve().parents[3] / "docs" / "screenshots" / "session-timeline.png"
# The demo's approved refund: its items, run, approval, decision and effect.
APPROVED_REFUND = "payments-acme-020"


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_session_timeline_screenshot(page, live_server, console_login, transactional_db):
    ensure_people()
    load_scenarios(Tenant.objects.get(slug="acme"))
    console_login(page, live_server, demo_username("acme", "support"), DEMO_PASSWORD)
    page.goto(f"{live_server.url}/t/acme/sessions/{APPROVED_REFUND}/")
    expect(page.locator('[data-testid="timeline"] li[data-kind="item"]')).to_have_count(2)
    for kind in ("attach", "run", "approval", "decision", "effect"):
        expect(
            page.locator(f'[data-testid="timeline"] li[data-kind="{kind}"]').first
        ).to_be_visible()
    image = page.screenshot()
    assert png_size(image) == (1280, 800)
    if os.environ.get("STATEROOM_SCREENSHOTS") == "1":
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        SCREENSHOT.write_bytes(image)
