"""Runtime API v1 routes: each app contributes its `api_urls`."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.permissions import AllowAny

APPS = ("tenancy_app", "sessions_app", "runs_app", "tasks_app", "approvals_app", "effects_app")

urlpatterns = [
    path(
        "schema/",
        SpectacularAPIView.as_view(authentication_classes=[], permission_classes=[AllowAny]),
        name="api-schema",
    ),
    path(
        "docs/",
        SpectacularSwaggerSplitView.as_view(
            url_name="api-schema", authentication_classes=[], permission_classes=[AllowAny]
        ),
        name="api-docs",
    ),
    *(path("", include(f"{app}.api_urls")) for app in APPS),
]
