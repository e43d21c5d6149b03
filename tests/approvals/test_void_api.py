"""POST /api/v1/approvals/{id}/void, and asking again with replaces_approval_id."""

import pytest
from django.test import Client

from audit_app.models import AuditEvent
from tenancy_app.scoping import in_tenant

from ..runs.conftest import make_run, reload
from .conftest import ARGS, reload_approval
from .test_api import ask, error_of, post

DIFF = {
    "tool": "send_refund",
    "old": {"type": "object", "properties": {"amount": {"type": "integer"}}},
    "new": {"type": "object", "properties": {"amount": {"type": "number"}}},
}
VOID = {"reason_code": "tool_changed", "reason": "the tool changed since this was asked"}


def audit_count(tenant, action: str) -> int:
    with in_tenant(tenant):
        return AuditEvent.objects.filter(tenant=tenant, action=action).count()


@pytest.fixture
def operator_api_a(make_token, tenant_a) -> Client:
    raw = make_token(tenant_a, role="operator", name="ops-a")
    return Client(headers={"Authorization": f"Bearer {raw}"})


def test_the_runtime_that_asked_voids_and_asks_again(api_a, tenant_a):
    make_run(tenant_a, "running", run_id="run-1")
    ask(api_a, approval_id="apr-1")
    response = post(api_a, "/api/v1/approvals/apr-1/void", {**VOID, "details": DIFF})
    assert response.status_code == 200
    body = response.json()
    assert {k: body[k] for k in ("status", "voided_by", "void_reason_code", "void_reason")} == {
        "status": "voided",
        "voided_by": "token:worker",
        "void_reason_code": "tool_changed",
        "void_reason": "the tool changed since this was asked",
    }
    assert (body["void_details"], body["decided_by"], body["decision"]) == (DIFF, None, None)
    assert body["voided_at"] is not None
    run = reload(tenant_a, "run-1")
    assert (run["status"], run["pending_approval_id"]) == ("running", "")
    assert audit_count(tenant_a, "approval.voided") == 1
    # GET says the same; the list filters on it.
    assert api_a.get("/api/v1/approvals/apr-1").json()["status"] == "voided"
    listed = api_a.get("/api/v1/approvals?status=voided").json()["results"]
    assert [a["approval_id"] for a in listed] == ["apr-1"]
    again = ask(
        api_a,
        expected_version=run["version"],
        approval_id="apr-2",
        summary="The tool changed since this was asked (apr-1)",
        replaces_approval_id="apr-1",
    )
    assert again.status_code == 201
    assert (again.json()["status"], again.json()["replaces_approval_id"]) == ("pending", "apr-1")
    assert api_a.get("/api/v1/approvals/apr-2").json()["replaces_approval_id"] == "apr-1"
    assert api_a.get("/api/v1/approvals/apr-1").json()["replaces_approval_id"] is None


def test_an_approved_call_that_has_not_run_is_voided(api_a, operator_api_a, tenant_a):
    make_run(tenant_a, "running", run_id="run-1")
    ask(api_a, approval_id="apr-1")
    post(operator_api_a, "/api/v1/approvals/apr-1/decision", {"decision": "approve"})
    response = post(api_a, "/api/v1/approvals/apr-1/void", VOID)
    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["decision"], body["decided_by"], body["void_details"]) == (
        "voided",
        "approve",
        "token:ops-a",
        None,
    )


def test_void_once_its_call_ran_is_refused(api_a, operator_api_a, tenant_a):
    make_run(tenant_a, "running", run_id="run-1")
    ask(api_a, approval_id="apr-1")
    post(operator_api_a, "/api/v1/approvals/apr-1/decision", {"decision": "approve"})
    effect = post(
        api_a,
        "/api/v1/runs/run-1/effects",
        {
            "idempotency_key": "run-1:c1",
            "tool_name": "send_refund",
            "request": {"arguments": ARGS},
            "approval_id": "apr-1",
        },
    ).json()
    post(api_a, f"/api/v1/effects/{effect['effect_id']}/commit", {"result": {"output": "ok"}})
    before = reload_approval(tenant_a, "apr-1")
    status, code, details = error_of(post(api_a, "/api/v1/approvals/apr-1/void", VOID))
    assert (status, code, details) == (
        409,
        "effect_recorded",
        {"effect_id": effect["effect_id"], "effect_status": "committed", "status": "approved"},
    )
    assert reload_approval(tenant_a, "apr-1") == before
    assert audit_count(tenant_a, "approval.voided") == 0


def test_void_refusals_write_nothing(api_a, api_b, operator_api_a, make_token, tenant_a):
    make_run(tenant_a, "running", run_id="run-1")
    ask(api_a, approval_id="apr-1")
    other = Client(headers={"Authorization": f"Bearer {make_token(tenant_a, name='other')}"})
    before, run_before = reload_approval(tenant_a, "apr-1"), reload(tenant_a, "run-1")
    path = "/api/v1/approvals/apr-1/void"
    # Another tenant: 404 whatever the body; unknown id likewise.
    assert error_of(post(api_b, path, {"reason_code": 5}))[:2] == (404, "not_found")
    assert error_of(post(api_a, "/api/v1/approvals/nope/void", VOID))[:2] == (404, "not_found")
    assert error_of(post(Client(), path, VOID))[:2] == (401, "unauthenticated")
    assert error_of(post(other, path, VOID))[:2] == (403, "not_requester")
    # An operator token did not ask either.
    assert error_of(post(operator_api_a, path, VOID))[:2] == (403, "not_requester")
    for body, field, wanted in (
        ({"reason": "x"}, "reason_code", "validation_error"),
        ({**VOID, "reason_code": "bored"}, "reason_code", "validation_error"),
        ({"reason_code": "tool_changed"}, "reason", "validation_error"),
        ({**VOID, "reason": ""}, "reason", "validation_error"),
        ({**VOID, "details": [1]}, "details", "validation_error"),
        ({**VOID, "details": {"blob": "x" * 70_000}}, "details", "validation_error"),
        ({**VOID, "extra": 1}, "extra", "unknown_field"),
    ):
        status, code, details = error_of(post(api_a, path, body))
        assert (status, code, field in details) == (422, wanted, True), body
    assert reload_approval(tenant_a, "apr-1") == before
    assert reload(tenant_a, "run-1") == run_before
    assert audit_count(tenant_a, "approval.voided") == 0


@pytest.mark.parametrize("end", ["reject", "cancel", "void"])
def test_void_of_a_closed_approval_is_409(api_a, operator_api_a, tenant_a, end):
    make_run(tenant_a, "running", run_id="run-1")
    ask(api_a, approval_id="apr-1")
    if end == "reject":
        post(
            operator_api_a,
            "/api/v1/approvals/apr-1/decision",
            {"decision": "reject", "reason": "no"},
        )
    elif end == "cancel":
        post(api_a, "/api/v1/approvals/apr-1/cancel", {"reason": "gone"})
    else:
        post(api_a, "/api/v1/approvals/apr-1/void", VOID)
    before = reload_approval(tenant_a, "apr-1")
    status, code, details = error_of(post(api_a, "/api/v1/approvals/apr-1/void", VOID))
    expected = {"reject": "rejected", "cancel": "cancelled", "void": "voided"}[end]
    assert (status, code, details["status"]) == (409, "already_decided", expected)
    assert reload_approval(tenant_a, "apr-1") == before
    assert audit_count(tenant_a, "approval.voided") == (1 if end == "void" else 0)


def test_an_effect_under_a_voided_approval_is_409(api_a, tenant_a):
    make_run(tenant_a, "running", run_id="run-1")
    ask(api_a, approval_id="apr-1")
    post(api_a, "/api/v1/approvals/apr-1/void", VOID)
    status, code, _ = error_of(
        post(
            api_a,
            "/api/v1/runs/run-1/effects",
            {
                "idempotency_key": "run-1:c1",
                "tool_name": "send_refund",
                "request": {"arguments": ARGS},
                "approval_id": "apr-1",
            },
        )
    )
    assert (status, code) == (409, "approval_voided")
    assert api_a.get("/api/v1/effects?idempotency_key=run-1:c1").json()["results"] == []


def test_asking_again_names_a_voided_approval_of_the_run(api_a, api_b, tenant_a, tenant_b):
    make_run(tenant_a, "running", run_id="run-1")
    ask(api_a, approval_id="apr-0")
    post(api_a, "/api/v1/approvals/apr-0/cancel", {"reason": "gone"})
    version = reload(tenant_a, "run-1")["version"]
    # Cancelled, not voided: 422, nothing written.
    status, code, details = error_of(
        ask(api_a, expected_version=version, approval_id="apr-2", replaces_approval_id="apr-0")
    )
    assert (status, code, list(details)) == (422, "validation_error", ["replaces_approval_id"])
    assert reload(tenant_a, "run-1")["version"] == version
    ask(api_a, expected_version=version, approval_id="apr-1")
    post(api_a, "/api/v1/approvals/apr-1/void", VOID)
    version = reload(tenant_a, "run-1")["version"]
    # Another tenant's approval of the same id is no approval of this run.
    make_run(tenant_b, "running", run_id="run-1")
    status, code, _ = error_of(ask(api_b, approval_id="apr-b", replaces_approval_id="apr-1"))
    assert (status, code) == (422, "validation_error")
    again = ask(api_a, expected_version=version, approval_id="apr-2", replaces_approval_id="apr-1")
    assert again.status_code == 201


def test_schema_documents_the_void(client, db):
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    void = schema["paths"]["/api/v1/approvals/{approval_id}/void"]["post"]
    write = {"400", "401", "404", "409", "411", "413", "422", "429", "503"}
    assert set(void["responses"]) == write | {"200", "403"}
    body = schema["components"]["schemas"]["ApprovalVoidInRequest"]
    assert set(body["properties"]) == {"reason_code", "reason", "details", "worker"}
    assert body["properties"]["reason_code"]["allOf"] == [
        {"$ref": "#/components/schemas/VoidReasonEnum"}
    ]
    assert schema["components"]["schemas"]["VoidReasonEnum"]["enum"] == ["tool_changed"]
    approval = schema["components"]["schemas"]["Approval"]["properties"]
    assert "voided" in schema["components"]["schemas"]["ApprovalStatusEnum"]["enum"]
    for name in ("voided_by", "voided_at", "void_reason_code", "void_reason", "void_details"):
        assert name in approval
    assert (
        "replaces_approval_id"
        in schema["components"]["schemas"]["ApprovalRequestInRequest"]["properties"]
    )
