from datetime import UTC, datetime

import pytest
from django.test import Client

from runs_app.models import Run, RunEvent
from tenancy_app.scoping import in_tenant

from .conftest import make_checkpoint, make_run, make_session, make_task, reload

JSON = "application/json"


def post(client: Client, path: str, body=None, **kw):
    return client.post(path, body if body is not None else {}, content_type=JSON, **kw)


def run_count(tenant) -> int:
    with in_tenant(tenant):
        return Run.objects.filter(tenant=tenant).count()


def event_count(tenant) -> int:
    with in_tenant(tenant):
        return RunEvent.objects.filter(tenant=tenant).count()


def error_of(response) -> tuple:
    body = response.json()["error"]
    return response.status_code, body["code"], body["details"]


# --- POST /runs ---------------------------------------------------------------------
def test_create_run_returns_201_in_created_at_version_1(api_a, tenant_a):
    make_session(tenant_a, "sess-1")
    make_task(tenant_a, "task-1")
    response = post(
        api_a,
        "/api/v1/runs",
        {
            "run_id": "r-1",
            "session_id": "sess-1",
            "task_id": "task-1",
            "active_agent": "planner",
            "deadline_at": "2030-01-02T03:04:05Z",
        },
    )
    assert response.status_code == 201
    body = response.json()
    created_at = body.pop("created_at")
    assert body.pop("updated_at") == created_at
    assert created_at.endswith("Z")
    assert body == {
        "run_id": "r-1",
        "session_id": "sess-1",
        "task_id": "task-1",
        "status": "created",
        "turn_index": 0,
        "active_agent": "planner",
        "current_node_id": None,
        "deadline_at": "2030-01-02T03:04:05Z",
        "token_used": 0,
        "cost_used": "0.000000",
        "model": None,
        "trace_id": None,
        "pending_approval_id": None,
        "last_checkpoint_id": None,
        "error": None,
        "version": 1,
        "claimed_by": None,
        "claim_until": None,
        "unclaimed_since": None,
    }
    assert reload(tenant_a, "r-1")["deadline_at"] == datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_create_run_without_body_generates_an_id(api_a, tenant_a):
    response = api_a.post("/api/v1/runs", "", content_type=JSON)
    assert response.status_code == 201
    assert response.json()["run_id"].startswith("run_")
    assert run_count(tenant_a) == 1


def test_create_run_refusals_change_nothing(api_a, tenant_a, tenant_b):
    make_run(tenant_a, run_id="r-1")
    make_session(tenant_b, "sess-b")
    assert error_of(post(api_a, "/api/v1/runs", {"run_id": "r-1"}))[:2] == (409, "run_exists")
    assert error_of(post(api_a, "/api/v1/runs", {"session_id": "nope"})) == (
        404,
        "not_found",
        {"session_id": "nope"},
    )
    assert error_of(post(api_a, "/api/v1/runs", {"session_id": "sess-b"}))[:2] == (
        404,
        "not_found",
    )
    assert error_of(post(api_a, "/api/v1/runs", {"task_id": "nope"}))[:2] == (404, "not_found")
    status, code, details = error_of(post(api_a, "/api/v1/runs", {"run_id": "has space"}))
    assert (status, code, list(details)) == (422, "validation_error", ["run_id"])
    status, code, details = error_of(post(api_a, "/api/v1/runs", {"deadline_at": "soon"}))
    assert (status, code, list(details)) == (422, "validation_error", ["deadline_at"])
    malformed = api_a.post("/api/v1/runs", "{not json", content_type=JSON)
    assert error_of(malformed)[:2] == (400, "malformed_json")
    assert error_of(api_a.post("/api/v1/runs", "[1]", content_type=JSON))[:2] == (
        400,
        "body_not_object",
    )
    assert run_count(tenant_a) == 1


def test_runs_endpoints_need_a_valid_token(client, db, tenant_a):
    make_run(tenant_a, run_id="r-1")
    bad = Client(headers={"Authorization": "Bearer sr_nope"})
    for c in (client, bad):
        assert error_of(post(c, "/api/v1/runs", {"run_id": "r-2"}))[:2] == (401, "unauthenticated")
        assert c.get("/api/v1/runs").status_code == 401
        assert c.get("/api/v1/runs/r-1").status_code == 401
        assert post(c, "/api/v1/runs/r-1/transition", {"expected_version": 1}).status_code == 401
        assert c.get("/api/v1/runs/r-1/events").status_code == 401
        assert post(c, "/api/v1/runs/r-1/events", {"events": []}).status_code == 401
    assert run_count(tenant_a) == 1
    assert reload(tenant_a, "r-1")["version"] == 1


# --- GET /runs/{id}, GET /runs ------------------------------------------------------------
def test_get_run_and_404_for_unknown_or_other_tenant(api_a, api_b, tenant_a):
    make_run(tenant_a, "running", run_id="r-1")
    response = api_a.get("/api/v1/runs/r-1")
    assert response.status_code == 200
    assert (response.json()["status"], response.json()["version"]) == ("running", 2)
    assert error_of(api_a.get("/api/v1/runs/nope")) == (404, "not_found", {"run_id": "nope"})
    assert error_of(api_b.get("/api/v1/runs/r-1")) == (404, "not_found", {"run_id": "r-1"})


def test_list_runs_filters_and_pages(api_a, api_b, tenant_a, tenant_b):
    make_session(tenant_a, "sess-1")
    make_run(tenant_a, "running", run_id="r-1", session_id="sess-1")
    make_run(tenant_a, run_id="r-2")
    make_run(tenant_a, "running", run_id="r-3")
    make_run(tenant_b, "running", run_id="r-b")
    everything = api_a.get("/api/v1/runs").json()
    assert [r["run_id"] for r in everything["results"]] == ["r-3", "r-2", "r-1"]
    assert everything["next"] is None
    running = api_a.get("/api/v1/runs?status=running").json()
    assert [r["run_id"] for r in running["results"]] == ["r-3", "r-1"]
    in_session = api_a.get("/api/v1/runs?session_id=sess-1").json()
    assert [(r["run_id"], r["session_id"]) for r in in_session["results"]] == [("r-1", "sess-1")]
    first = api_a.get("/api/v1/runs?limit=2").json()
    assert [r["run_id"] for r in first["results"]] == ["r-3", "r-2"]
    assert first["next"].startswith("http://testserver/api/v1/runs?limit=2&cursor=")
    second = api_a.get(first["next"]).json()
    assert ([r["run_id"] for r in second["results"]], second["next"]) == (["r-1"], None)
    assert [r["run_id"] for r in api_b.get("/api/v1/runs").json()["results"]] == ["r-b"]
    status, code, details = error_of(api_a.get("/api/v1/runs?status=bogus"))
    assert (status, code, list(details)) == (422, "validation_error", ["status"])
    assert error_of(api_a.get("/api/v1/runs?limit=0"))[:2] == (422, "validation_error")
    assert error_of(api_a.get("/api/v1/runs?limit=501"))[:2] == (422, "validation_error")


# --- POST /runs/{id}/transition --------------------------------------------------------
def test_transition_applies_changes_and_returns_version_plus_1(api_a, tenant_a):
    make_run(tenant_a, run_id="r-1")
    make_checkpoint(tenant_a, "cp-1")
    response = post(
        api_a,
        "/api/v1/runs/r-1/transition",
        {
            "expected_version": 1,
            "status": "running",
            "turn_index": 2,
            "current_node_id": "plan",
            "token_used": 1500,
            "cost_used": "0.042",
            "model": "gpt-5-mini",
            "last_checkpoint_id": "cp-1",
            "active_agent": "coder",
        },
    )
    assert response.status_code == 200
    body = response.json()
    assert {k: body[k] for k in body if k not in {"created_at", "updated_at", "deadline_at"}} == {
        "run_id": "r-1",
        "session_id": None,
        "task_id": None,
        "status": "running",
        "turn_index": 2,
        "active_agent": "coder",
        "current_node_id": "plan",
        "token_used": 1500,
        "cost_used": "0.042000",
        "model": "gpt-5-mini",
        "trace_id": None,
        "pending_approval_id": None,
        "last_checkpoint_id": "cp-1",
        "error": None,
        "version": 2,
        "claimed_by": None,
        "claim_until": None,
        "unclaimed_since": None,
    }
    failed = post(
        api_a,
        "/api/v1/runs/r-1/transition",
        {"expected_version": 2, "status": "failed", "error": {"code": "tool_crash"}},
    )
    assert (failed.json()["status"], failed.json()["error"]) == ("failed", {"code": "tool_crash"})
    cleared = reload(tenant_a, "r-1")
    assert (cleared["version"], cleared["current_node_id"]) == (3, "plan")


def test_transition_refusals_change_nothing(api_a, api_b, tenant_a):
    make_run(tenant_a, "running", run_id="r-1")
    make_run(tenant_a, "succeeded", run_id="done")
    before, done = reload(tenant_a, "r-1"), reload(tenant_a, "done")
    url = "/api/v1/runs/r-1/transition"
    assert error_of(post(api_a, url, {"expected_version": 1, "status": "suspended"})) == (
        409,
        "version_conflict",
        {"current_version": 2, "expected_version": 1, "status": "running"},
    )
    assert error_of(post(api_a, url, {"expected_version": 2, "status": "created"})) == (
        409,
        "invalid_transition",
        {"from": "running", "to": "created", "current_version": 2},
    )
    assert error_of(
        post(api_a, "/api/v1/runs/done/transition", {"expected_version": 3, "token_used": 1})
    ) == (409, "invalid_transition", {"from": "succeeded", "to": "succeeded", "current_version": 3})
    for body, field in [
        ({"expected_version": 2, "status": "bogus"}, "status"),
        ({"status": "running"}, "expected_version"),
        ({"expected_version": 2, "token_used": -5}, "token_used"),
        ({"expected_version": 2, "cost_used": "1.1234567"}, "cost_used"),
        ({"expected_version": 2, "error": "boom"}, "error"),
        ({"expected_version": "2"}, "expected_version"),
        ({"expected_version": 2, "token_used": 1.0}, "token_used"),
        ({"expected_version": 2, "cost_used": 0.5}, "cost_used"),
        ({"expected_version": 2, "cost_used": "-0.01"}, "cost_used"),
        ({"expected_version": 2, "cost_used": "1000000000000"}, "cost_used"),
        ({"expected_version": 2, "model": "m" * 201}, "model"),
        ({"expected_version": 2, "model": 5}, "model"),
    ]:
        status, code, details = error_of(post(api_a, url, body))
        assert (status, code, list(details)) == (422, "validation_error", [field]), body
    for body, field in [
        ({"expected_version": 2, "pending_approval_id": "apr-x"}, "pending_approval_id"),
        ({"expected_version": 2, "version": 9}, "version"),
    ]:
        status, code, details = error_of(post(api_a, url, body))
        assert (status, code, details) == (422, "unknown_field", {field: ["unknown field"]}), body
    # Lookup comes before body validation: another tenant's run is 404 whatever the body.
    assert error_of(post(api_b, url, {"expected_version": "x"}))[:2] == (404, "not_found")
    assert error_of(post(api_a, "/api/v1/runs/nope/transition", {}))[:2] == (404, "not_found")
    assert reload(tenant_a, "r-1") == before
    assert reload(tenant_a, "done") == done


# --- events ---------------------------------------------------------------------------
def test_events_append_gap_free_and_read_in_order(api_a, tenant_a):
    make_run(tenant_a, "running", run_id="r-1")
    url = "/api/v1/runs/r-1/events"
    first = post(
        api_a,
        url,
        {
            "events": [
                {"type": "model", "payload": {"text": "hi"}},
                {"type": "tool", "node_id": "n1", "payload": None},
            ]
        },
    )
    assert (first.status_code, first.json()) == (201, {"first_seq": 1, "last_seq": 2})
    second = post(api_a, url, {"events": [{"type": "done", "payload": [1, 2]}]})
    assert second.json() == {"first_seq": 3, "last_seq": 3}
    page = api_a.get(f"{url}?limit=2").json()
    assert [(e["seq"], e["type"], e["node_id"], e["payload"]) for e in page["results"]] == [
        (1, "model", None, {"text": "hi"}),
        (2, "tool", "n1", None),
    ]
    assert page["next"] == "http://testserver/api/v1/runs/r-1/events?limit=2&after=2"
    rest = api_a.get(page["next"]).json()
    assert ([e["seq"] for e in rest["results"]], rest["next"]) == ([3], None)
    assert [e["seq"] for e in api_a.get(f"{url}?after=1").json()["results"]] == [2, 3]
    assert error_of(api_a.get(f"{url}?after=x"))[:2] == (422, "validation_error")
    assert error_of(api_a.get(f"{url}?limit=0"))[:2] == (422, "validation_error")


def test_event_refusals_change_nothing(api_a, api_b, tenant_a):
    make_run(tenant_a, "running", run_id="r-1")
    make_run(tenant_a, "cancelled", run_id="done")
    url = "/api/v1/runs/r-1/events"
    for body in ({"events": []}, {}, {"events": [{"payload": 1}]}, {"events": [{"type": "x"}]}):
        assert error_of(post(api_a, url, body))[:2] == (422, "validation_error"), body
    assert error_of(
        post(api_a, "/api/v1/runs/done/events", {"events": [{"type": "x", "payload": 1}]})
    ) == (409, "run_terminal", {"status": "cancelled"})
    assert error_of(post(api_b, url, {"events": "x"}))[:2] == (404, "not_found")
    assert error_of(api_b.get(url))[:2] == (404, "not_found")
    assert error_of(api_a.get("/api/v1/runs/nope/events"))[:2] == (404, "not_found")
    assert event_count(tenant_a) == 0
    assert reload(tenant_a, "r-1")["last_event_seq"] == 0


@pytest.mark.parametrize("path", ["/api/v1/runs/", "/api/v1/runs/r-1/"])
def test_no_trailing_slashes(api_a, tenant_a, path):
    make_run(tenant_a, run_id="r-1")
    assert api_a.get(path).status_code == 404


def test_schema_documents_every_run_status(client, db):
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    paths = schema["paths"]
    assert set(paths["/api/v1/runs"]["post"]["responses"]) == {
        "201",
        "400",
        "401",
        "404",
        "409",
        "411",
        "413",
        "422",
        "429",
        "503",
    }
    assert set(paths["/api/v1/runs/{run_id}/transition"]["post"]["responses"]) == {
        "200",
        "400",
        "401",
        "404",
        "409",
        "411",
        "413",
        "422",
        "429",
        "503",
    }
    assert set(paths["/api/v1/runs/{run_id}"]["get"]["responses"]) == {
        "200",
        "401",
        "404",
        "422",
        "429",
        "503",
    }
    assert set(paths["/api/v1/runs/{run_id}/events"]) == {"get", "post"}
    assert set(paths["/api/v1/runs"]["get"]["responses"]) == {"200", "401", "422", "429", "503"}
