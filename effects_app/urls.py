"""Console pages of effects_app, mounted under /t/<tenant_slug>/effects/."""

from django.urls import path  # noqa: F401

app_name = "effects"
urlpatterns: list = []
