"""Approval history: tabs by status, filters (risk, tool, agent, decider, dates), keyset pages,
CSV export; roles and tenants."""

import csv
import io
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from approvals_app.store import ApprovalStore
from stateroom.actor import Actor
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.fixtures import make_pending, queries

HISTORY = "/t/acme/approvals/history/"


def ids(response) -> list[str]:
    return re.findall(r'data-testid="history-row" data-id="([^"]+)"', response.content.decode())


def decide(tenant, approval_id: str, decision: str, who: str, reason: str = "ok", **kw):
    with in_tenant(tenant):
        ApprovalStore(tenant, Actor("user", who, who), **kw).decide(
            approval_id=approval_id, decision=decision, reason=reason
        )


@pytest.fixture
def decided(tenant_a):
    """Four decided (two by otto), one expired, one cancelled, one pending."""
    make_pending(tenant_a, run_id="r1", approval_id="a-low", risk="low", tool_name="send_mail")
    make_pending(tenant_a, run_id="r2", approval_id="a-high", risk="high", tool_name="refund")
    make_pending(tenant_a, run_id="r3", approval_id="a-rej", risk="medium", tool_name="refund")
    make_pending(tenant_a, run_id="r4", approval_id="a-old", risk="low", tool_name="Refund_all")
    make_pending(tenant_a, run_id="r5", approval_id="a-exp", risk="low")
    make_pending(tenant_a, run_id="r6", approval_id="a-can", risk="low")
    make_pending(tenant_a, run_id="r7", approval_id="a-pend", risk="critical")
    decide(tenant_a, "a-low", "approve", "otto")
    decide(tenant_a, "a-high", "approve", "ada", reason="checked the ledger")
    decide(tenant_a, "a-rej", "reject", "otto", reason="wrong customer")
    long_ago = timezone.now() - timedelta(days=40)
    decide(tenant_a, "a-old", "approve", "ada", clock=lambda: long_ago)
    with in_tenant(tenant_a):
        store = ApprovalStore(tenant_a, Actor.system("sweep"))
        store.expire(approval_id="a-exp")
        store.cancel(approval_id="a-can", reason="not needed")


def test_tabs_show_each_status(decided, support_a):
    client = login(support_a)
    assert ids(client.get(HISTORY)) == [
        "a-old",
        "a-rej",
        "a-high",
        "a-low",
    ]  # decided, newest id first
    assert ids(client.get(HISTORY, {"tab": "expired"})) == ["a-exp"]
    assert ids(client.get(HISTORY, {"tab": "cancelled"})) == ["a-can"]
    assert ids(client.get(HISTORY, {"tab": "pending"})) == ["a-pend"]


def test_filters(decided, support_a):
    client = login(support_a)
    assert ids(client.get(HISTORY, {"risk": "low"})) == ["a-old", "a-low"]
    assert ids(client.get(HISTORY, {"tool": "REFUND"})) == ["a-old", "a-rej", "a-high"]
    assert ids(client.get(HISTORY, {"decider": "otto"})) == ["a-rej", "a-low"]
    assert ids(client.get(HISTORY, {"decision": "reject"})) == ["a-rej"]
    today = timezone.now().date()
    recent = {"date_from": (today - timedelta(days=1)).isoformat(), "date_to": today.isoformat()}
    assert ids(client.get(HISTORY, recent)) == ["a-rej", "a-high", "a-low"]
    assert ids(client.get(HISTORY, {"agent": "nobody"})) == []
    bad = client.get(HISTORY, {"risk": "extreme"})
    assert bad.status_code == 200 and ids(bad) == []
    assert "Select a valid choice" in bad.content.decode()


def test_keyset_pages(tenant_a, support_a):
    for n in range(52):
        make_pending(
            tenant_a,
            run_id=f"r{n}",
            session_id=None,
            approval_id=f"a-{n:02d}",
            items=0,
            events=0,
            effects=0,
        )
        decide(tenant_a, f"a-{n:02d}", "approve", "otto")
    client = login(support_a)
    first = client.get(HISTORY)
    assert ids(first) == [f"a-{n:02d}" for n in range(51, 1, -1)]
    next_url = re.search(r'href="([^"]+)"[^>]*data-testid="next-page"', first.content.decode())
    assert ids(client.get(next_url.group(1).replace("&amp;", "&"))) == ["a-01", "a-00"]


def test_csv_export_follows_the_filters(decided, support_a):
    response = login(support_a).get("/t/acme/approvals/history.csv", {"tool": "refund"})
    assert response["Content-Disposition"] == 'attachment; filename="approvals-decided-acme.csv"'
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [
        (r["approval_id"], r["status"], r["decided_by"], r["decision_reason"]) for r in rows
    ] == [
        ("a-high", "approved", "ada", "checked the ledger"),
        ("a-rej", "rejected", "otto", "wrong customer"),
        ("a-old", "approved", "ada", "ok"),
    ]


def test_history_is_tenant_scoped(decided, admin_b):
    client = login(admin_b)
    assert ids(client.get("/t/globex/approvals/history/")) == []
    body = b"".join(client.get("/t/globex/approvals/history.csv").streaming_content).decode()
    assert body.count("\n") == 1  # the header only


def test_history_needs_a_membership(decided, admin_b):
    assert login(admin_b).get(HISTORY).status_code in (403, 404)


@pytest.mark.parametrize("rows", [1, 12])
def test_history_query_count(tenant_a, support_a, rows, django_assert_num_queries):
    for n in range(rows):
        make_pending(tenant_a, run_id=f"r{n}", approval_id=f"a-{n}", items=0, events=0, effects=0)
        decide(tenant_a, f"a-{n}", "reject", "otto", reason="no")
    client = login(support_a)
    # Layout (badge count, tenant switcher) and one page of approvals with their runs.
    with django_assert_num_queries(queries(8)):
        assert len(ids(client.get(HISTORY))) == rows


def test_inbox_status_filter_leads_to_the_history_tab(decided, support_a):
    client = login(support_a)
    response = client.get("/t/acme/approvals/?status=approved")
    assert response["Location"] == "/t/acme/approvals/history/?tab=decided&outcome=approved"
    assert ids(client.get(response["Location"])) == ["a-old", "a-high", "a-low"]
    assert client.get("/t/acme/approvals/?status=expired")["Location"].endswith("?tab=expired")


def test_a_response_is_its_own_outcome_in_history_badge_and_filter(tenant_a, support_a):
    """Answered instead of run: not `rejected` anywhere, and the filter finds it by name."""
    make_pending(tenant_a, run_id="r1", approval_id="a-rej", allowed_decisions=["reject"])
    make_pending(
        tenant_a, run_id="r2", approval_id="a-resp", allowed_decisions=["approve", "respond"]
    )
    make_pending(tenant_a, run_id="r3", approval_id="a-ok")
    decide(tenant_a, "a-rej", "reject", "otto", reason="wrong customer")
    with in_tenant(tenant_a):
        ApprovalStore(tenant_a, Actor("user", "otto", "otto")).decide(
            approval_id="a-resp", decision="respond", response="Queued for manual review."
        )
    decide(tenant_a, "a-ok", "approve", "otto")
    client = login(support_a)
    assert ids(client.get(HISTORY)) == ["a-ok", "a-resp", "a-rej"]  # decided: all three
    assert ids(client.get(HISTORY, {"outcome": "responded"})) == ["a-resp"]
    assert ids(client.get(HISTORY, {"outcome": "rejected"})) == ["a-rej"]
    page = client.get(HISTORY).content.decode()
    row = page[page.index('data-id="a-resp"') :].split("</tr>")[0]
    assert '<span class="badge s-responded">responded</span>' in row
    assert "rejected" not in row
    assert '<option value="responded">Responded</option>' in page
    # The inbox's ?status= leads to it too.
    response = client.get("/t/acme/approvals/?status=responded")
    assert response["Location"] == "/t/acme/approvals/history/?tab=decided&outcome=responded"
    detail = client.get("/t/acme/approvals/a-resp/").content.decode()
    assert 'data-testid="approval-status">responded</span>' in detail
    assert "decided-responded" in detail and "Answered instead of running" in detail


def test_history_marks_an_approved_call_whose_tool_failed(tenant_a, support_a):
    make_pending(tenant_a, run_id="r1", approval_id="a-bad")
    make_pending(tenant_a, run_id="r2", approval_id="a-ok")
    decide(tenant_a, "a-bad", "approve", "otto")
    decide(tenant_a, "a-ok", "approve", "otto")
    with in_tenant(tenant_a):
        store = ApprovalStore(tenant_a, Actor.system("runtime"))
        store.report_outcome(
            approval_id="a-bad",
            outcome="failed",
            error={"message": "card network <down>", "type": "RuntimeError"},
        )
        store.report_outcome(approval_id="a-ok", outcome="succeeded")
    client = login(support_a)
    page = client.get(HISTORY).content.decode()
    assert page.count('data-testid="tool-failed"') == 1
    row = page[page.index('data-id="a-bad"') :].split("</tr>")[0]
    assert 'data-testid="tool-failed">the tool failed</span>' in row
    detail = client.get("/t/acme/approvals/a-bad/").content.decode()
    # The tool's error is runtime-written: escaped.
    assert "Approved — the tool failed:</strong> card network &lt;down&gt;" in detail
    assert 'data-testid="approval-status">approved</span>' in detail
    export = b"".join(client.get("/t/acme/approvals/history.csv").streaming_content).decode()
    outcomes = {
        r["approval_id"]: (r["status"], r["tool_outcome"], bool(r["tool_outcome_at"]))
        for r in csv.DictReader(io.StringIO(export))
    }
    assert outcomes == {
        "a-bad": ("approved", "failed", True),
        "a-ok": ("approved", "succeeded", True),
    }


def test_decided_by_matches_a_prefix_whatever_the_case(tenant_a, support_a):
    """An operator types "operator" or "OTTO", not the exact stored username."""
    for n, who in enumerate(["Operator.Jane", "operator2", "otto", "jane.operator"]):
        make_pending(tenant_a, run_id=f"r{n}", approval_id=f"a-{n}", items=0, events=0)
        decide(tenant_a, f"a-{n}", "approve", who)
    client = login(support_a)
    assert ids(client.get(HISTORY, {"decider": "operator"})) == ["a-1", "a-0"]
    assert ids(client.get(HISTORY, {"decider": "OTTO"})) == ["a-2"]
    assert ids(client.get(HISTORY, {"decider": "Jane"})) == ["a-3"]
    assert ids(client.get(HISTORY, {"decider": "pera"})) == []
