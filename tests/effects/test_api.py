import pytest
from django.test import Client
from django.utils import timezone

from effects_app.models import ExternalEffect
from effects_app.store import request_digest
from tenancy_app.scoping import in_tenant

from .test_store import REQUEST, RESULT, snapshot

JSON = "application/json"
RECORD = {"idempotency_key": "T-7:n1:send", "tool_name": "send_email", "request": REQUEST}


def iso(value) -> str:
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def expected(effect: ExternalEffect, **changes) -> dict:
    body = {
        "effect_id": effect.effect_id,
        "run_id": "R-101",
        "idempotency_key": effect.idempotency_key,
        "tool_name": effect.tool_name,
        "node_id": effect.node_id,
        "approval_id": None,
        "status": effect.status,
        "request": effect.request,
        "request_digest": effect.request_digest,
        "result": effect.result,
        "error": effect.error,
        "settled_by": effect.settled_by,
        "settle_reason": effect.settle_reason,
        "created_at": iso(effect.created_at),
        "updated_at": iso(effect.updated_at),
        "redacted_at": None,
    }
    body.update(changes)
    return body


def stored(tenant, key: str = "T-7:n1:send") -> ExternalEffect:
    with in_tenant(tenant):
        return ExternalEffect.objects.get(idempotency_key=key)


@pytest.fixture
def run_a(make_run, tenant_a):
    return make_run(tenant_a)


# --- POST /api/v1/runs/{run_id}/effects -------------------------------------------
def test_record_effect_201_then_200_with_the_same_record(api_a, run_a, tenant_a):
    first = api_a.post("/api/v1/runs/R-101/effects", {**RECORD, "node_id": "n1"}, content_type=JSON)
    assert first.status_code == 201
    effect = stored(tenant_a)
    assert first.json() == expected(effect)
    assert (first.json()["status"], first.json()["node_id"]) == ("started", "n1")
    assert first.json()["request_digest"] == request_digest("send_email", REQUEST)

    api_a.post(f"/api/v1/effects/{effect.effect_id}/commit", {"result": RESULT}, content_type=JSON)
    again = api_a.post("/api/v1/runs/R-101/effects", RECORD, content_type=JSON)
    assert again.status_code == 200
    assert again.json() == expected(stored(tenant_a))
    assert (again.json()["effect_id"], again.json()["status"]) == (effect.effect_id, "committed")
    assert len(snapshot(tenant_a)) == 1


def test_record_with_a_reused_key_and_different_request_is_422(api_a, run_a, tenant_a):
    effect = api_a.post("/api/v1/runs/R-101/effects", RECORD, content_type=JSON).json()
    before = snapshot(tenant_a)
    response = api_a.post(
        "/api/v1/runs/R-101/effects",
        {**RECORD, "request": {**REQUEST, "subject": "other"}},
        content_type=JSON,
    )
    assert response.status_code == 422
    assert response.json()["error"] == {
        "code": "idempotency_key_reused",
        "message": "This idempotency key was used for a different request.",
        "details": {"idempotency_key": "T-7:n1:send", "effect_id": effect["effect_id"]},
    }
    assert snapshot(tenant_a) == before


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, ["idempotency_key", "request", "tool_name"]),
        ({**RECORD, "request": [1]}, ["request"]),
        ({**RECORD, "idempotency_key": ""}, ["idempotency_key"]),
        ({**RECORD, "idempotency_key": "k" * 256}, ["idempotency_key"]),
        ({**RECORD, "tool_name": ""}, ["tool_name"]),
    ],
)
def test_record_validation_is_422(api_a, run_a, tenant_a, body, fields):
    response = api_a.post("/api/v1/runs/R-101/effects", body, content_type=JSON)
    assert response.status_code == 422
    error = response.json()["error"]
    assert (error["code"], sorted(error["details"])) == ("validation_error", fields)
    assert snapshot(tenant_a) == []


def test_record_with_unknown_approval_is_404(api_a, run_a, tenant_a):
    response = api_a.post(
        "/api/v1/runs/R-101/effects", {**RECORD, "approval_id": "apr_x"}, content_type=JSON
    )
    assert response.status_code == 404
    assert response.json()["error"]["details"] == {"approval_id": "apr_x"}
    assert snapshot(tenant_a) == []


def test_record_on_unknown_or_other_tenants_run_is_404_whatever_the_body(
    api_a, api_b, run_a, tenant_a, tenant_b
):
    for client, run_id in ((api_a, "R-nope"), (api_b, "R-101")):
        for body in (RECORD, {}, "{"):
            response = client.post(f"/api/v1/runs/{run_id}/effects", body, content_type=JSON)
            assert response.status_code == 404
            assert response.json()["error"] == {
                "code": "not_found",
                "message": "No such run.",
                "details": {"run_id": run_id},
            }
    assert snapshot(tenant_a) == snapshot(tenant_b) == []


def test_record_bad_json_is_400(api_a, run_a, tenant_a):
    for raw, code in (("{oops", "malformed_json"), ('"text"', "body_not_object")):
        response = api_a.post("/api/v1/runs/R-101/effects", raw, content_type=JSON)
        assert (response.status_code, response.json()["error"]["code"]) == (400, code)
    assert snapshot(tenant_a) == []


# --- commit / fail ---------------------------------------------------------------------
@pytest.fixture
def effect_a(api_a, run_a, tenant_a) -> str:
    return api_a.post("/api/v1/runs/R-101/effects", RECORD, content_type=JSON).json()["effect_id"]


def test_commit_200_then_same_result_unchanged_then_different_409(api_a, effect_a, tenant_a):
    url = f"/api/v1/effects/{effect_a}/commit"
    response = api_a.post(url, {"result": RESULT}, content_type=JSON)
    assert response.status_code == 200
    assert response.json() == expected(stored(tenant_a))
    assert (response.json()["status"], response.json()["result"]) == ("committed", RESULT)
    after = snapshot(tenant_a)

    again = api_a.post(url, {"result": RESULT}, content_type=JSON)
    assert (again.status_code, again.json()) == (200, response.json())
    assert snapshot(tenant_a) == after

    conflict = api_a.post(url, {"result": {"message_id": "m-2"}}, content_type=JSON)
    assert conflict.status_code == 409
    assert conflict.json()["error"] == {
        "code": "effect_conflict",
        "message": "This effect is already committed with a different result.",
        "details": {"effect_id": effect_a, "status": "committed"},
    }
    assert snapshot(tenant_a) == after


def test_fail_200_and_commit_after_fail_is_409(api_a, effect_a, tenant_a):
    error = {"message": "SMTP 550", "code": "rejected"}
    response = api_a.post(f"/api/v1/effects/{effect_a}/fail", {"error": error}, content_type=JSON)
    assert response.status_code == 200
    assert response.json() == expected(stored(tenant_a))
    assert (response.json()["status"], response.json()["error"]) == ("failed", error)
    after = snapshot(tenant_a)
    commit = api_a.post(f"/api/v1/effects/{effect_a}/commit", {"result": {}}, content_type=JSON)
    assert commit.status_code == 409
    assert commit.json()["error"] == {
        "code": "invalid_transition",
        "message": "An effect that is failed cannot become committed.",
        "details": {"effect_id": effect_a, "status": "failed", "requested": "committed"},
    }
    fail_again = api_a.post(
        f"/api/v1/effects/{effect_a}/fail", {"error": {"message": "other"}}, content_type=JSON
    )
    assert (fail_again.status_code, fail_again.json()["error"]["code"]) == (409, "effect_conflict")
    assert snapshot(tenant_a) == after


def test_fail_after_commit_is_409(api_a, effect_a, tenant_a):
    api_a.post(f"/api/v1/effects/{effect_a}/commit", {"result": {}}, content_type=JSON)
    after = snapshot(tenant_a)
    response = api_a.post(
        f"/api/v1/effects/{effect_a}/fail", {"error": {"message": "x"}}, content_type=JSON
    )
    assert (response.status_code, response.json()["error"]["code"]) == (409, "invalid_transition")
    assert snapshot(tenant_a) == after


@pytest.mark.parametrize(
    ("action", "body", "fields"),
    [
        ("commit", {}, ["result"]),
        ("commit", {"result": "done"}, ["result"]),
        ("fail", {}, ["error"]),
        ("fail", {"error": {"code": "x"}}, ["error.message"]),
        ("fail", {"error": "boom"}, ["error"]),
    ],
)
def test_commit_and_fail_validation_is_422(api_a, effect_a, tenant_a, action, body, fields):
    before = snapshot(tenant_a)
    response = api_a.post(f"/api/v1/effects/{effect_a}/{action}", body, content_type=JSON)
    assert response.status_code == 422
    error = response.json()["error"]
    assert (error["code"], sorted(error["details"])) == ("validation_error", fields)
    assert snapshot(tenant_a) == before


def test_commit_and_fail_of_unknown_or_other_tenants_effect_are_404(
    api_a, api_b, effect_a, tenant_a
):
    before = snapshot(tenant_a)
    for client, effect_id in ((api_a, "eff_nope"), (api_b, effect_a)):
        for action, body in (
            ("commit", {"result": {}}),
            ("fail", {"error": {"message": "x"}}),
            ("commit", "{"),
            ("fail", {}),
        ):
            response = client.post(f"/api/v1/effects/{effect_id}/{action}", body, content_type=JSON)
            assert response.status_code == 404
            assert response.json()["error"] == {
                "code": "not_found",
                "message": "No such effect.",
                "details": {"effect_id": effect_id},
            }
    assert snapshot(tenant_a) == before


# --- lists --------------------------------------------------------------------------------
def test_effects_by_idempotency_key_and_by_run(api_a, make_run, run_a, tenant_a):
    make_run(tenant_a, run_id="R-102")
    ids = [
        api_a.post(
            f"/api/v1/runs/{run}/effects",
            {**RECORD, "idempotency_key": key},
            content_type=JSON,
        ).json()["effect_id"]
        for run, key in (("R-101", "k1"), ("R-101", "k2"), ("R-102", "k3"))
    ]
    response = api_a.get("/api/v1/effects?idempotency_key=k2")
    assert response.status_code == 200
    assert response.json() == {"results": [expected(stored(tenant_a, "k2"))], "next": None}
    assert response.json()["results"][0]["effect_id"] == ids[1]

    by_run = api_a.get("/api/v1/runs/R-101/effects")
    assert by_run.status_code == 200
    assert [e["effect_id"] for e in by_run.json()["results"]] == [ids[1], ids[0]]
    assert by_run.json()["next"] is None

    page = api_a.get("/api/v1/runs/R-101/effects?limit=1")
    assert [e["effect_id"] for e in page.json()["results"]] == [ids[1]]
    next_url = page.json()["next"]
    assert next_url.startswith("http://testserver/api/v1/runs/R-101/effects?")
    rest = api_a.get(next_url)
    assert ([e["effect_id"] for e in rest.json()["results"]], rest.json()["next"]) == (
        [ids[0]],
        None,
    )

    everything = api_a.get("/api/v1/effects")
    assert [e["effect_id"] for e in everything.json()["results"]] == ids[::-1]
    assert api_a.get("/api/v1/effects?idempotency_key=none").json() == {"results": [], "next": None}
    api_a.post(f"/api/v1/effects/{ids[2]}/commit", {"result": {}}, content_type=JSON)
    committed = api_a.get("/api/v1/effects?status=committed&run_id=R-102")
    assert [e["effect_id"] for e in committed.json()["results"]] == [ids[2]]


@pytest.mark.parametrize("query", ["limit=0", "limit=501", "limit=x", "status=bogus", "cursor=abc"])
def test_effect_lists_refuse_bad_parameters_with_422(api_a, run_a, query):
    for url in ("/api/v1/effects", "/api/v1/runs/R-101/effects"):
        response = api_a.get(f"{url}?{query}")
        assert response.status_code == 422
        assert response.json()["error"]["code"] == "validation_error"


def test_effect_lists_are_tenant_scoped(api_a, api_b, effect_a):
    assert api_b.get("/api/v1/effects?idempotency_key=T-7:n1:send").json() == {
        "results": [],
        "next": None,
    }
    for url in ("/api/v1/runs/R-101/effects", "/api/v1/effects?run_id=R-101"):
        response = api_b.get(url)
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"
    assert api_a.get("/api/v1/runs/R-nope/effects").status_code == 404


def test_redacted_effect_keeps_key_status_tool_but_not_payloads(api_a, effect_a, tenant_a):
    api_a.post(f"/api/v1/effects/{effect_a}/commit", {"result": RESULT}, content_type=JSON)
    with in_tenant(tenant_a):
        ExternalEffect.objects.update(redacted_at=timezone.now())
    body = api_a.get("/api/v1/effects?idempotency_key=T-7:n1:send").json()["results"][0]
    effect = stored(tenant_a)
    assert body == expected(effect, request=None, result=None, redacted_at=iso(effect.redacted_at))
    assert (body["idempotency_key"], body["status"], body["tool_name"]) == (
        "T-7:n1:send",
        "committed",
        "send_email",
    )
    again = api_a.post("/api/v1/runs/R-101/effects", RECORD, content_type=JSON)
    assert (again.status_code, again.json()["effect_id"], again.json()["request"]) == (
        200,
        effect_a,
        None,
    )


def test_every_effect_endpoint_needs_a_token(effect_a, tenant_a):
    before = snapshot(tenant_a)
    for client in (Client(), Client(headers={"Authorization": "Bearer sr_nope"})):
        calls = [
            client.post("/api/v1/runs/R-101/effects", RECORD, content_type=JSON),
            client.get("/api/v1/runs/R-101/effects"),
            client.get("/api/v1/effects?idempotency_key=T-7:n1:send"),
            client.post(f"/api/v1/effects/{effect_a}/commit", {"result": {}}, content_type=JSON),
            client.post(
                f"/api/v1/effects/{effect_a}/fail", {"error": {"message": "x"}}, content_type=JSON
            ),
        ]
        assert [r.status_code for r in calls] == [401] * 5
        assert {r.json()["error"]["code"] for r in calls} == {"unauthenticated"}
    assert snapshot(tenant_a) == before


def test_schema_documents_every_effect_endpoint(client, db):
    schema = client.get("/api/v1/schema/?format=json").json()
    paths = schema["paths"]
    write = {"400", "401", "404", "411", "413", "422", "429", "503"}
    documented = {
        ("post", "/api/v1/runs/{run_id}/effects"): write | {"200", "201", "409"},
        ("get", "/api/v1/runs/{run_id}/effects"): {"200", "401", "404", "422", "429", "503"},
        ("get", "/api/v1/effects"): {"200", "401", "404", "422", "429", "503"},
        ("post", "/api/v1/effects/{effect_id}/commit"): write | {"200", "409"},
        ("post", "/api/v1/effects/{effect_id}/fail"): write | {"200", "409"},
    }
    for (method, path), statuses in documented.items():
        assert set(paths[path][method]["responses"]) == statuses, (method, path)
    params = {p["name"] for p in paths["/api/v1/effects"]["get"]["parameters"]}
    assert params == {"idempotency_key", "run_id", "status", "limit", "cursor"}
