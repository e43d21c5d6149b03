from django.contrib import admin
from django.urls import include, path, re_path

from . import views
from .metrics_http import metrics_view

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("stateroom.api_urls")),
    # Any other path under /api/ is the API's 404 in its error shape, also with DEBUG on
    # (where Django would answer a resolver miss with its HTML debug page).
    re_path(r"^api/", views.api_not_found),
    # Signed answers from chat (Slack's buttons, a webhook channel's actions).
    # Prometheus, only with STATEROOM_METRICS_TOKEN as a bearer token (404 without the setting).
    path("metrics", metrics_view, name="metrics"),
    path("hooks/", include("notifications_app.urls")),
    # Single sign-on with a tenant's OpenID Connect provider (tenancy_app.sso).
    path("login/sso/", include("tenancy_app.sso.urls")),
    path("", include("console_app.urls")),
]

handler404 = "stateroom.views.handler404"
handler500 = "stateroom.views.handler500"
handler403 = "stateroom.views.handler403"
