"""The data lifecycle API for admin tokens: deletions and their receipts (API.md "Data lifecycle")."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from lifecycle_app.models import Deletion
from lifecycle_app.tasks import reap_stalled_jobs
from sessions_app.models import SessionItem
from sessions_app.store import SessionStore
from tenancy_app.models import RuntimeToken, hash_secret
from tenancy_app.scoping import in_tenant
from tests.conftest import login

from .conftest import ADMIN

JSON = "application/json"


def client(token: str) -> Client:
    return Client(headers={"Authorization": f"Bearer {token}"})


def post(c: Client, path: str, body: dict):
    return c.post(path, json.dumps(body), JSON)


def error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["error"]["code"] == code, body
    return body["error"]


@pytest.fixture
def admin_api(make_token, tenant_a) -> Client:
    return client(make_token(tenant_a, role="admin"))


def test_create_token_makes_admin_tokens(tenant_a):
    out = io.StringIO()
    call_command("create_token", tenant="acme", name="dpo", role="admin", stdout=out)
    raw = out.getvalue().strip()
    with in_tenant(tenant_a):
        token = RuntimeToken.objects.get(secret_hash=hash_secret(raw))
    assert (token.name, token.role) == ("dpo", "admin")
    assert client(raw).get("/api/v1/me").json() == {
        "tenant": "acme",
        "name": "dpo",
        "role": "admin",
    }


def test_deletion_is_for_admin_tokens_and_other_tenants_ids_are_404(
    tenant_a, tenant_b, make_session, make_token, admin_api
):
    make_session(tenant_a, "s1")
    path = "/api/v1/sessions/s1/deletions"
    for role in ("runtime", "operator"):
        error(
            post(client(make_token(tenant_a, role=role)), path, {"reason": "x"}),
            403,
            "admin_required",
        )
    other_admin = client(make_token(tenant_b, role="admin"))
    error(post(other_admin, path, {"reason": "x"}), 404, "not_found")
    error(post(other_admin, path, {}), 404, "not_found")  # lookup comes before the body
    error(post(admin_api, "/api/v1/sessions/nope/deletions", {"reason": "x"}), 404, "not_found")
    with in_tenant(tenant_a):
        assert Deletion.objects.count() == 0
        assert SessionItem.objects.count() == 3


def test_deletion_refusals(tenant_a, make_session, admin_api):
    make_session(tenant_a, "live", end=None)
    make_session(tenant_a, "held")
    make_session(tenant_a, "s1")
    with in_tenant(tenant_a):
        SessionStore(tenant_a, ADMIN).set_legal_hold(session_id="held", on=True, reason="case 3")
    error(post(admin_api, "/api/v1/sessions/s1/deletions", {}), 422, "validation_error")
    error(post(admin_api, "/api/v1/sessions/s1/deletions", {"reason": 3}), 422, "validation_error")
    assert error(
        post(admin_api, "/api/v1/sessions/live/deletions", {"reason": "x"}),
        409,
        "session_not_ended",
    )["details"] == {"status": "active"}
    held = error(
        post(admin_api, "/api/v1/sessions/held/deletions", {"reason": "x"}), 409, "legal_hold"
    )
    # The refusal is a receipt of its own, kept and readable.
    refused = admin_api.get(f"/api/v1/deletions/{held['details']['deletion_id']}").json()
    assert (refused["status"], refused["error"], refused["receipt"]) == (
        "refused",
        "legal hold on the session",
        None,
    )
    first = post(admin_api, "/api/v1/sessions/s1/deletions", {"reason": "x"})
    assert first.status_code == 202
    again = error(
        post(admin_api, "/api/v1/sessions/s1/deletions", {"reason": "y"}), 409, "deletion_running"
    )
    assert again["details"] == {"deletion_id": first.json()["deletion_id"]}


def test_deletion_progress_and_receipt(
    tenant_a, tenant_b, make_session, make_token, admin_api, django_capture_on_commit_callbacks
):
    make_session(tenant_a, "s1")
    with django_capture_on_commit_callbacks(execute=False) as enqueued:
        response = post(admin_api, "/api/v1/sessions/s1/deletions", {"reason": "GDPR 17"})
    assert response.status_code == 202
    queued = response.json()
    deletion_id = queued["deletion_id"]
    assert {k: v for k, v in queued.items() if k != "requested_at"} == {
        "deletion_id": deletion_id,
        "session_id": "s1",
        "status": "queued",
        "requested_by": "token:worker",
        "reason": "GDPR 17",
        "policy": "manual",
        "progress": {"done": 0, "total": 10},
        "error": None,
        "receipt": None,
    }
    error(
        client(make_token(tenant_a)).get(f"/api/v1/deletions/{deletion_id}"), 403, "admin_required"
    )
    error(
        client(make_token(tenant_b, role="admin")).get(f"/api/v1/deletions/{deletion_id}"),
        404,
        "not_found",
    )

    enqueued[0]()  # the worker runs it (eager Celery)

    done = admin_api.get(f"/api/v1/deletions/{deletion_id}").json()
    assert (done["status"], done["progress"]) == ("done", {"done": 10, "total": 10})
    receipt = done["receipt"]
    assert receipt["deleted"]["session_items"] == 3
    assert {t["table"]: t["rows"] for t in receipt["tables"]} == {
        "sessions_app_sessionitem": 3,
        "sessions_app_session": 1,
        "runs_app_runevent": 2,
        "runs_app_run": 0,
        "runs_app_runtransition": 0,
        "runs_app_nodeexecution": 0,
        "tasks_app_taskcheckpoint": 2,
        "tasks_app_task": 1,
        "tasks_app_graphblob": 0,
        "tasks_app_graphwrite": 0,
        "tasks_app_graphcheckpoint": 0,
        "approvals_app_approvalrequest": 0,
        "effects_app_externaleffect": 1,
        "audit_app_auditpayload": 0,
    }
    kept = {k.get("class", k["what"]): k["why"] for k in receipt["kept"]}
    assert "idempotency key" in kept["effect_payloads"]
    assert "tombstone" in kept["session_metadata"]
    assert "hash chain still verifies" in kept["audit_payloads"]


def test_a_job_no_worker_holds_is_not_shown_running_and_the_reaper_requeues_it(
    tenant_a, make_session, admin_api, support_a, django_capture_on_commit_callbacks
):
    make_session(tenant_a, "s1")
    with django_capture_on_commit_callbacks(execute=False):
        deletion_id = post(admin_api, "/api/v1/sessions/s1/deletions", {"reason": "x"}).json()[
            "deletion_id"
        ]
    # A worker took it, did some of it, and died: its last heartbeat is old.
    stale = timezone.now() - timedelta(minutes=10)
    with in_tenant(tenant_a):
        Deletion.objects.filter(deletion_id=deletion_id).update(
            status="running", heartbeat_at=stale, worker="gone:1", counts={"session_items": 2}
        )
    shown = admin_api.get(f"/api/v1/deletions/{deletion_id}").json()
    assert (shown["status"], shown["progress"]["done"]) == ("queued", 2)
    page = login(support_a).get(f"/t/acme/sessions/s1/deletions/{deletion_id}/").content.decode()
    assert 'data-status="queued"' in page and "Deleting…" not in page

    with django_capture_on_commit_callbacks(execute=True):
        assert reap_stalled_jobs.delay(tenant_id=tenant_a.pk).get()["total"] == 1
    finished = admin_api.get(f"/api/v1/deletions/{deletion_id}").json()
    assert finished["status"] == "done"
    with in_tenant(tenant_a):
        assert Deletion.objects.get(deletion_id=deletion_id).requeues == 1
        assert SessionItem.objects.count() == 0


def test_admin_tokens_may_decide_approvals(tenant_a, admin_api):
    from tests.approvals.conftest import make_approval

    make_approval(tenant_a, approval_id="apr-1")
    response = post(
        admin_api, "/api/v1/approvals/apr-1/decision", {"decision": "reject", "reason": "no"}
    )
    assert (response.status_code, response.json()["status"]) == (200, "rejected")
