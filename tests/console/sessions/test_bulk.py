"""Bulk close/expire of every live session matching the list's filter, after confirming the count."""

import re

import pytest

from audit_app.models import AuditEvent
from sessions_app.store import SessionStore
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.conftest import RUNTIME, csrf_client


@pytest.fixture
def sessions(make_session, tenant_a):
    """u-1 has three live sessions and a closed one; u-2 has one live session."""
    for sid, user in (("a", "u-1"), ("b", "u-1"), ("c", "u-1"), ("d", "u-1"), ("e", "u-2")):
        make_session(sid, user_id=user)
    with in_tenant(tenant_a):
        SessionStore(tenant_a, RUNTIME).close(session_id="d", reason="done")


def statuses(tenant) -> dict[str, str]:
    with in_tenant(tenant):
        return dict(
            SessionStore(tenant, RUNTIME).list_sessions().values_list("session_id", "status")
        )


def audit(tenant, action: str) -> list[tuple[str, str, str]]:
    with in_tenant(tenant):
        return list(
            AuditEvent.objects.filter(tenant=tenant, action=action)
            .order_by("target_id")
            .values_list("target_id", "actor_label", "reason")
        )


def test_confirm_page_shows_the_count_of_live_matching_sessions(sessions, tenant_a, admin_a):
    response = login(admin_a).get("/t/acme/sessions/bulk?action=close&user_id=u-1&status=")
    body = response.content.decode()
    assert response.status_code == 200
    assert re.search(r'data-testid="bulk-count">(\d+)<', body).group(1) == "3"
    assert 'name="expected_count" value="3"' in body
    assert '<input type="hidden" name="user_id" value="u-1">' in body
    assert "Close 3 sessions" in body
    assert statuses(tenant_a) == {
        "a": "active",
        "b": "active",
        "c": "active",
        "d": "closed",
        "e": "active",
    }


def test_list_links_to_the_confirm_page_with_the_current_filter(sessions, admin_a):
    body = login(admin_a).get("/t/acme/sessions/?user_id=u-1").content.decode()
    assert 'href="/t/acme/sessions/bulk?action=close&amp;user_id=u-1"' in body
    assert 'href="/t/acme/sessions/bulk?action=expire&amp;user_id=u-1"' in body


@pytest.mark.parametrize(
    ("action", "status", "verb"), [("close", "closed", "Closed"), ("expire", "expired", "Expired")]
)
def test_bulk_action_changes_every_match_with_one_audit_event_each(
    sessions, tenant_a, admin_a, action, status, verb
):
    response = login(admin_a).post(
        "/t/acme/sessions/bulk",
        {"action": action, "user_id": "u-1", "expected_count": "3", "reason": "account deleted"},
        follow=True,
    )
    assert response.redirect_chain == [("/t/acme/sessions/?user_id=u-1", 302)]
    assert [str(m) for m in response.context["messages"]] == [f"{verb} 3 sessions."]
    assert statuses(tenant_a) == {
        "a": status,
        "b": status,
        "c": status,
        "d": "closed",
        "e": "active",
    }
    assert audit(tenant_a, f"session.{status}") == [
        ("a", "ada", "account deleted"),
        ("b", "ada", "account deleted"),
        ("c", "ada", "account deleted"),
    ] + ([("d", "test-runtime", "done")] if action == "close" else [])


def test_a_changed_count_asks_again_and_changes_nothing(sessions, tenant_a, admin_a, make_session):
    make_session("f", user_id="u-1")  # arrived after the admin looked
    response = login(admin_a).post(
        "/t/acme/sessions/bulk",
        {"action": "close", "user_id": "u-1", "expected_count": "3", "reason": "x"},
    )
    assert response.status_code == 409
    body = response.content.decode()
    assert 'data-testid="count-changed"' in body
    assert re.search(r'data-testid="bulk-count">(\d+)<', body).group(1) == "4"
    assert statuses(tenant_a)["a"] == "active"
    assert audit(tenant_a, "session.closed") == [("d", "test-runtime", "done")]


def test_bulk_without_reason_is_422(sessions, tenant_a, admin_a):
    response = login(admin_a).post(
        "/t/acme/sessions/bulk", {"action": "close", "user_id": "u-1", "expected_count": "3"}
    )
    assert response.status_code == 422
    assert statuses(tenant_a)["a"] == "active"


@pytest.mark.parametrize("role_user", ["operator_a", "support_a"])
def test_bulk_needs_admin(sessions, tenant_a, request, role_user):
    client = login(request.getfixturevalue(role_user))
    assert client.get("/t/acme/sessions/bulk?action=close").status_code == 403
    data = {"action": "close", "expected_count": "4", "reason": "x"}
    assert client.post("/t/acme/sessions/bulk", data).status_code == 403
    assert statuses(tenant_a)["a"] == "active"


def test_bulk_in_another_tenant_is_404_and_touches_nothing(sessions, tenant_a, tenant_b, admin_b):
    client = login(admin_b)
    data = {"action": "close", "expected_count": "4", "reason": "x"}
    assert client.post("/t/acme/sessions/bulk", data).status_code == 404
    # In their own tenant the filter sees only their sessions: none.
    response = client.post("/t/globex/sessions/bulk", {**data, "expected_count": "0"}, follow=True)
    assert [str(m) for m in response.context["messages"]] == ["Closed 0 sessions."]
    assert statuses(tenant_a)["a"] == "active"


def test_bulk_post_without_csrf_is_403(sessions, tenant_a, admin_a):
    data = {"action": "close", "user_id": "u-1", "expected_count": "3", "reason": "x"}
    assert csrf_client(admin_a).post("/t/acme/sessions/bulk", data).status_code == 403
    assert statuses(tenant_a)["a"] == "active"
