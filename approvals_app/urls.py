"""Console pages of approvals_app, mounted under /t/<tenant_slug>/approvals/."""

from django.urls import path  # noqa: F401

app_name = "approvals"
urlpatterns: list = []
