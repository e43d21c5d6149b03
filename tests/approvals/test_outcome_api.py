"""POST /api/v1/approvals/{id}/outcome: the runtime says how an approved call went; and the
`responded` status of an answered call, through the API and its schema."""

import pytest
from django.test import Client

from audit_app.models import AuditEvent
from tenancy_app.scoping import in_tenant

from ..runs.conftest import make_run, reload
from .conftest import reload_approval
from .test_api import ask, error_of, post

FAILED = {
    "outcome": "failed",
    "error": {
        "message": "amount_cents: Input should be a valid integer",
        "type": "ValidationError",
    },
}


ERROR_CODE = {"outcome": "validation_error", "error": "validation_error", "extra": "unknown_field"}


def audit(tenant, action: str) -> list[AuditEvent]:
    with in_tenant(tenant):
        return list(AuditEvent.objects.filter(tenant=tenant, action=action).order_by("seq"))


@pytest.fixture
def operator_api_a(make_token, tenant_a) -> Client:
    raw = make_token(tenant_a, role="operator", name="ops-a")
    return Client(headers={"Authorization": f"Bearer {raw}"})


def approved(api, operator_api, tenant, decision: dict | None = None) -> None:
    make_run(tenant, "running", run_id="run-1")
    ask(api, approval_id="apr-1", allowed_decisions=["approve", "edit", "reject", "respond"])
    answer = post(
        operator_api, "/api/v1/approvals/apr-1/decision", decision or {"decision": "approve"}
    )
    assert answer.status_code == 200, answer.content


def test_a_failed_call_is_reported_once_and_shown(api_a, operator_api_a, tenant_a):
    approved(
        api_a,
        operator_api_a,
        tenant_a,
        {"decision": "edit", "approved_arguments": {"amount_cents": "lots", "foo": 1}},
    )
    run_before = reload(tenant_a, "run-1")
    response = post(api_a, "/api/v1/approvals/apr-1/outcome", FAILED)
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["status"], body["decision"], body["outcome"]) == ("approved", "edit", "failed")
    assert body["outcome_error"] == FAILED["error"]
    assert body["outcome_at"].endswith("Z")
    assert api_a.get("/api/v1/approvals/apr-1").json()["outcome"] == "failed"
    # The run is the runtime's to end: the report does not move it.
    assert reload(tenant_a, "run-1") == run_before
    [event] = audit(tenant_a, "approval.tool_failed")
    assert event.after == {"status": "approved", "outcome": "failed", "run_id": "run-1"}
    assert "valid integer" not in str(event.after)  # the tool's error is content

    # The same report again (a retry after a lost answer) changes nothing.
    again = post(api_a, "/api/v1/approvals/apr-1/outcome", FAILED)
    assert (again.status_code, again.json()["outcome_at"]) == (200, body["outcome_at"])
    assert len(audit(tenant_a, "approval.tool_failed")) == 1
    # Another report is refused.
    status, code, details = error_of(
        post(api_a, "/api/v1/approvals/apr-1/outcome", {"outcome": "succeeded"})
    )
    assert (status, code, details) == (409, "outcome_reported", {"outcome": "failed"})
    assert reload_approval(tenant_a, "apr-1")["outcome"] == "failed"


def test_a_call_that_ran_is_reported_succeeded(api_a, operator_api_a, tenant_a):
    approved(api_a, operator_api_a, tenant_a)
    response = post(api_a, "/api/v1/approvals/apr-1/outcome", {"outcome": "succeeded"})
    assert response.status_code == 200
    assert (response.json()["outcome"], response.json()["outcome_error"]) == ("succeeded", None)
    assert len(audit(tenant_a, "approval.tool_succeeded")) == 1


def test_outcome_refusals_write_nothing(api_a, api_b, operator_api_a, make_token, tenant_a):
    approved(api_a, operator_api_a, tenant_a)
    other = Client(headers={"Authorization": f"Bearer {make_token(tenant_a, name='other')}"})
    before = reload_approval(tenant_a, "apr-1")
    path = "/api/v1/approvals/apr-1/outcome"
    # Another tenant: 404 whatever the body; an unknown id likewise.
    assert error_of(post(api_b, path, {"outcome": 5}))[:2] == (404, "not_found")
    assert error_of(post(api_a, "/api/v1/approvals/nope/outcome", FAILED))[:2] == (
        404,
        "not_found",
    )
    assert error_of(post(Client(), path, FAILED))[:2] == (401, "unauthenticated")
    # Only the runtime that asked reports; an operator token did not ask either.
    assert error_of(post(other, path, FAILED))[:2] == (403, "not_requester")
    assert error_of(post(operator_api_a, path, FAILED))[:2] == (403, "not_requester")
    for body, field in (
        ({}, "outcome"),
        ({"outcome": "crashed"}, "outcome"),
        ({"outcome": "failed"}, "error"),
        ({"outcome": "failed", "error": {"type": "X"}}, "error"),
        ({"outcome": "failed", "error": {"message": " "}}, "error"),
        ({"outcome": "failed", "error": {"message": "x" * 4001}}, "error"),
        ({"outcome": "failed", "error": "boom"}, "error"),
        ({"outcome": "succeeded", "error": {"message": "x"}}, "error"),
        ({**FAILED, "extra": 1}, "extra"),
    ):
        status, code, details = error_of(post(api_a, path, body))
        assert (status, code, field in details) == (422, ERROR_CODE.get(field), True), body
    assert reload_approval(tenant_a, "apr-1") == before
    assert audit(tenant_a, "approval.tool_failed") == []


@pytest.mark.parametrize(
    ("decision", "status"),
    [
        ({"decision": "reject", "reason": "no"}, "rejected"),
        ({"decision": "respond", "response": "Queued for review."}, "responded"),
        (None, "pending"),
    ],
)
def test_only_an_approved_call_has_an_outcome(api_a, operator_api_a, tenant_a, decision, status):
    make_run(tenant_a, "running", run_id="run-1")
    ask(api_a, approval_id="apr-1", allowed_decisions=["approve", "reject", "respond"])
    if decision is not None:
        post(operator_api_a, "/api/v1/approvals/apr-1/decision", decision)
    before = reload_approval(tenant_a, "apr-1")
    status_code, code, details = error_of(post(api_a, "/api/v1/approvals/apr-1/outcome", FAILED))
    assert (status_code, code, details) == (409, "not_approved", {"status": status})
    assert reload_approval(tenant_a, "apr-1") == before


def test_a_response_reads_responded_and_lists_under_it(api_a, operator_api_a, tenant_a):
    make_run(tenant_a, "running", run_id="run-1")
    ask(api_a, approval_id="apr-1", allowed_decisions=["approve", "respond"])
    answered = post(
        operator_api_a,
        "/api/v1/approvals/apr-1/decision",
        {"decision": "respond", "response": "Queued for review."},
    )
    assert (answered.json()["status"], answered.json()["decision"]) == ("responded", "respond")
    assert reload(tenant_a, "run-1")["status"] == "running"
    listed = api_a.get("/api/v1/approvals?status=responded").json()["results"]
    assert [a["approval_id"] for a in listed] == ["apr-1"]
    assert api_a.get("/api/v1/approvals?status=rejected").json()["results"] == []
    assert [e.after["status"] for e in audit(tenant_a, "approval.responded")] == ["responded"]


def test_schema_documents_the_outcome_and_responded(client, db):
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    outcome = schema["paths"]["/api/v1/approvals/{approval_id}/outcome"]["post"]
    write = {"400", "401", "404", "409", "411", "413", "422", "429", "503"}
    assert set(outcome["responses"]) == write | {"200", "403"}
    body = schema["components"]["schemas"]["ApprovalOutcomeInRequest"]
    assert set(body["properties"]) == {"outcome", "error", "worker"}
    components = schema["components"]["schemas"]
    assert "responded" in components["ApprovalStatusEnum"]["enum"]
    approval = components["Approval"]["properties"]
    for name in ("outcome", "outcome_error", "outcome_at"):
        assert name in approval
