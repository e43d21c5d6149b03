"""The console's URL map: every page of Stateroom (the API is stateroom.api_urls).

Each resource's pages share a namespace (`sessions`, `runs`, `approvals`, ...), so
`sessions:detail` or `approvals:decide` name a page by what it is about.
"""

from django.contrib.auth import views as auth_views
from django.urls import include, path

from stateroom.views import healthz

from .views import (
    approvals,
    assignment,
    audit,
    auth,
    channels,
    dashboard,
    effects,
    home,
    lifecycle,
    preferences,
    routing,
    runs,
    search,
    sessions,
    settings,
    sso,
    tasks,
)


def _namespace(app_name: str, *pages):
    """The pages of one resource under its namespace."""
    return include((list(pages), app_name))


urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path(
        "login/",
        auth_views.LoginView.as_view(template_name="console/auth/login.html"),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("2fa/", auth.two_factor, name="two-factor"),
    path("2fa/setup/", auth.two_factor_setup, name="two-factor-setup"),
    path("", home.home, name="home"),
    path("t/<slug:tenant_slug>/", home.tenant_home, name="tenant-home"),
    path("t/<slug:tenant_slug>/search/", search.search, name="search"),
    path("t/<slug:tenant_slug>/dashboard/", dashboard.dashboard, name="dashboard"),
    path(
        "t/<slug:tenant_slug>/approvals/",
        _namespace(
            "approvals",
            path("", approvals.inbox, name="inbox"),
            path("history/", approvals.history, name="history"),
            path("history.csv", approvals.history_export, name="history-export"),
            path("assigned-count", assignment.assigned_count, name="assigned-count"),
            path("<str:approval_id>/", approvals.detail, name="detail"),
            path("<str:approval_id>/decide", approvals.decide, name="decide"),
            path("<str:approval_id>/take", assignment.take, name="take"),
            path("<str:approval_id>/reassign", assignment.reassign, name="reassign"),
        ),
    ),
    path(
        "t/<slug:tenant_slug>/sessions/",
        _namespace(
            "sessions",
            path("<str:session_id>/hold", sessions.hold, name="hold"),
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
    path(
        "t/<slug:tenant_slug>/erasures/",
        _namespace(
            "lifecycle",
            path("", lifecycle.erase, name="erase"),
            path("<str:erasure_id>/", lifecycle.erasure_progress, name="erasure"),
        ),
    ),
    path(
        "t/<slug:tenant_slug>/runs/",
        _namespace(
            "runs",
            path("", runs.run_list, name="list"),
            path("bulk", runs.bulk, name="bulk"),
            path("<str:run_id>/", runs.run_detail, name="detail"),
            path("<str:run_id>/<str:action>", runs.control, name="control"),
        ),
    ),
    path(
        "t/<slug:tenant_slug>/tasks/",
        _namespace(
            "tasks",
            path("", tasks.task_list, name="list"),
            path(
                "<str:task_id>/checkpoints/<str:checkpoint_id>/",
                tasks.checkpoint,
                name="checkpoint",
            ),
            path("<str:task_id>/diff", tasks.checkpoint_diff, name="diff"),
            path("<str:task_id>/langgraph/diff", tasks.graph_diff, name="graph-diff"),
            path(
                "<str:task_id>/langgraph/<str:checkpoint_id>/",
                tasks.graph_checkpoint,
                name="graph-checkpoint",
            ),
            path("<str:task_id>/", tasks.task_detail, name="detail"),
        ),
    ),
    path(
        "t/<slug:tenant_slug>/effects/",
        _namespace(
            "effects",
            path("", effects.queue, name="queue"),
            path("<str:effect_id>/settle", effects.settle, name="settle"),
        ),
    ),
    path(
        "t/<slug:tenant_slug>/audit/",
        _namespace(
            "audit",
            path("", audit.log, name="log"),
            path("export.<str:fmt>", audit.export, name="export"),
            path("verify", audit.verify, name="verify"),
        ),
    ),
    path(
        "t/<slug:tenant_slug>/settings/",
        _namespace(
            "tenancy",
            path("", settings.settings_overview, name="settings"),
            path("legal-hold", settings.set_legal_hold, name="legal-hold"),
            path("four-eyes", settings.set_four_eyes, name="four-eyes"),
            path("two-factor", settings.set_require_2fa, name="require-2fa"),
            path("quick-approve", settings.set_quick_approve, name="quick-approve"),
            path("session-lease", settings.set_session_lease, name="session-lease"),
            path(
                "unclaimed-run-warning",
                settings.set_unclaimed_run_warning,
                name="unclaimed-run-warning",
            ),
            path("members/", settings.settings_members, name="members"),
            path("members/<int:user_id>/remove", settings.remove_member, name="remove-member"),
            path("members/<int:user_id>/unlock", settings.unlock_member, name="unlock-member"),
            path("tokens/", settings.settings_tokens, name="tokens"),
            path("tokens/<int:token_id>/revoke", settings.revoke_token, name="revoke-token"),
            path("retention/", settings.settings_retention, name="retention"),
            path("sso/", sso.settings_sso, name="sso"),
        ),
    ),
    path(
        "t/<slug:tenant_slug>/settings/",
        _namespace(
            "routing",
            path("groups/", routing.group_list, name="groups"),
            path("groups/new", routing.group_edit, name="group-new"),
            path("groups/<slug:slug>/", routing.group_edit, name="group"),
            path("groups/<slug:slug>/delete", routing.group_delete, name="group-delete"),
            path("routing/", routing.rule_list, name="rules"),
            path("routing/new", routing.rule_edit, name="rule-new"),
            path("routing/preview", routing.rule_preview, name="preview"),
            path("routing/<int:rule_id>/", routing.rule_edit, name="rule"),
            path("routing/<int:rule_id>/delete", routing.rule_delete, name="rule-delete"),
            path("routing/<int:rule_id>/move", routing.rule_move, name="rule-move"),
        ),
    ),
    path(
        "t/<slug:tenant_slug>/settings/channels/",
        _namespace(
            "channels",
            path("", channels.channel_list, name="list"),
            path("new/<str:kind>", channels.channel_edit, name="new"),
            path("<str:channel_id>/", channels.channel_edit, name="edit"),
            path("<str:channel_id>/delete", channels.channel_delete, name="delete"),
            path("<str:channel_id>/test", channels.send_test, name="test"),
            path("<str:channel_id>/links", channels.link, name="link"),
            path("<str:channel_id>/links/<int:user_id>/unlink", channels.unlink, name="unlink"),
        ),
    ),
    path("t/<slug:tenant_slug>/preferences/", preferences.my_preferences, name="preferences"),
]
