"""Who an approval asks: recorded when asked (one outbox notice), reassigned, taken, reminded,
escalated and told how it ended, with the store's clock."""

from datetime import timedelta

import pytest

from stateroom.actor import Actor
from stateroom.errors import Conflict, Unprocessable
from tenancy_app.scoping import in_tenant

from ..runs.conftest import audit_actions, make_run
from .conftest import (
    approval_store,
    make_approval,
    notice_rows,
    reload_approval,
    save_group,
    save_rule,
)
from .test_api import ask

pytestmark = pytest.mark.django_db


@pytest.fixture
def jobs(django_capture_on_commit_callbacks):
    """Run the outbox jobs a commit publishes (eager Celery), as after a real commit."""

    def run():
        return django_capture_on_commit_callbacks(execute=True)

    return run


@pytest.fixture
def trio(tenant_a, make_user):
    return [make_user(name, tenant_a, "operator") for name in ("uma", "vic", "wes")]


@pytest.fixture
def payments(tenant_a, trio):
    return save_group(tenant_a, "Payments", [u.pk for u in trio])


def actions(tenant, prefix: str) -> list[tuple]:
    return [(a, t) for a, t, _ in audit_actions(tenant) if a.startswith(prefix)]


# --- asking: the assignees are recorded, and one notice is written ---------------------------
def test_a_routed_request_records_its_assignees_and_writes_one_notice(
    api_a, tenant_a, payments, notices, jobs
):
    save_rule(tenant_a, name="refunds", tool_pattern="send_*", group_ids=[payments.pk])
    make_run(tenant_a, "running", run_id="run-1")
    with jobs():
        response = ask(api_a, approval_id="apr-1")
    assert response.status_code == 201
    body = response.json()
    assert body["assignees"] == {"user_ids": [], "group_ids": [payments.pk]}
    assert body["route_rule"] == "refunds"
    assert api_a.get("/api/v1/approvals/apr-1").json()["assignees"] == body["assignees"]
    listed = api_a.get("/api/v1/approvals?run_id=run-1").json()["results"]
    assert [(a["assignees"], a["route_rule"]) for a in listed] == [(body["assignees"], "refunds")]
    pending = api_a.get("/api/v1/approvals?status=pending").json()["results"]
    assert [(a["assignees"], a["route_rule"]) for a in pending] == [(body["assignees"], "refunds")]
    assert notice_rows(tenant_a) == [[tenant_a.pk, "apr-1", "asked", ""]]
    assert notices == [("apr-1", "asked", "")]
    stored = reload_approval(tenant_a, "apr-1")
    assert (stored["assigned_user_ids"], stored["assigned_group_ids"]) == ([], [payments.pk])


def test_an_unrouted_request_asks_nobody_and_writes_no_notice(api_a, tenant_a, notices, jobs):
    save_rule(tenant_a, name="elsewhere", tool_pattern="payments.*", risks=["critical"])
    make_run(tenant_a, "running", run_id="run-1")
    with jobs():
        body = ask(api_a, approval_id="apr-1").json()
    assert (body["assignees"], body["route_rule"]) == ({"user_ids": [], "group_ids": []}, None)
    assert notice_rows(tenant_a) == []
    assert notices == []


def test_the_default_rule_routes_an_unmatched_call_by_session_metadata(
    tenant_a, trio, payments, notices, jobs
):
    from ..runs.conftest import make_session

    session = make_session(tenant_a)
    with in_tenant(tenant_a):
        session.metadata = {"region": "eu", "tier": 1}
        session.save(update_fields=["metadata"])
    save_rule(tenant_a, name="fallback", is_default=True, user_ids=[trio[0].pk])
    save_rule(tenant_a, name="eu", session_metadata={"region": "eu"}, group_ids=[payments.pk])
    save_rule(tenant_a, name="us", session_metadata={"region": "us"}, user_ids=[trio[2].pk])
    run = make_run(tenant_a, "running", run_id="run-eu", session_id=session.session_id)
    assert run.session_id is not None
    with jobs(), in_tenant(tenant_a):
        in_session = approval_store(tenant_a).request(
            run_id="run-eu",
            expected_version=run.version,
            tool_name="send_refund",
            arguments={},
            risk="low",
        )
    with jobs():
        without = make_approval(tenant_a, run_id="run-none", approval_id="apr-none")
    assert (in_session.route_rule.name, in_session.assigned_group_ids) == ("eu", [payments.pk])
    assert (without.route_rule.name, without.assigned_user_ids) == ("fallback", [trio[0].pk])
    assert notices.kinds() == ["asked", "asked"]


# --- reassign and take ----------------------------------------------------------------------
def test_reassign_and_take_are_audited_and_each_notified(
    tenant_a, trio, payments, operator_a, notices, jobs, clock
):
    save_rule(tenant_a, name="r", user_ids=[trio[0].pk])
    with jobs():
        make_approval(tenant_a, approval_id="apr-1", clock=clock)
    store = approval_store(tenant_a, Actor.for_user(operator_a), clock=clock)
    with jobs(), in_tenant(tenant_a):
        store.reassign(approval_id="apr-1", user_ids=[trio[1].pk], group_ids=[], reason="away")
    with jobs(), in_tenant(tenant_a):  # at the same instant: still its own notice
        store.reassign(
            approval_id="apr-1", user_ids=[trio[2].pk, trio[2].pk], group_ids=[payments.pk]
        )
    stored = reload_approval(tenant_a, "apr-1")
    assert (stored["assigned_user_ids"], stored["assigned_group_ids"]) == (
        [trio[2].pk],
        [payments.pk],
    )
    with jobs(), in_tenant(tenant_a):
        store.take(approval_id="apr-1")
    stored = reload_approval(tenant_a, "apr-1")
    assert (stored["assigned_user_ids"], stored["assigned_group_ids"]) == ([operator_a.pk], [])
    assert actions(tenant_a, "approval.") == [
        ("approval.requested", "apr-1"),
        ("approval.reassigned", "apr-1"),
        ("approval.reassigned", "apr-1"),
        ("approval.taken", "apr-1"),
    ]
    assert notices.kinds() == ["asked", "reassigned", "reassigned", "reassigned"]
    refs = [ref for _, kind, ref in notices if kind == "reassigned"]
    assert len(set(refs)) == 3 and all(refs)
    assert len(notice_rows(tenant_a)) == 4


def test_reassign_refuses_strangers_and_another_tenants_ids_writing_nothing(
    tenant_a, tenant_b, trio, operator_a, make_user, notices, jobs
):
    bob = make_user("bob-b", tenant_b, "operator")
    their_group = save_group(tenant_b, "Theirs", [bob.pk])
    with jobs():
        make_approval(tenant_a, approval_id="apr-1")
    before = reload_approval(tenant_a, "apr-1")
    store = approval_store(tenant_a, Actor.for_user(operator_a))
    for user_ids, group_ids, field in (
        ([bob.pk], [], "user_ids"),
        ([], [their_group.pk], "group_ids"),
        ([], [], "user_ids"),
        ([trio[0].pk], [987654], "group_ids"),
    ):
        with pytest.raises(Unprocessable) as caught, in_tenant(tenant_a):
            store.reassign(approval_id="apr-1", user_ids=user_ids, group_ids=group_ids)
        assert caught.value.status == 422 and field in caught.value.details
    assert reload_approval(tenant_a, "apr-1") == before
    assert actions(tenant_a, "approval.reassigned") == []
    assert notice_rows(tenant_a) == []
    # Tenant B cannot reach tenant A's approval at all.
    with pytest.raises(Exception) as caught, in_tenant(tenant_b):
        approval_store(tenant_b, Actor.for_user(bob)).reassign(
            approval_id="apr-1", user_ids=[bob.pk], group_ids=[]
        )
    assert getattr(caught.value, "status", None) == 404


def test_a_decided_approval_is_not_reassigned_or_taken(tenant_a, trio, operator_a, notices, jobs):
    save_rule(tenant_a, name="r", user_ids=[trio[0].pk])
    with jobs():
        make_approval(tenant_a, approval_id="apr-1")
    store = approval_store(tenant_a, Actor.for_user(operator_a))
    with jobs(), in_tenant(tenant_a):
        store.decide(approval_id="apr-1", decision="reject", reason="no")
    for attempt in (
        lambda: store.reassign(approval_id="apr-1", user_ids=[trio[1].pk], group_ids=[]),
        lambda: store.take(approval_id="apr-1"),
    ):
        with pytest.raises(Conflict) as caught, in_tenant(tenant_a):
            attempt()
        assert (caught.value.status, caught.value.code) == (409, "already_decided")
    with pytest.raises(Conflict) as caught, in_tenant(tenant_a):
        approval_store(tenant_a).take(approval_id="apr-1")
    assert caught.value.code == "not_a_person"
    assert reload_approval(tenant_a, "apr-1")["assigned_user_ids"] == [trio[0].pk]
    assert notices.kinds() == ["asked", "ended"]


def test_reassigning_an_overdue_approval_records_its_expiry(
    tenant_a, trio, operator_a, notices, jobs, clock
):
    save_rule(tenant_a, name="r", user_ids=[trio[0].pk], notify_admins_on_expiry=True)
    with jobs():
        make_approval(
            tenant_a, approval_id="apr-1", clock=clock, expires_at=clock() + timedelta(minutes=5)
        )
    clock.advance(301)
    store = approval_store(tenant_a, Actor.for_user(operator_a), clock=clock)
    with jobs(), in_tenant(tenant_a):  # the API commits a refusal that keeps its changes
        with pytest.raises(Conflict) as caught:
            store.reassign(approval_id="apr-1", user_ids=[trio[1].pk], group_ids=[])
        assert caught.value.keep_changes
    assert (caught.value.code, caught.value.details["status"]) == ("already_decided", "expired")
    assert reload_approval(tenant_a, "apr-1")["status"] == "expired"
    assert notices.kinds() == ["asked", "expired"]


# --- the schedule ---------------------------------------------------------------------------
def schedule(tenant, clock) -> dict:
    with in_tenant(tenant):
        return approval_store(tenant, Actor.system("schedule"), clock=clock).run_schedule()


def test_the_reminder_and_the_escalation_are_sent_once_when_due(
    tenant_a, trio, payments, notices, jobs, clock
):
    save_rule(
        tenant_a,
        name="timed",
        user_ids=[trio[0].pk],
        remind_after_minutes=10,
        escalate_at_percent=50,
        escalate_group_ids=[payments.pk],
        escalate_user_ids=[trio[0].pk],
    )
    with jobs():
        make_approval(
            tenant_a, approval_id="apr-1", clock=clock, expires_at=clock() + timedelta(hours=2)
        )
    nothing = {"reminded": 0, "escalated": 0}
    clock.advance(9 * 60)
    with jobs():
        assert schedule(tenant_a, clock) == nothing
    clock.advance(60)
    with jobs():
        assert schedule(tenant_a, clock) == {"reminded": 1, "escalated": 0}
        assert schedule(tenant_a, clock) == nothing  # the same beat again
    clock.advance(50 * 60)  # an hour after asking: half the time to the deadline
    with jobs():
        assert schedule(tenant_a, clock) == {"reminded": 0, "escalated": 1}
    clock.advance(30 * 60)
    with jobs():
        assert schedule(tenant_a, clock) == nothing  # a restarted worker: a new store
    stored = reload_approval(tenant_a, "apr-1")
    assert (stored["assigned_user_ids"], stored["assigned_group_ids"]) == (
        [trio[0].pk],
        [payments.pk],
    )
    assert stored["reminded_at"] == clock.current - timedelta(minutes=80)
    assert stored["escalated_at"] == clock.current - timedelta(minutes=30)
    assert notices.kinds() == ["asked", "reminder", "escalated"]
    assert len(notice_rows(tenant_a)) == 3
    assert actions(tenant_a, "approval.") == [
        ("approval.requested", "apr-1"),
        ("approval.reminded", "apr-1"),
        ("approval.escalated", "apr-1"),
    ]


def test_a_decided_or_expired_approval_is_neither_reminded_nor_escalated(
    tenant_a, trio, payments, operator_a, notices, jobs, clock
):
    save_rule(
        tenant_a,
        name="timed",
        user_ids=[trio[0].pk],
        remind_after_minutes=10,
        escalate_at_percent=10,
        escalate_group_ids=[payments.pk],
        notify_admins_on_expiry=False,
    )
    deadline = clock() + timedelta(hours=1)
    with jobs():
        make_approval(
            tenant_a, run_id="r1", approval_id="decided", clock=clock, expires_at=deadline
        )
        make_approval(tenant_a, run_id="r2", approval_id="lapsed", clock=clock, expires_at=deadline)
    with jobs(), in_tenant(tenant_a):
        approval_store(tenant_a, Actor.for_user(operator_a), clock=clock).decide(
            approval_id="decided", decision="approve", reason="ok"
        )
    clock.advance(2 * 3600)  # both due long ago; "lapsed" is past its deadline, unswept
    with jobs():
        assert schedule(tenant_a, clock) == {"reminded": 0, "escalated": 0}
    assert notices.kinds("decided") == ["asked", "ended"]
    assert notices.kinds("lapsed") == ["asked"]
    assert actions(tenant_a, "approval.reminded") == []
    assert actions(tenant_a, "approval.escalated") == []


# --- how it ended ---------------------------------------------------------------------------
def sweep(tenant, clock) -> int:
    with in_tenant(tenant):
        return approval_store(tenant, Actor.system("sweep"), clock=clock).expire_overdue()


def test_an_expired_approval_whose_rule_says_so_tells_the_admins_once(
    tenant_a, trio, notices, jobs, clock
):
    save_rule(tenant_a, name="loud", user_ids=[trio[0].pk], notify_admins_on_expiry=True)
    with jobs():
        make_approval(
            tenant_a, approval_id="apr-1", clock=clock, expires_at=clock() + timedelta(minutes=1)
        )
    clock.advance(61)
    with jobs():
        assert sweep(tenant_a, clock) == 1
        assert sweep(tenant_a, clock) == 0
    assert notices.kinds() == ["asked", "expired"]
    assert [row[2] for row in notice_rows(tenant_a)] == ["asked", "expired"]


def test_a_quiet_rule_tells_its_assignees_it_ended_and_unrouted_ones_tell_nobody(
    tenant_a, trio, operator_a, notices, jobs, clock
):
    save_rule(
        tenant_a,
        name="quiet",
        tool_pattern="send_*",
        user_ids=[trio[0].pk],
        notify_admins_on_expiry=False,
    )
    with jobs():
        make_approval(tenant_a, run_id="r1", approval_id="routed", clock=clock, expires_at=None)
        make_approval(
            tenant_a,
            run_id="r2",
            approval_id="lapsed",
            clock=clock,
            expires_at=clock() + timedelta(minutes=1),
        )
        make_approval(tenant_a, run_id="r3", approval_id="unrouted", tool_name="other", clock=clock)
    store = approval_store(tenant_a, Actor.for_user(operator_a), clock=clock)
    with jobs(), in_tenant(tenant_a):
        store.decide(approval_id="routed", decision="approve", reason="ok")
        store.decide(approval_id="unrouted", decision="approve", reason="ok")
    clock.advance(61)
    with jobs():
        assert sweep(tenant_a, clock) == 1
    assert notices.kinds("routed") == ["asked", "ended"]
    assert notices.kinds("lapsed") == ["asked", "ended"]
    assert notices.kinds("unrouted") == []
