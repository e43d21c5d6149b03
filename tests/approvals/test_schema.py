"""An approval with the tool's JSON Schema: edits, and approving as asked, must fit it."""

import pytest
from django.test import Client

from approvals_app.schemas import MAX_SCHEMA_BYTES
from audit_app.models import AuditEvent
from tenancy_app.scoping import in_tenant

from ..runs.conftest import make_run, reload
from .conftest import reload_approval
from .test_api import approval_count, error_of, post

# The Agents SDK's params_json_schema for `issue_refund(order_id: str, amount_cents: int)`.
REFUND_SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "title": "Order Id"},
        "amount_cents": {"type": "integer", "title": "Amount Cents"},
    },
    "required": ["order_id", "amount_cents"],
    "additionalProperties": False,
    "title": "issue_refund_args",
}
REFUND = {"order_id": "A-1", "amount_cents": 1200}


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
        "tool_name": "issue_refund",
        "arguments": REFUND,
        "risk": "medium",
        "allowed_decisions": ["approve", "edit", "reject"],
        "arguments_schema": REFUND_SCHEMA,
        **body,
    }
    return post(client, f"/api/v1/runs/{run_id}/approvals", body)


def decide(client, approval_id="apr-1", **body):
    return post(client, f"/api/v1/approvals/{approval_id}/decision", {"reason": "ok", **body})


def audit_count(tenant, action: str) -> int:
    with in_tenant(tenant):
        return AuditEvent.objects.filter(tenant=tenant, action=action).count()


def test_the_schema_is_stored_and_read_back(api_a, tenant_a):
    make_run(tenant_a, "running", run_id="run-1")
    response = ask(api_a, approval_id="apr-1")
    assert response.status_code == 201
    assert response.json()["arguments_schema"] == REFUND_SCHEMA
    assert api_a.get("/api/v1/approvals/apr-1").json()["arguments_schema"] == REFUND_SCHEMA
    [pending] = api_a.get("/api/v1/approvals?status=pending").json()["results"]
    assert pending["arguments_schema"] == REFUND_SCHEMA


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        (
            {"type": "objectz"},
            "not a valid JSON Schema at type: 'objectz' is not valid under any of the given schemas",
        ),
        (
            {"type": "object", "properties": {"a": {"pattern": "("}}},
            "not a valid JSON Schema at properties/a/pattern: '(' is not a 'regex'",
        ),
        (
            {"$ref": "https://example.com/tool.json"},
            "has a $ref that cannot be resolved (none is fetched): "
            "Unresolvable: https://example.com/tool.json",
        ),
        (
            {"type": "object", "description": "x" * MAX_SCHEMA_BYTES},
            f"at most {MAX_SCHEMA_BYTES} bytes of JSON",
        ),
        ({"$schema": 5}, "$schema must be a string (the dialect's URI)"),
        (
            {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}},
            "has $refs that refer to themselves without end",
        ),
    ],
    ids=["bad-type", "bad-regex", "remote-ref", "too-big", "schema-not-a-string", "ref-loop"],
)
def test_a_malformed_schema_is_422_and_nothing_is_written(api_a, tenant_a, schema, problem):
    make_run(tenant_a, "running", run_id="run-1")
    response = ask(api_a, approval_id="apr-1", arguments_schema=schema)
    assert error_of(response) == (422, "validation_error", {"arguments_schema": [problem]})
    assert approval_count(tenant_a) == 0
    run = reload(tenant_a, "run-1")
    assert (run["status"], run["version"], run["pending_approval_id"]) == ("running", 2, "")


def test_a_schema_that_is_not_an_object_is_422(api_a, tenant_a):
    make_run(tenant_a, "running", run_id="run-1")
    status, code, details = error_of(ask(api_a, arguments_schema=["type", "object"]))
    assert (status, code, list(details)) == (422, "validation_error", ["arguments_schema"])
    assert approval_count(tenant_a) == 0


def test_an_edit_that_does_not_fit_is_422_naming_each_path_and_changes_nothing(
    api_a, operator_api_a, tenant_a
):
    make_run(tenant_a, "running", run_id="run-1")
    ask(api_a, approval_id="apr-1")
    response = decide(
        operator_api_a, decision="edit", approved_arguments={"amount_cents": "lots", "foo": 1}
    )
    assert error_of(response) == (
        422,
        "validation_error",
        {
            "approved_arguments.amount_cents": ["'lots' is not of type 'integer'"],
            "approved_arguments.foo": ["not an argument of this tool"],
            "approved_arguments.order_id": ["required"],
        },
    )
    assert response.json()["error"]["message"] == (
        "The edited arguments do not fit the tool's schema."
    )
    row = reload_approval(tenant_a, "apr-1")
    assert (row["status"], row["approved_arguments"], row["decided_by"]) == ("pending", None, "")
    run = reload(tenant_a, "run-1")
    assert (run["status"], run["version"]) == ("waiting_approval", 3)
    assert audit_count(tenant_a, "approval.approved") == 0


def test_an_edit_that_fits_is_approved(api_a, operator_api_a, tenant_a):
    make_run(tenant_a, "running", run_id="run-1")
    ask(api_a, approval_id="apr-1")
    edited = {"order_id": "A-1", "amount_cents": 600}
    response = decide(operator_api_a, decision="edit", approved_arguments=edited)
    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["decision"], body["approved_arguments"]) == (
        "approved",
        "edit",
        edited,
    )


def test_nested_paths_are_named_with_dots_and_brackets(api_a, operator_api_a, tenant_a):
    schema = {
        "type": "object",
        "properties": {
            "lines": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
                },
            }
        },
    }
    make_run(tenant_a, "running", run_id="run-1")
    ask(api_a, approval_id="apr-1", arguments={"lines": []}, arguments_schema=schema)
    response = decide(
        operator_api_a,
        decision="edit",
        approved_arguments={"lines": [{"sku": "a", "qty": 1}, {"sku": 2, "qty": "x"}]},
    )
    assert error_of(response)[2] == {
        "approved_arguments.lines[1].sku": ["2 is not of type 'string'"],
        "approved_arguments.lines[1].qty": ["'x' is not of type 'integer'"],
    }


def test_approving_arguments_that_do_not_fit_is_refused_edit_or_reject_remain(
    api_a, operator_api_a, tenant_a
):
    """The re-ask after a tool changed: the old arguments, the new schema."""
    schema = {
        **REFUND_SCHEMA,
        "properties": {**REFUND_SCHEMA["properties"], "currency": {"type": "string"}},
        "required": ["order_id", "amount_cents", "currency"],
    }
    make_run(tenant_a, "running", run_id="run-1")
    ask(api_a, approval_id="apr-1", arguments_schema=schema)
    response = decide(operator_api_a, decision="approve")
    assert error_of(response) == (
        422,
        "arguments_invalid",
        {
            "decision": ["approve as asked is not possible: edit or reject"],
            "arguments.currency": ["required"],
        },
    )
    assert reload_approval(tenant_a, "apr-1")["status"] == "pending"
    assert reload(tenant_a, "run-1")["status"] == "waiting_approval"
    # Editing them to fit is approved; so would a rejection be.
    fits = {**REFUND, "currency": "EUR"}
    response = decide(operator_api_a, decision="edit", approved_arguments=fits)
    assert (response.status_code, response.json()["approved_arguments"]) == (200, fits)


def test_an_unchanged_edit_of_arguments_that_do_not_fit_is_refused(api_a, operator_api_a, tenant_a):
    make_run(tenant_a, "running", run_id="run-1")
    ask(api_a, approval_id="apr-1", arguments={"order_id": "A-1", "amount_cents": "12"})
    response = decide(
        operator_api_a,
        decision="edit",
        approved_arguments={"order_id": "A-1", "amount_cents": "12"},
    )
    assert error_of(response)[2] == {
        "approved_arguments.amount_cents": ["'12' is not of type 'integer'"]
    }
    assert decide(operator_api_a, decision="reject", reason="wrong").status_code == 200
    assert reload_approval(tenant_a, "apr-1")["status"] == "rejected"


def test_without_a_schema_edits_are_not_checked(api_a, operator_api_a, tenant_a):
    make_run(tenant_a, "running", run_id="run-1")
    ask(api_a, approval_id="apr-1", arguments_schema=None)
    response = decide(operator_api_a, decision="edit", approved_arguments={"anything": "goes"})
    assert response.status_code == 200


def test_an_edit_of_another_tenants_approval_is_404_whatever_the_body(
    api_a, operator_api_b, tenant_a
):
    make_run(tenant_a, "running", run_id="run-1")
    ask(api_a, approval_id="apr-1")
    response = decide(operator_api_b, decision="edit", approved_arguments={"amount_cents": "x"})
    assert error_of(response)[:2] == (404, "not_found")
    assert reload_approval(tenant_a, "apr-1")["status"] == "pending"


def test_a_runtime_token_cannot_decide_even_a_fitting_edit(api_a, tenant_a):
    make_run(tenant_a, "running", run_id="run-1")
    ask(api_a, approval_id="apr-1")
    response = decide(api_a, decision="edit", approved_arguments=REFUND)
    assert response.status_code == 403
    assert reload_approval(tenant_a, "apr-1")["status"] == "pending"


def test_a_ref_loop_only_an_edit_reaches_refuses_the_edit(api_a, operator_api_a, tenant_a):
    schema = {
        "type": "object",
        "properties": {"order_id": {"type": "string"}, "note": {"$ref": "#/$defs/loop"}},
        "$defs": {"loop": {"$ref": "#/$defs/loop"}},
    }
    make_run(tenant_a, "running", run_id="run-1")
    response = ask(
        api_a, approval_id="apr-1", arguments={"order_id": "A-1"}, arguments_schema=schema
    )
    assert response.status_code == 201
    response = decide(operator_api_a, decision="edit", approved_arguments={"note": "x"})
    assert error_of(response)[2] == {
        "approved_arguments": ["the tool's schema has $refs that loop without end"]
    }
    assert reload_approval(tenant_a, "apr-1")["status"] == "pending"
