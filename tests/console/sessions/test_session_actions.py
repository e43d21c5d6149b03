"""Admin actions on one session: close, expire now, legal hold on/off."""

import pytest

from audit_app.models import AuditEvent
from sessions_app.store import SessionStore
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.conftest import RUNTIME, csrf_client

ACTIONS = [
    # (url suffix, POST data, session field, value after, audit action)
    ("close", {}, "status", "closed", "session.closed"),
    ("expire", {}, "status", "expired", "session.expired"),
    ("hold", {"on": "1"}, "legal_hold", True, "session.legal_hold_on"),
]


def session_state(tenant, session_id: str):
    with in_tenant(tenant):
        session = SessionStore(tenant, RUNTIME).get(session_id)
        events = list(
            AuditEvent.objects.filter(tenant=tenant, target_id=session_id)
            .order_by("seq")  # in the order they happened (the last is the newest)
            .values_list("action", "actor_label", "reason")
        )
    return session, events


@pytest.mark.parametrize(("action", "data", "field", "value", "audit"), ACTIONS)
def test_admin_confirms_with_a_reason_and_the_action_is_audited(
    make_session, tenant_a, admin_a, action, data, field, value, audit
):
    make_session("s-1")
    client = login(admin_a)
    query = "?on=1" if action == "hold" else ""
    confirm = client.get(f"/t/acme/sessions/s-1/{action}{query}")
    assert confirm.status_code == 200
    assert 'name="reason"' in confirm.content.decode()
    session, events = session_state(tenant_a, "s-1")
    assert getattr(session, field) == {"status": "active", "legal_hold": False}[field]
    assert events == []  # the confirmation page changed nothing

    response = client.post(f"/t/acme/sessions/s-1/{action}", {**data, "reason": "customer asked"})
    assert response.status_code == 302
    assert response["Location"] == "/t/acme/sessions/s-1/"
    session, events = session_state(tenant_a, "s-1")
    assert getattr(session, field) == value
    assert events == [(audit, "ada", "customer asked")]


def test_releasing_the_legal_hold(make_session, tenant_a, admin_a):
    make_session("s-1")
    with in_tenant(tenant_a):
        SessionStore(tenant_a, RUNTIME).set_legal_hold(session_id="s-1", on=True, reason="case 7")
    client = login(admin_a)
    assert 'data-testid="action-hold-off"' in client.get("/t/acme/sessions/s-1/").content.decode()
    assert "Release the legal hold" in client.get("/t/acme/sessions/s-1/hold?on=0").content.decode()
    response = client.post("/t/acme/sessions/s-1/hold", {"on": "0", "reason": "case closed"})
    assert response.status_code == 302
    session, events = session_state(tenant_a, "s-1")
    assert session.legal_hold is False
    assert events[-1] == ("session.legal_hold_off", "ada", "case closed")


@pytest.mark.parametrize("action", ["close", "expire", "hold"])
def test_action_without_a_reason_is_refused_and_changes_nothing(
    make_session, tenant_a, admin_a, action
):
    make_session("s-1")
    response = login(admin_a).post(f"/t/acme/sessions/s-1/{action}", {"on": "1", "reason": "  "})
    assert response.status_code == 422
    assert "This field is required." in response.content.decode()
    session, events = session_state(tenant_a, "s-1")
    assert (session.status, session.legal_hold, events) == ("active", False, [])


def test_closing_an_ended_session_shows_the_stores_refusal(make_session, tenant_a, admin_a):
    make_session("s-1")
    with in_tenant(tenant_a):
        SessionStore(tenant_a, RUNTIME).close(session_id="s-1", reason="done")
    client = login(admin_a)
    response = client.post("/t/acme/sessions/s-1/expire", {"reason": "again"}, follow=True)
    assert response.redirect_chain == [("/t/acme/sessions/s-1/", 302)]
    messages = [str(m) for m in response.context["messages"]]
    assert len(messages) == 1 and "closed" in messages[0]
    session, events = session_state(tenant_a, "s-1")
    assert session.status == "closed"
    assert [e[0] for e in events] == ["session.closed"]


def test_htmx_post_answers_with_hx_redirect(make_session, tenant_a, admin_a):
    make_session("s-1")
    response = login(admin_a).post(
        "/t/acme/sessions/s-1/close", {"reason": "done"}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 200
    assert response["HX-Redirect"] == "/t/acme/sessions/s-1/"
    assert session_state(tenant_a, "s-1")[0].status == "closed"


def test_htmx_get_of_the_confirmation_is_the_panel_only(make_session, admin_a):
    make_session("s-1")
    response = login(admin_a).get("/t/acme/sessions/s-1/close", headers={"HX-Request": "true"})
    body = response.content.decode()
    assert "<html" not in body
    assert 'data-testid="confirm-close"' in body
    assert 'action="/t/acme/sessions/s-1/close"' in body


@pytest.mark.parametrize("action", ["close", "expire", "hold", "delete"])
@pytest.mark.parametrize("role_user", ["operator_a", "support_a"])
def test_lesser_roles_get_403_and_change_nothing(
    make_session, tenant_a, request, action, role_user
):
    make_session("s-1")
    client = login(request.getfixturevalue(role_user))
    assert client.get(f"/t/acme/sessions/s-1/{action}").status_code == 403
    response = client.post(f"/t/acme/sessions/s-1/{action}", {"on": "1", "reason": "x"})
    assert response.status_code == 403
    session, events = session_state(tenant_a, "s-1")
    assert (session.status, session.legal_hold, events) == ("active", False, [])


@pytest.mark.parametrize("action", ["close", "expire", "hold", "delete"])
def test_another_tenants_admin_gets_404(make_session, tenant_a, tenant_b, admin_b, action):
    make_session("s-1")
    client = login(admin_b)
    for path in (f"/t/globex/sessions/s-1/{action}", f"/t/acme/sessions/s-1/{action}"):
        assert client.get(path).status_code == 404
        assert client.post(path, {"on": "1", "reason": "x"}).status_code == 404
    session, events = session_state(tenant_a, "s-1")
    assert (session.status, session.legal_hold, events) == ("active", False, [])


@pytest.mark.parametrize("action", ["close", "expire", "hold", "delete"])
def test_post_without_csrf_token_is_403(make_session, tenant_a, admin_a, action):
    make_session("s-1")
    response = csrf_client(admin_a).post(
        f"/t/acme/sessions/s-1/{action}", {"on": "1", "reason": "x"}
    )
    assert response.status_code == 403
    session, events = session_state(tenant_a, "s-1")
    assert (session.status, session.legal_hold, events) == ("active", False, [])


def test_post_with_the_pages_csrf_token_works(make_session, tenant_a, admin_a):
    make_session("s-1")
    client = csrf_client(admin_a)
    page = client.get("/t/acme/sessions/s-1/close")
    token = page.context["csrf_token"]
    response = client.post(
        "/t/acme/sessions/s-1/close", {"reason": "x", "csrfmiddlewaretoken": token}
    )
    assert response.status_code == 302
    assert session_state(tenant_a, "s-1")[0].status == "closed"
