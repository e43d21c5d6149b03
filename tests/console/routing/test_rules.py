"""The routing rules page (admins): ordered list with the default marked, create/edit/delete,
move up/down, and the dry run that writes nothing."""

import pytest

from approvals_app.models import RoutingRule
from approvals_app.routing import RoutingRules
from audit_app.models import AuditEvent
from stateroom.actor import Actor
from tenancy_app.groups import GroupStore
from tenancy_app.models import Role
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.conftest import layout_queries, message_texts

RULES = "/t/acme/settings/routing/"


@pytest.fixture
def team(make_user, tenant_a):
    alice = make_user("alice", tenant_a, Role.OPERATOR)
    bob = make_user("bob", tenant_a, Role.OPERATOR)
    with in_tenant(tenant_a):
        group = GroupStore(tenant_a, Actor.system("t")).save_group(
            name="Payments", user_ids=[bob.pk, alice.pk], rotation_days=7
        )
    return {"alice": alice, "bob": bob, "group": group}


def rule(tenant, **values):
    values.setdefault("enabled", True)
    with in_tenant(tenant):
        return RoutingRules(tenant, Actor.system("t")).save_rule(**values)


def names(tenant):
    with in_tenant(tenant):
        return list(
            RoutingRule.objects.filter(tenant=tenant)
            .order_by("position")
            .values_list("name", flat=True)
        )


def test_create_a_rule_from_the_form(admin_a, team, tenant_a):
    client = login(admin_a)
    assert client.get(RULES + "new").status_code == 200
    response = client.post(
        RULES + "new",
        {
            "name": "Refunds",
            "tool_pattern": "payments.*",
            "risks": ["high", "critical"],
            "session_metadata": "region=eu\ntier=1",
            "user_ids": [team["alice"].pk],
            "group_ids": [team["group"].pk],
            "remind_after_minutes": "10",
            "escalate_at_percent": "50",
            "escalate_user_ids": [team["bob"].pk],
            "enabled": "on",
        },
    )
    assert response.status_code == 302, response.content.decode()
    with in_tenant(tenant_a):
        saved = RoutingRule.objects.get(tenant=tenant_a, name="Refunds")
    assert saved.session_metadata == {"region": "eu", "tier": "1"}
    assert saved.risks == ["high", "critical"]
    assert saved.group_ids == [team["group"].pk]
    assert saved.enabled and not saved.is_default and not saved.notify_admins_on_expiry
    body = client.get(RULES).content.decode()
    assert "payments.*" in body and "alice, Payments" in body
    # The edit form shows what is saved.
    page = client.get(f"{RULES}{saved.pk}/").content.decode()
    assert "region=eu" in page and "tier=1" in page


def test_validation_errors_are_shown(admin_a, team):
    client = login(admin_a)
    response = client.post(RULES + "new", {"name": "X", "session_metadata": "no equals sign"})
    assert response.status_code == 422
    assert "line 1: write key=value" in response.content.decode()
    response = client.post(
        RULES + "new", {"name": "X", "escalate_at_percent": "150", "remind_after_minutes": "0"}
    )
    assert response.status_code == 422
    body = response.content.decode()
    assert "1 to 99 percent" in body and "1 minute to 7 days" in body


def test_default_is_marked_and_moves_reorder(admin_a, team, tenant_a):
    for name in ("A", "B", "C"):
        rule(tenant_a, name=name, tool_pattern=name.lower())
    rule(tenant_a, name="Fallback", is_default=True, user_ids=[team["alice"].pk])
    client = login(admin_a)
    body = client.get(RULES).content.decode()
    assert body.count('data-testid="default-rule"') == 1
    with in_tenant(tenant_a):
        c = RoutingRule.objects.get(tenant=tenant_a, name="C")
        a = RoutingRule.objects.get(tenant=tenant_a, name="A")
    client.post(f"{RULES}{c.pk}/move", {"direction": "up"})
    assert names(tenant_a) == ["A", "C", "B", "Fallback"]
    client.post(f"{RULES}{a.pk}/move", {"direction": "down"})
    assert names(tenant_a) == ["C", "A", "B", "Fallback"]
    client.post(f"{RULES}{c.pk}/move", {"direction": "up"})  # first stays first
    assert names(tenant_a) == ["C", "A", "B", "Fallback"]


def test_delete_asks_first(admin_a, tenant_a):
    saved = rule(tenant_a, name="Gone")
    client = login(admin_a)
    assert (
        "Delete the routing rule Gone?" in client.get(f"{RULES}{saved.pk}/delete").content.decode()
    )
    response = client.post(f"{RULES}{saved.pk}/delete", follow=True)
    assert "Routing rule Gone deleted." in message_texts(response)
    assert names(tenant_a) == []


def audit_count(tenant):
    with in_tenant(tenant):
        return AuditEvent.objects.filter(tenant=tenant).count()


def test_preview_answers_and_writes_nothing(admin_a, team, tenant_a):
    rule(tenant_a, name="Off", tool_pattern="payments.*", enabled=False, user_ids=[team["bob"].pk])
    rule(
        tenant_a,
        name="EU refunds",
        tool_pattern="payments.*",
        risks=["high"],
        session_metadata={"region": "eu"},
        group_ids=[team["group"].pk],
        remind_after_minutes=10,
        escalate_at_percent=50,
        escalate_user_ids=[team["alice"].pk],
    )
    client = login(admin_a)
    before = audit_count(tenant_a)
    body = client.get(
        RULES + "preview",
        {
            "tool_name": "payments.refund",
            "risk": "high",
            "session_metadata": "region=eu",
            "deadline_minutes": "60",
        },
    ).content.decode()
    assert 'data-testid="preview-rule">EU refunds<' in body
    # The on-call member of the group (bob first in order).
    assert 'data-testid="preview-asked">bob<' in body
    assert "(10\xa0minutes after asking)" in body
    assert "(30\xa0minutes after asking) to alice" in body
    # No match, no default: nobody.
    body = client.get(RULES + "preview", {"tool_name": "mail.send", "risk": "low"}).content.decode()
    assert "no rule matches and there is no default" in body
    rule(tenant_a, name="Fallback", is_default=True, user_ids=[team["alice"].pk])
    before = audit_count(tenant_a)
    body = client.get(RULES + "preview", {"tool_name": "mail.send", "risk": "low"}).content.decode()
    assert "Fallback (the default" in body and 'data-testid="preview-asked">alice<' in body
    assert audit_count(tenant_a) == before


def test_preview_shows_form_errors(admin_a):
    response = login(admin_a).get(RULES + "preview", {"tool_name": "", "risk": "nope"})
    assert response.status_code == 422
    assert 'data-testid="form-errors"' in response.content.decode()


@pytest.mark.parametrize("fixture", ["operator_a", "support_a"])
def test_below_admin_is_refused(request, fixture):
    client = login(request.getfixturevalue(fixture))
    assert client.get(RULES).status_code == 403
    assert client.get(RULES + "preview", {"tool_name": "x", "risk": "low"}).status_code == 403
    assert client.post(RULES + "new", {"name": "x"}).status_code == 403


def test_another_tenants_rule_is_404(admin_a, tenant_b):
    theirs = rule(tenant_b, name="Theirs")
    client = login(admin_a)
    for url in (f"{RULES}{theirs.pk}/", f"{RULES}{theirs.pk}/delete"):
        assert client.get(url).status_code == 404
    assert client.post(f"{RULES}{theirs.pk}/", {"name": "Mine"}).status_code == 404
    assert client.post(f"{RULES}{theirs.pk}/move", {"direction": "up"}).status_code == 404
    assert client.post(f"{RULES}{theirs.pk}/delete").status_code == 404
    assert names(tenant_b) == ["Theirs"]


@pytest.mark.parametrize("count", [1, 6])
def test_query_counts(admin_a, team, tenant_a, count, django_assert_num_queries):
    for n in range(count):
        rule(tenant_a, name=f"R{n}", user_ids=[team["alice"].pk], group_ids=[team["group"].pk])
    client = login(admin_a)
    layout = layout_queries(client, tenant_a)
    # Members, groups, rules.
    with django_assert_num_queries(layout + 3):
        body = client.get(RULES).content.decode()
    assert body.count('data-testid="rule-row"') == count
    with in_tenant(tenant_a):
        first = RoutingRule.objects.filter(tenant=tenant_a).first().pk
    # The rule; members and groups for the choices.
    with django_assert_num_queries(layout + 3):
        client.get(f"{RULES}{first}/")
    # The enabled rules; members; the named people's memberships; the group's current
    # members with their group (one query).
    with django_assert_num_queries(layout + 4):
        client.get(RULES + "preview", {"tool_name": "x", "risk": "low"})
