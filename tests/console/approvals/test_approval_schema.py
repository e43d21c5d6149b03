"""The approval page with the tool's JSON Schema: shown, edits checked field by field, and no
plain approve of arguments that do not fit it."""

import re

import pytest

from audit_app.models import AuditEvent
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.approvals.test_approvals import (
    HX,
    INBOX,
    decide_url,
    detail_url,
    form_data,
    messages_of,
    reload,
)
from tests.console.fixtures import make_pending, queries

SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string"},
        "amount_cents": {"type": "integer", "minimum": 1},
    },
    "required": ["order_id", "amount_cents"],
    "additionalProperties": False,
}
ARGS = {"order_id": "A-1", "amount_cents": 1200}
EDIT = ["approve", "edit", "reject"]
# The schema after the tool changed: a required currency the asked call does not have.
WITH_CURRENCY = {
    **SCHEMA,
    "properties": {**SCHEMA["properties"], "currency": {"type": "string"}},
    "required": ["order_id", "amount_cents", "currency"],
}


def pending(tenant, approval_id="a-1", *, schema=SCHEMA, **kw):
    kw.setdefault("run_id", f"run-{approval_id}")
    kw.setdefault("arguments", dict(ARGS))
    kw.setdefault("allowed_decisions", EDIT)
    return make_pending(
        tenant, approval_id=approval_id, tool_name="issue_refund", arguments_schema=schema, **kw
    )


def argument_errors(page: str) -> dict[str, str]:
    """The inline errors at the edit field: argument path -> its messages."""
    block = page.split('data-testid="argument-errors"', 1)[1].split("</ul>", 1)[0]
    return dict(
        re.findall(r'<li data-path="([^"]+)"><span class="mono">[^<]+</span>: ([^<]+)</li>', block)
    )


def test_the_page_shows_the_tools_schema(operator_a, tenant_a):
    pending(tenant_a)
    page = login(operator_a).get(detail_url("a-1")).content.decode()
    schema = page.split('data-testid="arguments-schema"', 1)[1].split("</details>", 1)[0]
    assert "The tool's arguments schema" in schema
    assert '<span class="nt">"additionalProperties"</span>' in schema
    assert "They must fit the tool's arguments schema." in page
    assert 'id="approve-form"' in page  # the asked arguments fit: approving them is offered


def test_without_a_schema_the_page_shows_none(operator_a, tenant_a):
    pending(tenant_a, schema=None)
    page = login(operator_a).get(detail_url("a-1")).content.decode()
    assert 'data-testid="arguments-schema"' not in page


def test_an_edit_that_does_not_fit_is_refused_field_by_field(operator_a, tenant_a):
    pending(tenant_a)
    client = login(operator_a)
    edited = '{"amount_cents": "lots", "foo": 1}'
    response = client.post(
        decide_url("a-1"), form_data(tenant_a, "a-1", decision="edit", approved_arguments=edited)
    )
    assert response.status_code == 422
    page = response.content.decode()
    assert argument_errors(page) == {
        "amount_cents": "&#x27;lots&#x27; is not of type &#x27;integer&#x27;",
        "foo": "not an argument of this tool",
        "order_id": "required",
    }
    assert "Arguments: The edited arguments do not fit the tool&#x27;s schema." in page
    # The operator's text stays in the field, which is marked invalid, its errors linked.
    assert "{&quot;amount_cents&quot;: &quot;lots&quot;, &quot;foo&quot;: 1}</textarea>" in page
    assert 'aria-describedby="json-status argument-errors" aria-invalid="true"' in page
    approval = reload(tenant_a, "a-1")
    assert (approval.status, approval.approved_arguments) == ("pending", None)
    assert approval.run.status == "waiting_approval"
    with in_tenant(tenant_a):
        assert not AuditEvent.objects.filter(action="approval.approved").exists()


def test_an_edit_refused_with_htmx_swaps_the_decision_with_its_errors(operator_a, tenant_a):
    pending(tenant_a)
    response = login(operator_a).post(
        decide_url("a-1"),
        form_data(tenant_a, "a-1", decision="edit", approved_arguments='{"order_id": "A-1"}'),
        headers=HX,
    )
    assert response.status_code == 422
    page = response.content.decode()
    assert "<html" not in page  # the decision fragment only
    assert argument_errors(page) == {"amount_cents": "required"}


def test_an_edit_that_fits_is_approved(operator_a, tenant_a):
    pending(tenant_a)
    response = login(operator_a).post(
        decide_url("a-1"),
        form_data(
            tenant_a,
            "a-1",
            decision="edit",
            approved_arguments='{"order_id": "A-1", "amount_cents": 600}',
        ),
    )
    assert messages_of(response) == [
        "Approved issue_refund (a-1) with edited arguments: the runtime runs those."
    ]
    assert reload(tenant_a, "a-1").approved_arguments == {"order_id": "A-1", "amount_cents": 600}


def test_arguments_that_do_not_fit_are_not_offered_for_approval(operator_a, tenant_a):
    pending(tenant_a, schema=WITH_CURRENCY)
    client = login(operator_a)
    page = client.get(detail_url("a-1")).content.decode()
    assert 'id="approve-form"' not in page
    assert 'id="edit-form"' in page and 'id="reject-form"' in page
    notice = page.split('data-testid="asked-arguments-invalid"', 1)[1].split("</div>", 1)[0]
    assert "the call cannot run as asked. Edit them to fit, or reject." in notice
    assert '<li data-path="currency"><span class="mono">currency</span>: required</li>' in notice
    assert '<details class="edit-args" open>' in page  # the way forward is open
    # Not from the inbox either; a forged approval is refused and changes nothing.
    inbox = client.get(INBOX).content.decode()
    assert "data-hotkey-approve" not in inbox and "Decide…" in inbox
    response = client.post(decide_url("a-1"), form_data(tenant_a, "a-1", decision="approve"))
    assert response.status_code == 422
    assert "The arguments asked do not fit the tool&#x27;s schema" in response.content.decode()
    response = client.post(
        decide_url("a-1"), form_data(tenant_a, "a-1", decision="approve", source="inbox")
    )
    assert messages_of(response) == [
        "Not decided: its arguments do not fit the tool's schema; open the call and decide there."
    ]
    assert reload(tenant_a, "a-1").status == "pending"
    # Edited to fit, it is approved.
    fits = '{"order_id": "A-1", "amount_cents": 1200, "currency": "EUR"}'
    client.post(
        decide_url("a-1"), form_data(tenant_a, "a-1", decision="edit", approved_arguments=fits)
    )
    approval = reload(tenant_a, "a-1")
    assert (approval.status, approval.decision) == ("approved", "edit")


def test_a_runtime_that_takes_no_edit_leaves_only_reject(operator_a, tenant_a):
    pending(tenant_a, schema=WITH_CURRENCY, allowed_decisions=["approve", "reject"])
    page = login(operator_a).get(detail_url("a-1")).content.decode()
    assert 'id="approve-form"' not in page and 'id="edit-form"' not in page
    assert 'id="reject-form"' in page
    assert "The runtime cannot take edited arguments: reject it." in page


def test_support_sees_the_schema_but_cannot_decide(support_a, tenant_a):
    pending(tenant_a)
    client = login(support_a)
    page = client.get(detail_url("a-1")).content.decode()
    assert 'data-testid="arguments-schema"' in page and 'data-testid="read-only"' in page
    response = client.post(
        decide_url("a-1"),
        form_data(tenant_a, "a-1", decision="edit", approved_arguments='{"foo": 1}'),
    )
    assert response.status_code == 403
    assert reload(tenant_a, "a-1").status == "pending"


def test_another_tenants_approval_is_404_even_with_an_edit(admin_b, tenant_a):
    pending(tenant_a)
    client = login(admin_b)
    assert client.get("/t/globex/approvals/a-1/").status_code == 404
    response = client.post(
        "/t/globex/approvals/a-1/decide",
        {"decision": "edit", "approved_arguments": "{}", "digest": "x", "run_version": 3},
    )
    assert response.status_code == 404
    assert reload(tenant_a, "a-1").status == "pending"


@pytest.mark.parametrize("schema", [SCHEMA, WITH_CURRENCY], ids=["fits", "does-not-fit"])
def test_the_page_with_a_schema_costs_no_query_more(
    operator_a, tenant_a, django_assert_num_queries, schema
):
    pending(tenant_a, schema=schema)
    client = login(operator_a)
    # + the notification trail (2) and the reassign form (2).
    with django_assert_num_queries(queries(18)):
        assert client.get(detail_url("a-1")).status_code == 200
