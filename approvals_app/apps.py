from django.apps import AppConfig


class ApprovalsConfig(AppConfig):
    name = "approvals_app"
    verbose_name = "Approvals"

    def ready(self) -> None:
        from stateroom import metrics, ports

        from .metrics import backlog

        ports.provide_lookup("approval", _found_approvals)
        metrics.register_source("approvals", backlog)  # the pending backlog, at scrape time


def _found_approvals(tenant, ids: set[str]) -> set[str]:
    """Which of `ids` name approvals of the tenant (the ids a task's state names must exist)."""
    from .models import ApprovalRequest

    return set(
        ApprovalRequest.objects.filter(tenant=tenant, approval_id__in=ids).values_list(
            "approval_id", flat=True
        )
    )
