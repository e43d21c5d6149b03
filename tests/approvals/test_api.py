import time
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from approvals_app.models import ApprovalRequest
from audit_app.models import AuditEvent
from tenancy_app.models import RuntimeToken
from tenancy_app.scoping import in_tenant

from ..runs.conftest import make_run, reload
from .conftest import ARGS, make_approval, reload_approval

JSON = "application/json"


def post(client: Client, path: str, body=None):
    return client.post(path, body if body is not None else {}, content_type=JSON)


def error_of(response) -> tuple:
    body = response.json()["error"]
    return response.status_code, body["code"], body["details"]


def approval_count(tenant) -> int:
    with in_tenant(tenant):
        return ApprovalRequest.objects.filter(tenant=tenant).count()


def audit_count(tenant, action: str) -> int:
    with in_tenant(tenant):
        return AuditEvent.objects.filter(tenant=tenant, action=action).count()


@pytest.fixture
def operator_api_a(make_token, tenant_a) -> Client:
    raw = make_token(tenant_a, role="operator", name="ops-a")
    return Client(headers={"Authorization": f"Bearer {raw}"})


@pytest.fixture
def operator_api_b(make_token, tenant_b) -> Client:
    raw = make_token(tenant_b, role="operator", name="ops-b")
    return Client(headers={"Authorization": f"Bearer {raw}"})


def ask(client, run_id="run-1", **body):
    body = {
        "expected_version": 2,
        "tool_name": "send_refund",
        "arguments": ARGS,
        "risk": "medium",
        **body,
    }
    return post(client, f"/api/v1/runs/{run_id}/approvals", body)


# --- POST /runs/{id}/approvals -----------------------------------------------------------
def test_request_approval_201_and_the_run_waits(api_a, tenant_a):
    make_run(tenant_a, "running", run_id="run-1")
    response = ask(
        api_a,
        approval_id="apr-1",
        risk="high",
        reason="over the limit",
        expires_at="2030-01-01T00:00:00Z",
        summary="Refund 1200 to ops",
        key_arguments=["amount"],
        usual_arguments={"amount": 100},
    )
    assert response.status_code == 201
    body = response.json()
    created_at = body.pop("created_at")
    assert created_at.endswith("Z")
    assert body == {
        "approval_id": "apr-1",
        "run_id": "run-1",
        "status": "pending",
        "tool_name": "send_refund",
        "arguments": ARGS,
        "risk": "high",
        "reason": "over the limit",
        "summary": "Refund 1200 to ops",
        "key_arguments": ["amount"],
        "usual_arguments": {"amount": 100},
        "display": None,
        "allowed_decisions": ["approve", "reject"],
        "arguments_schema": None,
        "call_digest": reload_approval(tenant_a, "apr-1")["call_digest"],
        "run_version": 3,
        "decided_by": None,
        "decided_at": None,
        "decision_reason": None,
        "decision": None,
        "approved_arguments": None,
        "response": None,
        "first_approved_by": None,
        "first_approval_reason": None,
        "expires_at": "2030-01-01T00:00:00Z",
        "voided_by": None,
        "voided_at": None,
        "void_reason_code": None,
        "void_reason": None,
        "void_details": None,
        "replaces_approval_id": None,
        "outcome": None,
        "outcome_error": None,
        "outcome_at": None,
        "assignees": {"user_ids": [], "group_ids": []},
        "route_rule": None,
    }
    run = api_a.get("/api/v1/runs/run-1").json()
    assert (run["status"], run["pending_approval_id"], run["version"]) == (
        "waiting_approval",
        "apr-1",
        3,
    )
    with in_tenant(tenant_a):
        token = RuntimeToken.objects.get(tenant=tenant_a, name="worker")
    assert reload_approval(tenant_a, "apr-1")["requested_by_token_id"] == token.pk


def test_request_presentation_fields_are_checked(api_a, tenant_a):
    make_run(tenant_a, "running", run_id="run-1")
    for body, field in (
        ({"key_arguments": ["a", "b", "c", "d"]}, "key_arguments"),
        ({"summary": "two\nlines"}, "summary"),
        ({"usual_arguments": [1]}, "usual_arguments"),
    ):
        response = ask(api_a, **body)
        assert response.status_code == 422
        assert set(response.json()["error"]["details"]) == {field}
    assert reload(tenant_a, "run-1")["status"] == "running"


def test_request_display_hint_is_stored_and_returned(api_a, tenant_a):
    make_run(tenant_a, "running", run_id="run-1")
    hint = {"amounts": [{"argument": "amount", "currency": "EUR"}]}
    response = ask(api_a, approval_id="apr-1", display=hint)
    assert response.status_code == 201
    stored = {"amounts": [{"argument": "amount", "currency": "EUR", "minor_units": 2}]}
    assert response.json()["display"] == stored
    assert api_a.get("/api/v1/approvals/apr-1").json()["display"] == stored
    pending = api_a.get("/api/v1/approvals?status=pending").json()["results"]
    assert [a["display"] for a in pending] == [stored]
    # The hint is how the call is shown, not the call: the digest is the same without it.
    with in_tenant(tenant_a):
        ApprovalRequest.objects.filter(approval_id="apr-1").update(status="cancelled")
    make_run(tenant_a, "running", run_id="run-2")
    plain = ask(api_a, run_id="run-2", approval_id="apr-2").json()
    assert plain["display"] is None
    assert plain["call_digest"] == response.json()["call_digest"]


BAD_DISPLAY = [
    (
        {"amounts": [{"argument": "missing", "currency": "EUR"}]},
        (
            "validation_error",
            {"display": ["amounts[0].argument: must name one of the call's arguments"]},
        ),
    ),
    (  # a string is not an amount in minor units
        {"amounts": [{"argument": "to", "currency": "EUR"}]},
        (
            "validation_error",
            {"display": ["amounts[0].argument: to must be an integer (the amount in minor units)"]},
        ),
    ),
    (
        {"amounts": [{"argument": "amount", "currency": "eur"}]},
        ("validation_error", {"display": ["amounts[0].currency: an ISO 4217 code such as EUR"]}),
    ),
    (
        {"amounts": [{"argument": "amount", "currency": "EUR", "minor_units": 9}]},
        (
            "validation_error",
            {"display.amounts[0].minor_units": ["Ensure this value is less than or equal to 4."]},
        ),
    ),
    (
        {"amounts": [{"argument": "amount", "currency": "EUR", "symbol": "€"}]},
        ("unknown_field", {"display.amounts[0].symbol": ["unknown field"]}),
    ),
    ({"money": []}, ("unknown_field", {"display.money": ["unknown field"]})),
    (
        {"amounts": [{"argument": "amount", "currency": "EUR"}] * 2},
        ("validation_error", {"display": ["amounts: each argument at most once"]}),
    ),
    (
        "EUR",
        ("validation_error", {"display": ["Invalid data. Expected a dictionary, but got str."]}),
    ),
]


@pytest.mark.parametrize(("display", "refusal"), BAD_DISPLAY)
def test_request_bad_display_hint_is_422_and_changes_nothing(api_a, tenant_a, display, refusal):
    make_run(tenant_a, "running", run_id="run-1")
    before = reload(tenant_a, "run-1")
    assert error_of(ask(api_a, display=display)) == (422, *refusal)
    assert reload(tenant_a, "run-1") == before
    assert approval_count(tenant_a) == 0


def test_request_refusals_change_nothing(api_a, api_b, tenant_a):
    make_run(tenant_a, "running", run_id="run-1")
    make_run(tenant_a, "created", run_id="fresh")
    before = reload(tenant_a, "run-1")
    assert error_of(ask(api_a, risk="extreme")) == (
        422,
        "validation_error",
        {"risk": ['"extreme" is not a valid choice.']},
    )
    for body, field in [
        ({"arguments": "rm -rf"}, "arguments"),
        ({"tool_name": ""}, "tool_name"),
        ({"expected_version": None}, "expected_version"),
        ({"expires_at": "yesterday"}, "expires_at"),
    ]:
        status, code, details = error_of(ask(api_a, **body))
        assert (status, code, list(details)) == (422, "validation_error", [field]), body
    past = (timezone.now() - timedelta(minutes=1)).isoformat()
    assert error_of(ask(api_a, expires_at=past))[:2] == (422, "validation_error")
    assert error_of(ask(api_a, expected_version=1)) == (
        409,
        "version_conflict",
        {"current_version": 2, "expected_version": 1, "status": "running"},
    )
    assert error_of(ask(api_a, run_id="fresh", expected_version=1)) == (
        409,
        "invalid_transition",
        {"from": "created", "to": "waiting_approval", "current_version": 1},
    )
    assert error_of(ask(api_a, run_id="nope"))[:2] == (404, "not_found")
    assert error_of(ask(api_b, risk="extreme"))[:2] == (404, "not_found")
    assert error_of(ask(Client()))[:2] == (401, "unauthenticated")
    assert reload(tenant_a, "run-1") == before
    assert approval_count(tenant_a) == 0
    assert ask(api_a).status_code == 201
    assert error_of(ask(api_a, expected_version=3)) == (
        409,
        "approval_pending",
        {"pending_approval_id": reload(tenant_a, "run-1")["pending_approval_id"]},
    )
    assert approval_count(tenant_a) == 1


# --- GET /approvals/{id}, GET /approvals ---------------------------------------------------
def test_get_approval_and_404_for_unknown_or_other_tenant(api_a, api_b, tenant_a):
    make_approval(tenant_a, approval_id="apr-1")
    response = api_a.get("/api/v1/approvals/apr-1")
    assert response.status_code == 200
    assert (response.json()["status"], response.json()["run_id"]) == ("pending", "run-1")
    assert error_of(api_a.get("/api/v1/approvals/nope")) == (
        404,
        "not_found",
        {"approval_id": "nope"},
    )
    assert error_of(api_b.get("/api/v1/approvals/apr-1"))[:2] == (404, "not_found")
    assert error_of(api_b.get("/api/v1/approvals/apr-1?wait=5"))[:2] == (404, "not_found")
    assert error_of(Client().get("/api/v1/approvals/apr-1"))[:2] == (401, "unauthenticated")


@pytest.mark.parametrize(
    ("wait", "message"),
    [
        ("31", "Ensure this value is less than or equal to 30."),
        ("-1", "Ensure this value is greater than or equal to 0."),
        ("x", "A valid integer is required."),
        ("1.5", "A valid integer is required."),
    ],
)
def test_wait_outside_0_to_30_is_422(api_a, tenant_a, wait, message):
    make_approval(tenant_a, approval_id="apr-1")
    assert error_of(api_a.get(f"/api/v1/approvals/apr-1?wait={wait}")) == (
        422,
        "validation_error",
        {"wait": [message]},
    )


def test_unknown_query_parameter_is_422(api_a, tenant_a):
    make_approval(tenant_a, approval_id="apr-1")
    assert error_of(api_a.get("/api/v1/approvals/apr-1?wiat=5")) == (
        422,
        "unknown_parameter",
        {"wiat": ["unknown parameter"]},
    )
    assert error_of(api_a.get("/api/v1/approvals?stauts=pending")) == (
        422,
        "unknown_parameter",
        {"stauts": ["unknown parameter"]},
    )


def test_long_poll_times_out_with_the_approval_still_pending(api_a, tenant_a):
    make_approval(tenant_a, approval_id="apr-1")
    started = time.monotonic()
    response = api_a.get("/api/v1/approvals/apr-1?wait=1")
    elapsed = time.monotonic() - started
    assert (response.status_code, response.json()["status"]) == (200, "pending")
    assert 1 <= elapsed < 5


def test_long_poll_on_a_decided_approval_returns_at_once(api_a, operator_api_a, tenant_a):
    make_approval(tenant_a, approval_id="apr-1")
    post(operator_api_a, "/api/v1/approvals/apr-1/decision", {"decision": "approve"})
    started = time.monotonic()
    response = api_a.get("/api/v1/approvals/apr-1?wait=30")
    assert response.json()["status"] == "approved"
    assert time.monotonic() - started < 10  # far from the 30 s it would wait if pending


def test_list_approvals_filters_and_pages(api_a, api_b, operator_api_a, tenant_a, tenant_b):
    make_approval(tenant_a, run_id="r1", approval_id="a1")
    make_approval(tenant_a, run_id="r2", approval_id="a2")
    make_approval(tenant_a, run_id="r3", approval_id="a3")
    make_approval(tenant_b, run_id="r1", approval_id="b1")
    post(operator_api_a, "/api/v1/approvals/a2/decision", {"decision": "reject", "reason": "no"})
    pending = api_a.get("/api/v1/approvals?status=pending").json()
    assert ([a["approval_id"] for a in pending["results"]], pending["next"]) == (["a3", "a1"], None)
    first = api_a.get("/api/v1/approvals?limit=2").json()
    assert [a["approval_id"] for a in first["results"]] == ["a3", "a2"]
    assert [a["approval_id"] for a in api_a.get(first["next"]).json()["results"]] == ["a1"]
    assert [
        a["approval_id"] for a in api_a.get("/api/v1/approvals?run_id=r2").json()["results"]
    ] == ["a2"]
    assert [a["approval_id"] for a in api_b.get("/api/v1/approvals").json()["results"]] == ["b1"]
    status, code, details = error_of(api_a.get("/api/v1/approvals?status=bogus"))
    assert (status, code, list(details)) == (422, "validation_error", ["status"])
    assert error_of(api_a.get("/api/v1/approvals?limit=0"))[:2] == (422, "validation_error")
    assert Client().get("/api/v1/approvals").status_code == 401


# --- POST /approvals/{id}/cancel -------------------------------------------------------------
def test_cancel_by_the_runtime_that_asked(api_a, api_b, make_token, tenant_a):
    make_run(tenant_a, "running", run_id="run-1")
    ask(api_a, approval_id="apr-1")
    other = Client(headers={"Authorization": f"Bearer {make_token(tenant_a, name='other')}"})
    snapshot = reload_approval(tenant_a, "apr-1")
    assert error_of(post(other, "/api/v1/approvals/apr-1/cancel"))[:2] == (403, "not_requester")
    assert error_of(post(api_b, "/api/v1/approvals/apr-1/cancel", {"reason": 5}))[:2] == (
        404,
        "not_found",
    )
    assert error_of(post(Client(), "/api/v1/approvals/apr-1/cancel"))[:2] == (
        401,
        "unauthenticated",
    )
    assert reload_approval(tenant_a, "apr-1") == snapshot
    response = post(api_a, "/api/v1/approvals/apr-1/cancel", {"reason": "user left"})
    assert response.status_code == 200
    assert (response.json()["status"], response.json()["decision_reason"]) == (
        "cancelled",
        "user left",
    )
    assert reload(tenant_a, "run-1")["status"] == "running"
    status, code, details = error_of(post(api_a, "/api/v1/approvals/apr-1/cancel"))
    assert (status, code, details["status"], details["decided_by"]) == (
        409,
        "already_decided",
        "cancelled",
        "token:worker",
    )
    assert audit_count(tenant_a, "approval.cancelled") == 1


# --- POST /approvals/{id}/decision --------------------------------------------------------------
def test_operator_token_decides_once(api_a, operator_api_a, tenant_a):
    make_approval(tenant_a, approval_id="apr-1", allowed_decisions=["approve", "edit", "reject"])
    edited = {**ARGS, "amount": 900}
    response = post(
        operator_api_a,
        "/api/v1/approvals/apr-1/decision",
        {"decision": "edit", "reason": "capped", "approved_arguments": edited},
    )
    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["decided_by"], body["decision_reason"]) == (
        "approved",
        "token:ops-a",
        "capped",
    )
    assert (body["decision"], body["approved_arguments"]) == ("edit", edited)
    assert body["decided_at"].endswith("Z")
    assert reload(tenant_a, "run-1")["status"] == "running"
    snapshot = reload_approval(tenant_a, "apr-1")
    again = post(
        operator_api_a, "/api/v1/approvals/apr-1/decision", {"decision": "reject", "reason": "x"}
    )
    assert error_of(again) == (
        409,
        "already_decided",
        {
            "status": "approved",
            "decided_by": "token:ops-a",
            "decided_at": snapshot["decided_at"].isoformat(),
        },
    )
    assert reload_approval(tenant_a, "apr-1") == snapshot
    assert audit_count(tenant_a, "approval.approved") == 1
    assert audit_count(tenant_a, "approval.rejected") == 0
    # The runtime reads the outcome.
    assert api_a.get("/api/v1/approvals/apr-1").json()["approved_arguments"] == edited


def test_decision_refusals_change_nothing(api_a, operator_api_a, operator_api_b, tenant_a):
    approval = make_approval(tenant_a, approval_id="apr-1", risk="high")
    snapshot, run = reload_approval(tenant_a, "apr-1"), reload(tenant_a, "run-1")
    url = "/api/v1/approvals/apr-1/decision"
    assert error_of(post(api_a, url, {"decision": "approve", "reason": "x"}))[:2] == (
        403,
        "forbidden",
    )
    assert error_of(post(Client(), url, {"decision": "approve"}))[:2] == (401, "unauthenticated")
    assert error_of(post(operator_api_b, url, {"decision": "bogus"}))[:2] == (404, "not_found")
    assert error_of(post(operator_api_a, "/api/v1/approvals/nope/decision", {}))[:2] == (
        404,
        "not_found",
    )
    assert error_of(post(operator_api_a, url, {"decision": "maybe"}))[:2] == (
        422,
        "validation_error",
    )
    assert error_of(post(operator_api_a, url, {"decision": "approve"})) == (
        422,
        "validation_error",
        {"reason": ["required"]},
    )
    assert error_of(post(operator_api_a, url, {"decision": "reject"})) == (
        422,
        "validation_error",
        {"reason": ["required"]},
    )
    assert error_of(
        post(operator_api_a, url, {"decision": "approve", "reason": "x", "approved_arguments": [1]})
    )[:2] == (422, "validation_error")
    assert error_of(
        post(
            operator_api_a,
            url,
            {"decision": "approve", "reason": "x", "expected_digest": "f" * 64},
        )
    ) == (
        409,
        "call_changed",
        {"call_digest": {"expected": "f" * 64, "current": approval.call_digest}},
    )
    assert error_of(
        post(operator_api_a, url, {"decision": "approve", "reason": "x", "expected_run_version": 2})
    ) == (409, "call_changed", {"run_version": {"expected": 2, "current": 3}})
    assert reload_approval(tenant_a, "apr-1") == snapshot
    assert reload(tenant_a, "run-1") == run
    assert audit_count(tenant_a, "approval.approved") == 0
    bound = post(
        operator_api_a,
        url,
        {
            "decision": "approve",
            "reason": "x",
            "expected_digest": approval.call_digest,
            "expected_run_version": 3,
        },
    )
    assert bound.json()["status"] == "approved"


def test_decision_after_expiry_is_409_and_records_the_expiry(operator_api_a, tenant_a):
    asked_an_hour_ago(tenant_a, "apr-1", "run-1", ttl_seconds=1)
    response = post(operator_api_a, "/api/v1/approvals/apr-1/decision", {"decision": "approve"})
    status, code, details = error_of(response)
    assert (status, code, details["status"]) == (409, "approval_expired", "expired")
    assert reload_approval(tenant_a, "apr-1")["status"] == "expired"
    assert reload(tenant_a, "run-1")["status"] == "suspended"
    assert audit_count(tenant_a, "approval.expired") == 1


def test_schema_documents_every_approval_status(client, db):
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    paths = schema["paths"]
    write = {"400", "401", "404", "409", "411", "413", "422", "429", "503"}
    assert set(paths["/api/v1/runs/{run_id}/approvals"]["post"]["responses"]) == write | {"201"}
    assert set(paths["/api/v1/approvals/{approval_id}/decision"]["post"]["responses"]) == write | {
        "200",
        "403",
    }
    assert set(paths["/api/v1/approvals/{approval_id}/cancel"]["post"]["responses"]) == write | {
        "200",
        "403",
    }
    detail = paths["/api/v1/approvals/{approval_id}"]["get"]
    assert set(detail["responses"]) == {"200", "401", "404", "422", "429", "503"}
    assert [p["name"] for p in detail["parameters"] if p["in"] == "query"] == ["wait"]
    assert set(paths["/api/v1/approvals"]["get"]["responses"]) == {
        "200",
        "401",
        "422",
        "429",
        "503",
    }


# --- expiry without a sweep ------------------------------------------------------------------
def asked_an_hour_ago(tenant, approval_id: str, run_id: str, ttl_seconds: int = 60):
    """An approval asked an hour ago that expired `ttl_seconds` later; no sweep has run."""
    asked = timezone.now() - timedelta(hours=1)
    return make_approval(
        tenant,
        run_id=run_id,
        approval_id=approval_id,
        expires_at=asked + timedelta(seconds=ttl_seconds),
        clock=lambda: asked,
    )


def test_an_approval_past_expires_at_reads_expired_in_detail_list_and_filters(
    api_a, api_b, tenant_a, tenant_b
):
    expired = asked_an_hour_ago(tenant_a, "late", "r1")
    make_approval(tenant_a, run_id="r2", approval_id="live")
    make_approval(tenant_a, run_id="r3", approval_id="forever", expires_at=None)
    asked_an_hour_ago(tenant_b, "b-late", "r1")
    before = audit_count(tenant_a, "approval.expired")

    detail = api_a.get("/api/v1/approvals/late").json()
    assert (detail["status"], detail["decided_at"], detail["decided_by"]) == (
        "expired",
        expired.expires_at.isoformat().replace("+00:00", "Z"),
        None,
    )
    assert api_a.get("/api/v1/approvals/live").json()["status"] == "pending"

    def listed(query: str) -> list[tuple[str, str]]:
        page = api_a.get(f"/api/v1/approvals{query}").json()["results"]
        return [(a["approval_id"], a["status"]) for a in page]

    # Newest first; an approval without an expiry stays pending.
    assert listed("?status=pending") == [("forever", "pending"), ("live", "pending")]
    assert listed("?status=expired") == [("late", "expired")]
    assert listed("") == [("forever", "pending"), ("live", "pending"), ("late", "expired")]
    assert listed("?run_id=r1&status=expired") == [("late", "expired")]
    # Another tenant's id is 404, past due or not; its rows are not listed.
    assert error_of(api_b.get("/api/v1/approvals/late"))[:2] == (404, "not_found")
    assert [
        a["approval_id"] for a in api_b.get("/api/v1/approvals?status=expired").json()["results"]
    ] == ["b-late"]
    # Reading wrote nothing: the expiry is recorded by the sweep (or the next write).
    assert reload_approval(tenant_a, "late")["status"] == "pending"
    assert audit_count(tenant_a, "approval.expired") == before


def test_long_poll_returns_expired_at_expires_at_without_a_sweep(api_a, tenant_a, monkeypatch):
    # Re-reads 10 s apart: only a wait that ends at expires_at answers in time.
    monkeypatch.setattr("approvals_app.api.POLL_FIRST_DELAY", 10.0)
    monkeypatch.setattr("approvals_app.api.POLL_MAX_DELAY", 10.0)
    make_approval(tenant_a, approval_id="apr-1", expires_at=timezone.now() + timedelta(seconds=1.5))
    started = time.monotonic()
    response = api_a.get("/api/v1/approvals/apr-1?wait=20")
    elapsed = time.monotonic() - started
    assert (response.status_code, response.json()["status"]) == (200, "expired")
    assert 1.2 <= elapsed < 5
    assert reload_approval(tenant_a, "apr-1")["status"] == "pending"  # no sweep ran


def test_long_poll_on_an_approval_past_expires_at_returns_at_once(api_a, tenant_a):
    asked_an_hour_ago(tenant_a, "late", "r1")
    started = time.monotonic()
    response = api_a.get("/api/v1/approvals/late?wait=30")
    assert response.json()["status"] == "expired"
    assert time.monotonic() - started < 5


def test_late_decision_and_cancellation_are_409_and_the_expiry_is_recorded_once(
    api_a, operator_api_a, tenant_a
):
    asked_an_hour_ago(tenant_a, "late", "r1")
    asked_an_hour_ago(tenant_a, "late-2", "r2")
    decided = post(operator_api_a, "/api/v1/approvals/late/decision", {"decision": "approve"})
    assert error_of(decided)[:2] == (409, "approval_expired")
    cancelled = post(api_a, "/api/v1/approvals/late-2/cancel", {"reason": "not needed"})
    status, code, details = error_of(cancelled)
    assert (status, code, details["status"]) == (409, "already_decided", "expired")
    for approval_id, run_id in (("late", "r1"), ("late-2", "r2")):
        assert reload_approval(tenant_a, approval_id)["status"] == "expired"
        assert reload(tenant_a, run_id)["status"] == "suspended"
    assert audit_count(tenant_a, "approval.expired") == 2
    assert audit_count(tenant_a, "approval.cancelled") == 0


def test_the_pending_list_renders_what_the_serializer_renders_in_one_statement(
    api_a, api_b, tenant_a, tenant_b, django_assert_num_queries
):
    """GET /approvals?status=pending takes the hot path (rows straight to dicts); each row is
    what ApprovalSerializer gives for the same approval, pages keyset by id, overdue ones are
    not pending, and another tenant's are not there."""
    from rest_framework.renderers import JSONRenderer

    from approvals_app.api import ApprovalSerializer

    from .conftest import approval_store

    make_approval(
        tenant_a,
        run_id="r1",
        approval_id="a1",
        summary="Refund $1,200",
        key_arguments=["amount"],
        usual_arguments={"amount": 10},
        expires_at=timezone.now() + timedelta(hours=1),
    )
    make_approval(tenant_a, run_id="r2", approval_id="a2", risk="critical")
    make_approval(tenant_a, run_id="r3", approval_id="a3")
    make_approval(tenant_b, run_id="r4", approval_id="b1")
    with in_tenant(tenant_a):  # a3 is now past its expires_at, not yet swept
        ApprovalRequest.objects.filter(approval_id="a3").update(
            expires_at=timezone.now() - timedelta(seconds=1)
        )
        expected = JSONRenderer().render(
            ApprovalSerializer(
                ApprovalRequest.objects.filter(approval_id__in=["a2", "a1"])
                .select_related("run")
                .order_by("-id"),
                many=True,
            ).data
        )
    first = api_a.get("/api/v1/approvals?status=pending&limit=1").json()
    second = api_a.get(first["next"]).json()
    assert second["next"] is None
    rows = first["results"] + second["results"]
    assert JSONRenderer().render(rows) == expected
    assert [
        a["approval_id"] for a in api_b.get("/api/v1/approvals?status=pending").json()["results"]
    ] == ["b1"]
    store = approval_store(tenant_a)
    with in_tenant(tenant_a), django_assert_num_queries(1):
        page, after = store.pending_page(limit=50)
    assert ([a["approval_id"] for a in page], after) == (["a2", "a1"], None)
