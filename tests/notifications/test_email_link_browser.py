"""The link in a notification email, in a real browser: logged out, it asks to log in,
then opens that approval's page (the login's `next`)."""

import re
from urllib.parse import unquote

import pytest
from playwright.sync_api import expect

from tenancy_app.models import Role
from tests.conftest import PASSWORD
from tests.console.browser import _playwright, browser, new_page, page  # noqa: F401

from ..runs.conftest import make_run
from .conftest import add_channel, route_to, text_and_html, with_email
from .test_delivery import ask_through_the_api

pytestmark = pytest.mark.browser


def test_the_emailed_link_asks_to_log_in_then_opens_the_approval(
    page,  # noqa: F811
    live_server,
    tenant_a,
    api_a,
    make_user,
    smtp_server,
    settings,
):
    settings.STATEROOM_CONSOLE_URL = live_server.url
    olga = with_email(make_user("olga", tenant_a, Role.OPERATOR))
    add_channel(tenant_a, "email", "Mail")
    route_to(tenant_a, user_ids=[olga.pk])
    make_run(tenant_a, "running", run_id="run-1")
    assert ask_through_the_api(api_a).status_code == 201  # committed: the email goes out

    [received] = smtp_server.messages
    assert received["To"] == "olga@example.com"
    link = re.search(r"^Open: (\S+)$", text_and_html(received)[0], re.MULTILINE).group(1)
    assert link == f"{live_server.url}/t/acme/approvals/apr-1/"

    page.goto(link)
    assert unquote(page.url) == f"{live_server.url}/login/?next=/t/acme/approvals/apr-1/"
    page.fill("input[name=username]", "olga")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(link)
    expect(page.locator("main")).to_contain_text("payments.refund")
    expect(page.locator("main")).to_contain_text("Refund 1200 to ops")
