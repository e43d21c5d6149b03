"""Console pages of audit_app, mounted under /t/<tenant_slug>/audit/."""

from django.urls import path  # noqa: F401

app_name = "audit"
urlpatterns: list = []
