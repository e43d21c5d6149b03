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


def test_demo_data_covers_every_state_of_every_domain(db, capsys):
    call_command("load_demo")
    for tenant in Tenant.objects.all():
        with in_tenant(tenant):
            assert statuses(Session) == set(SessionStatus.values) - {SessionStatus.CREATING}
            assert statuses(Run) == set(RunStatus.values)
            assert statuses(ApprovalRequest) == set(ApprovalStatus.values)
            assert statuses(ExternalEffect) == set(EffectStatus.values)
            assert statuses(Task) == set(TaskStatus.values)
            assert statuses(Deletion) == {DeletionStatus.DONE}
            assert Session.objects.filter(legal_hold=True).count() == 1
            deleted = Session.objects.get(content_deleted_at__isnull=False)
            assert deleted.items.count() == 0
            # 8 asked once, and 1 asked again after its tool changed (the first voided)
            assert ApprovalRequest.objects.filter(status="pending").count() == 9
            assert {"low", "medium", "high", "critical"} <= set(
                ApprovalRequest.objects.values_list("risk", flat=True)
            )
    out = capsys.readouterr().out
    assert "acme: 14 support sessions, 9 pending approvals, 5 migration tasks." in out

    call_command("load_demo")
    assert "acme: demo data already there." in capsys.readouterr().out
    with in_tenant(Tenant.objects.get(slug="acme")):
        assert Session.objects.count() == 14 + 15  # support sessions, and the payments ones
