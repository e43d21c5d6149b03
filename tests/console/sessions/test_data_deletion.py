"""Admins delete a session's content from the console; a legal hold blocks it."""

import re

from playwright.sync_api import expect

from lifecycle_app.deletion import DeletionStore
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from tenancy_app.scoping import in_tenant
from tests.console.conftest import RUNTIME, build_world


def close(tenant, session_id: str) -> None:
    with in_tenant(tenant):
        SessionStore(tenant, RUNTIME).close(session_id=session_id, reason="done")


def test_admin_deletes_content_and_the_audit_events_remain(
    page, live_server, console_login, tenant_a, admin_a
):
    world = build_world(tenant_a)
    close(tenant_a, world.session_id)
    console_login(page, live_server, "ada")
    page.goto(f"{live_server.url}/t/acme/sessions/{world.session_id}/")
    expect(page.locator('[data-testid="timeline"] li[data-kind="item"]')).to_have_count(3)

    page.click('[data-testid="action-delete"]')
    preview = page.locator('[data-testid="deletion-preview"]')
    expect(preview.locator('[data-testid="delete-session_items"] td').nth(1)).to_have_text("3")
    expect(preview.locator('[data-testid="delete-checkpoint_bodies"] td').nth(1)).to_have_text("2")
    expect(preview.locator('[data-testid="keep-effect_records"] td').nth(1)).to_have_text("2")
    page.fill("textarea[name=reason]", "GDPR erasure request #7")
    page.click('[data-testid="confirm-delete"]')

    # Eager Celery ran the job when the request committed; the page shows the receipt.
    expect(page).to_have_url(
        re.compile(rf"/t/acme/sessions/{world.session_id}/deletions/del_[0-9a-f]+/$")
    )
    expect(page.locator('[data-testid="deletion-done"]')).to_contain_text("Content deleted")
    expect(page.locator('[data-testid="deletion-progress"]')).to_have_attribute(
        "data-status", "done"
    )

    page.goto(f"{live_server.url}/t/acme/sessions/{world.session_id}/")
    expect(page.locator('[data-testid="deleted-notice"]')).to_be_visible()
    expect(page.locator('[data-testid="timeline"] li[data-kind="item"]')).to_have_count(0)
    expect(page.locator("body")).not_to_contain_text("message 1")

    page.goto(f"{live_server.url}/t/acme/audit/?target_id={world.session_id}")
    actions = page.locator('[data-testid="audit-row"] .badge.action').all_inner_texts()
    assert actions == [
        "session.content_deleted",
        "session.content_deletion_requested",
        "session.closed",
    ]
    expect(page.locator("body")).to_contain_text("GDPR erasure request #7")


def test_progress_polls_until_the_job_has_finished(
    page, live_server, console_login, tenant_a, admin_a
):
    world = build_world(tenant_a)
    close(tenant_a, world.session_id)
    with in_tenant(tenant_a):
        job = DeletionStore(tenant_a, Actor.system("test")).request(
            session_id=world.session_id, reason="queued", enqueue=False
        )
    console_login(page, live_server, "ada")
    page.goto(f"{live_server.url}/t/acme/sessions/{world.session_id}/deletions/{job.deletion_id}/")
    # Requested, not yet taken by a worker: queued, and said so (never "running").
    queued = page.locator('[data-testid="deletion-queued"]')
    expect(queued).to_contain_text("Waiting for a worker. 0 of 11 records done so far.")
    expect(page.locator('[data-testid="deletion-bar"]')).to_have_attribute("value", "0")
    expect(page.locator("body")).not_to_contain_text("Content deleted")

    with in_tenant(tenant_a):  # the worker runs the job
        DeletionStore(tenant_a, Actor.system("deletion")).run(deletion_id=job.deletion_id)

    # The fragment polls every 2 s and swaps in the receipt once the job is done.
    expect(page.locator('[data-testid="deletion-done"]')).to_be_visible(timeout=8000)
    expect(page.locator('[data-testid="deletion-progress"]')).not_to_have_attribute(
        "hx-trigger", "every 2s"
    )


def test_legal_hold_placed_in_the_console_blocks_deletion(
    page, live_server, console_login, tenant_a, admin_a
):
    world = build_world(tenant_a)
    close(tenant_a, world.session_id)
    console_login(page, live_server, "ada")
    page.goto(f"{live_server.url}/t/acme/sessions/{world.session_id}/")

    page.click('[data-testid="action-hold-on"]')  # htmx loads the confirmation into the panel
    panel = page.locator('[data-testid="confirm-hold-on"]')
    expect(panel).to_be_visible()
    assert page.url.endswith(f"/sessions/{world.session_id}/")
    panel.locator("textarea[name=reason]").fill("Litigation hold, case 2026-14")
    panel.locator('[data-testid="confirm-button"]').click()
    expect(page.locator(".messages")).to_contain_text("Legal hold placed.")
    expect(page.locator('[data-testid="legal-hold"]')).to_be_visible()

    page.click('[data-testid="action-delete"]')
    expect(page.locator('[data-testid="hold-blocks"]')).to_contain_text(
        "This session is under a legal hold"
    )
    expect(page.locator('[data-testid="confirm-delete"]')).to_have_count(0)
    with in_tenant(tenant_a):
        assert (
            SessionStore(tenant_a, RUNTIME).get_items(session_id=world.session_id, limit=10) != []
        )
