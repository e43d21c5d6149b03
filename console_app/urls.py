"""The console's URL map.

Each domain app's `urls` holds its own pages and names their namespace
(`sessions`, `runs`, ...); the pages of this app that span domains join the
namespace of the app they are about, so `sessions:detail` or
`approvals:decide` name the same URL wherever the view lives.
"""

from django.contrib.auth import views as auth_views
from django.urls import include, path

import approvals_app.urls
import lifecycle_app.urls
import runs_app.urls
import sessions_app.urls
import tasks_app.urls
import tenancy_app.urls
from lifecycle_app import views as lifecycle
from tenancy_app import login as tenancy_login
from tenancy_app import views as tenancy_views

from .views import approvals, home, runs, search, sessions, settings, tasks


def _namespace(app_urls, *console_pages):
    """An app's own pages and the console's pages about it, under the app's namespace."""
    return include(([*app_urls.urlpatterns, *console_pages], app_urls.app_name))


urlpatterns = [
    path("healthz", tenancy_views.healthz, name="healthz"),
    path("login/", auth_views.LoginView.as_view(template_name="tenancy/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("2fa/", tenancy_login.two_factor, name="two-factor"),
    path("2fa/setup/", tenancy_login.two_factor_setup, name="two-factor-setup"),
    path("", tenancy_views.home, name="home"),
    path("t/<slug:tenant_slug>/", home.tenant_home, name="tenant-home"),
    path("t/<slug:tenant_slug>/search/", search.search, name="search"),
    path(
        "t/<slug:tenant_slug>/approvals/",
        _namespace(
            approvals_app.urls,
            path("<str:approval_id>/", approvals.detail, name="detail"),
            path("<str:approval_id>/decide", approvals.decide, name="decide"),
        ),
    ),
    path(
        "t/<slug:tenant_slug>/sessions/",
        _namespace(
            sessions_app.urls,
            path("", sessions.session_list, name="list"),
            path("bulk", sessions.bulk, name="bulk"),
            path("<str:session_id>/", sessions.session_detail, name="detail"),
            path("<str:session_id>/items", sessions.session_items, name="items"),
            path("<str:session_id>/export.<str:fmt>", sessions.export, name="export"),
            path("<str:session_id>/close", lifecycle.close, name="close"),
            path("<str:session_id>/expire", lifecycle.expire, name="expire"),
            path("<str:session_id>/delete", lifecycle.delete, name="delete"),
            path(
                "<str:session_id>/deletions/<str:deletion_id>/",
                lifecycle.deletion_progress,
                name="deletion",
            ),
        ),
    ),
    path("t/<slug:tenant_slug>/erasures/", include(lifecycle_app.urls)),
    path(
        "t/<slug:tenant_slug>/runs/",
        _namespace(
            runs_app.urls,
            path("bulk", runs.bulk, name="bulk"),
            path("<str:run_id>/", runs.run_detail, name="detail"),
            path("<str:run_id>/<str:action>", runs.control, name="control"),
        ),
    ),
    path(
        "t/<slug:tenant_slug>/tasks/",
        _namespace(tasks_app.urls, path("<str:task_id>/", tasks.task_detail, name="detail")),
    ),
    path("t/<slug:tenant_slug>/effects/", include("effects_app.urls")),
    path("t/<slug:tenant_slug>/audit/", include("audit_app.urls")),
    path(
        "t/<slug:tenant_slug>/settings/",
        _namespace(
            tenancy_app.urls,
            path("retention/", settings.settings_retention, name="retention"),
        ),
    ),
]
