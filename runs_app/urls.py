"""Console pages of runs_app, mounted under /t/<tenant_slug>/runs/."""

from django.urls import path  # noqa: F401

app_name = "runs"
urlpatterns: list = []
