from django.core.management import call_command

from approvals_app.models import ApprovalRequest, ApprovalStatus
from effects_app.models import EffectStatus, ExternalEffect
from lifecycle_app.models import Deletion, DeletionStatus
from runs_app.models import Run, RunStatus
from sessions_app.models import Session, SessionStatus
from tasks_app.models import Task, TaskStatus
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant


def statuses(model) -> set[str]:
    return set(model.objects.values_list("status", flat=True).distinct())


def test_load_demo_once_covers_states_routing_and_a_week_of_history(
    db, capsys, django_capture_on_commit_callbacks
):
    """One load (it is the suite's slowest fixture), three views of it, then a second
    load that adds nothing."""
    # The jobs the stores write to the outbox run after each commit, as in the demo.
    with django_capture_on_commit_callbacks(execute=True):
        call_command("load_demo")
    out = capsys.readouterr().out
    every_state_of_every_domain(out)
    approvals_routed_and_notified(out)
    a_week_of_history(out)

    call_command("load_demo")
    again = capsys.readouterr().out
    assert "acme: demo data already there." in again
    assert "a week of history" not in again  # idempotent: no second week
    with in_tenant(Tenant.objects.get(slug="acme")):
        # support sessions, and the payments ones (besides the week of history)
        assert Session.objects.exclude(session_id__startswith="hist-").count() == 14 + 15


def every_state_of_every_domain(out: str) -> None:
    for tenant in Tenant.objects.all():
        with in_tenant(tenant):
            assert statuses(Session) == set(SessionStatus.values) - {SessionStatus.CREATING}
            assert statuses(Run) == set(RunStatus.values)
            assert statuses(ApprovalRequest) == set(ApprovalStatus.values)
            assert statuses(ExternalEffect) == set(EffectStatus.values)
            assert statuses(Task) == set(TaskStatus.values)
            assert statuses(Deletion) == {DeletionStatus.DONE}
            assert Session.objects.filter(legal_hold=True).count() == 1
            deleted = Session.objects.exclude(session_id__startswith="hist-").get(
                content_deleted_at__isnull=False
            )
            assert deleted.items.count() == 0
            # 8 asked once, and 1 asked again after its tool changed (the first voided)
            assert ApprovalRequest.objects.filter(status="pending").count() == 9
            assert {"low", "medium", "high", "critical"} <= set(
                ApprovalRequest.objects.values_list("risk", flat=True)
            )
    assert "acme: 14 support sessions, 9 pending approvals, 5 migration tasks." in out


def approvals_routed_and_notified(out: str) -> None:
    """The demo shows routing: rules and groups, approvals assigned when asked, and a
    notification trail (console badge entries; email for high and critical risk)."""
    from approvals_app.models import RoutingRule
    from notifications_app.models import Notification
    from tenancy_app.models import MemberGroup

    assert "acme: approval routing rules, groups and email ready." in out
    for tenant in Tenant.objects.all():
        with in_tenant(tenant):
            assert RoutingRule.objects.filter(is_default=True).count() == 1
            oncall = MemberGroup.objects.get(slug="payments-oncall")
            assert oncall.is_on_call_list
            pending = ApprovalRequest.objects.filter(status="pending")
            assert pending.exists()
            assert all(a.assigned_group_ids for a in pending)
            payments = pending.filter(
                tool_name__startswith="payments.", risk__in=["high", "critical"]
            )
            assert all(a.assigned_group_ids == [oncall.pk] for a in payments)
            kinds = set(Notification.objects.values_list("channel_kind", flat=True))
            assert "console" in kinds
            if payments.exists():
                assert "email" in kinds


def a_week_of_history(out: str) -> None:
    """Every day of the last week has approvals asked and decided, runs and their cost."""
    from datetime import UTC
    from zoneinfo import ZoneInfo

    from django.utils import timezone

    from console_app.selectors.dashboard import dashboard, window

    assert "acme: a week of history (" in out
    tenant = Tenant.objects.get(slug="acme")
    now = timezone.now()
    win = window("7d", ZoneInfo("UTC"), now)
    with in_tenant(tenant):
        figures = dashboard(tenant, win, now, with_erasures=True)
    approvals, runs = figures["approvals"], figures["runs"]
    # the first day starts at midnight, the history an hour-boundary 7 days ago: days 2-6 full
    for series in (approvals["asked"], approvals["decided"], runs["tokens"], runs["cost"]):
        assert all(value > 0 for value in series[1:6]), series
    assert sum(approvals["expired"]) > 0 and sum(approvals["voided"]) > 0
    assert set(approvals["latency"]) == {"low", "medium", "high", "critical"}
    assert runs["reasons"] and runs["by_status"]["failed"]
    assert sum(figures["deletions"]["receipts"]["done"]) >= 2
    assert now.tzinfo is not None and win.start < now.astimezone(UTC)
