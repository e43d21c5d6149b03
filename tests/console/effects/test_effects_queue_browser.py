"""The effects queue in a real browser: from the home page's count to settling an effect."""

import pytest
from playwright.sync_api import expect

from effects_app.models import ExternalEffect
from tenancy_app.scoping import in_tenant
from tests.actions.test_run_control import make_run
from tests.console.effects.test_effects_queue import record
from tests.console.widths import WIDTHS, at_width, text_box


def test_operator_follows_the_home_count_and_settles_from_the_queue(
    page, live_server, console_login, operator_a, tenant_a
):
    make_run(tenant_a, run_id="r-1")
    make_run(tenant_a, run_id="r-2")
    unknown = record(tenant_a, "r-1", "k-unknown", status="unknown")
    stuck = record(tenant_a, "r-2", "k-stuck", age_minutes=45)
    console_login(page, live_server, "otto")
    page.goto(f"{live_server.url}/t/acme/")
    expect(page.get_by_test_id("home-effects-to-settle")).to_have_text("2")
    page.get_by_role("link", name="2 effects to settle").click()
    rows = page.get_by_test_id("queue-row")
    expect(rows).to_have_count(2)
    page.get_by_test_id(f"settle-{stuck}").click()
    form = page.get_by_test_id("settle-form")
    form.get_by_label("Failed: it did not happen; a resume may run it again").check()
    form.get_by_label("Reason (recorded in the audit log)").fill("No charge at the provider")
    form.get_by_test_id("settle-submit").click()
    expect(page.locator(".messages")).to_contain_text(f"Effect {stuck} settled as failed.")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("id", f"queue-{unknown}")
    with in_tenant(tenant_a):
        settled = ExternalEffect.objects.get(effect_id=stuck)
    assert (settled.status, settled.settle_reason) == ("failed", "No charge at the provider")


@pytest.mark.parametrize("width", WIDTHS)
def test_settle_radio_buttons_sit_next_to_their_words(
    page, live_server, console_login, operator_a, tenant_a, width
):
    make_run(tenant_a, run_id="r-1")
    effect = record(tenant_a, "r-1", "k-unknown", status="unknown")
    at_width(page, width)
    console_login(page, live_server, "otto")
    page.goto(f"{live_server.url}/t/acme/effects/")
    page.get_by_test_id(f"settle-{effect}").click()
    labels = page.get_by_test_id("settle-form").locator("fieldset label")
    expect(labels).to_have_count(2)
    for label in labels.all():
        radio = label.locator("input[type=radio]").bounding_box()
        words = text_box(label)
        gap = words["x"] - (radio["x"] + radio["width"])
        assert 0 <= gap <= 12, f"{gap:.0f} px between the radio and {label.inner_text()!r}"
        assert abs((radio["y"] + radio["height"] / 2) - (words["y"] + 10)) <= 12  # same line
