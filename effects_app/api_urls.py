"""Runtime API routes of effects_app, mounted under /api/v1/."""

from django.urls import path  # noqa: F401

urlpatterns: list = []
