"""Runtime API routes of sessions_app, mounted under /api/v1/ (no trailing slashes)."""

from django.urls import path

from . import api

urlpatterns = [
    path("sessions", api.sessions, name="api-sessions"),
    path("sessions/<pid:session_id>", api.session_detail, name="api-session"),
    path("sessions/<pid:session_id>/attach", api.attach, name="api-session-attach"),
    path("sessions/<pid:session_id>/detach", api.detach, name="api-session-detach"),
    path("sessions/<pid:session_id>/heartbeat", api.heartbeat, name="api-session-heartbeat"),
    path("sessions/<pid:session_id>/items", api.items, name="api-session-items"),
]
