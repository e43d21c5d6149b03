"""A session that ends settles what waits on it: its pending approvals are cancelled with their runs.

Closing (API, console, bulk), expiring (console, lease sweep) and a lazily
expired session (a write that found the lease passed) all follow the one rule of lifecycle_app.endings: a run waiting on an
approval is cancelled with its approval, audited as the system, and the
runtime that asked hears of it by webhook. The inbox never lists an approval
whose session has ended, and such an approval cannot be decided.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from approvals_app.models import ApprovalRequest
from approvals_app.store import ApprovalStore
from audit_app.models import AuditEvent
from lifecycle_app.endings import SessionEndings
from lifecycle_app.tasks import sweep_expired_sessions
from runs_app.models import Run
from runs_app.store import RunStateStore
from sessions_app.models import Session
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from stateroom.errors import Conflict
from tenancy_app.scoping import in_tenant
from tests.approvals.test_webhooks import Receiver, webhook_token
from tests.conftest import login

JSON = "application/json"


def waiting(tenant, session_id: str, actor: Actor, *, clock=None, attach_only: bool = False):
    """A session whose run waits on an approval the runtime `actor` asked for."""
    kw = {"clock": clock} if clock else {}
    run_id, approval_id = f"{session_id}-run", f"{session_id}-apr"
    with in_tenant(tenant):
        sessions = SessionStore(tenant, actor, **kw)
        sessions.create(session_id=session_id, user_id="u1", lease_seconds=3600)
        runs = RunStateStore(tenant, actor, **kw)
        runs.create(run_id=run_id, session_id=None if attach_only else session_id)
        sessions.attach(session_id=session_id, run_id=run_id, user_id="u1", expected_revision=0)
        run = runs.compare_and_set(run_id=run_id, expected_version=1, changes={"status": "running"})
        ApprovalStore(tenant, actor, **kw).request(
            run_id=run_id,
            expected_version=run.version,
            tool_name="refund",
            arguments={"amount": 30},
            risk="medium",
            approval_id=approval_id,
            reason="the customer asked",
        )
    return run_id, approval_id


def states(tenant, run_id: str, approval_id: str) -> tuple[str, str, str]:
    with in_tenant(tenant):
        run = Run.objects.get(tenant=tenant, run_id=run_id)
        approval = ApprovalRequest.objects.get(tenant=tenant, approval_id=approval_id)
    return run.status, approval.status, approval.decision_reason


def settled_by(tenant, run_id: str, approval_id: str) -> list[tuple]:
    with in_tenant(tenant):
        return sorted(
            AuditEvent.objects.filter(
                tenant=tenant, action__in=["run.cancelled", "approval.cancelled"]
            )
            .filter(target_id__in=[run_id, approval_id])
            .values_list("action", "actor_type", "actor_label", "reason")
        )


def inbox_ids(client) -> set[str]:
    body = client.get("/t/acme/approvals/").content.decode()
    return {aid for aid in ("s1-apr", "s2-apr", "s3-apr", "s4-apr") if aid in body}


def test_a_runtimes_close_cancels_the_waiting_run_and_its_approval_and_tells_the_runtime(
    tenant_a, operator_a, django_capture_on_commit_callbacks, settings
):
    settings.STATEROOM_WEBHOOK_ALLOW = ["127.0.0.1/32"]  # the receiver is on loopback
    with Receiver([200]) as receiver:
        token, asker = webhook_token(tenant_a, receiver.url)
        run_id, approval_id = waiting(tenant_a, "s1", asker)
        runtime = Client(headers={"Authorization": f"Bearer {token_secret(tenant_a, token)}"})
        assert inbox_ids(login(operator_a)) == {"s1-apr"}
        with django_capture_on_commit_callbacks(execute=True):
            response = runtime.post(
                "/api/v1/sessions/s1/close", json.dumps({"reason": "bye"}), JSON
            )
        assert response.status_code == 200, response.content
    assert states(tenant_a, run_id, approval_id) == ("cancelled", "cancelled", "session closed")
    assert settled_by(tenant_a, run_id, approval_id) == [
        ("approval.cancelled", "system", "lifecycle", "session closed"),
        ("run.cancelled", "system", "lifecycle", "session closed"),
    ]
    events = {json.loads(body)["event"]: json.loads(body) for _headers, body in receiver.requests}
    assert set(events) == {"approval.decided", "run.cancelled"}  # told of both
    delivered = events["approval.decided"]
    assert (delivered["event"], delivered["approval"]["approval_id"]) == (
        "approval.decided",
        approval_id,
    )
    assert delivered["approval"]["status"] == "cancelled"
    assert inbox_ids(login(operator_a)) == set()


def token_secret(tenant, token) -> str:
    """A fresh secret for an existing token (tests only: the raw secret is never stored)."""
    from tenancy_app.models import RuntimeToken, hash_secret

    raw = RuntimeToken.generate_secret()
    with in_tenant(tenant):
        RuntimeToken.objects.filter(pk=token.pk).update(secret_hash=hash_secret(raw))
    return raw


@pytest.mark.parametrize("action", ["close", "expire"])
def test_an_admins_close_or_expire_in_the_console_settles_the_run(
    tenant_a, admin_a, operator_a, action
):
    run_id, approval_id = waiting(tenant_a, "s1", Actor.system("runtime"))
    waiting(tenant_a, "s2", Actor.system("runtime"))
    response = login(admin_a).post(f"/t/acme/sessions/s1/{action}", {"reason": "abuse report"})
    assert response.status_code == 302
    reason = "session closed" if action == "close" else "session expired"
    assert states(tenant_a, run_id, approval_id) == ("cancelled", "cancelled", reason)
    assert [a for a, *_ in settled_by(tenant_a, run_id, approval_id)] == [
        "approval.cancelled",
        "run.cancelled",
    ]
    with in_tenant(tenant_a):
        ended = AuditEvent.objects.get(tenant=tenant_a, action=f"session.{action}d")
    assert (ended.actor_label, ended.reason) == ("ada", "abuse report")  # a person's words stay
    assert inbox_ids(login(operator_a)) == {"s2-apr"}  # the other session's still waits


def test_bulk_close_settles_every_session(tenant_a, admin_a, operator_a):
    for sid in ("s1", "s2"):
        waiting(tenant_a, sid, Actor.system("runtime"))
    client = login(admin_a)
    response = client.post(
        "/t/acme/sessions/bulk",
        {"action": "close", "expected_count": "2", "reason": "migration", "user_id": "u1"},
    )
    assert response.status_code == 302
    assert states(tenant_a, "s1-run", "s1-apr")[:2] == ("cancelled", "cancelled")
    assert states(tenant_a, "s2-run", "s2-apr")[:2] == ("cancelled", "cancelled")
    assert inbox_ids(login(operator_a)) == set()


def test_the_lease_sweep_settles_what_it_expires(tenant_a, operator_a):
    past = timezone.now() - timedelta(hours=2)
    run_id, approval_id = waiting(tenant_a, "s1", Actor.system("runtime"), clock=lambda: past)
    # The approval never expires by itself; only its session's lease has passed.
    assert sweep_expired_sessions.delay(tenant_id=tenant_a.pk).get()["total"] == 1
    assert states(tenant_a, run_id, approval_id) == ("cancelled", "cancelled", "session expired")
    assert settled_by(tenant_a, run_id, approval_id)[0][1:3] == ("system", "lifecycle")
    assert inbox_ids(login(operator_a)) == set()


@pytest.mark.parametrize("attach_only", [False, True])
def test_a_write_that_finds_the_lease_passed_settles_the_session_at_once(
    tenant_a, operator_a, api_a, attach_only
):
    """The write expires the session inside the session store, which knows no approvals;
    `session_ended` settles the waiting run in that transaction, so the approval never
    reads pending after its session ended: not in the API, not in the console."""
    past = timezone.now() - timedelta(hours=2)
    actor = Actor.system("runtime")
    run_id, approval_id = waiting(tenant_a, "s1", actor, clock=lambda: past, attach_only=True)
    if not attach_only:
        with in_tenant(tenant_a):
            Run.objects.filter(tenant=tenant_a, run_id=run_id).update(
                session=SessionStore(tenant_a, actor).get("s1")
            )
    with in_tenant(tenant_a), pytest.raises(Conflict) as refused:
        SessionStore(tenant_a, actor).heartbeat(session_id="s1")
    assert refused.value.details["status"] == "expired"
    assert states(tenant_a, run_id, approval_id) == ("cancelled", "cancelled", "session expired")
    assert [row[1:3] for row in settled_by(tenant_a, run_id, approval_id)] == [
        ("system", "lifecycle"),
        ("system", "lifecycle"),
    ]
    assert api_a.get(f"/api/v1/approvals/{approval_id}").json()["status"] == "cancelled"
    pending = api_a.get("/api/v1/approvals", {"status": "pending"}).json()["results"]
    assert approval_id not in {a["approval_id"] for a in pending}
    client = login(operator_a)
    assert inbox_ids(client) == set()
    page = client.get(f"/t/acme/approvals/{approval_id}/").content.decode()
    assert 'data-testid="approve"' not in page
    with in_tenant(tenant_a):
        assert SessionEndings(tenant_a, Actor.system("sweep")).settle_ended() == 0


def test_the_reconciler_settles_a_session_ended_outside_the_store(tenant_a, operator_a):
    """A session row changed behind the store's back (no `session_ended`): until the sweep's
    reconciler runs, the approval reads as one that cannot happen; then it is settled."""
    actor = Actor.system("runtime")
    run_id, approval_id = waiting(tenant_a, "s1", actor)
    with in_tenant(tenant_a):
        Session.objects.filter(tenant=tenant_a, session_id="s1").update(status="expired")
    client = login(operator_a)
    assert inbox_ids(client) == set()
    page = client.get(f"/t/acme/approvals/{approval_id}/").content.decode()
    assert 'data-testid="cannot-happen"' in page
    assert 'data-testid="approve"' not in page
    with in_tenant(tenant_a), pytest.raises(Conflict) as decided:
        ApprovalStore(tenant_a, Actor.for_user(operator_a)).decide(
            approval_id=approval_id, decision="approve", reason="ok"
        )
    assert (decided.value.code, decided.value.details["session_status"]) == (
        "session_ended",
        "expired",
    )
    with in_tenant(tenant_a):
        settled = SessionEndings(tenant_a, Actor.system("sweep")).settle_ended()
    assert settled == 1
    assert states(tenant_a, run_id, approval_id) == ("cancelled", "cancelled", "session expired")


def test_runs_that_wait_on_nothing_keep_their_status(tenant_a):
    actor = Actor.system("runtime")
    with in_tenant(tenant_a):
        SessionStore(tenant_a, actor).create(session_id="s1", user_id="u1")
        runs = RunStateStore(tenant_a, actor)
        runs.create(run_id="busy", session_id="s1")
        runs.compare_and_set(run_id="busy", expected_version=1, changes={"status": "running"})
        runs.create(run_id="done", session_id="s1")
        runs.compare_and_set(run_id="done", expected_version=1, changes={"status": "cancelled"})
        SessionEndings(tenant_a, Actor.system("test")).close(session_id="s1", reason="x")
        statuses = dict(Run.objects.filter(tenant=tenant_a).values_list("run_id", "status"))
    assert statuses == {"busy": "running", "done": "cancelled"}
