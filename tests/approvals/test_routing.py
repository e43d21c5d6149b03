"""Routing rules: which rule routes a call, the schedule it fixes, and the rules' store."""

from datetime import timedelta

import pytest
from django.utils import timezone

from approvals_app.models import RoutingRule
from approvals_app.routing import pick, route
from stateroom.errors import NotFound, Unprocessable
from tenancy_app.scoping import in_tenant

from ..runs.conftest import audit_actions
from .conftest import routing_rules, save_group, save_rule


def rule(name: str, position: int = 0, **kw) -> RoutingRule:
    """An unsaved rule (pick and matches read no database)."""
    return RoutingRule(name=name, position=position, **kw)


# --- pick: the first enabled match by position, else the default ----------------------------
@pytest.mark.parametrize(
    ("pattern", "tool", "hit"),
    [
        ("payments.*", "payments.refund", True),
        ("payments.*", "payments", False),
        ("*refund*", "send_refund_now", True),
        ("*refund*", "send_payment", False),
        ("send_?efund", "send_refund", True),
        ("send_[rb]efund", "send_befund", True),
        ("Payments.*", "payments.refund", False),  # case matters
        ("", "anything.at.all", True),
    ],
)
def test_a_tool_pattern_is_a_shell_glob(pattern, tool, hit):
    found = pick([rule("r", tool_pattern=pattern)], tool, "low", {})
    assert (found is not None) is hit


def test_risks_limit_a_rule_and_empty_means_any():
    high_only = rule("high", risks=["high", "critical"])
    assert pick([high_only], "t", "critical", {}) is high_only
    assert pick([high_only], "t", "medium", {}) is None
    anyone = rule("any", risks=[])
    assert pick([anyone], "t", "low", {}) is anyone


def test_session_metadata_is_compared_as_text_and_every_key_must_be_there():
    eu_tier1 = rule("eu", session_metadata={"region": "eu", "tier": "1"})
    assert pick([eu_tier1], "t", "low", {"region": "eu", "tier": 1, "other": "x"}) is eu_tier1
    assert pick([eu_tier1], "t", "low", {"region": "eu", "tier": "1"}) is eu_tier1
    assert pick([eu_tier1], "t", "low", {"region": "eu"}) is None  # a missing key
    assert pick([eu_tier1], "t", "low", {"region": "us", "tier": 1}) is None
    assert pick([eu_tier1], "t", "low", {}) is None  # a run without a session
    flagged = rule("vip", session_metadata={"vip": True})
    assert pick([flagged], "t", "low", {"vip": True}) is flagged
    assert pick([flagged], "t", "low", {"vip": "true"}) is flagged
    assert pick([flagged], "t", "low", {"vip": False}) is None
    assert pick([rule("none", session_metadata={})], "t", "low", {}) is not None


def test_the_first_match_in_the_given_order_wins_and_disabled_rules_are_skipped():
    first = rule("first", 1, tool_pattern="pay*")
    second = rule("second", 2, tool_pattern="payments.*")
    off = rule("off", 0, tool_pattern="*", enabled=False)
    assert pick([off, first, second], "payments.refund", "low", {}) is first
    assert pick([off, second, first], "payments.refund", "low", {}) is second
    assert pick([off], "payments.refund", "low", {}) is None


def test_the_default_rule_routes_what_nothing_else_matches_wherever_it_stands():
    default = rule("default", 0, is_default=True, tool_pattern="never")
    specific = rule("specific", 5, tool_pattern="payments.*")
    assert pick([default, specific], "payments.refund", "low", {}) is specific
    assert pick([default, specific], "email.send", "low", {}) is default
    disabled_default = rule("default", 0, is_default=True, enabled=False)
    assert pick([disabled_default], "email.send", "low", {}) is None


# --- route: the stored rules, the assignees and the schedule --------------------------------
@pytest.fixture
def people(tenant_a, make_user):
    return [make_user(name, tenant_a, "operator") for name in ("uma", "vic", "wes")]


@pytest.mark.django_db
def test_route_by_position_with_assignees_and_no_rule_asks_nobody(tenant_a, people):
    asked = timezone.now()
    with in_tenant(tenant_a):
        assert (
            route(
                tenant_a,
                tool_name="x",
                risk="low",
                session_metadata=None,
                asked_at=asked,
                expires_at=None,
            ).rule
            is None
        )
    group = save_group(tenant_a, "Payments", [people[1].pk, people[2].pk])
    save_rule(tenant_a, name="broad", tool_pattern="*", user_ids=[people[0].pk])
    narrow = save_rule(tenant_a, name="narrow", tool_pattern="payments.*", group_ids=[group.pk])
    with in_tenant(tenant_a):
        routing_rules(tenant_a).move(rule_id=narrow.pk, position=1)
        routed = route(
            tenant_a,
            tool_name="payments.refund",
            risk="high",
            session_metadata={},
            asked_at=asked,
            expires_at=None,
        )
    assert (routed.rule.name, routed.user_ids, routed.group_ids) == ("narrow", [], [group.pk])
    assert routed.asks_someone
    assert (routed.remind_at, routed.escalate_at) == (None, None)


@pytest.mark.django_db
def test_the_schedule_is_fixed_at_the_asking_time(tenant_a, people):
    asked = timezone.now()
    save_rule(
        tenant_a,
        name="timed",
        user_ids=[people[0].pk],
        remind_after_minutes=15,
        escalate_at_percent=75,
        escalate_user_ids=[people[1].pk],
        notify_admins_on_expiry=False,
    )

    def routed(expires_at):
        with in_tenant(tenant_a):
            return route(
                tenant_a,
                tool_name="t",
                risk="low",
                session_metadata=None,
                asked_at=asked,
                expires_at=expires_at,
            )

    with_deadline = routed(asked + timedelta(hours=4))
    assert with_deadline.remind_at == asked + timedelta(minutes=15)
    assert with_deadline.escalate_at == asked + timedelta(hours=3)  # 75% of 4 hours
    assert with_deadline.escalate_user_ids == [people[1].pk]
    assert with_deadline.notify_admins_on_expiry is False
    without_deadline = routed(None)
    assert without_deadline.remind_at == asked + timedelta(minutes=15)
    assert without_deadline.escalate_at is None  # a percent of no time


@pytest.mark.django_db
def test_a_rule_that_asks_nobody_reminds_nobody(tenant_a, people):
    asked = timezone.now()
    save_rule(tenant_a, name="quiet", is_default=True, remind_after_minutes=5)
    with in_tenant(tenant_a):
        routed = route(
            tenant_a,
            tool_name="t",
            risk="low",
            session_metadata=None,
            asked_at=asked,
            expires_at=None,
        )
    assert routed.rule.name == "quiet"
    assert (routed.asks_someone, routed.remind_at) == (False, None)


# --- RoutingRules: validation, one default, names, move, delete; each audited ---------------
def refused(tenant, **values) -> dict:
    with pytest.raises(Unprocessable) as caught, in_tenant(tenant):
        routing_rules(tenant).save_rule(**values)
    assert caught.value.status == 422
    return caught.value.details


@pytest.mark.django_db
def test_rules_refuse_what_is_not_valid(tenant_a, people):
    uma = people[0].pk
    assert set(refused(tenant_a, name="  ")) == {"name"}
    assert set(refused(tenant_a, name="r", risks=["huge"])) == {"risks"}
    assert set(refused(tenant_a, name="r", session_metadata={"k": {"nested": 1}})) == {
        "session_metadata"
    }
    assert set(refused(tenant_a, name="r", session_metadata=["a"])) == {"session_metadata"}
    assert set(refused(tenant_a, name="r", user_ids=[uma], escalate_at_percent=100)) == {
        "escalate_at_percent",
        "escalate_group_ids",
    }
    assert set(refused(tenant_a, name="r", user_ids=[uma], escalate_at_percent=50)) == {
        "escalate_group_ids"
    }
    assert set(refused(tenant_a, name="r", remind_after_minutes=0)) == {"remind_after_minutes"}
    assert set(refused(tenant_a, name="r", user_ids=[987654])) == {"user_ids"}
    assert set(refused(tenant_a, name="r", group_ids=[987654])) == {"group_ids"}
    save_rule(tenant_a, name="taken")
    assert refused(tenant_a, name="taken") == {"name": ["another rule has this name"]}
    with pytest.raises(TypeError), in_tenant(tenant_a):
        routing_rules(tenant_a).save_rule(name="r", position=3)
    with in_tenant(tenant_a):
        assert list(RoutingRule.objects.values_list("name", flat=True)) == ["taken"]
    assert [a for a, _, _ in audit_actions(tenant_a)] == ["routing_rule.saved"]


@pytest.mark.django_db
def test_another_tenants_members_and_groups_are_refused(tenant_a, tenant_b, make_user):
    bob = make_user("bob-b", tenant_b, "operator")
    their_group = save_group(tenant_b, "Theirs", [bob.pk])
    assert set(refused(tenant_a, name="r", user_ids=[bob.pk])) == {"user_ids"}
    assert set(refused(tenant_a, name="r", group_ids=[their_group.pk])) == {"group_ids"}
    assert set(
        refused(
            tenant_a,
            name="r",
            escalate_at_percent=50,
            escalate_user_ids=[bob.pk],
            escalate_group_ids=[their_group.pk],
        )
    ) == {"escalate_user_ids", "escalate_group_ids"}
    with in_tenant(tenant_b):
        rule_b = routing_rules(tenant_b).save_rule(name="b's", user_ids=[bob.pk])
    with pytest.raises(NotFound), in_tenant(tenant_a):
        routing_rules(tenant_a).save_rule(rule_id=rule_b.pk, name="mine now")
    with pytest.raises(NotFound), in_tenant(tenant_a):
        routing_rules(tenant_a).move(rule_id=rule_b.pk, position=1)
    with pytest.raises(NotFound), in_tenant(tenant_a):
        routing_rules(tenant_a).delete_rule(rule_id=rule_b.pk)
    with in_tenant(tenant_b):
        assert routing_rules(tenant_b).get(rule_b.pk).name == "b's"


@pytest.mark.django_db
def test_one_default_only_a_new_default_takes_over(tenant_a):
    first = save_rule(tenant_a, name="first", is_default=True)
    second = save_rule(tenant_a, name="second", is_default=True)
    with in_tenant(tenant_a):
        defaults = list(
            RoutingRule.objects.filter(tenant=tenant_a, is_default=True).values_list(
                "pk", flat=True
            )
        )
        assert defaults == [second.pk]
        assert routing_rules(tenant_a).get(first.pk).is_default is False
        # The default is listed first, the others by position.
        assert [r.name for r in routing_rules(tenant_a).rules()] == ["second", "first"]


@pytest.mark.django_db
def test_change_move_and_delete_are_audited_and_keep_the_order(tenant_a):
    a, b, c = (save_rule(tenant_a, name=n) for n in ("a", "b", "c"))
    store = routing_rules(tenant_a)
    with in_tenant(tenant_a):
        assert [r.position for r in (a, b, c)] == [1, 2, 3]
        changed = store.save_rule(rule_id=b.pk, name="b2", tool_pattern="pay*")
        assert (changed.name, changed.tool_pattern, changed.position) == ("b2", "pay*", 2)
        store.move(rule_id=c.pk, position=1)
        assert [r.name for r in store.rules()] == ["c", "a", "b2"]
        store.move(rule_id=c.pk, position=99)  # past the end: last
        assert [r.name for r in store.rules()] == ["a", "b2", "c"]
        assert [r.position for r in store.rules()] == [1, 2, 3]
        store.delete_rule(rule_id=a.pk)
        assert [r.name for r in store.rules()] == ["b2", "c"]
        with pytest.raises(NotFound):
            store.get(a.pk)
    assert [(act, target) for act, target, _ in audit_actions(tenant_a)] == [
        ("routing_rule.saved", str(a.pk)),
        ("routing_rule.saved", str(b.pk)),
        ("routing_rule.saved", str(c.pk)),
        ("routing_rule.saved", str(b.pk)),
        ("routing_rule.moved", str(c.pk)),
        ("routing_rule.moved", str(c.pk)),
        ("routing_rule.deleted", str(a.pk)),
    ]
