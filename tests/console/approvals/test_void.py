"""The console shows a voided approval, the approval that asks its call again, and the drift."""

import re

import pytest

from actions_app.approvals import ApprovalActions
from approvals_app.store import ApprovalStore
from runs_app.store import RunStateStore
from stateroom.actor import Actor
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.fixtures import make_pending, queries

INBOX = "/t/acme/approvals/"
HISTORY = "/t/acme/approvals/history/"
RUNTIME = Actor.system("runtime")
OLD = {"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]}
NEW = {
    "type": "object",
    "properties": {"amount": {"type": "integer"}, "currency": {"type": "string"}},
    "required": ["amount", "currency"],
}
DIFF = {"tool": "send_refund", "old": OLD, "new": NEW}


def void_and_ask_again(tenant, old_id: str, new_id: str, *, run_id: str, approve_by=None):
    """What the gate does on a resume after the tool's schema changed."""
    with in_tenant(tenant):
        if approve_by is not None:
            ApprovalStore(tenant, Actor.for_user(approve_by)).decide(
                approval_id=old_id, decision="approve", reason="fine"
            )
        ApprovalActions(tenant, RUNTIME).void(
            approval_id=old_id,
            reason_code="tool_changed",
            reason="The tool changed <b>since</b> this was asked.",
            details=DIFF,
        )
        runs = RunStateStore(tenant, RUNTIME)
        runs.append_events(
            run_id=run_id,
            events=[
                {"type": "agent.drift", "payload": {"tools": {"send_refund": DIFF | {}}}},
                {
                    "type": "approval.voided",
                    "payload": {
                        "approval_id": old_id,
                        "status": "approved" if approve_by else "pending",
                        "reason": "tool_changed",
                        "tool_name": "send_refund",
                        "schema": DIFF,
                    },
                },
            ],
        )
        ApprovalStore(tenant, RUNTIME).request(
            run_id=run_id,
            expected_version=runs.get(run_id).version,
            tool_name="send_refund",
            arguments={"amount": 1200, "currency": "EUR"},
            risk="medium",
            approval_id=new_id,
            summary=f"The tool changed since this was asked ({old_id})",
            replaces_approval_id=old_id,
        )


@pytest.fixture
def asked_again(tenant_a, operator_a):
    make_pending(tenant_a, approval_id="a-old", events=1, effects=0)
    void_and_ask_again(tenant_a, "a-old", "a-new", run_id="run-1", approve_by=operator_a)


def test_the_voided_approval_says_so_with_the_diff(asked_again, operator_a):
    page = login(operator_a).get(f"{INBOX}a-old/").content.decode()
    assert re.search(r'data-testid="approval-status">voided<', page)
    assert 'data-void-code="tool_changed"' in page
    assert "Voided by the runtime: the tool changed since this was asked" in page
    assert f"It had been approved by {operator_a.username}" in page
    # The runtime's words are escaped.
    assert "The tool changed &lt;b&gt;since&lt;/b&gt; this was asked." in page
    changes = re.search(r'data-testid="schema-changes">(.*?)</ul>', page, re.S).group(1)
    assert changes == (
        '<li><span class="mono">properties.currency.type</span> <ins>&quot;string&quot;</ins></li>'
        '<li><span class="mono">required[1]</span> <ins>&quot;currency&quot;</ins></li>'
    )
    assert re.search(
        r'data-testid="asked-again-as">Asked again as <a class="mono" href="/t/acme/approvals/a-new/">a-new</a>',
        page,
    )
    # Nothing to decide on it any more.
    assert 'data-testid="decision-panel"' not in page
    assert "/decide" not in page


def test_the_approval_asked_again_links_the_voided_one_and_shows_the_diff(asked_again, operator_a):
    page = login(operator_a).get(f"{INBOX}a-new/").content.decode()
    notice = re.search(r'data-testid="asked-again">(.*?)</section>', page, re.S).group(1)
    assert "The tool changed since this was asked" in notice
    assert '<a class="mono" href="/t/acme/approvals/a-old/">a-old</a>' in notice
    assert f"after {operator_a.username} had approved it" in notice
    assert "properties.currency.type" in notice
    assert 'data-testid="decision-panel"' in page


def test_the_inbox_row_says_the_tool_changed(asked_again, operator_a):
    page = login(operator_a).get(INBOX).content.decode()
    assert re.findall(r'data-hotkey-row data-id="([^"]+)"', page) == ["a-new"]
    row = re.search(r'data-testid="inbox-tool-changed">(.*?)</div>', page, re.S).group(1)
    assert '<a class="mono" href="/t/acme/approvals/a-old/">a-old</a> was voided' in row
    assert "Schema diff (2 changes)" in row
    assert "properties.currency.type" in row


@pytest.mark.parametrize("rows", [1, 10])
def test_inbox_query_count_with_approvals_asked_again(
    tenant_a, operator_a, django_assert_num_queries, rows
):
    for i in range(rows):
        make_pending(
            tenant_a,
            run_id=f"r{i}",
            session_id=f"s{i}",
            approval_id=f"old{i}",
            items=0,
            events=0,
            effects=0,
        )
        void_and_ask_again(tenant_a, f"old{i}", f"new{i}", run_id=f"r{i}")
    client = login(operator_a)
    with django_assert_num_queries(queries(8)):
        page = client.get(INBOX).content.decode()
    assert page.count('data-testid="inbox-tool-changed"') == rows


@pytest.mark.parametrize("approval_id", ["a-old", "a-new"])
def test_detail_query_counts(asked_again, operator_a, django_assert_num_queries, approval_id):
    client = login(operator_a)
    # + the notification trail (2); the pending one also the reassign form (2).
    with django_assert_num_queries(queries(16 if approval_id == "a-old" else 18)):
        assert client.get(f"{INBOX}{approval_id}/").status_code == 200


def test_history_has_a_voided_tab(asked_again, support_a, django_assert_num_queries):
    client = login(support_a)
    assert client.get(f"{INBOX}?status=voided")["Location"] == f"{HISTORY}?tab=voided"
    with django_assert_num_queries(queries(8)):
        page = client.get(f"{HISTORY}?tab=voided").content.decode()
    assert re.findall(r'data-testid="history-row" data-id="([^"]+)"', page) == ["a-old"]
    reason = re.search(r'data-testid="void-reason">(.*?)</td>', page, re.S).group(1)
    assert "tool_changed" in reason and "the tool changed since this was asked" in reason
    assert 'aria-current="page">Voided</a>' in page
    # Not among the decided ones any more.
    decided = client.get(f"{HISTORY}?tab=decided").content.decode()
    assert 'data-id="a-old"' not in decided
    export = b"".join(client.get(f"{INBOX}history.csv?tab=voided").streaming_content).decode()
    header, row = export.splitlines()[:2]
    assert header.endswith(
        "voided_by,voided_at,void_reason_code,void_reason,replaces_approval_id,tool_outcome,tool_outcome_at"
    )
    assert row.startswith("a-old,voided,approve,") and ",tool_changed," in row


def test_the_run_inspector_explains_the_drift(asked_again, support_a):
    page = login(support_a).get("/t/acme/runs/run-1/").content.decode()
    explained = re.findall(r'data-testid="event-explained">(.*?)</div>', page, re.S)
    assert len(explained) == 2
    drift, voided = explained
    assert "Tool send_refund: its arguments schema changed" in drift
    assert "properties.currency.type" in drift
    assert "Approval a-old (approved) voided: the tool changed since this was asked" in voided
    assert re.search(r'data-testid="approval-row">.*?a-old.*?voided</span> by runtime', page, re.S)
    assert 'data-testid="approval-replaces">asks again a-old' in page


def test_another_tenants_voided_approval_is_404(tenant_b, admin_a, admin_b):
    make_pending(tenant_b, approval_id="b-old", events=0, effects=0)
    void_and_ask_again(tenant_b, "b-old", "b-new", run_id="run-1", approve_by=admin_b)
    client = login(admin_a)
    assert client.get(f"{INBOX}b-old/").status_code == 404
    assert client.get(f"{INBOX}b-new/").status_code == 404
    assert 'data-id="b-old"' not in client.get(f"{HISTORY}?tab=voided").content.decode()
