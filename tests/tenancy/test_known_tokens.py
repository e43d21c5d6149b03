"""A token the process knows is not looked up again, and is still refused at once.

Each request with such a token carries `tenancy_token_live` in its first tenant
statement (tenancy_app.auth): a revoked token fails its next request, on a
route with a request transaction or without one, also one that sends no
statement at all; a changed tenant is read again before the request acts.
The revocations and changes are committed by other connections, as an admin's
would be from another process.
"""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from sessions_app.models import SessionItem
from tenancy_app import auth
from tenancy_app.models import RuntimeToken, Tenant
from tenancy_app.scoping import in_tenant

from ..runs.conftest import make_task
from ..sessions.conftest import make_session

JSON = "application/json"
ITEM = {"role": "user", "item_type": "message", "payload": {"n": 1}}


def elsewhere(write) -> None:
    """`write()` on another connection (a thread has its own), committed before this returns."""
    failure: list[BaseException] = []

    def run() -> None:
        try:
            write()
        except BaseException as exc:  # re-raised below
            failure.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


@pytest.fixture
def known(transactional_db, make_token, tenant_a) -> Client:
    """A client whose token the process has read (and keeps) by its first call."""
    make_session(tenant_a, "s-1")
    client = Client(headers={"Authorization": f"Bearer {make_token(tenant_a)}"})
    assert client.get("/api/v1/sessions/s-1/items").status_code == 200
    return client


def revoke(tenant) -> None:
    def write() -> None:
        with in_tenant(tenant):
            RuntimeToken.objects.update(revoked_at=timezone.now())

    elsewhere(write)


def items(tenant) -> int:
    with in_tenant(tenant):
        return SessionItem.objects.count()


def test_a_known_token_is_not_read_again(known):
    with CaptureQueriesContext(connection) as queries:
        assert known.get("/api/v1/sessions/s-1/items").status_code == 200
    sql = " ".join(q["sql"] for q in queries)
    assert "tenancy_token_by_hash" not in sql
    assert "tenancy_token_live(" in sql


def test_a_revoked_known_token_fails_its_next_append_and_writes_nothing(known, tenant_a):
    revoke(tenant_a)
    response = known.post("/api/v1/sessions/s-1/items", {"items": [ITEM]}, content_type=JSON)
    assert response.status_code == 401, response.content
    assert response.json()["error"]["code"] == "unauthenticated"
    assert items(tenant_a) == 0


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("get", "/api/v1/sessions/s-1/items", None),  # no request transaction: one message
        ("get", "/api/v1/me", None),  # a request transaction
        ("get", "/api/v1/runs", None),
        # Refused by validation before any statement: checked on its own, 401 not 422.
        ("post", "/api/v1/langgraph/checkpoints", {"thread_id": "t"}),
        ("post", "/api/v1/sessions/s-1/items", {"items": "not a list"}),
    ],
)
def test_a_revoked_known_token_fails_its_next_call_on_every_kind_of_route(
    known, tenant_a, method, path, body
):
    revoke(tenant_a)
    if body is None:
        response = getattr(known, method)(path)
    else:
        response = getattr(known, method)(path, body, content_type=JSON)
    assert response.status_code == 401, response.content
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_a_known_token_of_a_changed_tenant_acts_on_the_tenant_as_it_is_now(known, tenant_a):
    make_task(tenant_a, task_id="th-1")
    elsewhere(lambda: Tenant.objects.filter(pk=tenant_a.pk).update(legal_hold=True))
    refused = known.delete("/api/v1/tasks/th-1/langgraph")
    assert refused.status_code == 409, refused.content
    assert refused.json()["error"]["code"] == "legal_hold"


def test_a_call_refused_for_a_changed_tenant_runs_once_on_the_fresh_rows(known, tenant_a):
    elsewhere(lambda: Tenant.objects.filter(pk=tenant_a.pk).update(name="Acme Two"))
    with CaptureQueriesContext(connection) as queries:
        response = known.post("/api/v1/sessions/s-1/items", {"items": [ITEM]}, content_type=JSON)
    assert response.status_code == 201, response.content
    sql = [q["sql"] for q in queries]
    # The message with the check did nothing; the token was read again, then the append.
    assert "tenancy_token_live(" in sql[0]
    assert "tenancy_token_by_hash" in sql[1]
    assert "tenancy_token_live(" not in " ".join(sql[2:])
    assert items(tenant_a) == 1
    # The process keeps the fresh copy: the next call is one message again.
    with CaptureQueriesContext(connection) as queries:
        assert known.get("/api/v1/sessions/s-1/items").status_code == 200
    assert len(queries) == 1


def test_another_tenants_token_still_sees_nothing_of_this_one(known, api_b, tenant_a):
    assert api_b.get("/api/v1/sessions/s-1/items").status_code == 404
    assert api_b.get("/api/v1/sessions/s-1/items").status_code == 404  # known now too
    assert known.get("/api/v1/sessions/s-1/items").status_code == 200


def last_used(tenant):
    with in_tenant(tenant):
        return RuntimeToken.objects.get().last_used_at


def test_a_revoked_known_token_is_not_stamped_as_used(known, tenant_a, monkeypatch):
    monkeypatch.setattr(auth, "LAST_USED_RESOLUTION", timedelta(0))  # every call stamps
    assert known.get("/api/v1/sessions/s-1/items").status_code == 200
    stamped = last_used(tenant_a)
    assert stamped is not None
    revoke(tenant_a)
    assert known.get("/api/v1/sessions/s-1/items").status_code == 401
    assert last_used(tenant_a) == stamped
