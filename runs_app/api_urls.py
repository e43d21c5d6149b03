"""Runtime API routes of runs_app, mounted under /api/v1/."""

from django.urls import path

from . import api

urlpatterns = [
    path("runs", api.run_collection, name="api-runs"),
    path("runs/<pid:run_id>", api.run_detail, name="api-run"),
    path("runs/<pid:run_id>/events", api.run_events, name="api-run-events"),
    path("runs/<pid:run_id>/claim", api.run_claim, name="api-run-claim"),
]
