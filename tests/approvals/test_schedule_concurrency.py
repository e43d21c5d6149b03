"""The schedule and the expiry notice exactly once, on real connections: two beat processes at
the same clock, and a restarted worker."""

from datetime import timedelta

import pytest

from approvals_app.tasks import sweep_approval_schedule
from stateroom.actor import Actor
from tenancy_app.scoping import in_tenant

from ..runs.conftest import audit_actions, in_threads
from .conftest import approval_store, make_approval, notice_rows, save_group, save_rule

pytestmark = [pytest.mark.django_db(transaction=True)]

COUNT = 10


def counted(tenant, action: str) -> int:
    return sum(a == action for a, _, _ in audit_actions(tenant))


def test_two_beats_at_once_and_a_restart_send_each_reminder_and_escalation_once(
    tenant_a, make_user, notices, clock
):
    people = [make_user(n, tenant_a, "operator") for n in ("uma", "vic")]
    tier2 = save_group(tenant_a, "Tier 2", [people[1].pk])
    save_rule(
        tenant_a,
        name="timed",
        user_ids=[people[0].pk],
        remind_after_minutes=5,
        escalate_at_percent=50,
        escalate_group_ids=[tier2.pk],
    )
    for n in range(COUNT):
        make_approval(
            tenant_a,
            run_id=f"run-{n}",
            approval_id=f"apr-{n}",
            clock=clock,
            expires_at=clock() + timedelta(hours=1),
        )
    clock.advance(31 * 60)  # the reminders and the escalations are all due

    def beat(i, barrier):
        store = approval_store(tenant_a, Actor.system("schedule"), clock=clock)
        barrier.wait()
        done = {"reminded": 0, "escalated": 0}
        for _ in range(COUNT):  # small batches, interleaving with the other beat
            with in_tenant(tenant_a):
                for kind, count in store.run_schedule(limit=2).items():
                    done[kind] += count
        return done

    results = in_threads(2, beat)
    assert sum(r["reminded"] for r in results) == COUNT
    assert sum(r["escalated"] for r in results) == COUNT
    # A restarted worker (new store, new connection) and the beat task find nothing left.
    with in_tenant(tenant_a):
        again = approval_store(tenant_a, Actor.system("schedule"), clock=clock).run_schedule()
    assert again == {"reminded": 0, "escalated": 0}
    assert sweep_approval_schedule(tenant_id=tenant_a.pk)["total"] == 0
    for n in range(COUNT):  # two beats may send one approval's two in either order
        assert sorted(notices.kinds(f"apr-{n}")) == ["asked", "escalated", "reminder"]
    assert len(notice_rows(tenant_a)) == 3 * COUNT
    assert counted(tenant_a, "approval.reminded") == COUNT
    assert counted(tenant_a, "approval.escalated") == COUNT


def test_two_expiry_sweeps_at_once_send_one_expired_notice_each(
    tenant_a, make_user, notices, clock
):
    uma = make_user("uma", tenant_a, "operator")
    save_rule(tenant_a, name="loud", user_ids=[uma.pk], notify_admins_on_expiry=True)
    for n in range(COUNT):
        make_approval(
            tenant_a,
            run_id=f"run-{n}",
            approval_id=f"apr-{n}",
            clock=clock,
            expires_at=clock() + timedelta(minutes=1),
        )
    clock.advance(120)

    def sweeper(i, barrier):
        store = approval_store(tenant_a, Actor.system("sweep"), clock=clock)
        barrier.wait()
        total = 0
        for _ in range(COUNT):
            with in_tenant(tenant_a):
                total += store.expire_overdue(limit=3)
        return total

    assert sum(in_threads(2, sweeper)) == COUNT
    for n in range(COUNT):
        assert notices.kinds(f"apr-{n}") == ["asked", "expired"]
    assert [row[2] for row in notice_rows(tenant_a)].count("expired") == COUNT
    assert counted(tenant_a, "approval.expired") == COUNT


def test_the_beat_task_sends_what_came_due(tenant_a, make_user, notices):
    """`sweep_approval_schedule` runs the schedule at the wall clock (no injected clock):
    an approval asked with its reminder already past is reminded once."""
    from django.utils import timezone

    uma = make_user("uma", tenant_a, "operator")
    save_rule(tenant_a, name="timed", user_ids=[uma.pk], remind_after_minutes=1)
    asked = timezone.now() - timedelta(minutes=2)
    make_approval(tenant_a, approval_id="apr-1", clock=lambda: asked)
    assert sweep_approval_schedule(tenant_id=tenant_a.pk)["total"] == 1
    assert sweep_approval_schedule(tenant_id=tenant_a.pk)["total"] == 0
    assert notices.kinds() == ["asked", "reminder"]
