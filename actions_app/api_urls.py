"""Runtime API routes of actions_app, mounted under /api/v1/."""

from django.urls import path

from . import api

urlpatterns = [
    path("runs/<pid:run_id>/transition", api.run_transition, name="api-run-transition"),
    path("approvals/<pid:approval_id>/void", api.approval_void, name="api-approval-void"),
]
