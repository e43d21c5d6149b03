import re
from datetime import timedelta

import pytest
from django.contrib.messages import get_messages
from django.utils import timezone

from approvals_app.models import ApprovalRequest
from approvals_app.store import ApprovalStore
from audit_app.models import AuditEvent, AuditPayload
from runs_app.store import RunStateStore
from stateroom.actor import Actor
from tenancy_app.models import Role, Tenant
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.fixtures import make_pending, queries

INBOX = "/t/acme/approvals/"
HX = {"HX-Request": "true"}


def detail_url(approval_id: str) -> str:
    return f"{INBOX}{approval_id}/"


def decide_url(approval_id: str) -> str:
    return f"{INBOX}{approval_id}/decide"


def inbox_ids(response) -> list[str]:
    return re.findall(r'data-hotkey-row data-id="([^"]+)"', response.content.decode())


def reload(tenant, approval_id: str) -> ApprovalRequest:
    with in_tenant(tenant):
        return ApprovalRequest.objects.select_related("run").get(approval_id=approval_id)


def audit_actions(tenant, prefix: str = "approval.") -> list[tuple[str, str, str]]:
    """(action, actor, reason); a decision's reason is told to the model, so it is kept in the
    event's detached payload, not on the event."""
    with in_tenant(tenant):
        return [
            (event.action, event.actor_label, event.reason or _payload_reason(event))
            for event in AuditEvent.objects.filter(action__startswith=prefix)
            .exclude(action="approval.requested")
            .order_by("seq")
        ]


def _payload_reason(event) -> str:
    assert event.reason == ""
    return (
        AuditPayload.objects.get(event=event).content.get("reason", "")
        if event.payload_hash
        else ""
    )


def messages_of(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def form_data(tenant, approval_id: str, **extra) -> dict:
    """What the detail page embeds: the call digest and the run version it showed."""
    with in_tenant(tenant):
        store = ApprovalStore(tenant, Actor.system("test"))
        approval = store.get(approval_id)
        data = {"digest": store.digest(approval), "run_version": approval.run.version}
    data.update(extra)
    return data


# --- inbox -------------------------------------------------------------------------
def test_inbox_lists_pending_most_urgent_first(operator_a, tenant_a):
    soon = timezone.now() + timedelta(minutes=5)
    make_pending(tenant_a, run_id="r1", approval_id="low-1", risk="low")
    make_pending(tenant_a, run_id="r2", approval_id="crit-1", risk="critical")
    make_pending(tenant_a, run_id="r3", approval_id="high-late", risk="high")
    make_pending(tenant_a, run_id="r4", approval_id="high-soon", risk="high", expires_at=soon)
    make_pending(tenant_a, run_id="r5", approval_id="done", risk="critical")
    with in_tenant(tenant_a):
        ApprovalStore(tenant_a, Actor.system("t")).decide(
            approval_id="done", decision="reject", reason="no"
        )
    response = login(operator_a).get(INBOX)
    assert response.status_code == 200
    # Time left over the risk's weight: high-soon 5 min / 4, crit-1 24 h / 8, high-late
    # 24 h / 4, low-1 24 h / 1 (no expiry counts as 24 h).
    assert inbox_ids(response) == ["high-soon", "crit-1", "high-late", "low-1"]
    page = response.content.decode()
    assert "<title>(4) Approvals · Acme</title>" in page
    assert (
        '<span class="badge nav-count" id="nav-pending" title="Pending approvals">4</span>' in page
    )
    assert f'data-expires="{soon.isoformat()}"' in page
    assert '<a class="mono small" href="/t/acme/runs/r4/">r4</a>' in page
    assert '<a class="mono small" href="/t/acme/sessions/sess-1/">sess-1</a>' in page
    # Low risk approves at once from the inbox; high and critical open the form.
    assert page.count('type="submit" class="primary" data-hotkey-approve') == 1
    assert f'href="{detail_url("crit-1")}?decide=approve" data-hotkey-approve' in page
    assert f'href="{detail_url("low-1")}?decide=reject" data-hotkey-reject' in page
    assert "<kbd>a</kbd> approve" in page


def test_inbox_poll_fragment_updates_rows_title_and_badge(operator_a, tenant_a):
    client = login(operator_a)
    make_pending(tenant_a, run_id="r1", approval_id="a-1")
    response = client.get(INBOX, headers=HX)
    body = response.content.decode()
    assert "<html" not in body
    assert 'data-page-title="(1) Approvals · Acme"' in body
    assert 'id="nav-pending" title="Pending approvals" hx-swap-oob="true">1</span>' in body
    make_pending(tenant_a, run_id="r2", approval_id="a-2", risk="high")
    assert inbox_ids(client.get(INBOX, headers=HX)) == ["a-2", "a-1"]


def test_inbox_search(operator_a, tenant_a):
    make_pending(tenant_a, run_id="r1", approval_id="a-1", tool_name="send_email")
    make_pending(tenant_a, run_id="r2", session_id="s-2", approval_id="a-2", tool_name="refund")
    client = login(operator_a)
    assert inbox_ids(client.get(INBOX, {"q": "EMAIL"})) == ["a-1"]
    assert inbox_ids(client.get(INBOX, {"q": "r2"})) == ["a-2"]
    assert inbox_ids(client.get(INBOX, {"q": "s-2"})) == ["a-2"]
    assert inbox_ids(client.get(INBOX, {"q": "a-1"})) == ["a-1"]
    response = client.get(INBOX, {"q": "<nothing>"})
    assert inbox_ids(response) == []
    assert "Nothing pending matches “&lt;nothing&gt;”" in response.content.decode()


def test_inbox_empty_state_says_what_happens_next(support_a, tenant_a):
    page = login(support_a).get(INBOX).content.decode()
    assert "No approvals waiting" in page
    assert "<title>Approvals · Acme</title>" in page
    assert 'href="/t/acme/approvals/history/?tab=decided"' in page


def test_inbox_for_support_has_no_action_buttons(support_a, tenant_a):
    make_pending(tenant_a, run_id="r1", approval_id="a-1", risk="low")
    response = login(support_a).get(INBOX)
    assert inbox_ids(response) == ["a-1"]
    page = response.content.decode()
    assert "data-hotkey-approve" not in page and "data-hotkey-reject" not in page
    assert "/decide" not in page


def test_inbox_of_another_tenant_is_404(admin_b, tenant_a):
    make_pending(tenant_a, approval_id="a-1")
    client = login(admin_b)
    assert client.get(INBOX).status_code == 404
    assert client.get(detail_url("a-1")).status_code == 404
    assert (
        client.post(decide_url("a-1"), form_data(tenant_a, "a-1", decision="approve")).status_code
        == 404
    )
    assert reload(tenant_a, "a-1").status == "pending"


def test_approval_of_another_tenant_is_404_inside_own_tenant(admin_a, tenant_b):
    make_pending(tenant_b, approval_id="b-1")
    client = login(admin_a)
    assert client.get(detail_url("b-1")).status_code == 404
    assert client.get(detail_url("nope")).status_code == 404
    response = client.post(decide_url("b-1"), form_data(tenant_b, "b-1", decision="approve"))
    assert response.status_code == 404
    assert reload(tenant_b, "b-1").status == "pending"


@pytest.mark.parametrize("rows", [1, 20])
def test_inbox_query_count_does_not_grow_with_rows(
    operator_a, tenant_a, django_assert_num_queries, rows
):
    for i in range(rows):
        make_pending(
            tenant_a,
            run_id=f"r{i}",
            session_id=f"s{i}",
            approval_id=f"a{i}",
            items=0,
            events=0,
            effects=0,
        )
    client = login(operator_a)
    with django_assert_num_queries(queries(8)):
        response = client.get(INBOX)
    assert len(inbox_ids(response)) == rows
    with django_assert_num_queries(queries(7)):
        client.get(INBOX, headers=HX)


# --- detail ------------------------------------------------------------------------
def test_detail_shows_call_and_context(operator_a, tenant_a):
    make_pending(
        tenant_a,
        approval_id="a-1",
        risk="high",
        reason="Refund <script>alert(1)</script>",
        arguments={"amount": 1200, "note": "<b>rush</b>"},
        items=12,
        events=3,
        effects=2,
    )
    response = login(operator_a).get(detail_url("a-1"))
    assert response.status_code == 200
    page = response.content.decode()
    assert "Refund &lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)" not in page
    assert '<span class="nt">"note"</span>' in page
    assert '<span class="s2">"&lt;b&gt;rush&lt;/b&gt;"</span>' in page
    conversation = re.findall(r'<span class="mono">#(\d+)</span> <strong>user</strong>', page)
    assert conversation == [str(i) for i in range(3, 13)]
    assert re.findall(r'<span class="mono">#(\d+)</span> <strong>tool_called</strong>', page) == [
        "1",
        "2",
        "3",
    ]
    assert page.count('<span class="mono">lookup_order</span>') == 2
    data = form_data(tenant_a, "a-1")
    assert f'name="digest" value="{data["digest"]}"' in page
    assert f'name="run_version" value="{data["run_version"]}"' in page
    assert "(required for high risk)" in page
    assert "<title>send_refund · Approval · Acme</title>" in page


def test_detail_focuses_the_chosen_form(operator_a, tenant_a):
    make_pending(tenant_a, approval_id="a-1")
    page = login(operator_a).get(detail_url("a-1"), {"decide": "reject"}).content.decode()
    assert page.count("autofocus") == 1
    assert re.search(r'<textarea name="reason" rows="2" maxlength="4000" required autofocus>', page)


def test_detail_for_support_is_read_only(support_a, tenant_a):
    make_pending(tenant_a, approval_id="a-1")
    page = login(support_a).get(detail_url("a-1")).content.decode()
    assert 'data-testid="read-only"' in page
    assert "/decide" not in page


@pytest.mark.parametrize("rows", [1, 20])
def test_detail_query_count_does_not_grow_with_rows(
    operator_a, tenant_a, django_assert_num_queries, rows
):
    make_pending(tenant_a, approval_id="a-1", items=rows, events=rows, effects=rows)
    client = login(operator_a)
    # + the notification trail (notifications, audit events) and the reassign form
    # (members, groups).
    with django_assert_num_queries(queries(18)):
        assert client.get(detail_url("a-1")).status_code == 200


# --- deciding ----------------------------------------------------------------------
def test_operator_approves_from_detail(operator_a, tenant_a):
    make_pending(tenant_a, approval_id="a-1", risk="low")
    response = login(operator_a).post(
        decide_url("a-1"), form_data(tenant_a, "a-1", decision="approve")
    )
    assert response.status_code == 302
    assert response["Location"] == INBOX
    assert messages_of(response) == ["Approved send_refund (a-1)."]
    approval = reload(tenant_a, "a-1")
    assert (approval.status, approval.decided_by, approval.approved_arguments) == (
        "approved",
        "otto",
        None,
    )
    assert approval.run.status == "running"
    assert audit_actions(tenant_a) == [("approval.approved", "otto", "")]


def test_reject_needs_a_reason_and_records_it(operator_a, tenant_a):
    make_pending(tenant_a, approval_id="a-1")
    client = login(operator_a)
    response = client.post(decide_url("a-1"), form_data(tenant_a, "a-1", decision="reject"))
    assert response.status_code == 422
    assert "<li>Reason: required</li>" in response.content.decode()
    assert reload(tenant_a, "a-1").status == "pending"
    assert audit_actions(tenant_a) == []
    response = client.post(
        decide_url("a-1"),
        form_data(tenant_a, "a-1", decision="reject", reason="Wrong <account>"),
        follow=True,
    )
    assert response.redirect_chain == [(INBOX, 302)]
    assert reload(tenant_a, "a-1").decision_reason == "Wrong <account>"
    page = client.get(detail_url("a-1")).content.decode()
    assert "Rejected by otto" in page
    assert '<blockquote data-testid="decision-reason">Wrong &lt;account&gt;</blockquote>' in page
    assert "/decide" not in page
    assert audit_actions(tenant_a) == [("approval.rejected", "otto", "Wrong <account>")]


def test_high_risk_approval_needs_a_reason(operator_a, tenant_a):
    make_pending(tenant_a, approval_id="a-1", risk="high")
    client = login(operator_a)
    response = client.post(decide_url("a-1"), form_data(tenant_a, "a-1", decision="approve"))
    assert response.status_code == 422
    assert reload(tenant_a, "a-1").status == "pending"
    response = client.post(
        decide_url("a-1"), form_data(tenant_a, "a-1", decision="approve", reason="checked")
    )
    assert response.status_code == 302
    assert reload(tenant_a, "a-1").status == "approved"


def test_approve_with_edited_arguments_shows_and_records_the_diff(operator_a, tenant_a):
    make_pending(
        tenant_a,
        approval_id="a-1",
        arguments={"amount": 1200, "to": "acct-9"},
        allowed_decisions=["approve", "edit", "reject"],
    )
    client = login(operator_a)
    assert 'id="edit-form"' in client.get(detail_url("a-1")).content.decode()
    edited = '{"amount": 200, "to": "acct-9", "memo": "partial"}'
    response = client.post(
        decide_url("a-1"),
        form_data(tenant_a, "a-1", decision="edit", approved_arguments=edited),
    )
    assert messages_of(response) == [
        "Approved send_refund (a-1) with edited arguments: the runtime runs those."
    ]
    assert reload(tenant_a, "a-1").approved_arguments == {
        "amount": 200,
        "to": "acct-9",
        "memo": "partial",
    }
    page = client.get(detail_url("a-1")).content.decode()
    assert '<span class="mono">amount</span> <del>1200</del> → <ins>200</ins>' in page
    assert '<span class="mono">memo</span> <ins>&quot;partial&quot;</ins>' in page
    with in_tenant(tenant_a):
        event = AuditEvent.objects.get(action="approval.approved")
        # Argument values are content: the diff is the event's detached payload.
        assert event.payload.content["approved_arguments_diff"] == {
            "added": {"memo": "partial"},
            "removed": [],
            "changed": {"amount": {"old": 1200, "new": 200}},
        }
    assert "approved_arguments_diff" not in event.after


def test_unchanged_arguments_are_not_an_edit(operator_a, tenant_a):
    make_pending(
        tenant_a,
        approval_id="a-1",
        arguments={"amount": 1200, "to": "acct-9"},
        allowed_decisions=["approve", "edit", "reject"],
    )
    login(operator_a).post(
        decide_url("a-1"),
        form_data(
            tenant_a,
            "a-1",
            decision="edit",
            approved_arguments='{\n  "to": "acct-9",\n  "amount": 1200\n}',
        ),
    )
    approval = reload(tenant_a, "a-1")
    assert (approval.status, approval.decision, approval.approved_arguments) == (
        "approved",
        "approve",
        None,
    )


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        ("{not json", "Arguments: Not valid JSON"),
        ("[1, 2]", "Arguments: The arguments must be a JSON object."),
    ],
)
def test_bad_edited_arguments_are_refused(operator_a, tenant_a, raw, error):
    make_pending(tenant_a, approval_id="a-1", allowed_decisions=["edit", "reject"])
    response = login(operator_a).post(
        decide_url("a-1"), form_data(tenant_a, "a-1", decision="edit", approved_arguments=raw)
    )
    assert response.status_code == 422
    assert error in response.content.decode()
    assert reload(tenant_a, "a-1").status == "pending"


def test_decision_is_refused_when_the_run_changed_since_the_page(operator_a, tenant_a):
    make_pending(tenant_a, approval_id="a-1")
    shown = form_data(tenant_a, "a-1", decision="approve")
    with in_tenant(tenant_a):
        RunStateStore(tenant_a, Actor.system("runtime")).compare_and_set(
            run_id="run-1", expected_version=shown["run_version"], changes={"token_used": 99}
        )
    client = login(operator_a)
    response = client.post(decide_url("a-1"), shown)
    assert response.status_code == 302
    assert response["Location"] == detail_url("a-1")
    assert messages_of(response) == [
        f"Not recorded: the run moved from version {shown['run_version']} to "
        f"{shown['run_version'] + 1} since the page was shown. Review the call again before deciding."
    ]
    assert reload(tenant_a, "a-1").status == "pending"
    response = client.post(
        decide_url("a-1"), {**shown, "digest": "0" * 64, "run_version": shown["run_version"] + 1}
    )
    assert "the tool call is not the one you saw" in messages_of(response)[-1]
    assert audit_actions(tenant_a) == []


def test_second_decision_shows_who_decided_first(operator_a, admin_a, tenant_a):
    make_pending(tenant_a, approval_id="a-1")
    shown = form_data(tenant_a, "a-1")
    login(operator_a).post(decide_url("a-1"), {**shown, "decision": "approve"})
    client = login(admin_a)
    response = client.post(decide_url("a-1"), {**shown, "decision": "reject", "reason": "no"})
    assert response.status_code == 302
    assert response["Location"] == detail_url("a-1")
    decided_at = reload(tenant_a, "a-1").decided_at
    assert messages_of(response) == [
        f"Not recorded: this approval was already approved by otto at "
        f"{decided_at:%Y-%m-%d %H:%M:%S} UTC."
    ]
    page = client.get(detail_url("a-1")).content.decode()
    assert "Approved by otto" in page
    assert reload(tenant_a, "a-1").status == "approved"
    assert audit_actions(tenant_a) == [("approval.approved", "otto", "")]


def test_double_submit_decides_once(operator_a, tenant_a):
    make_pending(tenant_a, approval_id="a-1", risk="low")
    data = form_data(tenant_a, "a-1", decision="approve")
    client = login(operator_a)
    client.post(decide_url("a-1"), data)
    response = client.post(decide_url("a-1"), data)
    assert "already approved by otto" in messages_of(response)[-1]
    assert audit_actions(tenant_a) == [("approval.approved", "otto", "")]


def test_four_eyes_needs_a_second_operator(operator_a, admin_a, tenant_a):
    Tenant.objects.filter(pk=tenant_a.pk).update(four_eyes_critical=True)
    make_pending(tenant_a, approval_id="a-1", risk="critical")
    otto = login(operator_a)
    data = form_data(tenant_a, "a-1", decision="approve", reason="looks right")
    response = otto.post(decide_url("a-1"), data)
    assert response["Location"] == detail_url("a-1")
    assert messages_of(response) == [
        "First approval of send_refund recorded. "
        "It is critical: a second operator must approve before it runs."
    ]
    page = otto.get(detail_url("a-1")).content.decode()
    assert "First approval by <strong>otto</strong>" in page
    # The first approver is not offered a second approval; they may still reject.
    assert 'id="approve-form"' not in page and 'id="reject-form"' in page
    assert "You gave it: a second, different operator must approve." in page
    ada_page = login(admin_a).get(detail_url("a-1")).content.decode()
    assert "Approve (second approval)" in ada_page
    response = otto.post(decide_url("a-1"), data)
    assert messages_of(response) == [
        "Not recorded: you gave the first approval; "
        "a second, different operator must approve this critical call."
    ]
    inbox = otto.get(INBOX).content.decode()
    assert "1st approval by otto; needs a second operator" in inbox
    login(admin_a).post(decide_url("a-1"), {**data, "reason": "second look"})
    approval = reload(tenant_a, "a-1")
    assert (approval.status, approval.first_approved_by, approval.decided_by) == (
        "approved",
        "otto",
        "ada",
    )
    assert audit_actions(tenant_a) == [
        ("approval.first_approval", "otto", "looks right"),
        ("approval.approved", "ada", "second look"),
    ]
    final = otto.get(detail_url("a-1")).content.decode()
    assert 'data-testid="decision-reason">second look</blockquote>' in final
    assert 'data-testid="first-approval-reason">looks right</blockquote>' in final


def test_expired_approval_cannot_be_decided(operator_a, tenant_a):
    past = timezone.now() - timedelta(hours=1)
    make_pending(tenant_a, approval_id="a-1", run_id="run-1")
    with in_tenant(tenant_a):
        run = RunStateStore(tenant_a, Actor.system("rt")).create(run_id="run-2")
        run = RunStateStore(tenant_a, Actor.system("rt")).compare_and_set(
            run_id="run-2", expected_version=run.version, changes={"status": "running"}
        )
        ApprovalStore(tenant_a, Actor.system("rt"), clock=lambda: past).request(
            run_id="run-2",
            expected_version=run.version,
            tool_name="x",
            arguments={},
            risk="low",
            expires_at=past + timedelta(minutes=1),
            approval_id="old",
        )
    response = login(operator_a).post(
        decide_url("old"), form_data(tenant_a, "old", decision="approve")
    )
    assert messages_of(response) == [
        "Not recorded: the approval expired before your decision; the run is suspended."
    ]
    approval = reload(tenant_a, "old")
    assert (approval.status, approval.run.status) == ("expired", "suspended")


def test_decide_from_inbox_with_htmx_returns_the_refreshed_inbox(operator_a, tenant_a):
    make_pending(tenant_a, run_id="r1", approval_id="a-1", risk="low")
    make_pending(tenant_a, run_id="r2", approval_id="a-2", risk="low")
    response = login(operator_a).post(
        decide_url("a-1"),
        form_data(tenant_a, "a-1", decision="approve", source="inbox"),
        headers=HX,
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert (
        '<p class="notice ok" tabindex="-1" data-inbox-notice data-testid="inbox-notice">'
        "Approved send_refund (a-1).</p>" in body
    )
    # Announced by the page's live region, which was there before the decision.
    assert (
        '<span id="inbox-status" hx-swap-oob="true">Approved send_refund (a-1). 1 pending</span>'
        in body
    )
    assert inbox_ids(response) == ["a-2"]
    assert 'data-page-title="(1) Approvals · Acme"' in body


def test_decide_from_inbox_without_js_redirects_to_inbox(operator_a, tenant_a):
    make_pending(tenant_a, approval_id="a-1", risk="low")
    response = login(operator_a).post(
        decide_url("a-1"), form_data(tenant_a, "a-1", decision="approve", source="inbox")
    )
    assert (response.status_code, response["Location"]) == (302, INBOX)


def test_decide_with_htmx_from_detail(operator_a, tenant_a):
    make_pending(tenant_a, approval_id="a-1")
    client = login(operator_a)
    response = client.post(
        decide_url("a-1"), form_data(tenant_a, "a-1", decision="reject"), headers=HX
    )
    assert response.status_code == 422
    body = response.content.decode()
    assert "<html" not in body and "<li>Reason: required</li>" in body
    response = client.post(
        decide_url("a-1"), form_data(tenant_a, "a-1", decision="reject", reason="no"), headers=HX
    )
    assert (response.status_code, response["HX-Redirect"]) == (200, INBOX)


def test_support_cannot_decide(support_a, tenant_a):
    make_pending(tenant_a, approval_id="a-1", risk="low")
    response = login(support_a).post(
        decide_url("a-1"), form_data(tenant_a, "a-1", decision="approve")
    )
    assert response.status_code == 403
    assert reload(tenant_a, "a-1").status == "pending"
    assert audit_actions(tenant_a) == []


def test_decide_needs_csrf_and_post(operator_a, tenant_a, csrf_client):
    make_pending(tenant_a, approval_id="a-1", risk="low")
    data = form_data(tenant_a, "a-1", decision="approve")
    assert csrf_client(operator_a).post(decide_url("a-1"), data).status_code == 403
    assert login(operator_a).get(decide_url("a-1"), data).status_code == 405
    assert reload(tenant_a, "a-1").status == "pending"


def test_reading_approval_pages_changes_nothing(admin_a, tenant_a):
    make_pending(tenant_a, approval_id="a-1", risk="low")
    with in_tenant(tenant_a):
        before = AuditEvent.objects.count()
    client = login(admin_a)
    client.get(INBOX, {"decision": "approve"})
    client.get(detail_url("a-1"), {"decide": "approve", "decision": "approve"})
    client.get(INBOX, headers=HX)
    with in_tenant(tenant_a):
        assert AuditEvent.objects.count() == before
    assert reload(tenant_a, "a-1").status == "pending"


def test_nav_badge_counts_pending_on_every_page(support_a, tenant_a, make_user, tenant_b):
    make_pending(tenant_a, run_id="r1", approval_id="a-1")
    make_pending(tenant_a, run_id="r2", approval_id="a-2")
    make_pending(tenant_b, run_id="r1", approval_id="b-1")
    client = login(support_a)
    page = client.get("/t/acme/audit/").content.decode()
    assert (
        '<span class="badge nav-count" id="nav-pending" title="Pending approvals">2</span>' in page
    )
    # Error pages render after the tenant scope has ended: no badge, no crash.
    response = client.get("/t/acme/approvals/nope/")
    assert response.status_code == 404
    assert 'id="nav-pending"' in response.content.decode()
    other = make_user("multi", tenant_b, Role.SUPPORT)
    page = login(other).get("/t/globex/audit/").content.decode()
    assert 'id="nav-pending" title="Pending approvals">1</span>' in page


def test_the_decision_panel_offers_only_what_the_runtime_can_honour(operator_a, tenant_a):
    make_pending(tenant_a, approval_id="a-1", allowed_decisions=["approve", "reject"])
    make_pending(
        tenant_a, run_id="run-2", approval_id="a-2", allowed_decisions=["respond", "reject"]
    )
    client = login(operator_a)
    plain = client.get(detail_url("a-1")).content.decode()
    assert 'id="approve-form"' in plain and 'id="reject-form"' in plain
    assert 'id="edit-form"' not in plain and 'id="respond-form"' not in plain
    answer_only = client.get(detail_url("a-2")).content.decode()
    assert 'id="respond-form"' in answer_only and 'id="reject-form"' in answer_only
    assert 'id="approve-form"' not in answer_only and 'id="edit-form"' not in answer_only
    inbox = client.get("/t/acme/approvals/").content.decode()
    assert inbox.count("data-hotkey-approve") == 1  # a-2 cannot be approved: no quick approve
    # A forged post of a decision the runtime cannot take is refused; nothing changes.
    response = client.post(decide_url("a-2"), form_data(tenant_a, "a-2", decision="approve"))
    assert response.status_code == 422
    assert "cannot honour" in response.content.decode()
    assert reload(tenant_a, "a-2").status == "pending"
    response = client.post(
        decide_url("a-2"),
        form_data(tenant_a, "a-2", decision="respond", response="Ask finance for over 1000."),
    )
    assert messages_of(response) == [
        "Answered send_refund (a-2): the tool does not run, the model gets your response."
    ]
    decided = reload(tenant_a, "a-2")
    assert (decided.status, decided.decision, decided.response) == (
        "responded",
        "respond",
        "Ask finance for over 1000.",
    )
    page = client.get(detail_url("a-2")).content.decode()
    assert 'data-decision="respond"' in page and "Ask finance for over 1000." in page


# --- expiry without a sweep --------------------------------------------------------------
def make_overdue(tenant, approval_id: str, run_id: str, session_id: str = "sess-1"):
    """Asked an hour ago, expired a minute later; no sweep has run."""
    asked = timezone.now() - timedelta(hours=1)
    return make_pending(
        tenant,
        run_id=run_id,
        session_id=session_id,
        approval_id=approval_id,
        risk="low",
        asked_at=asked,
        expires_at=asked + timedelta(minutes=1),
    )


def test_an_approval_past_expires_at_is_not_pending_in_the_inbox_or_its_counts(support_a, tenant_a):
    make_overdue(tenant_a, "late", "r1")
    make_pending(tenant_a, run_id="r2", approval_id="live")
    client = login(support_a)
    page = client.get(INBOX)
    assert inbox_ids(page) == ["live"]
    assert "<title>(1) Approvals · Acme</title>" in page.content.decode()
    home = client.get("/t/acme/").content.decode()
    assert 'data-testid="home-approvals">1</strong> pending approval</a>' in home
    history = "/t/acme/approvals/history/"
    assert re.findall(
        r'data-testid="history-row" data-id="([^"]+)"',
        client.get(history, {"tab": "expired"}).content.decode(),
    ) == ["late"]
    assert re.findall(
        r'data-testid="history-row" data-id="([^"]+)"',
        client.get(history, {"tab": "pending"}).content.decode(),
    ) == ["live"]
    assert reload(tenant_a, "late").status == "pending"  # reading recorded nothing


def test_an_approval_past_expires_at_shows_expired_and_offers_no_decision(
    operator_a, admin_b, tenant_a
):
    overdue = make_overdue(tenant_a, "late", "r1")
    with in_tenant(tenant_a):
        before = AuditEvent.objects.count()
    client = login(operator_a)
    page = client.get(detail_url("late")).content.decode()
    assert 'data-testid="approval-status">expired</span>' in page
    assert '<section class="card decided" data-testid="decided"><h2>Expired</h2>' in page
    assert 'id="approve-form"' not in page and 'id="reject-form"' not in page
    assert 'class="countdown"' not in page
    assert overdue.expires_at.strftime("%Y-%m-%d %H:%M:%S") in page
    inspector = client.get("/t/acme/runs/r1/").content.decode()
    assert '<span class="badge s-expired">expired</span>' in inspector
    # The run still records waiting_approval (no sweep yet); its page does not say the
    # approval it waits on can still be decided.
    fields = inspector.split('data-testid="run-fields">', 1)[1].split("</dl>", 1)[0]
    assert 'data-testid="waits-on-status">expired</span>' in fields
    assert "can no longer be decided; the run is suspended when the expiry sweep" in fields
    with in_tenant(tenant_a):
        assert AuditEvent.objects.count() == before
    assert reload(tenant_a, "late").status == "pending"
    # Another tenant's operator: 404, past due or not.
    assert login(admin_b).get("/t/acme/approvals/late/").status_code == 404
    # A decision posted anyway (a page opened before the expiry) is refused; it is recorded.
    response = client.post(decide_url("late"), form_data(tenant_a, "late", decision="approve"))
    assert messages_of(response) == [
        "Not recorded: the approval expired before your decision; the run is suspended."
    ]
    assert (reload(tenant_a, "late").status, reload(tenant_a, "late").run.status) == (
        "expired",
        "suspended",
    )
