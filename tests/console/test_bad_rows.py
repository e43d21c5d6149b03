"""No stored row makes a page, a list or a decision fail (issue 31).

Rows written before the JSON gate refused numbers beyond ±(2**53 - 1) hold
integers RFC 8785 cannot spell (jsonb kept `1e16` as `10000000000000000`);
a runtime may store a tool call whose arguments text nests deeper than any
page can draw. Such a row is shown (or shown as one that cannot be), logged,
and the rest of the page works.
"""

from __future__ import annotations

import json
import logging

import pytest
from django.test import Client

from approvals_app.models import ApprovalRequest
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.approvals.test_approvals import (
    INBOX,
    decide_url,
    detail_url,
    form_data,
    inbox_ids,
    reload,
)
from tests.console.fixtures import make_pending

JSON = "application/json"
BIG = 10**16  # what jsonb made of `1e16` before the gate refused it


def store_big_number(tenant, *approval_ids: str) -> None:
    """The arguments as such a row holds them (written as jsonb kept them, not by a store)."""
    with in_tenant(tenant):
        ApprovalRequest.objects.filter(approval_id__in=approval_ids).update(
            arguments={"to": "acct-9", "amount": BIG}, usual_arguments={"amount": BIG}
        )


@pytest.fixture
def operator_api_a(make_token, tenant_a) -> Client:
    return Client(headers={"Authorization": f"Bearer {make_token(tenant_a, role='operator')}"})


def test_an_approval_holding_a_number_beyond_2_53_never_fails_the_pages_or_the_lists(
    operator_a, tenant_a, api_a, caplog
):
    make_pending(tenant_a, approval_id="a-bad", run_id="r1", session_id="s1")
    make_pending(tenant_a, approval_id="a-good", run_id="r2", session_id="s2")
    store_big_number(tenant_a, "a-bad")
    client = login(operator_a)
    with caplog.at_level(logging.WARNING, logger="approvals_app.store"):
        inbox = client.get(INBOX)
    assert inbox.status_code == 200
    assert sorted(inbox_ids(inbox)) == ["a-bad", "a-good"]
    assert "Approval a-bad: its stored arguments have no RFC 8785 form" in caplog.text
    page = client.get(detail_url("a-bad"))
    assert page.status_code == 200
    assert str(BIG) in page.content.decode()
    assert (
        "The number at amount is outside ±(2**53 - 1), the integers every JSON reader keeps"
        " exactly." in page.content.decode()
    )
    good = client.get(detail_url("a-good")).content.decode()
    assert 'data-testid="arguments-problem"' not in good
    assert client.get(f"{INBOX}history/?tab=decided").status_code == 200
    listed = api_a.get("/api/v1/approvals?status=pending")
    assert listed.status_code == 200
    by_id = {a["approval_id"]: a for a in listed.json()["results"]}
    assert by_id["a-bad"]["arguments"] == {"to": "acct-9", "amount": BIG}
    assert api_a.get("/api/v1/approvals/a-bad").json()["arguments"]["amount"] == BIG


def test_such_an_approval_can_still_be_decided_from_the_api_and_the_console(
    operator_a, operator_api_a, tenant_a
):
    for name in ("a-api", "a-reject", "a-edit"):
        make_pending(
            tenant_a,
            approval_id=name,
            run_id=f"r-{name}",
            session_id=f"s-{name}",
            allowed_decisions=["approve", "edit", "reject"],
        )
    store_big_number(tenant_a, "a-api", "a-reject", "a-edit")
    decided = operator_api_a.post(
        "/api/v1/approvals/a-api/decision",
        {"decision": "approve", "reason": "ok"},
        content_type=JSON,
    )
    assert decided.status_code == 200, decided.content
    client = login(operator_a)
    rejected = client.post(
        decide_url("a-reject"), form_data(tenant_a, "a-reject", decision="reject", reason="no")
    )
    edited = client.post(
        decide_url("a-edit"),
        form_data(tenant_a, "a-edit", decision="edit", approved_arguments='{"amount": 5}'),
    )
    assert (rejected.status_code, edited.status_code) == (302, 302)
    assert [reload(tenant_a, name).status for name in ("a-api", "a-reject", "a-edit")] == [
        "approved",
        "rejected",
        "approved",
    ]
    assert reload(tenant_a, "a-edit").approved_arguments == {"amount": 5}


@pytest.mark.parametrize("number", ["1e16", "9007199254740992", "1.5e300"])
def test_the_console_edit_refuses_a_number_beyond_2_53(operator_a, tenant_a, number):
    make_pending(tenant_a, approval_id="a-1", allowed_decisions=["edit", "reject"])
    response = login(operator_a).post(
        decide_url("a-1"),
        form_data(tenant_a, "a-1", decision="edit", approved_arguments=f'{{"amount": {number}}}'),
    )
    assert response.status_code == 422
    assert "The number at amount is outside ±(2**53 - 1)" in response.content.decode()
    assert reload(tenant_a, "a-1").status == "pending"


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_a_conversation_item_that_cannot_be_drawn_is_shown_as_such(
    operator_a, tenant_a, api_a, caplog
):
    make_pending(tenant_a, approval_id="a-1", items=0)
    calls = [
        # Parses, but no page can draw a tree 300 levels deep: shown as a row that cannot be.
        {"type": "function_call", "name": "deep_tool", "arguments": nested(300), "call_id": "c1"},
        # Deeper than Python reads: shown as the text it is.
        {"type": "function_call", "name": "deeper_tool", "arguments": nested(50_000)},
        {"text": "still here"},
    ]
    items = [{"role": "assistant", "item_type": "tool_call", "payload": p} for p in calls]
    appended = api_a.post(
        "/api/v1/sessions/sess-1/items", json.dumps({"items": items}), content_type=JSON
    )
    assert appended.status_code == 201
    client = login(operator_a)
    for url in (detail_url("a-1"), "/t/acme/sessions/sess-1/"):
        caplog.clear()
        with caplog.at_level(logging.ERROR, logger="console_app.templatetags.console_data"):
            response = client.get(url)
        assert response.status_code == 200, url
        page = response.content.decode()
        assert page.count('data-testid="unrenderable-row"') == 1, url
        assert "still here" in page and "deeper_tool" in page, url
        assert "A row of console/_chat.html could not be rendered" in caplog.text
