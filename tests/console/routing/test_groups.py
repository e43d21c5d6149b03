"""The groups page (admins): list with who is on call, create/edit with members in order,
delete after a confirmation; 403 below admin, another tenant's group 404."""

from datetime import timedelta

import pytest

from approvals_app.routing import RoutingRules
from stateroom.actor import Actor
from tenancy_app.groups import GroupStore
from tenancy_app.models import MemberGroup, Role
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.conftest import layout_queries, message_texts

GROUPS = "/t/acme/settings/groups/"


@pytest.fixture
def people(make_user, tenant_a):
    return {name: make_user(name, tenant_a, Role.OPERATOR) for name in ("alice", "bob", "carol")}


def save_group(tenant, name, users, **kw):
    with in_tenant(tenant):
        return GroupStore(tenant, Actor.system("test"), **kw).save_group(
            name=name, user_ids=[u.pk for u in users]
        )


def test_admin_creates_an_on_call_list_in_order(admin_a, people, tenant_a):
    client = login(admin_a)
    assert client.get(GROUPS + "new").status_code == 200
    response = client.post(
        GROUPS + "new",
        {"name": "Payments on call", "members": "bob\nalice\n", "rotation_days": "7"},
    )
    assert response.status_code == 302
    with in_tenant(tenant_a):
        group = MemberGroup.objects.get(tenant=tenant_a, slug="payments-on-call")
        order = list(
            group.memberships.order_by("position").values_list("user__username", flat=True)
        )
    assert order == ["bob", "alice"]
    assert group.rotation_days == 7
    body = client.get(GROUPS).content.decode()
    assert "Payments on call" in body
    # The first in order is on call now.
    assert 'data-testid="on-call">bob<' in body


def test_on_call_follows_the_rotation(admin_a, people, tenant_a):
    start = GroupStore(tenant_a, Actor.system("t")).now() - timedelta(days=8)
    with in_tenant(tenant_a):
        GroupStore(tenant_a, Actor.system("t")).save_group(
            name="Oncall",
            user_ids=[people["alice"].pk, people["bob"].pk],
            rotation_days=7,
            rotation_start=start,
        )
    body = login(admin_a).get(GROUPS).content.decode()
    assert 'data-testid="on-call">bob<' in body


def test_edit_keeps_the_slug_and_replaces_members(admin_a, people, tenant_a):
    save_group(tenant_a, "Team", [people["alice"]])
    client = login(admin_a)
    page = client.get(GROUPS + "team/").content.decode()
    assert "alice" in page
    client.post(GROUPS + "team/", {"name": "Team A", "members": "carol"})
    with in_tenant(tenant_a):
        group = MemberGroup.objects.get(tenant=tenant_a, slug="team")
        assert group.name == "Team A"
        assert [m.user_id for m in group.memberships.all()] == [people["carol"].pk]


def test_validation_errors_are_shown(admin_a, people, make_user):
    make_user("stranger")
    client = login(admin_a)
    response = client.post(GROUPS + "new", {"name": "X", "members": "stranger"})
    assert response.status_code == 422
    assert "not members of this tenant: stranger" in response.content.decode()
    response = client.post(GROUPS + "new", {"name": "", "members": ""})
    assert response.status_code == 422
    assert 'data-testid="form-errors"' in response.content.decode()
    response = client.post(GROUPS + "new", {"name": "Y", "members": "", "rotation_days": "999"})
    assert response.status_code == 422
    assert "1 to 365 days" in response.content.decode()


def test_delete_asks_first(admin_a, people, tenant_a):
    save_group(tenant_a, "Team", [people["alice"]])
    client = login(admin_a)
    page = client.get(GROUPS + "team/delete")
    assert "Delete the group Team?" in page.content.decode()
    response = client.post(GROUPS + "team/delete", follow=True)
    assert "Group Team deleted." in message_texts(response)
    with in_tenant(tenant_a):
        assert not MemberGroup.objects.filter(tenant=tenant_a).exists()


def test_a_group_rules_ask_is_kept_until_they_let_go_of_it(admin_a, people, tenant_a):
    group = save_group(tenant_a, "Team", [people["alice"]])
    with in_tenant(tenant_a):
        rules = RoutingRules(tenant_a, Actor.system("test"))
        asks = rules.save_rule(name="Refunds", tool_pattern="refund*", group_ids=[group.pk])
        escalates = rules.save_rule(
            name="Wires",
            tool_pattern="wire*",
            user_ids=[people["bob"].pk],
            escalate_at_percent=50,
            escalate_group_ids=[group.pk],
        )
        rules.save_rule(name="Others", tool_pattern="other*", user_ids=[people["bob"].pk])
    client = login(admin_a)
    page = client.get(GROUPS + "team/delete").content.decode()
    assert "<strong>Refunds, Wires</strong>" in page
    assert "Delete Team</button>" not in page
    refused = client.post(GROUPS + "team/delete")
    assert refused.status_code == 409
    assert "Group Team is still asked by routing rules." in message_texts(refused)
    with in_tenant(tenant_a):
        assert MemberGroup.objects.filter(tenant=tenant_a).exists()
        rules.delete_rule(rule_id=asks.pk)
        rules.delete_rule(rule_id=escalates.pk)
    assert "Delete Team</button>" in client.get(GROUPS + "team/delete").content.decode()
    response = client.post(GROUPS + "team/delete", follow=True)
    assert "Group Team deleted." in message_texts(response)
    with in_tenant(tenant_a):
        assert not MemberGroup.objects.filter(tenant=tenant_a).exists()


@pytest.mark.parametrize("fixture", ["operator_a", "support_a"])
def test_below_admin_is_refused(request, fixture):
    client = login(request.getfixturevalue(fixture))
    assert client.get(GROUPS).status_code == 403
    assert client.post(GROUPS + "new", {"name": "x"}).status_code == 403


def test_another_tenants_group_is_404(admin_a, admin_b, tenant_b, make_user):
    other = make_user("otto", tenant_b, Role.OPERATOR)
    save_group(tenant_b, "Theirs", [other])
    client = login(admin_a)
    assert client.get(GROUPS + "theirs/").status_code == 404
    assert client.post(GROUPS + "theirs/", {"name": "Mine", "members": ""}).status_code == 404
    assert client.post(GROUPS + "theirs/delete").status_code == 404
    with in_tenant(tenant_b):
        assert MemberGroup.objects.get(tenant=tenant_b).name == "Theirs"


@pytest.mark.parametrize("count", [1, 5])
def test_query_count(admin_a, people, tenant_a, count, django_assert_num_queries):
    for n in range(count):
        save_group(tenant_a, f"Group {n}", list(people.values()))
    client = login(admin_a)
    # The groups, their members, the members' users (two prefetches).
    with django_assert_num_queries(layout_queries(client, tenant_a) + 3):
        body = client.get(GROUPS).content.decode()
    assert body.count('data-testid="group-row"') == count
    # The edit form: the group, the members, the group's member ids.
    with django_assert_num_queries(layout_queries(client, tenant_a) + 3):
        client.get(GROUPS + "group-0/")
    # The delete confirmation: the group, and the rules that may ask it.
    with django_assert_num_queries(layout_queries(client, tenant_a) + 2):
        client.get(GROUPS + "group-0/delete")
