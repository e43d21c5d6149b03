"""Console pages of tasks_app, mounted under /t/<tenant_slug>/tasks/."""

from django.urls import path  # noqa: F401

app_name = "tasks"
urlpatterns: list = []
