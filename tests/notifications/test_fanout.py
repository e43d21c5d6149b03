"""Who hears a notice, on which channels, and that each message is written once."""

from datetime import UTC, datetime, time, timedelta

import pytest

from notifications_app.fanout import Fanout
from stateroom.actor import Actor
from tenancy_app.models import Role
from tenancy_app.scoping import in_tenant

from ..approvals.conftest import approval_store
from .conftest import (
    add_channel,
    asked,
    delivery_jobs,
    make_group,
    notifications,
    nstore,
    route_to,
    summary,
    with_email,
)

pytestmark = pytest.mark.django_db


def handle(tenant, approval_id, kind, ref="", clock=None):
    return Fanout(tenant, **({"clock": clock} if clock else {})).handle(approval_id, kind, ref)


@pytest.fixture
def people(make_user, tenant_a):
    """Three operators with email addresses, and an admin."""
    return {
        name: with_email(make_user(name, tenant_a, role))
        for name, role in [
            ("olga", Role.OPERATOR),
            ("oscar", Role.OPERATOR),
            ("omar", Role.OPERATOR),
            ("ada", Role.ADMIN),
        ]
    }


@pytest.fixture
def mail(tenant_a):
    return add_channel(tenant_a, "email", "Mail")


def test_asked_reaches_the_assignees_and_their_group_on_their_default_channels(
    tenant_a, people, mail
):
    group = make_group(tenant_a, "Payments", [people["oscar"], people["omar"]])
    route_to(tenant_a, user_ids=[people["olga"].pk], group_ids=[group.pk])
    asked(tenant_a, risk="medium")
    assert handle(tenant_a, "apr-1", "asked") == "3 queued"
    assert summary(tenant_a) == {
        (name, kind, status)
        for name in ("olga", "oscar", "omar")
        for kind, status in [("email", "queued"), ("console", "sent")]
    }
    emails = notifications(tenant_a, channel_kind="email")
    assert {n.address for n in emails} == {
        "olga@example.com",
        "oscar@example.com",
        "omar@example.com",
    }
    assert {n.channel_id for n in emails} == {mail.pk}
    assert sorted(args[1] for args in delivery_jobs(tenant_a)) == sorted(n.pk for n in emails)
    assert {tuple(args[:1]) for args in delivery_jobs(tenant_a)} == {(tenant_a.pk,)}


def test_low_risk_goes_to_the_console_only_and_no_email_channel_means_no_email(tenant_a, people):
    route_to(tenant_a, user_ids=[people["olga"].pk])
    asked(tenant_a, "apr-low", risk="low")
    asked(tenant_a, "apr-high", run_id="run-2", risk="high")
    handle(tenant_a, "apr-low", "asked")
    handle(tenant_a, "apr-high", "asked")  # the tenant has no email channel
    assert summary(tenant_a, approval_id="apr-low") == {("olga", "console", "sent")}
    assert summary(tenant_a, approval_id="apr-high") == {("olga", "console", "sent")}
    assert delivery_jobs(tenant_a) == []


def test_an_on_call_list_reaches_only_the_member_on_call(tenant_a, people, mail, clock):
    rota = make_group(
        tenant_a,
        "On call",
        [people["oscar"], people["omar"]],
        rotation_days=7,
        rotation_start=clock.current - timedelta(days=8),
    )
    route_to(tenant_a, group_ids=[rota.pk])
    asked(tenant_a, risk="medium", clock=clock)
    handle(tenant_a, "apr-1", "asked", clock=clock)
    assert {n.recipient.username for n in notifications(tenant_a)} == {"omar"}  # week two


def test_escalation_reaches_the_tier_and_the_first_assignees_get_nothing_new(
    tenant_a, people, mail, clock
):
    route_to(
        tenant_a,
        user_ids=[people["olga"].pk],
        escalate_user_ids=[people["ada"].pk],
        escalate_at_percent=50,
    )
    asked(tenant_a, risk="high", clock=clock, expires_at=clock.current + timedelta(hours=2))
    handle(tenant_a, "apr-1", "asked", clock=clock)
    clock.advance(3601)
    with in_tenant(tenant_a):
        assert approval_store(tenant_a, clock=clock).run_schedule() == {
            "reminded": 0,
            "escalated": 1,
        }
    handle(tenant_a, "apr-1", "escalated", clock=clock)
    assert summary(tenant_a, kind="escalated") == {
        ("ada", "email", "queued"),
        ("ada", "console", "sent"),
    }
    assert {n.recipient.username for n in notifications(tenant_a, kind="asked")} == {"olga"}


def test_expiry_reaches_the_admins(tenant_a, people, mail, make_user, clock):
    other_admin = with_email(make_user("alan", tenant_a, Role.ADMIN))
    route_to(tenant_a, user_ids=[people["olga"].pk], notify_admins_on_expiry=True)
    asked(tenant_a, risk="high", clock=clock, expires_at=clock.current + timedelta(minutes=5))
    clock.advance(301)
    with in_tenant(tenant_a):
        assert approval_store(tenant_a, clock=clock).expire_overdue() == 1
    handle(tenant_a, "apr-1", "expired", clock=clock)
    assert {n.recipient.username for n in notifications(tenant_a, kind="expired")} == {
        "ada",
        other_admin.username,
    }
    assert {n.channel_kind for n in notifications(tenant_a, kind="expired")} == {"email", "console"}


def test_a_reminder_of_a_decided_approval_tells_nobody(tenant_a, people, mail):
    route_to(tenant_a, user_ids=[people["olga"].pk])
    asked(tenant_a)
    with in_tenant(tenant_a):
        approval_store(tenant_a, Actor.for_user(people["oscar"])).decide(
            approval_id="apr-1", decision="approve", reason="fine"
        )
    assert handle(tenant_a, "apr-1", "reminder") == "not-pending"
    assert handle(tenant_a, "apr-1", "asked") == "not-pending"
    assert notifications(tenant_a) == []


def test_preferences_choose_the_channels_per_risk(tenant_a, people, mail):
    route_to(tenant_a, user_ids=[people["olga"].pk, people["oscar"].pk])
    with in_tenant(tenant_a):
        nstore(tenant_a).save_preference(
            user_id=people["olga"].pk,
            by_risk={"medium": ["console"], "low": ["email", "console"]},
            quiet_start=None,
            quiet_end=None,
        )
    asked(tenant_a, "apr-m", risk="medium")
    asked(tenant_a, "apr-l", run_id="run-2", risk="low")
    handle(tenant_a, "apr-m", "asked")
    handle(tenant_a, "apr-l", "asked")
    assert summary(tenant_a, approval_id="apr-m") == {
        ("olga", "console", "sent"),
        ("oscar", "email", "queued"),
        ("oscar", "console", "sent"),
    }
    assert summary(tenant_a, approval_id="apr-l") == {
        ("olga", "email", "queued"),
        ("olga", "console", "sent"),
        ("oscar", "console", "sent"),
    }


def test_no_email_address_is_recorded_skipped(tenant_a, people, mail, make_user):
    nomail = make_user("nomail", tenant_a, Role.OPERATOR)
    route_to(tenant_a, user_ids=[nomail.pk])
    asked(tenant_a, risk="medium")
    handle(tenant_a, "apr-1", "asked")
    [email] = notifications(tenant_a, channel_kind="email")
    assert (email.status, email.detail, email.address) == ("skipped", "no email address", "")
    assert delivery_jobs(tenant_a) == []


def quiet(tenant, user, start, end, zone="UTC"):
    with in_tenant(tenant):
        nstore(tenant).save_preference(
            user_id=user.pk,
            by_risk={},
            quiet_start=time(*start),
            quiet_end=time(*end),
            time_zone=zone,
        )


@pytest.mark.parametrize(
    ("utc", "held"),
    [
        ((23, 30), True),  # after the start
        ((3, 0), True),  # after midnight
        ((6, 59), True),
        ((7, 0), False),  # the end is not quiet
        ((12, 0), False),
        ((21, 59), False),
    ],
)
def test_quiet_hours_that_wrap_midnight_hold_back_all_but_the_console(
    tenant_a, people, mail, clock, utc, held
):
    quiet(tenant_a, people["olga"], (22, 0), (7, 0))
    route_to(tenant_a, user_ids=[people["olga"].pk])
    clock.current = datetime(2031, 3, 4, *utc, tzinfo=UTC)
    asked(tenant_a, risk="critical", clock=clock)
    handle(tenant_a, "apr-1", "asked", clock=clock)
    [email] = notifications(tenant_a, channel_kind="email")
    assert (email.status, email.detail) == (
        ("skipped", "held back: quiet hours") if held else ("queued", "")
    )
    assert summary(tenant_a, channel_kind="console") == {("olga", "console", "sent")}
    assert len(delivery_jobs(tenant_a)) == (0 if held else 1)


def test_quiet_hours_are_read_in_the_members_time_zone(tenant_a, people, mail, clock):
    # 09:00-17:00 in Tokyo (UTC+9) is 00:00-08:00 UTC.
    quiet(tenant_a, people["olga"], (9, 0), (17, 0), zone="Asia/Tokyo")
    route_to(tenant_a, user_ids=[people["olga"].pk])
    clock.current = datetime(2031, 3, 4, 2, 0, tzinfo=UTC)
    asked(tenant_a, risk="high", clock=clock)
    handle(tenant_a, "apr-1", "asked", clock=clock)
    [email] = notifications(tenant_a, channel_kind="email")
    assert email.status == "skipped"


@pytest.mark.parametrize(("risk", "held"), [("critical", False), ("high", True)])
def test_quiet_hours_let_through_only_the_escalation_of_a_critical_call(
    tenant_a, people, mail, clock, risk, held
):
    quiet(tenant_a, people["ada"], (22, 0), (7, 0))
    route_to(
        tenant_a,
        user_ids=[people["olga"].pk],
        escalate_user_ids=[people["ada"].pk],
        escalate_at_percent=50,
    )
    clock.current = datetime(2031, 3, 4, 22, 30, tzinfo=UTC)
    asked(tenant_a, risk=risk, clock=clock, expires_at=clock.current + timedelta(hours=1))
    clock.advance(1801)
    with in_tenant(tenant_a):
        approval_store(tenant_a, clock=clock).run_schedule()
    handle(tenant_a, "apr-1", "escalated", clock=clock)
    [email] = notifications(tenant_a, channel_kind="email", kind="escalated")
    assert email.status == ("skipped" if held else "queued")


def test_a_notice_handled_twice_writes_and_enqueues_nothing_new(tenant_a, people, mail):
    route_to(tenant_a, user_ids=[people["olga"].pk, people["oscar"].pk])
    asked(tenant_a, risk="high")
    assert handle(tenant_a, "apr-1", "asked") == "2 queued"
    rows, jobs = len(notifications(tenant_a)), delivery_jobs(tenant_a)
    assert handle(tenant_a, "apr-1", "asked") == "0 queued"
    assert len(notifications(tenant_a)) == rows == 4
    assert delivery_jobs(tenant_a) == jobs
    # A second reassignment is a new notice (its own ref): it is sent again.
    assert handle(tenant_a, "apr-1", "reassigned", "2031-01-01T00:00:00") == "2 queued"
    assert handle(tenant_a, "apr-1", "reassigned", "2031-01-01T00:00:00") == "0 queued"
    assert handle(tenant_a, "apr-1", "reassigned", "2031-01-01T00:05:00") == "2 queued"


def test_slack_direct_messages_the_linked_and_posts_once_for_the_rest(
    tenant_a, people, mail, fake_senders
):
    slack = add_channel(tenant_a, "slack", config={"channel": "#approvals"})
    with in_tenant(tenant_a):
        nstore(tenant_a).link(
            channel_id=slack.channel_id, external_user_id="U0OLGA", user_id=people["olga"].pk
        )
    route_to(tenant_a, user_ids=[people["olga"].pk, people["oscar"].pk, people["omar"].pk])
    asked(tenant_a, risk="critical")
    handle(tenant_a, "apr-1", "asked")
    slack_rows = notifications(tenant_a, channel_kind="slack")
    assert {(n.recipient_id, n.address) for n in slack_rows} == {
        (people["olga"].pk, "U0OLGA"),
        (None, "#approvals"),  # one post for oscar and omar, who have no linked user
    }
    assert {n.channel_id for n in slack_rows} == {slack.pk}


def test_a_webhook_channel_gets_one_message_per_notice(tenant_a, people, mail, fake_senders):
    hook = add_channel(tenant_a, "webhook")
    route_to(tenant_a, user_ids=[people["olga"].pk, people["oscar"].pk])
    asked(tenant_a, risk="low")
    handle(tenant_a, "apr-1", "asked")
    [row] = notifications(tenant_a, channel_kind="webhook")
    assert (row.recipient_id, row.channel_id, row.status) == (None, hook.pk, "queued")


def test_ended_updates_each_sent_chat_message_once(
    tenant_a, people, fake_senders, django_capture_on_commit_callbacks
):
    slack = add_channel(tenant_a, "slack", config={"channel": "#approvals"})
    with in_tenant(tenant_a):
        nstore(tenant_a).link(
            channel_id=slack.channel_id, external_user_id="U0OLGA", user_id=people["olga"].pk
        )
    route_to(tenant_a, user_ids=[people["olga"].pk, people["oscar"].pk])
    asked(tenant_a, risk="high")
    with django_capture_on_commit_callbacks(execute=True):
        handle(tenant_a, "apr-1", "asked")
    assert len(fake_senders["slack"].sent) == 2  # olga's DM, the channel post for oscar
    with in_tenant(tenant_a):
        approval_store(tenant_a, Actor.for_user(people["oscar"])).decide(
            approval_id="apr-1", decision="reject", reason="no"
        )
    with django_capture_on_commit_callbacks(execute=True):
        assert handle(tenant_a, "apr-1", "ended") == "2 queued"
        assert handle(tenant_a, "apr-1", "ended") == "0 queued"
    updated = fake_senders["slack"].updated
    assert {n.address for _, n, _ in updated} == {"U0OLGA", "#approvals"}
    assert {n.external_ref["ts"] for _, n, _ in updated} == {"1", "2"}
    assert {(m.status, m.outcome, m.title) for _, _, m in updated} == {
        ("rejected", "rejected by oscar", "Rejected: send_refund (high)")
    }
    ended = notifications(tenant_a, kind="ended")
    assert {n.status for n in ended} == {"sent"}
    assert {n.recipient_id for n in ended} == {people["olga"].pk, None}
    assert notifications(tenant_a, kind="ended", channel_kind="console") == []


def test_a_disabled_channel_is_not_used(tenant_a, people):
    mail = add_channel(tenant_a, "email", "Mail")
    with in_tenant(tenant_a):
        nstore(tenant_a).save_channel(
            channel_id=mail.channel_id, kind="email", name="Mail", enabled=False
        )
    route_to(tenant_a, user_ids=[people["olga"].pk])
    asked(tenant_a, risk="critical")
    handle(tenant_a, "apr-1", "asked")
    assert summary(tenant_a) == {("olga", "console", "sent")}


def test_another_tenants_approval_is_not_found(tenant_a, tenant_b, people, mail, admin_b):
    route_to(tenant_b, user_ids=[admin_b.pk])
    asked(tenant_b, "apr-b", risk="high")
    assert handle(tenant_a, "apr-b", "asked") == "no-approval"
    assert notifications(tenant_a) == [] and notifications(tenant_b) == []
