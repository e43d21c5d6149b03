"""What a message says: the call, its key arguments only (trimmed), the link; less for support."""

from datetime import UTC, datetime

import pytest
from django.test import override_settings

from approvals_app.store import ApprovalStore
from notifications_app import messages
from stateroom.actor import Actor
from tenancy_app.models import Role
from tenancy_app.scoping import in_tenant

from .conftest import asked

pytestmark = pytest.mark.django_db

ARGUMENTS = {
    "amount": 1200,
    "note": "x" * 200,
    "customer": {"id": "c-1", "card": "4111 1111 1111 1111"},
    "api_key": "sk-live-secret",
}


def message_for(tenant, role, kind="asked", approval_id="apr-1"):
    with in_tenant(tenant):
        store = ApprovalStore(tenant, Actor.system("test"))
        approval = store.get(approval_id)
        return (
            messages.for_approval(
                tenant=tenant,
                approval=approval,
                kind=kind,
                role=role,
                digest=store.digest(approval),
            ),
            approval,
            store.digest(approval),
        )


@pytest.fixture
def approval(tenant_a):
    return asked(
        tenant_a,
        tool_name="payments.refund",
        risk="critical",
        arguments=ARGUMENTS,
        key_arguments=["amount", "note", "customer"],
        summary="Refund 12.00 EUR to c-1",
        expires_at=datetime(2031, 1, 2, 3, 4, tzinfo=UTC),
    )


@override_settings(STATEROOM_CONSOLE_URL="https://stateroom.example/")
def test_a_message_names_the_call_its_key_arguments_trimmed_and_links_to_it(tenant_a, approval):
    message, stored, digest = message_for(tenant_a, Role.OPERATOR)
    assert message.title == "Approval needed: payments.refund (critical)"
    assert message.url == "https://stateroom.example/t/acme/approvals/apr-1/"
    assert message.key_arguments == [
        ("amount", "1200"),
        ("note", "x" * 79 + "…"),
        ("customer", '{"id": "c-1", "card": "4111 1111 1111 1111"}'),
    ]
    assert all(len(value) <= messages.VALUE_CHARS for _, value in message.key_arguments)
    assert "sk-live-secret" not in message.text and "api_key" not in message.text
    assert "x" * 80 not in message.text
    assert message.text.splitlines()[0] == "Refund 12.00 EUR to c-1"
    assert "Expires: 2031-01-02T03:04:00+00:00" in message.text
    assert message.text.endswith("Open: https://stateroom.example/t/acme/approvals/apr-1/")
    assert (message.digest, message.run_version) == (digest, stored.run_version)
    assert message.allowed_decisions == ["approve", "reject"]
    assert message.recipient_can_decide is True
    assert (message.tenant_slug, message.approval_id, message.status) == (
        "acme",
        "apr-1",
        "pending",
    )


def test_support_gets_no_argument_values_and_cannot_decide(tenant_a, approval):
    message, _, _ = message_for(tenant_a, Role.SUPPORT)
    assert message.key_arguments == []
    assert "1200" not in message.text and "xxxx" not in message.text and 'c-1"' not in message.text
    assert message.recipient_can_decide is False
    assert message.summary == "Refund 12.00 EUR to c-1"


def test_a_channel_post_cannot_decide_for_anyone(tenant_a, approval):
    message, _, _ = message_for(tenant_a, None)
    assert message.recipient_can_decide is False


def test_without_key_arguments_no_argument_is_shown(tenant_a):
    asked(tenant_a, arguments={"to": "ops@example.com", "amount": 5}, summary="")
    message, _, _ = message_for(tenant_a, Role.ADMIN)
    assert message.key_arguments == []
    assert "ops@example.com" not in message.text
    assert message.text.splitlines()[0] == "send_refund asks for approval."


@pytest.mark.parametrize(
    ("kind", "title"),
    [
        ("reminder", "Reminder: approval needed: payments.refund (critical)"),
        ("escalated", "Escalated: approval needed: payments.refund (critical)"),
        ("reassigned", "Assigned to you: payments.refund (critical)"),
    ],
)
def test_titles_say_which_notice_it_is(tenant_a, approval, kind, title):
    assert message_for(tenant_a, Role.OPERATOR, kind)[0].title == title


def test_an_ended_message_carries_the_outcome_and_offers_no_decision(
    tenant_a, approval, operator_a
):
    with in_tenant(tenant_a):
        ApprovalStore(tenant_a, Actor.for_user(operator_a)).decide(
            approval_id="apr-1", decision="approve", reason="ok"
        )
    message, _, _ = message_for(tenant_a, Role.OPERATOR, "ended")
    assert message.title == "Approved: payments.refund (critical)"
    assert (message.status, message.outcome) == ("approved", "approved by otto")
    assert "Outcome: approved by otto" in message.text and "Expires" not in message.text
    assert message.recipient_can_decide is False


def test_an_expiry_message(tenant_a, approval):
    message, _, _ = message_for(tenant_a, Role.ADMIN, "expired")
    assert message.title == "Expired undecided: payments.refund (critical)"
