"""Runtime API routes of actions_app, mounted under /api/v1/."""

from django.urls import path

from . import api

urlpatterns = [
    path("runs/<pid:run_id>/transition", api.run_transition, name="api-run-transition"),
    path("runs/<pid:run_id>/step", api.run_step, name="api-run-step"),
    path("runs/<pid:run_id>/cancel", api.run_cancel, name="api-run-cancel"),
    path("runs/<pid:run_id>/suspend", api.run_suspend, name="api-run-suspend"),
    path("runs/<pid:run_id>/resume", api.run_resume, name="api-run-resume"),
    path("approvals/<pid:approval_id>/void", api.approval_void, name="api-approval-void"),
]
