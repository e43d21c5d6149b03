"""Runtime API routes of approvals_app, mounted under /api/v1/."""

from django.urls import path

from . import api

urlpatterns = [
    path("runs/<pid:run_id>/approvals", api.run_approvals, name="api-run-approvals"),
    path("approvals", api.approval_list, name="api-approvals"),
    path("approvals/<pid:approval_id>", api.approval_detail, name="api-approval"),
    path("approvals/<pid:approval_id>/cancel", api.approval_cancel, name="api-approval-cancel"),
    path("approvals/<pid:approval_id>/outcome", api.approval_outcome, name="api-approval-outcome"),
    path(
        "approvals/<pid:approval_id>/decision",
        api.approval_decision,
        name="api-approval-decision",
    ),
]
