"""Deleting a session's content from the console: preview, job, progress, legal hold."""

import re

from audit_app.models import AuditEvent
from lifecycle_app.deletion import DeletionStore
from sessions_app.models import SessionItem
from sessions_app.store import SessionStore
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.conftest import RUNTIME

HX = {"HX-Request": "true"}


def close(tenant, session_id: str) -> None:
    with in_tenant(tenant):
        SessionStore(tenant, RUNTIME).close(session_id=session_id, reason="done")


def items_left(tenant, session_id: str) -> int:
    with in_tenant(tenant):
        return SessionItem.objects.filter(tenant=tenant, session__session_id=session_id).count()


def audit_actions(tenant, session_id: str) -> list[str]:
    with in_tenant(tenant):
        return list(
            AuditEvent.objects.filter(tenant=tenant, target_type="session", target_id=session_id)
            .order_by("seq")
            .values_list("action", flat=True)
        )


def preview_rows(body: str, prefix: str) -> dict[str, int]:
    return {
        key: int(count)
        for key, count in re.findall(
            rf'data-testid="{prefix}-([a-z_]+)"><td>[^<]+</td><td>(\d+)</td>', body
        )
    }


def test_preview_lists_exactly_what_goes_and_what_stays(world, tenant_a, admin_a):
    close(tenant_a, world.session_id)
    body = login(admin_a).get(f"/t/acme/sessions/{world.session_id}/delete").content.decode()
    assert preview_rows(body, "delete") == {
        "session_items": 3,
        "session_metadata": 1,  # its metadata and end reason
        "run_event_payloads": 0,
        "run_errors": 0,
        "run_transition_errors": 0,
        "node_errors": 0,
        "checkpoint_bodies": 2,
        "task_descriptions": 1,
        "graph_values": 0,
        "graph_writes": 0,
        "graph_checkpoint_metadata": 0,
        "approval_payloads": 1,
        "effect_payloads": 2,
        "audit_payloads": 1,  # the runtime's reason for asking the approval
    }
    assert preview_rows(body, "keep") == {
        "audit_events": 5,  # with the waiting run's and its approval's cancellation at close
        "effect_records": 2,
        "approvals": 1,
        "runs": 1,
        "tasks": 1,
    }
    assert 'data-testid="confirm-delete"' in body


def test_a_live_session_must_be_closed_first(world, tenant_a, admin_a):
    client = login(admin_a)
    body = client.get(f"/t/acme/sessions/{world.session_id}/delete").content.decode()
    assert 'data-testid="not-ended"' in body
    assert 'data-testid="confirm-delete"' not in body
    response = client.post(
        f"/t/acme/sessions/{world.session_id}/delete", {"reason": "gdpr"}, follow=True
    )
    assert [str(m) for m in response.context["messages"]] == [
        "Close or expire the session before deleting its content."
    ]
    assert items_left(tenant_a, world.session_id) == 3


def test_delete_runs_the_job_and_shows_progress_until_done(
    world, tenant_a, admin_a, django_capture_on_commit_callbacks
):
    close(tenant_a, world.session_id)
    client = login(admin_a)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(
            f"/t/acme/sessions/{world.session_id}/delete", {"reason": "gdpr request 7"}
        )
    assert response.status_code == 302
    progress_url = response["Location"]
    deletion_id = progress_url.rstrip("/").rsplit("/", 1)[1]
    assert progress_url == f"/t/acme/sessions/{world.session_id}/deletions/{deletion_id}/"
    assert len(callbacks) == 1  # the job is enqueued on commit, not run in the request

    # Not run yet: the page polls and says nothing is deleted so far.
    page = client.get(progress_url).content.decode()
    assert 'data-status="queued"' in page
    assert 'hx-trigger="every 2s"' in page
    assert "Waiting for a worker. 0 of 11 records done so far." in page
    assert "Content deleted" not in page
    poll = client.get(progress_url, headers=HX)
    assert poll.status_code == 200
    assert "<html" not in poll.content.decode()
    assert items_left(tenant_a, world.session_id) == 3

    callbacks[0]()  # the worker picks the job up (eager Celery runs it inline)

    poll = client.get(progress_url, headers=HX)
    assert poll.status_code == 286  # htmx stops polling
    assert 'data-testid="deletion-done"' in poll.content.decode()
    assert "Content deleted" in poll.content.decode()
    assert 'hx-trigger="every 2s"' not in poll.content.decode()
    assert items_left(tenant_a, world.session_id) == 0

    detail = client.get(f"/t/acme/sessions/{world.session_id}/").content.decode()
    assert 'data-testid="content-deleted"' in detail
    assert 'data-kind="item"' not in detail
    assert 'data-testid="deleted-notice"' in detail
    assert audit_actions(tenant_a, world.session_id) == [
        "session.closed",
        "session.content_deletion_requested",
        "session.content_deleted",
    ]


def test_full_page_progress_of_a_finished_job_is_200(
    world, tenant_a, admin_a, django_capture_on_commit_callbacks
):
    close(tenant_a, world.session_id)
    client = login(admin_a)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/t/acme/sessions/{world.session_id}/delete", {"reason": "gdpr"})
    page = client.get(response["Location"])
    assert page.status_code == 200
    assert 'data-status="done"' in page.content.decode()


def test_legal_hold_blocks_the_deletion(
    world, tenant_a, admin_a, django_capture_on_commit_callbacks
):
    close(tenant_a, world.session_id)
    with in_tenant(tenant_a):
        SessionStore(tenant_a, RUNTIME).set_legal_hold(
            session_id=world.session_id, on=True, reason="litigation"
        )
    client = login(admin_a)
    page = client.get(f"/t/acme/sessions/{world.session_id}/delete").content.decode()
    assert 'data-testid="hold-blocks"' in page
    assert "This session is under a legal hold" in page
    assert 'data-testid="confirm-delete"' not in page
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(
            f"/t/acme/sessions/{world.session_id}/delete", {"reason": "gdpr"}, follow=True
        )
    assert callbacks == []
    assert [str(m) for m in response.context["messages"]] == [
        "The session is under legal hold; nothing was deleted."
    ]
    assert items_left(tenant_a, world.session_id) == 3
    with in_tenant(tenant_a):
        receipts = DeletionStore(tenant_a, RUNTIME).for_session(world.session_id)
        assert list(receipts.values_list("status", flat=True)) == ["refused"]


def test_tenant_legal_hold_blocks_the_deletion(world, tenant_a, admin_a):
    close(tenant_a, world.session_id)
    tenant_a.legal_hold = True
    tenant_a.save(update_fields=["legal_hold"])
    page = login(admin_a).get(f"/t/acme/sessions/{world.session_id}/delete").content.decode()
    assert "The whole tenant is under a legal hold" in page
    assert 'data-testid="confirm-delete"' not in page


def test_delete_without_reason_is_422(world, tenant_a, admin_a):
    close(tenant_a, world.session_id)
    response = login(admin_a).post(f"/t/acme/sessions/{world.session_id}/delete", {"reason": ""})
    assert response.status_code == 422
    assert items_left(tenant_a, world.session_id) == 3


def test_progress_page_roles_and_tenants(
    world, tenant_a, admin_a, support_a, admin_b, django_capture_on_commit_callbacks
):
    close(tenant_a, world.session_id)
    with django_capture_on_commit_callbacks(execute=True):
        url = login(admin_a).post(
            f"/t/acme/sessions/{world.session_id}/delete", {"reason": "gdpr"}
        )["Location"]
    assert login(support_a).get(url).status_code == 200  # support may watch
    assert login(admin_b).get(url).status_code == 404
    other = url.replace("/acme/", "/globex/")
    assert login(admin_b).get(other).status_code == 404
    # A deletion id under another session's path is 404 too.
    wrong = url.replace(f"/sessions/{world.session_id}/", "/sessions/other/")
    assert login(admin_a).get(wrong).status_code == 404
