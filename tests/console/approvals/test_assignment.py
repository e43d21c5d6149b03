"""Who is asked, in the console: the inbox's views (assigned to me, my groups, all) with
assignees named, take and reassign (audited by the store), the notification trail of the
approval page, and the nav's "Mine" badge."""

from datetime import timedelta

import pytest
from django.utils import timezone

from approvals_app.store import ApprovalStore
from audit_app.models import AuditEvent
from notifications_app.models import Notification
from stateroom.actor import Actor
from tenancy_app.groups import GroupStore
from tenancy_app.models import Role
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.conftest import message_texts, request_queries
from tests.console.fixtures import make_pending, queries

INBOX = "/t/acme/approvals/"


@pytest.fixture
def asked(tenant_a, operator_a, make_user):
    """a-mine asked of the operator, a-group of their group, a-other of bob, a-none of nobody."""
    bob = make_user("bob", tenant_a, Role.OPERATOR)
    with in_tenant(tenant_a):
        group = GroupStore(tenant_a, Actor.system("t")).save_group(
            name="Payments", user_ids=[operator_a.pk, bob.pk]
        )
    for n, approval_id in enumerate(("a-mine", "a-group", "a-other", "a-none")):
        make_pending(
            tenant_a,
            run_id=f"r{n}",
            session_id=f"s{n}",
            approval_id=approval_id,
            items=0,
            events=0,
            effects=0,
        )
    assign(tenant_a, "a-mine", users=[operator_a.pk])
    assign(tenant_a, "a-group", groups=[group.pk])
    assign(tenant_a, "a-other", users=[bob.pk])
    return {"bob": bob, "group": group}


def assign(tenant, approval_id, users=(), groups=()):
    with in_tenant(tenant):
        ApprovalStore(tenant, Actor.system("t")).reassign(
            approval_id=approval_id, user_ids=list(users), group_ids=list(groups)
        )


def rows(response) -> set[str]:
    body = response.content.decode()
    return {a for a in ("a-mine", "a-group", "a-other", "a-none") if f'data-id="{a}"' in body}


def test_inbox_views(asked, operator_a, support_a):
    client = login(operator_a)
    # Something is asked of me: "Assigned to me" is the default.
    default = client.get(INBOX)
    assert rows(default) == {"a-mine", "a-group"}
    assert 'aria-current="page">Assigned to me<' in default.content.decode()
    assert rows(client.get(INBOX + "?view=groups")) == {"a-group"}
    assert rows(client.get(INBOX + "?view=all")) == {"a-mine", "a-group", "a-other", "a-none"}
    # Support does not decide: everything.
    assert len(rows(login(support_a).get(INBOX))) == 4


def test_default_is_all_when_nothing_is_asked_of_me(asked, admin_a):
    assert len(rows(login(admin_a).get(INBOX))) == 4


def test_rows_name_their_assignees(asked, operator_a):
    body = login(operator_a).get(INBOX + "?view=all").content.decode()
    assert "Asked of operator" in body or f"Asked of {operator_a.username}" in body
    assert "Asked of Payments" in body and "Asked of bob" in body
    assert "Asked of nobody in particular" in body


@pytest.mark.parametrize("count", [1, 8])
def test_inbox_query_count_with_assignees(
    tenant_a, operator_a, make_user, count, django_assert_num_queries
):
    bob = make_user("bob", tenant_a, Role.OPERATOR)
    with in_tenant(tenant_a):
        group = GroupStore(tenant_a, Actor.system("t")).save_group(name="G", user_ids=[bob.pk])
    for n in range(count):
        make_pending(
            tenant_a,
            run_id=f"r{n}",
            session_id=f"s{n}",
            approval_id=f"a{n}",
            items=0,
            events=0,
            effects=0,
        )
        assign(tenant_a, f"a{n}", users=[bob.pk], groups=[group.pk])
    client = login(operator_a)
    # The nav's counts (shared with the default view), the rows, the assignees' users
    # and groups: the same for 1 row or 8.
    with django_assert_num_queries(queries(10)):
        response = client.get(INBOX)
    assert response.content.decode().count('data-testid="inbox-row"') == count


def audit_actions(tenant, approval_id):
    with in_tenant(tenant):
        return list(
            AuditEvent.objects.filter(tenant=tenant, target_id=approval_id)
            .order_by("seq")
            .values_list("action", flat=True)
        )


def test_take_and_reassign_are_audited(asked, operator_a, tenant_a):
    client = login(operator_a)
    response = client.post("/t/acme/approvals/a-other/take", follow=True)
    assert any("You took this approval" in m for m in message_texts(response))
    with in_tenant(tenant_a):
        taken = ApprovalStore(tenant_a, Actor.system("t")).get("a-other")
    assert taken.assigned_user_ids == [operator_a.pk]
    response = client.post(
        "/t/acme/approvals/a-other/reassign",
        {"user_ids": [asked["bob"].pk], "group_ids": [asked["group"].pk], "reason": "bob knows"},
        follow=True,
    )
    assert any(m.startswith("Reassigned") for m in message_texts(response))
    assert audit_actions(tenant_a, "a-other")[-2:] == ["approval.taken", "approval.reassigned"]
    body = response.content.decode()
    assert 'data-testid="assignees">bob, Payments<' in body
    assert "taken by" in body and "reassigned to bob, Payments" in body


def test_refusals_are_shown(asked, operator_a, tenant_a):
    client = login(operator_a)
    response = client.post("/t/acme/approvals/a-none/reassign", {"reason": "x"}, follow=True)
    assert any("name at least one member or group" in m for m in message_texts(response))
    with in_tenant(tenant_a):
        ApprovalStore(tenant_a, Actor.system("t")).decide(
            approval_id="a-none", decision="reject", reason="no"
        )
    response = client.post("/t/acme/approvals/a-none/take", follow=True)
    assert "Not changed: this approval is no longer pending." in message_texts(response)


def test_support_cannot_take_or_reassign(asked, support_a):
    client = login(support_a)
    assert client.post("/t/acme/approvals/a-none/take").status_code == 403
    assert client.post("/t/acme/approvals/a-none/reassign", {"user_ids": [1]}).status_code == 403
    assert 'data-testid="take"' not in client.get("/t/acme/approvals/a-none/").content.decode()


def test_another_tenants_approval_is_404(tenant_b, operator_a):
    make_pending(tenant_b, approval_id="b-1", items=0, events=0, effects=0)
    client = login(operator_a)
    assert client.post("/t/acme/approvals/b-1/take").status_code == 404
    assert client.post("/t/acme/approvals/b-1/reassign", {"user_ids": [1]}).status_code == 404
    with in_tenant(tenant_b):
        assert ApprovalStore(tenant_b, Actor.system("t")).get("b-1").assigned_user_ids == []


def test_the_trail_merges_notifications_and_events(asked, operator_a, tenant_a):
    now = timezone.now()
    with in_tenant(tenant_a):
        Notification.objects.create(
            tenant=tenant_a,
            approval_id="a-mine",
            kind="asked",
            recipient=operator_a,
            channel_kind="email",
            status="sent",
            created_at=now,
            sent_at=now,
        )
        Notification.objects.create(
            tenant=tenant_a,
            approval_id="a-mine",
            kind="asked",
            ref="2",
            recipient=asked["bob"],
            channel_kind="slack",
            status="sent",
            created_at=now,
            sent_at=now + timedelta(seconds=1),
            acted_at=now + timedelta(minutes=1),
            acted_by="bob",
            action="approved",
        )
    body = login(operator_a).get("/t/acme/approvals/a-mine/").content.decode()
    assert f"notified {operator_a.username} by email" in body
    assert "notified bob by slack" in body
    assert "approved in Slack by bob" in body
    assert f"reassigned to {operator_a.username}" in body


def test_badge_counts_mine_and_groups(asked, operator_a, tenant_a, django_assert_num_queries):
    client = login(operator_a)
    with django_assert_num_queries(request_queries() + 1):  # one aggregate
        body = client.get(INBOX + "assigned-count").content.decode()
    assert 'data-assigned-count="2"' in body and "hidden" not in body
    assign(tenant_a, "a-none", users=[operator_a.pk])
    with in_tenant(tenant_a):
        newest = ApprovalStore(tenant_a, Actor.system("t")).get("a-none").pk
    body = client.get(INBOX + "assigned-count").content.decode()
    assert 'data-assigned-count="3"' in body
    assert f'data-assigned-newest="{newest}"' in body
    page = client.get("/t/acme/").content.decode()
    assert 'id="nav-assigned"' in page and 'data-assigned-count="3"' in page


def test_badge_hidden_with_nothing_asked(admin_a, tenant_a):
    body = login(admin_a).get(INBOX + "assigned-count").content.decode()
    assert 'data-assigned-count="0"' in body and " hidden" in body
