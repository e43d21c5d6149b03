"""In Chromium: the nav's "Mine" badge appears once an approval is asked of me (its poll),
and with notifications allowed the page shows a desktop notification for it."""

from playwright.sync_api import expect

from approvals_app import tasks
from approvals_app.store import ApprovalStore
from stateroom import ports
from stateroom.actor import Actor
from tenancy_app.scoping import in_tenant
from tests.console.fixtures import make_pending

RECORD_NOTIFICATIONS = """
window.__notes = [];
window.Notification = function (title, options) {
  window.__notes.push({title: title, body: (options || {}).body});
  document.documentElement.dataset.notes = String(window.__notes.length);
};
window.Notification.permission = "granted";
window.Notification.requestPermission = function () { return Promise.resolve("granted"); };
"""


class _NoFanOut:
    """The ports, but notices go nowhere (the fan-out is another part's)."""

    def __getattr__(self, name):
        return getattr(ports, name)

    @staticmethod
    def approval_notices():
        return lambda *args: "ignored"


def test_badge_appears_and_a_desktop_notification_is_shown(
    page, live_server, console_login, operator_a, tenant_a, monkeypatch
):
    monkeypatch.setattr(tasks, "ports", _NoFanOut())
    page.context.grant_permissions(["notifications"], origin=live_server.url)
    page.add_init_script(RECORD_NOTIFICATIONS)
    make_pending(tenant_a, approval_id="a-old", run_id="r0", session_id="s0", items=0, events=0)
    with in_tenant(tenant_a):
        ApprovalStore(tenant_a, Actor.system("t")).reassign(
            approval_id="a-old", user_ids=[operator_a.pk], group_ids=[]
        )
    console_login(page, live_server, operator_a.username)
    page.goto(live_server.url + "/t/acme/approvals/?view=all")
    badge = page.locator("#nav-assigned")
    expect(badge).to_be_visible()
    expect(badge).to_have_attribute("data-assigned-count", "1")
    # The first look records what is there: no notification for it.
    assert page.evaluate("window.__notes.length") == 0

    make_pending(tenant_a, approval_id="a-new", run_id="r1", session_id="s1", items=0, events=0)
    with in_tenant(tenant_a):
        ApprovalStore(tenant_a, Actor.system("t")).reassign(
            approval_id="a-new", user_ids=[operator_a.pk], group_ids=[]
        )
    # The 20 s poll, now.
    page.evaluate("htmx.trigger('#nav-assigned', 'refresh')")
    expect(page.locator("#nav-assigned")).to_have_attribute("data-assigned-count", "2")
    # Waited for through the DOM: the page's CSP forbids the eval wait_for_function needs.
    expect(page.locator("html")).to_have_attribute("data-notes", "1")
    note = page.evaluate("window.__notes[0]")
    assert note["title"] == "Stateroom: an approval is asked of you"
    assert "2 pending approvals are assigned to you" in note["body"]
    # A poll with nothing new shows nothing more.
    page.evaluate("htmx.trigger('#nav-assigned', 'refresh')")
    page.wait_for_load_state("networkidle")
    assert page.evaluate("window.__notes.length") == 1
