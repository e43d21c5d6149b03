"""The sessions REST API (API.md "Sessions"): every endpoint, its errors, isolation, auth.

Each failing request is checked to change nothing (a snapshot of the tenant's
sessions, attachments, items, idempotency records and audit log), except the
one refusal that records a fact: an expired lease found on the way.
"""

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from sessions_app.models import Session
from tenancy_app.scoping import in_tenant

from .conftest import Clock, audit_events, item, make_run, make_session, post, snapshot, store_for

API = "/api/v1/sessions"


def iso(value) -> str | None:
    if value is None:
        return None
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def session_json(tenant, session_id: str, attached: list[str] | None = None) -> dict:
    with in_tenant(tenant):
        s = Session.objects.get(session_id=session_id)
    return {
        "session_id": s.session_id,
        "user_id": s.user_id,
        "status": s.status,
        "lease_until": iso(s.lease_until),
        "revision": s.revision,
        "attached_run_ids": attached or [],
        "created_at": iso(s.created_at),
        "last_active_at": iso(s.last_active_at),
        "metadata": s.metadata,
        "legal_hold": s.legal_hold,
        "content_deleted_at": iso(s.content_deleted_at),
    }


def stale_session(tenant, session_id: str = "s-a") -> Session:
    """A session whose one-hour lease ran out an hour ago."""
    return make_session(
        tenant, session_id, clock=Clock(timezone.now() - timedelta(hours=2)), lease_seconds=3600
    )


def assert_error(response, status: int, code: str, details=None) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    if details is not None:
        assert body["error"]["details"] == details
    return body


def attach_body(run_id="run-1", revision=0, user_id="alice") -> dict:
    return {"run_id": run_id, "user_id": user_id, "expected_revision": revision}


@pytest.fixture
def s_a(tenant_a):
    return make_session(tenant_a, "s-a")


# --- POST /sessions -----------------------------------------------------------
def test_create_returns_201_with_the_session(api_a, tenant_a):
    response = post(
        api_a,
        API,
        {"session_id": "s-a", "user_id": "alice", "metadata": {"k": "v"}, "lease_seconds": 60},
    )
    assert response.status_code == 201
    assert response.json() == session_json(tenant_a, "s-a")
    body = response.json()
    assert (body["status"], body["revision"], body["metadata"]) == ("active", 0, {"k": "v"})
    with in_tenant(tenant_a):
        s = Session.objects.get()
    assert s.lease_until - s.created_at == timedelta(seconds=60)


def test_create_generates_an_id_and_defaults_the_lease(api_a, tenant_a, make_tenant, make_token):
    response = post(api_a, API, {"user_id": "alice"})
    assert response.status_code == 201
    session_id = response.json()["session_id"]
    assert session_id.startswith("sess_") and len(session_id) == 25
    with in_tenant(tenant_a):
        s = Session.objects.get()
    # The tenant's default: 30 days unless it set another.
    assert (s.session_id, s.lease_until - s.created_at, s.lease_seconds) == (
        session_id,
        timedelta(days=30),
        30 * 86400,
    )
    short = make_tenant("shortlease", session_lease_seconds=600)
    client = Client(headers={"Authorization": f"Bearer {make_token(short)}"})
    body = post(client, API, {"user_id": "alice"}).json()
    with in_tenant(short):
        s = Session.objects.get(session_id=body["session_id"])
    assert (s.lease_until - s.created_at, s.lease_seconds) == (timedelta(minutes=10), 600)


def test_create_duplicate_id_is_409(api_a, tenant_a, s_a):
    before = snapshot(tenant_a)
    response = post(api_a, API, {"session_id": "s-a", "user_id": "bob"})
    assert_error(response, 409, "session_exists", {"session_id": "s-a"})
    assert snapshot(tenant_a) == before


def test_create_same_id_in_another_tenant_is_fine(api_b, tenant_a, tenant_b, s_a):
    assert post(api_b, API, {"session_id": "s-a", "user_id": "bob"}).status_code == 201
    assert session_json(tenant_a, "s-a")["user_id"] == "alice"


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, ["user_id"]),
        ({"user_id": 5}, ["user_id"]),
        ({"user_id": "u" * 129}, ["user_id"]),
        ({"user_id": "alice", "session_id": "bad id!"}, ["session_id"]),
        ({"user_id": "alice", "session_id": "x" * 129}, ["session_id"]),
        ({"user_id": "alice", "lease_seconds": 0}, ["lease_seconds"]),
        ({"user_id": "alice", "lease_seconds": 30 * 86400 + 1}, ["lease_seconds"]),
        ({"user_id": "alice", "metadata": ["x"]}, ["metadata"]),
    ],
)
def test_create_invalid_fields_are_422(api_a, tenant_a, body, fields):
    response = post(api_a, API, body)
    body = assert_error(response, 422, "validation_error")
    assert sorted(body["error"]["details"]) == fields
    assert snapshot(tenant_a)["sessions"] == []


def test_create_malformed_bodies_are_400(api_a, tenant_a):
    assert_error(post(api_a, API, "{nope"), 400, "malformed_json")
    assert_error(post(api_a, API, "[1, 2]"), 400, "body_not_object")
    assert snapshot(tenant_a)["sessions"] == []


def test_create_body_over_the_limit_is_413(api_a, tenant_a, settings):
    settings.STATEROOM_MAX_BODY_BYTES = 200
    response = post(api_a, API, {"user_id": "alice", "metadata": {"blob": "x" * 300}})
    assert_error(response, 413, "payload_too_large", {"limit_bytes": 200})
    assert snapshot(tenant_a)["sessions"] == []


def test_every_endpoint_needs_a_valid_token(tenant_a, s_a):
    before = snapshot(tenant_a)
    for client in (Client(), Client(headers={"Authorization": "Bearer sr_not-a-token"})):
        calls = [
            client.get(API),
            post(client, API, {"user_id": "alice"}),
            client.get(f"{API}/s-a"),
            post(client, f"{API}/s-a/attach", attach_body()),
            post(client, f"{API}/s-a/detach", attach_body()),
            post(client, f"{API}/s-a/heartbeat"),
            post(client, f"{API}/s-a/close"),
            client.get(f"{API}/s-a/items"),
            post(client, f"{API}/s-a/items", {"items": [item()]}),
        ]
        for response in calls:
            assert_error(response, 401, "unauthenticated")
            assert response["WWW-Authenticate"] == 'Bearer realm="stateroom"'
    assert snapshot(tenant_a) == before


@pytest.mark.parametrize("action", ["attach", "detach", "heartbeat", "close", "items"])
def test_every_post_refuses_malformed_and_oversized_bodies(api_a, tenant_a, s_a, settings, action):
    path = f"{API}/s-a/{action}"
    before = snapshot(tenant_a)
    assert_error(post(api_a, path, "{nope"), 400, "malformed_json")
    assert_error(post(api_a, path, '"a string"'), 400, "body_not_object")
    settings.STATEROOM_MAX_BODY_BYTES = 100
    assert_error(post(api_a, path, {"reason": "x" * 200}), 413, "payload_too_large")
    assert snapshot(tenant_a) == before


def test_paths_have_no_trailing_slash(api_a, s_a):
    assert api_a.get(f"{API}/s-a").status_code == 200
    assert api_a.get(f"{API}/s-a/").status_code == 404
    assert api_a.get(f"{API}/").status_code == 404


# --- GET /sessions/{id} -------------------------------------------------------
def test_get_returns_the_session(api_a, tenant_a, s_a):
    with in_tenant(tenant_a):
        store_for(tenant_a).attach(
            session_id="s-a", user_id="alice", run_id="run-1", expected_revision=0
        )
    response = api_a.get(f"{API}/s-a")
    assert response.status_code == 200
    assert response.json() == session_json(tenant_a, "s-a", ["run-1"])


def test_get_unknown_or_other_tenants_session_is_404(api_a, api_b, s_a):
    assert_error(api_a.get(f"{API}/nope"), 404, "not_found", {"session_id": "nope"})
    assert_error(api_b.get(f"{API}/s-a"), 404, "not_found", {"session_id": "s-a"})


# --- GET /sessions ------------------------------------------------------------
def test_list_filters_and_pages(api_a, api_b, tenant_a):
    for n in range(5):
        make_session(tenant_a, f"s-{n}", user_id="alice" if n % 2 == 0 else "bob")
    with in_tenant(tenant_a):
        store_for(tenant_a).close(session_id="s-4")

    first = api_a.get(f"{API}?limit=2")
    assert first.status_code == 200
    page = first.json()
    assert [s["session_id"] for s in page["results"]] == ["s-4", "s-3"]
    assert page["results"][0] == session_json(tenant_a, "s-4")
    with in_tenant(tenant_a):
        cursor = Session.objects.get(session_id="s-3").pk
    assert page["next"] == f"http://testserver{API}?limit=2&cursor={cursor}"
    second = api_a.get(page["next"]).json()
    assert [s["session_id"] for s in second["results"]] == ["s-2", "s-1"]
    third = api_a.get(second["next"]).json()
    assert ([s["session_id"] for s in third["results"]], third["next"]) == (["s-0"], None)

    def ids(query: str) -> list[str]:
        response = api_a.get(f"{API}?{query}")
        assert response.status_code == 200
        return [s["session_id"] for s in response.json()["results"]]

    assert ids("status=active&user_id=alice") == ["s-2", "s-0"]
    assert ids("status=closed") == ["s-4"]
    assert ids("user_id=bob") == ["s-3", "s-1"]
    assert ids("status=&user_id=") == ["s-4", "s-3", "s-2", "s-1", "s-0"]
    assert api_b.get(API).json() == {"results": [], "next": None}


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("status=bogus", "status"),
        ("limit=0", "limit"),
        ("limit=501", "limit"),
        ("cursor=x", "cursor"),
    ],
)
def test_list_invalid_filters_are_422(api_a, query, field):
    body = assert_error(api_a.get(f"{API}?{query}"), 422, "validation_error")
    assert list(body["error"]["details"]) == [field]


def test_list_costs_the_same_queries_for_any_page_size(api_a, tenant_a):
    tenant_a.allow_concurrent_runs = True
    tenant_a.save(update_fields=["allow_concurrent_runs"])

    def count_queries() -> int:
        with CaptureQueriesContext(connection) as queries:
            response = api_a.get(API)
        assert response.status_code == 200
        return len(queries)

    store = store_for(tenant_a)
    for n in range(2):
        make_session(tenant_a, f"s-{n}")
        with in_tenant(tenant_a):
            make_run(tenant_a, f"r-{n}")
            store.attach(session_id=f"s-{n}", user_id="alice", run_id=f"r-{n}", expected_revision=0)
    api_a.get(API)  # the token's first use is recorded once; measure afterwards
    small = count_queries()
    for n in range(2, 12):
        make_session(tenant_a, f"s-{n}")
        with in_tenant(tenant_a):
            make_run(tenant_a, f"r-{n}")
            make_run(tenant_a, f"q-{n}")
            store.attach(session_id=f"s-{n}", user_id="alice", run_id=f"r-{n}", expected_revision=0)
            store.attach(session_id=f"s-{n}", user_id="alice", run_id=f"q-{n}", expected_revision=1)
    body = api_a.get(API).json()
    assert body["results"][0]["attached_run_ids"] == ["r-11", "q-11"]
    assert count_queries() == small


# --- POST /sessions/{id}/attach -------------------------------------------------
def test_attach_returns_the_session_one_revision_later(api_a, tenant_a, s_a):
    response = post(api_a, f"{API}/s-a/attach", attach_body())
    assert response.status_code == 200
    assert response.json() == session_json(tenant_a, "s-a", ["run-1"])
    assert response.json()["revision"] == 1


@pytest.mark.parametrize(
    ("setup", "body", "status", "code", "details"),
    [
        (None, attach_body(user_id="mallory"), 403, "session_scope_mismatch", {}),
        (None, attach_body(revision=3), 409, "revision_conflict", {"current_revision": 0}),
        ("close", attach_body(), 409, "session_not_attachable", {"status": "closed"}),
        ("expire", attach_body(), 409, "session_not_attachable", {"status": "expired"}),
        (
            "attach",
            attach_body(run_id="run-2", revision=1),
            409,
            "session_busy",
            {"attached_run_ids": ["run-1"]},
        ),
        ("run-elsewhere", attach_body(), 409, "run_not_attachable", {"run_id": "run-1"}),
    ],
)
def test_attach_refusals_change_nothing(api_a, tenant_a, s_a, setup, body, status, code, details):
    store = store_for(tenant_a)
    with in_tenant(tenant_a):
        if setup == "close":
            store.close(session_id="s-a")
        elif setup == "expire":
            store.expire(session_id="s-a")
        elif setup == "attach":
            store.attach(session_id="s-a", user_id="alice", run_id="run-1", expected_revision=0)
        elif setup == "run-elsewhere":
            other = store.create(session_id="s-b", user_id="alice")
    if setup == "run-elsewhere":
        make_run(tenant_a, "run-1", session=other)
    before = snapshot(tenant_a)
    assert_error(post(api_a, f"{API}/s-a/attach", body), status, code, details)
    assert snapshot(tenant_a) == before


def test_attach_after_the_lease_passed_is_409_and_the_expiry_stays(api_a, tenant_a):
    stale_session(tenant_a)
    body = assert_error(
        post(api_a, f"{API}/s-a/attach", attach_body()), 409, "session_not_attachable"
    )
    assert body["error"]["details"]["status"] == "expired"
    assert session_json(tenant_a, "s-a")["status"] == "expired"
    assert snapshot(tenant_a)["attachments"] == []
    [event] = audit_events(tenant_a)
    assert (event.action, event.actor_type, event.actor_label) == (
        "session.expired",
        "system",
        "lease",
    )


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, ["expected_revision", "run_id", "user_id"]),
        (attach_body(run_id="bad id"), ["run_id"]),
        (attach_body(revision=-1), ["expected_revision"]),
        ({**attach_body(), "expected_revision": "x"}, ["expected_revision"]),
        ({**attach_body(), "user_id": 1}, ["user_id"]),
    ],
)
def test_attach_invalid_body_is_422(api_a, tenant_a, s_a, body, fields):
    before = snapshot(tenant_a)
    response = assert_error(post(api_a, f"{API}/s-a/attach", body), 422, "validation_error")
    assert sorted(response["error"]["details"]) == fields
    assert snapshot(tenant_a) == before


def test_attach_unknown_or_other_tenants_session_is_404_whatever_the_body(
    api_a, api_b, tenant_a, s_a
):
    before = snapshot(tenant_a)
    for client, path in ((api_b, f"{API}/s-a/attach"), (api_a, f"{API}/nope/attach")):
        assert_error(post(client, path, attach_body()), 404, "not_found")
        assert_error(post(client, path, {"run_id": "bad id"}), 404, "not_found")
        assert_error(post(client, path, "{nope"), 404, "not_found")
    assert snapshot(tenant_a) == before


# --- POST /sessions/{id}/detach -------------------------------------------------
def test_detach_keeps_the_session_active(api_a, tenant_a, s_a):
    post(api_a, f"{API}/s-a/attach", attach_body())
    response = post(api_a, f"{API}/s-a/detach", attach_body(revision=1))
    assert response.status_code == 200
    assert response.json() == session_json(tenant_a, "s-a", [])
    assert (response.json()["status"], response.json()["revision"]) == ("active", 2)


@pytest.mark.parametrize(
    ("setup", "body", "status", "code", "details"),
    [
        (
            "attach",
            attach_body(run_id="run-9", revision=1),
            409,
            "run_not_attached",
            {"run_id": "run-9", "attached_run_ids": ["run-1"]},
        ),
        (None, attach_body(), 409, "run_not_attached", {"run_id": "run-1", "attached_run_ids": []}),
        ("attach", attach_body(revision=0), 409, "revision_conflict", {"current_revision": 1}),
        ("attach", attach_body(revision=1, user_id="eve"), 403, "session_scope_mismatch", {}),
        ("close", attach_body(), 409, "session_terminal", {"status": "closed"}),
        ("attach", {"run_id": "run-1"}, 422, "validation_error", None),
    ],
)
def test_detach_refusals_change_nothing(api_a, tenant_a, s_a, setup, body, status, code, details):
    store = store_for(tenant_a)
    with in_tenant(tenant_a):
        if setup == "attach":
            store.attach(session_id="s-a", user_id="alice", run_id="run-1", expected_revision=0)
        elif setup == "close":
            store.close(session_id="s-a")
    before = snapshot(tenant_a)
    assert_error(post(api_a, f"{API}/s-a/detach", body), status, code, details)
    assert snapshot(tenant_a) == before


def test_detach_other_tenants_session_is_404(api_b, tenant_a, s_a):
    with in_tenant(tenant_a):
        store_for(tenant_a).attach(
            session_id="s-a", user_id="alice", run_id="run-1", expected_revision=0
        )
    before = snapshot(tenant_a)
    assert_error(post(api_b, f"{API}/s-a/detach", attach_body(revision=1)), 404, "not_found")
    assert_error(post(api_b, f"{API}/s-a/detach", {}), 404, "not_found")
    assert snapshot(tenant_a) == before


# --- POST /sessions/{id}/heartbeat ----------------------------------------------
def test_heartbeat_renews_the_lease(api_a, tenant_a, s_a):
    start = timezone.now()
    response = post(api_a, f"{API}/s-a/heartbeat", {"lease_seconds": 120})
    end = timezone.now()
    assert response.status_code == 200
    assert response.json() == session_json(tenant_a, "s-a")
    with in_tenant(tenant_a):
        lease_until = Session.objects.get().lease_until
    assert start + timedelta(seconds=120) <= lease_until <= end + timedelta(seconds=120)
    assert post(api_a, f"{API}/s-a/heartbeat").json()["revision"] == 0


def test_heartbeat_refusals(api_a, api_b, tenant_a, s_a):
    before = snapshot(tenant_a)
    for lease in (0, 30 * 86400 + 1, "x"):
        body = assert_error(
            post(api_a, f"{API}/s-a/heartbeat", {"lease_seconds": lease}), 422, "validation_error"
        )
        assert list(body["error"]["details"]) == ["lease_seconds"]
    assert_error(post(api_b, f"{API}/s-a/heartbeat"), 404, "not_found")
    assert_error(post(api_b, f"{API}/s-a/heartbeat", {"lease_seconds": 0}), 404, "not_found")
    assert snapshot(tenant_a) == before
    with in_tenant(tenant_a):
        store_for(tenant_a).close(session_id="s-a")
    before = snapshot(tenant_a)
    assert_error(post(api_a, f"{API}/s-a/heartbeat"), 409, "session_terminal", {"status": "closed"})
    assert snapshot(tenant_a) == before


def test_heartbeat_after_the_lease_passed_expires(api_a, tenant_a):
    stale_session(tenant_a)
    assert_error(post(api_a, f"{API}/s-a/heartbeat"), 409, "session_terminal")
    assert session_json(tenant_a, "s-a")["status"] == "expired"
    assert [e.action for e in audit_events(tenant_a)] == ["session.expired"]


# --- POST /sessions/{id}/close ---------------------------------------------------
def test_close_is_audited_once_as_the_token(api_a, tenant_a, s_a):
    response = post(api_a, f"{API}/s-a/close", {"reason": "conversation over"})
    assert response.status_code == 200
    assert response.json() == session_json(tenant_a, "s-a")
    assert response.json()["status"] == "closed"
    [event] = audit_events(tenant_a, "session.closed")
    assert (event.actor_type, event.actor_label, event.reason, event.after) == (
        "token",
        "token:worker",
        "",  # a runtime's words are not kept in the append-only log...
        {"status": "closed"},
    )
    with in_tenant(tenant_a):  # ...but in its detached, redactable payload
        assert event.payload.content == {"reason": "conversation over"}


def test_close_refusals_change_nothing(api_a, api_b, tenant_a, s_a):
    before = snapshot(tenant_a)
    assert_error(post(api_a, f"{API}/s-a/close", {"reason": 5}), 422, "validation_error")
    assert_error(post(api_b, f"{API}/s-a/close"), 404, "not_found")
    assert snapshot(tenant_a) == before
    post(api_a, f"{API}/s-a/close")
    before = snapshot(tenant_a)
    assert_error(post(api_a, f"{API}/s-a/close"), 409, "session_terminal", {"status": "closed"})
    assert snapshot(tenant_a) == before


# --- /sessions/{id}/items --------------------------------------------------------
def test_append_returns_201_then_200_for_the_same_key(api_a, tenant_a, s_a):
    path = f"{API}/s-a/items"
    body = {"items": [item("a"), item("b", role="assistant")], "idempotency_key": "turn-1"}
    first = post(api_a, path, body)
    assert (first.status_code, first.json()) == (201, {"first_seq": 1, "last_seq": 2})
    assert post(api_a, path, {"items": [item("c")]}).json() == {"first_seq": 3, "last_seq": 3}
    again = post(api_a, path, body)
    assert (again.status_code, again.json()) == (200, {"first_seq": 1, "last_seq": 2})
    assert len(snapshot(tenant_a)["items"]) == 3


def test_append_by_an_attached_run(api_a, tenant_a, s_a):
    post(api_a, f"{API}/s-a/attach", attach_body())
    response = post(api_a, f"{API}/s-a/items", {"items": [item()], "run_id": "run-1"})
    assert response.status_code == 201
    [row] = api_a.get(f"{API}/s-a/items").json()["results"]
    assert (row["seq"], row["run_id"]) == (1, "run-1")


def test_append_refusals_change_nothing(api_a, api_b, tenant_a, s_a):
    path = f"{API}/s-a/items"
    post(api_a, path, {"items": [item("a")], "idempotency_key": "k"})
    before = snapshot(tenant_a)
    assert_error(
        post(api_a, path, {"items": [item("other")], "idempotency_key": "k"}),
        422,
        "idempotency_key_reused",
    )
    body = assert_error(
        post(
            api_a,
            path,
            {"items": [item(), {"role": 1, "item_type": "", "payload": []}, "x"], "run_id": "no!"},
        ),
        422,
        "validation_error",
    )
    assert body["error"]["details"] == {
        "items[1].role": ["Not a valid string."],
        "items[1].item_type": ["This field may not be blank."],
        "items[1].payload": ['Expected a dictionary of items but got type "list".'],
        "items[2]": ["Invalid data. Expected a dictionary, but got str."],
        "run_id": ["must be 1-128 characters of A-Z a-z 0-9 . _ : -"],
    }
    assert_error(post(api_a, path, {"items": []}), 422, "validation_error")
    assert_error(post(api_a, path, {}), 422, "validation_error")
    assert_error(
        post(api_a, path, {"items": [item()], "run_id": "run-9"}),
        409,
        "run_not_attached",
        {"run_id": "run-9"},
    )
    assert_error(post(api_a, path, "{nope"), 400, "malformed_json")
    assert_error(post(api_b, path, {"items": [item()]}), 404, "not_found")
    assert_error(post(api_b, path, {"items": []}), 404, "not_found")
    assert_error(post(api_a, f"{API}/nope/items", {"items": "x"}), 404, "not_found")
    assert snapshot(tenant_a) == before
    with in_tenant(tenant_a):
        store_for(tenant_a).close(session_id="s-a")
    before = snapshot(tenant_a)
    assert_error(
        post(api_a, path, {"items": [item()]}), 409, "session_terminal", {"status": "closed"}
    )
    assert snapshot(tenant_a) == before


@pytest.mark.parametrize(
    ("raw", "status", "code", "details"),
    [
        (
            '{"items": [{"role": "user", "item_type": "m", "payload": {"x": NaN}}]}',
            400,
            "malformed_json",
            {},
        ),
        (
            '{"items": [{"role": "user", "item_type": "m", "payload": {"x": "a\\u0000b"}}]}',
            422,
            "invalid_text",
            {"items[0].payload.x": ["contains a NUL character"]},
        ),
        (
            '{"items": [{"role": "user", "item_type": "m", "payload": {"x": "\\ud800"}}]}',
            422,
            "invalid_text",
            {"items[0].payload.x": ["contains a lone surrogate (not valid Unicode)"]},
        ),
    ],
)
def test_append_payloads_the_database_cannot_store_are_refused(
    api_a, tenant_a, s_a, raw, status, code, details
):
    before = snapshot(tenant_a)
    body = assert_error(post(api_a, f"{API}/s-a/items", raw), status, code)
    assert body["error"]["details"] == details
    assert_error(post(api_a, f"{API}/nope/items", raw), 404, "not_found")
    assert snapshot(tenant_a) == before


def test_create_metadata_that_is_not_json_is_400(api_a, tenant_a):
    raw = '{"user_id": "alice", "metadata": {"x": Infinity}}'
    body = assert_error(post(api_a, API, raw), 400, "malformed_json")
    assert body["error"]["message"] == "Malformed JSON: Infinity is not JSON"
    assert snapshot(tenant_a)["sessions"] == []


def test_append_after_the_lease_passed_expires(api_a, tenant_a):
    stale_session(tenant_a)
    assert_error(post(api_a, f"{API}/s-a/items", {"items": [item()]}), 409, "session_terminal")
    assert session_json(tenant_a, "s-a")["status"] == "expired"
    assert snapshot(tenant_a)["items"] == []


def test_items_list_in_seq_order_with_next(api_a, tenant_a, s_a):
    post(api_a, f"{API}/s-a/items", {"items": [item(str(n)) for n in range(1, 6)]})
    path = f"{API}/s-a/items"
    page = api_a.get(f"{path}?limit=2").json()
    with in_tenant(tenant_a):
        first = store_for(tenant_a).get_items(session_id="s-a", limit=1)[0]
    assert page["results"][0] == {
        "seq": 1,
        "role": "user",
        "item_type": "message",
        "payload": {"text": "1"},
        "run_id": "",
        "created_at": iso(first.created_at),
    }
    assert [r["seq"] for r in page["results"]] == [1, 2]
    assert page["next"] == f"http://testserver{path}?limit=2&after_seq=2"
    page = api_a.get(page["next"]).json()
    assert [r["seq"] for r in page["results"]] == [3, 4]
    page = api_a.get(page["next"]).json()
    assert ([r["seq"] for r in page["results"]], page["next"]) == ([5], None)

    older = api_a.get(f"{path}?before_seq=5&limit=2").json()
    assert ([r["seq"] for r in older["results"]], older["next"]) == ([3, 4], None)
    assert [r["seq"] for r in api_a.get(f"{path}?after_seq=3").json()["results"]] == [4, 5]
    assert api_a.get(f"{path}?after_seq=5").json() == {"results": [], "next": None}


def test_items_read_back_what_was_written_payload_as_stored(api_a, s_a):
    # The page's payloads are PostgreSQL's JSON text written into the response
    # as they are (get_items(raw_payload=True)); what a client parses is what it sent.
    payloads = [
        {"text": "naïve — 東京 🚀 \u2028 line \u2029 para", "quote": '"\\/\t\n'},
        {"nested": {"list": [1, 2.5, -0.25, True, False, None, [], {}]}, "": "empty key"},
        {"big": 2**53 - 1, "tiny": 1e-7, "exp": 1.5e10},
    ]
    body = {"items": [{"role": "user", "item_type": "message", "payload": p} for p in payloads]}
    created = post(api_a, f"{API}/s-a/items", body)
    assert created.status_code == 201, created.json()
    response = api_a.get(f"{API}/s-a/items")
    assert response.status_code == 200
    assert [r["payload"] for r in response.json()["results"]] == payloads
    # A script may embed the JSON: the line and paragraph separators stay escaped.
    assert b"\\u2028" in response.content and "\u2028".encode() not in response.content
    pretty = api_a.get(f"{API}/s-a/items", headers={"Accept": "application/json; indent=2"})
    assert pretty.content.startswith(b'{\n  "results"')
    assert [r["payload"] for r in pretty.json()["results"]] == payloads


def test_items_list_refusals(api_a, api_b, s_a):
    path = f"{API}/s-a/items"
    for query, field in (
        ("limit=0", "limit"),
        ("after_seq=x", "after_seq"),
        ("before_seq=1.5", "before_seq"),
    ):
        body = assert_error(api_a.get(f"{path}?{query}"), 422, "validation_error")
        assert list(body["error"]["details"]) == [field]
    assert_error(api_b.get(path), 404, "not_found")
    assert_error(api_b.get(f"{path}?limit=0"), 404, "not_found")
    assert_error(api_a.get(f"{API}/nope/items"), 404, "not_found")


# --- schema -------------------------------------------------------------------
def test_schema_documents_every_sessions_operation(client):
    schema = client.get("/api/v1/schema/?format=json").json()
    paths = schema["paths"]

    def statuses(path: str, method: str) -> list[str]:
        return sorted(paths[f"/api/v1/sessions{path}"][method]["responses"])

    write = ["400", "401", "404", "411", "413", "422", "429", "503"]
    assert statuses("", "get") == ["200", "401", "422", "429", "503"]
    assert statuses("", "post") == ["201", "400", "401", "409", "411", "413", "422", "429", "503"]
    assert statuses("/{session_id}", "get") == ["200", "401", "404", "422", "429", "503"]
    assert statuses("/{session_id}/attach", "post") == sorted(["200", "403", "409", *write])
    assert statuses("/{session_id}/detach", "post") == sorted(["200", "403", "409", *write])
    assert statuses("/{session_id}/heartbeat", "post") == sorted(["200", "409", *write])
    assert statuses("/{session_id}/close", "post") == sorted(["200", "409", *write])
    assert statuses("/{session_id}/items", "get") == ["200", "401", "404", "422", "429", "503"]
    assert statuses("/{session_id}/items", "post") == sorted(["200", "201", "409", *write])
    out = schema["components"]["schemas"]["SessionOut"]
    assert sorted(out["properties"]) == sorted(
        [
            "session_id",
            "user_id",
            "status",
            "lease_until",
            "revision",
            "attached_run_ids",
            "created_at",
            "last_active_at",
            "metadata",
            "legal_hold",
            "content_deleted_at",
        ]
    )
    params = {p["name"] for p in paths["/api/v1/sessions"]["get"]["parameters"]}
    assert params == {"status", "user_id", "limit", "cursor"}
    item_params = {
        p["name"] for p in paths["/api/v1/sessions/{session_id}/items"]["get"]["parameters"]
    }
    assert item_params == {"session_id", "after_seq", "before_seq", "limit"}
