"""Runtime API routes of lifecycle_app, mounted under /api/v1/ (no trailing slashes)."""

from django.urls import path

from . import api

urlpatterns = [
    path("sessions/<pid:session_id>/close", api.close, name="api-session-close"),
    path(
        "sessions/<pid:session_id>/deletions",
        api.session_deletions,
        name="api-session-deletions",
    ),
    path("deletions/<pid:deletion_id>", api.deletion_detail, name="api-deletion"),
    path("erasures", api.erasures, name="api-erasures"),
    path("erasures/<pid:erasure_id>", api.erasure_detail, name="api-erasure"),
]
