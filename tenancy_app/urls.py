"""Settings pages of tenancy_app, mounted under /t/<tenant_slug>/settings/ (`console_app.urls`)."""

from django.urls import path

from . import views

app_name = "tenancy"
urlpatterns = [
    path("", views.settings_overview, name="settings"),
    path("legal-hold", views.set_legal_hold, name="legal-hold"),
    path("four-eyes", views.set_four_eyes, name="four-eyes"),
    path("two-factor", views.set_require_2fa, name="require-2fa"),
    path("quick-approve", views.set_quick_approve, name="quick-approve"),
    path("session-lease", views.set_session_lease, name="session-lease"),
    path(
        "unclaimed-run-warning",
        views.set_unclaimed_run_warning,
        name="unclaimed-run-warning",
    ),
    path("members/", views.settings_members, name="members"),
    path("members/<int:user_id>/remove", views.remove_member, name="remove-member"),
    path("members/<int:user_id>/unlock", views.unlock_member, name="unlock-member"),
    path("tokens/", views.settings_tokens, name="tokens"),
    path("tokens/<int:token_id>/revoke", views.revoke_token, name="revoke-token"),
]
