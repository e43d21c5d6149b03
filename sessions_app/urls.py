"""Console pages of sessions_app, mounted under /t/<tenant_slug>/sessions/."""

from django.urls import path  # noqa: F401

app_name = "sessions"
urlpatterns: list = []
