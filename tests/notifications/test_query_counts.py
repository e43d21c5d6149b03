"""Statements per notice (fan-out) and per delivery job (a notice's notifications): the
same for 2 recipients as for 6, no statement per recipient (issue 34: the outbox drains
≥ 200 notifications/s). The test's own savepoints are not counted: a worker's tenant
transaction is a real one."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from notifications_app.delivery import deliver_many
from notifications_app.fanout import Fanout
from tenancy_app.models import Role
from tenancy_app.scoping import in_tenant

from .conftest import (
    add_channel,
    asked,
    delivery_batches,
    make_group,
    notifications,
    nstore,
    route_to,
    with_email,
)

pytestmark = pytest.mark.django_db

# set_config; the approval (lean); channels; chat links; the named people's memberships;
# the groups' current members with their group (on-call turns); preferences and email
# addresses; the notifications (one INSERT); the delivery job (one INSERT); set_config reset.
FANOUT_STATEMENTS = 10
# the tenant; set_config, the notifications with channel, recipient and role, the
# approval (lean), reset; set_config, the results (one UPDATE), reset.
DELIVERY_STATEMENTS = 8


def statements(captured: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if "SAVEPOINT" not in q["sql"]]


def routed_to(tenant, make_user, size: int) -> None:
    """A group of `size` operators with email addresses (one prefers email only) and one
    more person linked to Slack, all asked by the rule; email and Slack channels."""
    people = [with_email(make_user(f"op{n}", tenant, Role.OPERATOR)) for n in range(size)]
    lone = with_email(make_user("lone", tenant, Role.OPERATOR))
    group = make_group(tenant, "ops", people)
    add_channel(tenant, "email", "Mail")
    slack = add_channel(tenant, "slack", "Slack", config={"channel": "C1"})
    with in_tenant(tenant):
        nstore(tenant).save_preference(
            user_id=people[0].pk, by_risk={"high": ["email"]}, quiet_start=None, quiet_end=None
        )
        nstore(tenant).link(channel_id=slack.channel_id, external_user_id="U1", user_id=lone.pk)
    route_to(tenant, user_ids=[lone.pk], group_ids=[group.pk])


@pytest.mark.parametrize("size", [2, 6])
def test_a_notice_fans_out_in_a_fixed_number_of_statements(tenant_a, make_user, size):
    routed_to(tenant_a, make_user, size)
    asked(tenant_a, risk="high")
    with CaptureQueriesContext(connection) as captured:
        # each member's email, the lone member's Slack DM, one post for the unlinked
        assert Fanout(tenant_a).handle("apr-1", "asked") == f"{size + 3} queued"
    assert len(statements(captured)) == FANOUT_STATEMENTS
    [[tenant_id, ids]] = delivery_batches(tenant_a)  # one delivery job for the notice
    assert tenant_id == tenant_a.pk and len(ids) == size + 3


@pytest.mark.parametrize("size", [2, 6])
def test_a_notices_delivery_job_takes_a_fixed_number_of_statements(
    tenant_a, make_user, smtp_server, fake_senders, size
):
    routed_to(tenant_a, make_user, size)
    asked(tenant_a, risk="high")
    Fanout(tenant_a).handle("apr-1", "asked")
    [[_, ids]] = delivery_batches(tenant_a)
    with CaptureQueriesContext(connection) as captured:
        outcomes = deliver_many(tenant_a.pk, ids)
    assert outcomes == dict.fromkeys(ids, "sent")
    assert len(statements(captured)) == DELIVERY_STATEMENTS
    assert len(smtp_server.messages) == size + 1  # the group's and the lone member's
    assert len(fake_senders["slack"].sent) == 2  # the DM and the channel post
    queued = [n for n in notifications(tenant_a) if n.pk in ids]
    assert {(n.status, n.attempts) for n in queued} == {("sent", 1)}
