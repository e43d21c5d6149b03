"""Erasure of a data subject: every session of a user closed and deleted, held ones listed.

The user of these tests has three sessions: one live (its run waits on an
approval), one closed, one on legal hold; another user's session must not be
touched.
"""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from approvals_app.models import ApprovalRequest
from audit_app.models import AuditEvent
from lifecycle_app.models import Erasure
from runs_app.models import RunEvent
from sessions_app.models import Session, SessionItem
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.conftest import layout_queries

from .conftest import ADMIN, build_session
from .test_endings import waiting

JSON = "application/json"


@pytest.fixture
def three_sessions(tenant_a, make_session):
    """u1: `live` (waiting on an approval), `closed`, `held` (closed, on legal hold); u2: `other`."""
    waiting(tenant_a, "live", Actor.system("runtime"))
    with in_tenant(tenant_a):
        SessionStore(tenant_a, Actor.system("runtime")).append_items(
            session_id="live",
            items=[{"role": "user", "item_type": "m", "payload": {"text": "my address"}}],
            run_id="live-run",
        )
        build_session(tenant_a, "closed", items=4)
        build_session(tenant_a, "held", items=2)
        SessionStore(tenant_a, ADMIN).set_legal_hold(session_id="held", on=True, reason="case 8")
        other = build_session(tenant_a, "other", items=5)
        Session.objects.filter(pk=other.session.pk).update(user_id="u2")


def items(tenant) -> dict[str, int]:
    with in_tenant(tenant):
        counts: dict[str, int] = {}
        for session_id in SessionItem.objects.values_list("session__session_id", flat=True):
            counts[session_id] = counts.get(session_id, 0) + 1
        return counts


def test_erasure_through_the_api(
    tenant_a, tenant_b, three_sessions, make_token, django_capture_on_commit_callbacks
):
    admin = Client(headers={"Authorization": f"Bearer {make_token(tenant_a, role='admin')}"})
    body = json.dumps({"user_id": "u1", "reason": "Art. 17 request 91"})
    with django_capture_on_commit_callbacks(execute=True):  # the deletion jobs run (eager)
        response = admin.post("/api/v1/erasures", body, JSON)
    assert response.status_code == 202, response.content
    erasure_id = response.json()["erasure_id"]

    state = admin.get(f"/api/v1/erasures/{erasure_id}").json()
    assert (state["user_id"], state["status"], state["held"]) == ("u1", "done", ["held"])
    assert [(s["session_id"], s["status"]) for s in state["sessions"]] == [
        ("live", "done"),
        ("closed", "done"),
        ("held", "held"),
    ]
    assert state["sessions"][2]["deletion_id"] is None
    assert state["progress"]["done"] == state["progress"]["total"] > 0
    receipt = state["receipt"]
    assert receipt["deleted"]["session_items"] == 1 + 4
    assert {t["table"] for t in receipt["tables"]} >= {"sessions_app_sessionitem"}
    assert any("user id" in kept["what"] for kept in receipt["kept"])

    # The live session was closed and its waiting run settled; the held one is untouched.
    with in_tenant(tenant_a):
        statuses = dict(Session.objects.values_list("session_id", "status"))
        approval = ApprovalRequest.objects.get(approval_id="live-apr")
        assert (
            RunEvent.objects.filter(payload__isnull=False, run__session__user_id="u1")
            .filter(run__session__session_id__in=["live", "closed"])
            .count()
            == 0
        )
    assert statuses == {"live": "closed", "closed": "closed", "held": "closed", "other": "closed"}
    assert (approval.status, approval.arguments) == ("cancelled", {})
    assert items(tenant_a) == {"held": 2, "other": 5}
    with in_tenant(tenant_a):
        requested = AuditEvent.objects.get(action="subject.erasure_requested")
    assert (requested.target_id, requested.reason, requested.after) == (
        "u1",
        "Art. 17 request 91",  # an admin's words stay
        {"erasure_id": erasure_id, "sessions": ["live", "closed"], "held": ["held"]},
    )

    # Another tenant's admin finds neither the erasure nor the user's sessions.
    theirs = Client(headers={"Authorization": f"Bearer {make_token(tenant_b, role='admin')}"})
    assert theirs.get(f"/api/v1/erasures/{erasure_id}").status_code == 404
    with django_capture_on_commit_callbacks(execute=True):
        nothing = theirs.post("/api/v1/erasures", body, JSON).json()
    assert (nothing["sessions"], nothing["held"], nothing["status"]) == ([], [], "done")
    assert items(tenant_a) == {"held": 2, "other": 5}


def test_erasure_needs_an_admin_token_and_valid_fields(tenant_a, three_sessions, make_token):
    for role in ("runtime", "operator"):
        token = Client(headers={"Authorization": f"Bearer {make_token(tenant_a, role=role)}"})
        response = token.post(
            "/api/v1/erasures", json.dumps({"user_id": "u1", "reason": "x"}), JSON
        )
        assert (response.status_code, response.json()["error"]["code"]) == (403, "admin_required")
    admin = Client(headers={"Authorization": f"Bearer {make_token(tenant_a, role='admin')}"})
    for body in ({"user_id": "u1"}, {"reason": "x"}, {"user_id": "", "reason": "x"}):
        assert admin.post("/api/v1/erasures", json.dumps(body), JSON).status_code == 422
    with in_tenant(tenant_a):
        assert Erasure.objects.count() == 0
    assert items(tenant_a) == {"live": 1, "closed": 4, "held": 2, "other": 5}


def test_the_console_counts_first_and_erases_only_after_the_user_id_is_typed(
    tenant_a, three_sessions, admin_a, django_capture_on_commit_callbacks, django_assert_num_queries
):
    client = login(admin_a)
    page = client.get("/t/acme/sessions/").content.decode()
    assert 'data-testid="erase-user-link"' in page
    with django_assert_num_queries(layout_queries(client, tenant_a) + 5):
        # The preview: the tenant's hold, and counts of the user's sessions, live and held,
        # and a sample of their ids.
        page = client.get("/t/acme/erasures/?user_id=u1").content.decode()
    assert re.search(r'data-testid="erase-summary"><strong>3</strong> sessions:\s+1 live', page)
    assert "1 on legal hold" in page
    assert "Erase 3 sessions" in page

    refused = client.post(
        "/t/acme/erasures/", {"user_id": "u1", "reason": "asked", "confirm": "u2"}
    )
    assert refused.status_code == 422
    assert 'data-testid="erase-confirm-error"' in refused.content.decode()
    assert items(tenant_a) == {"live": 1, "closed": 4, "held": 2, "other": 5}

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/t/acme/erasures/", {"user_id": "u1", "reason": "asked", "confirm": "u1"}
        )
    assert response.status_code == 302
    url = response["Location"]
    assert re.fullmatch(r"/t/acme/erasures/era_[0-9a-f]+/", url)
    with django_assert_num_queries(layout_queries(client, tenant_a) + 2):  # erasure, deletions
        page = client.get(url).content.decode()
    assert 'data-status="done"' in page
    assert page.count('data-testid="erasure-session"') == 3
    assert "on legal hold: kept" in page
    assert 'data-testid="erasure-receipt"' in page
    assert items(tenant_a) == {"held": 2, "other": 5}


def test_erasure_pages_are_for_admins_of_the_tenant(
    tenant_a, three_sessions, operator_a, support_a, admin_a, admin_b
):
    with in_tenant(tenant_a):
        from lifecycle_app.erasure import ErasureStore

        erasure = ErasureStore(tenant_a, Actor.for_user(admin_a)).request(user_id="u2", reason="x")
    for user in (operator_a, support_a):
        client = login(user)
        assert client.get("/t/acme/erasures/").status_code == 403
        assert client.get(f"/t/acme/erasures/{erasure.erasure_id}/").status_code == 403
        assert (
            client.post(
                "/t/acme/erasures/", {"user_id": "u1", "reason": "x", "confirm": "u1"}
            ).status_code
            == 403
        )
    other = login(admin_b)
    assert other.get(f"/t/globex/erasures/{erasure.erasure_id}/").status_code == 404
    assert other.get(f"/t/acme/erasures/{erasure.erasure_id}/").status_code == 404
    assert items(tenant_a)["live"] == 1
