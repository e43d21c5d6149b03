"""An approval with the tool's JSON Schema in a real browser: a refused edit's errors appear at
the field, argument by argument, and arguments that do not fit offer no plain approve."""

from playwright.sync_api import expect

from approvals_app.models import ApprovalRequest
from tenancy_app.scoping import in_tenant
from tests.console.fixtures import make_pending

INBOX = "/t/acme/approvals/"
SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string"},
        "amount_cents": {"type": "integer", "minimum": 1},
    },
    "required": ["order_id", "amount_cents"],
    "additionalProperties": False,
}


def approval(tenant, approval_id: str) -> ApprovalRequest:
    with in_tenant(tenant):
        return ApprovalRequest.objects.get(approval_id=approval_id)


def test_an_edit_that_does_not_fit_shows_its_errors_at_the_field(
    page, live_server, console_login, operator_a, tenant_a
):
    make_pending(
        tenant_a,
        approval_id="apr-1",
        tool_name="issue_refund",
        arguments={"order_id": "A-1", "amount_cents": 1200},
        allowed_decisions=["approve", "edit", "reject"],
        arguments_schema=SCHEMA,
    )
    console_login(page, live_server, "otto")
    page.goto(f"{live_server.url}{INBOX}apr-1/")
    page.get_by_text("Edit the arguments, then approve").click()
    field = page.get_by_label("Arguments the runtime runs instead (JSON object)")
    field.fill('{"amount_cents": "lots", "foo": 1}')
    page.get_by_test_id("approve-edited").click()

    errors = page.get_by_test_id("argument-errors").locator("li")
    expect(errors).to_have_text(
        [
            "amount_cents: 'lots' is not of type 'integer'",
            "foo: not an argument of this tool",
            "order_id: required",
        ]
    )
    expect(page).to_have_url(f"{live_server.url}{INBOX}apr-1/")  # swapped in place
    field = page.get_by_label("Arguments the runtime runs instead (JSON object)")
    expect(field).to_be_visible()  # the edit stays open, with what was typed
    expect(field).to_have_value('{"amount_cents": "lots", "foo": 1}')
    expect(field).to_have_attribute("aria-invalid", "true")
    assert approval(tenant_a, "apr-1").status == "pending"

    field.fill('{"order_id": "A-1", "amount_cents": 600}')
    page.get_by_test_id("approve-edited").click()
    page.wait_for_url(live_server.url + INBOX)
    decided = approval(tenant_a, "apr-1")
    assert (decided.status, decided.approved_arguments) == (
        "approved",
        {"order_id": "A-1", "amount_cents": 600},
    )


def test_arguments_that_do_not_fit_can_only_be_edited_or_rejected(
    page, live_server, console_login, operator_a, tenant_a
):
    make_pending(
        tenant_a,
        approval_id="apr-2",
        tool_name="issue_refund",
        arguments={"order_id": "A-1", "amount_cents": "1200"},
        allowed_decisions=["approve", "edit", "reject"],
        arguments_schema=SCHEMA,
    )
    console_login(page, live_server, "otto")
    page.goto(f"{live_server.url}{INBOX}apr-2/")
    expect(page.get_by_test_id("asked-arguments-invalid")).to_contain_text(
        "amount_cents: '1200' is not of type 'integer'"
    )
    expect(page.get_by_test_id("approve")).to_have_count(0)
    expect(page.get_by_test_id("reject")).to_be_visible()
    field = page.get_by_label("Arguments the runtime runs instead (JSON object)")
    expect(field).to_be_visible()  # open: editing is the way to run it
    field.fill('{"order_id": "A-1", "amount_cents": 1200}')
    page.get_by_test_id("approve-edited").click()
    page.wait_for_url(live_server.url + INBOX)
    assert approval(tenant_a, "apr-2").decision == "edit"
