"""Member groups: members in order, on-call rotation at the store's clock, who a notice reaches."""

from datetime import timedelta

import pytest

from audit_app.models import AuditEvent
from stateroom.actor import Actor
from stateroom.errors import Conflict, NotFound, Unprocessable
from tenancy_app.groups import GroupStore, check_slug_free
from tenancy_app.models import GroupMember, Membership
from tenancy_app.scoping import in_tenant

from ..runs.conftest import Clock

pytestmark = pytest.mark.django_db


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def people(tenant_a, make_user):
    return [make_user(n, tenant_a, "operator").pk for n in ("uma", "vic", "wes", "xan")]


def groups(tenant, clock=None) -> GroupStore:
    return GroupStore(tenant, Actor.system("test"), **({"clock": clock} if clock else {}))


def member_ids(tenant, group) -> list[int]:
    with in_tenant(tenant):
        return list(
            GroupMember.objects.filter(group=group)
            .order_by("position")
            .values_list("user_id", flat=True)
        )


def audited(tenant) -> list[tuple]:
    with in_tenant(tenant):
        return list(
            AuditEvent.objects.filter(tenant=tenant, target_type="group")
            .order_by("seq")
            .values_list("action", "target_id")
        )


def test_save_replaces_members_in_order_and_is_audited(tenant_a, people):
    uma, vic, wes, xan = people
    with in_tenant(tenant_a):
        group = groups(tenant_a).save_group(name="Payments Team", user_ids=[wes, uma, wes, vic])
    assert (group.slug, group.name, group.is_on_call_list) == (
        "payments-team",
        "Payments Team",
        False,
    )
    assert member_ids(tenant_a, group) == [wes, uma, vic]  # duplicates once, order kept
    with in_tenant(tenant_a):
        again = groups(tenant_a).save_group(
            name="Payments", slug="payments-team", user_ids=[xan, uma]
        )
        assert again.pk == group.pk
        assert [g.slug for g in groups(tenant_a).groups()] == ["payments-team"]
        with pytest.raises(Conflict):
            check_slug_free(tenant_a, "payments-team")
        groups(tenant_a).delete_group(slug="payments-team")
        with pytest.raises(NotFound):
            groups(tenant_a).get("payments-team")
    assert member_ids(tenant_a, group) == []
    assert audited(tenant_a) == [
        ("group.saved", "payments-team"),
        ("group.saved", "payments-team"),
        ("group.deleted", "payments-team"),
    ]


def test_invalid_groups_are_refused_and_nothing_is_written(tenant_a, tenant_b, make_user, people):
    stranger = make_user("bob-b", tenant_b, "operator").pk
    for values, field in (
        ({"name": "", "user_ids": people[:1]}, "name"),
        ({"name": "x" * 201, "user_ids": people[:1]}, "name"),
        ({"name": "!!!", "user_ids": people[:1]}, "slug"),
        ({"name": "Ops", "user_ids": [stranger]}, "user_ids"),
        ({"name": "Ops", "user_ids": people[:1], "rotation_days": 0}, "rotation_days"),
        ({"name": "Ops", "user_ids": [], "rotation_days": 7}, "user_ids"),
    ):
        with pytest.raises(Unprocessable) as caught, in_tenant(tenant_a):
            groups(tenant_a).save_group(**values)
        assert field in caught.value.details, values
    with in_tenant(tenant_a):
        assert list(groups(tenant_a).groups()) == []
    assert audited(tenant_a) == []


def test_the_on_call_member_turns_with_the_clock(tenant_a, people, clock):
    uma, vic, wes, _ = people
    store = groups(tenant_a, clock)
    with in_tenant(tenant_a):
        rota = store.save_group(name="On call", user_ids=[uma, vic, wes], rotation_days=7)
        g = [rota.pk]
        seen = []
        for _ in range(4):
            seen.append(store.recipients(user_ids=[], group_ids=g))
            clock.advance(7 * 86400)
        assert seen == [[uma], [vic], [wes], [uma]]
        # Saving it again keeps the rotation going (the turn is not handed back to uma).
        store.save_group(name="On call", user_ids=[uma, vic, wes], rotation_days=7)
        assert store.recipients(user_ids=[], group_ids=g) == [vic]  # week 4: vic's turn
        clock.advance(7 * 86400)
        assert store.recipients(user_ids=[], group_ids=g) == [wes]


def test_recipients_are_members_once_in_the_order_named(tenant_a, people, clock):
    uma, vic, wes, xan = people
    store = groups(tenant_a, clock)
    with in_tenant(tenant_a):
        team = store.save_group(name="Team", user_ids=[wes, uma])
        rota = store.save_group(name="Rota", user_ids=[xan, vic], rotation_days=1)
        assert store.recipients(user_ids=[vic], group_ids=[rota.pk, team.pk]) == [
            vic,
            xan,
            wes,
            uma,
        ]
        assert store.recipients(user_ids=[uma, 987654], group_ids=[team.pk, 987654]) == [uma, wes]
        assert store.recipients(user_ids=[], group_ids=[]) == []
        # One who left the tenant hears nothing, and the rota's turn passes to the others.
        Membership.objects.filter(tenant=tenant_a, user_id__in=[wes, xan]).delete()
        assert store.recipients(user_ids=[wes], group_ids=[team.pk, rota.pk]) == [uma, vic]
        assert sorted(store.group_ids_of(uma)) == [team.pk]
        assert store.group_ids_of(vic) == [rota.pk]


def test_another_tenants_groups_are_not_reached(tenant_a, tenant_b, make_user, people):
    bob = make_user("bob-b", tenant_b, "operator").pk
    with in_tenant(tenant_b):
        theirs = groups(tenant_b).save_group(name="Theirs", user_ids=[bob])
    with in_tenant(tenant_a):
        assert groups(tenant_a).recipients(user_ids=[bob], group_ids=[theirs.pk]) == []
        with pytest.raises(NotFound):
            groups(tenant_a).get("theirs")
        with pytest.raises(NotFound):
            groups(tenant_a).delete_group(slug="theirs")
        # The same slug in tenant A is a group of its own.
        mine = groups(tenant_a).save_group(name="Theirs", user_ids=people[:1])
    assert mine.pk != theirs.pk
    assert member_ids(tenant_b, theirs) == [bob]


def test_the_rotation_start_defaults_to_the_clock_and_can_be_given(tenant_a, people, clock):
    store = groups(tenant_a, clock)
    start = clock() - timedelta(days=3)
    with in_tenant(tenant_a):
        rota = store.save_group(
            name="Rota", user_ids=people[:2], rotation_days=2, rotation_start=start
        )
        assert rota.rotation_start == start
        assert store.recipients(user_ids=[], group_ids=[rota.pk]) == [people[1]]
        plain = store.save_group(name="Plain", user_ids=people[:2])
        assert plain.rotation_start is None
