"""The dashboard in Chromium: axe-core finds nothing serious or critical on any range, with a
week of data and with none, its data tables open; the range picker moves through the URL."""

from __future__ import annotations

import os

import pytest

from tests.console.axe import assert_accessible
from tests.console.dashboard.data import NOW, build_week


@pytest.fixture
def clock(monkeypatch):
    monkeypatch.setattr("console_app.views.dashboard.now", lambda: NOW)


@pytest.mark.parametrize("with_data", [True, False])
def test_the_dashboard_is_accessible_on_every_range(
    page, live_server, console_login, tenant_a, admin_a, clock, with_data
):
    if with_data:
        build_week(tenant_a)
    console_login(page, live_server, "ada")
    for query in ("range=24h", "range=7d&tz=Europe/Paris", "range=30d"):
        page.goto(f"{live_server.url}/t/acme/dashboard/?{query}")
        for details in page.locator("details.chart-data").all():
            details.locator("summary").click()
        assert_accessible(page, f"dashboard ?{query}")
    if with_data and os.environ.get("STATEROOM_SCREENSHOTS"):
        page.goto(f"{live_server.url}/t/acme/dashboard/?range=7d")
        page.screenshot(path="docs/screenshots/dashboard.png", full_page=True)


def test_the_range_picker_keeps_the_range_in_the_url(
    page, live_server, console_login, tenant_a, support_a, clock
):
    console_login(page, live_server, "sue")
    page.goto(f"{live_server.url}/t/acme/dashboard/?tz=Europe/Paris")
    page.get_by_test_id("range-24h").click()
    page.wait_for_url("**/dashboard/?range=24h&tz=Europe/Paris")
    assert page.get_by_test_id("range-24h").get_attribute("aria-current") == "page"
    page.fill("input[name=tz]", "America/New_York")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**/dashboard/?range=24h&tz=America%2FNew_York")
    assert "Hour (America/New_York)" in page.content()
