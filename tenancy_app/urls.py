from django.contrib.auth import views as auth_views
from django.urls import include, path

from . import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("login/", auth_views.LoginView.as_view(template_name="tenancy/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", views.home, name="home"),
    path("t/<slug:tenant_slug>/", views.tenant_home, name="tenant-home"),
    *(
        path(f"t/<slug:tenant_slug>/{name}/", include(f"{name}_app.urls"))
        for name in ("approvals", "sessions", "runs", "tasks", "effects", "audit")
    ),
    path(
        "t/<slug:tenant_slug>/settings/",
        include(
            (
                [
                    path("", views.settings_overview, name="settings"),
                    path("legal-hold", views.set_legal_hold, name="legal-hold"),
                    path("four-eyes", views.set_four_eyes, name="four-eyes"),
                    path("members/", views.settings_members, name="members"),
                    path("members/<int:user_id>/remove", views.remove_member, name="remove-member"),
                    path("retention/", views.settings_retention, name="retention"),
                    path("tokens/", views.settings_tokens, name="tokens"),
                    path("tokens/<int:token_id>/revoke", views.revoke_token, name="revoke-token"),
                ],
                "tenancy",
            )
        ),
    ),
]
