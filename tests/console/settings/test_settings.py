import re
from datetime import timedelta

import pytest
from django.contrib.messages import get_messages
from django.utils import timezone

from audit_app.models import AuditEvent
from sessions_app.models import SessionItem
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from tenancy_app.models import Membership, RetentionPolicy, Role, Tenant
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.fixtures import queries

BASE = "/t/acme/settings/"
PAGES = ["", "members/", "retention/", "tokens/"]
ACTIONS = [
    ("legal-hold", {"on": "on", "reason": "litigation", "confirm": "1"}),
    ("four-eyes", {"on": "on"}),
    ("members/", {"username": "otto", "role": "admin"}),
    ("retention/", {"session_items_days": "30"}),
]


def audit_actions(tenant) -> list[tuple[str, str]]:
    with in_tenant(tenant):
        return list(AuditEvent.objects.order_by("seq").values_list("action", "actor_label"))


def messages_of(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


@pytest.mark.parametrize("path", PAGES)
def test_settings_pages_are_for_admins_only(path, admin_a, operator_a, support_a, admin_b):
    assert login(admin_a).get(BASE + path).status_code == 200
    for user in (operator_a, support_a):
        assert login(user).get(BASE + path).status_code == 403
    assert login(admin_b).get(BASE + path).status_code == 404


@pytest.mark.parametrize(("path", "data"), ACTIONS)
def test_settings_actions_refuse_lesser_roles_and_other_tenants(
    path, data, tenant_a, tenant_b, admin_a, operator_a, support_a, admin_b
):
    for user in (operator_a, support_a):
        assert login(user).post(BASE + path, data).status_code == 403
    assert login(admin_b).post(BASE + path, data).status_code == 404
    tenant_a.refresh_from_db()
    assert (tenant_a.legal_hold, tenant_a.four_eyes_critical) == (False, False)
    with in_tenant(tenant_a):
        assert Membership.objects.get(user=operator_a).role == Role.OPERATOR
        assert not RetentionPolicy.objects.exists()
    # Nothing changed; each refused attempt left a security record, the outsider's
    # in their own tenant's log.
    assert audit_actions(tenant_a) == [("access.denied", "otto"), ("access.denied", "sue")]
    assert audit_actions(tenant_b) == [("access.denied", "bob")]


@pytest.mark.parametrize(("path", "data"), ACTIONS)
def test_settings_actions_need_csrf(path, data, tenant_a, admin_a, operator_a, csrf_client):
    assert csrf_client(admin_a).post(BASE + path, data).status_code == 403
    assert audit_actions(tenant_a) == []


@pytest.mark.parametrize(("path", "count"), [("", 7), ("members/", 8), ("tokens/", 8)])
def test_settings_pages_query_count(
    path, count, admin_a, make_user, make_token, tenant_a, django_assert_num_queries
):
    make_token(tenant_a, name="t0")
    client = login(admin_a)
    with django_assert_num_queries(queries(count)):
        assert client.get(BASE + path).status_code == 200
    for i in range(1, 20):
        make_user(f"user{i}", tenant_a, Role.SUPPORT)
        make_token(tenant_a, name=f"t{i}")
    with django_assert_num_queries(queries(count)):
        assert client.get(BASE + path).status_code == 200


def test_legal_hold_needs_reason_and_confirmation(admin_a, tenant_a):
    client = login(admin_a)
    response = client.post(BASE + "legal-hold", {"on": "on", "reason": ""})
    assert response.status_code == 422
    page = response.content.decode()
    assert "This field is required." in page
    assert "Tick the box to confirm you mean it." in page
    tenant_a.refresh_from_db()
    assert tenant_a.legal_hold is False
    assert audit_actions(tenant_a) == []


def test_legal_hold_on_and_off_is_audited(admin_a, tenant_a):
    client = login(admin_a)
    response = client.post(
        BASE + "legal-hold", {"on": "on", "reason": "litigation 42", "confirm": "1"}
    )
    assert response.status_code == 302
    assert response["Location"] == BASE
    assert Tenant.objects.get(pk=tenant_a.pk).legal_hold is True
    page = client.get(BASE).content.decode()
    assert "Release legal hold" in page
    response = client.post(BASE + "legal-hold", {"on": "off", "reason": "settled", "confirm": "1"})
    assert messages_of(response) == ["Legal hold released: deletions and retention apply again."]
    assert Tenant.objects.get(pk=tenant_a.pk).legal_hold is False
    assert audit_actions(tenant_a) == [
        ("tenant.legal_hold_on", "ada"),
        ("tenant.legal_hold_off", "ada"),
    ]
    with in_tenant(tenant_a):
        assert AuditEvent.objects.get(seq=1).reason == "litigation 42"


def test_legal_hold_twice_shows_the_conflict(admin_a, tenant_a):
    client = login(admin_a)
    client.post(BASE + "legal-hold", {"on": "on", "reason": "a", "confirm": "1"}, follow=True)
    response = client.post(BASE + "legal-hold", {"on": "on", "reason": "b", "confirm": "1"})
    assert response.status_code == 302
    assert messages_of(response) == ["Legal hold is already on."]
    assert [a for a, _ in audit_actions(tenant_a)] == ["tenant.legal_hold_on"]


def test_four_eyes_toggle(admin_a, tenant_a):
    client = login(admin_a)
    response = client.post(BASE + "four-eyes", {"on": "on"}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert response["HX-Redirect"] == BASE
    assert Tenant.objects.get(pk=tenant_a.pk).four_eyes_critical is True
    client.post(BASE + "four-eyes", {"on": "off"})
    assert Tenant.objects.get(pk=tenant_a.pk).four_eyes_critical is False
    assert audit_actions(tenant_a) == [
        ("tenant.settings_changed", "ada"),
        ("tenant.settings_changed", "ada"),
    ]


def test_members_add_change_and_remove(admin_a, make_user, tenant_a, tenant_b):
    make_user("newbie")
    outsider = make_user("carol", tenant_b, Role.ADMIN)
    client = login(admin_a)
    page = client.get(BASE + "members/").content.decode()
    assert page.count('data-testid="member-row"') == 1
    response = client.post(BASE + "members/", {"username": "newbie", "role": "support"})
    assert response.status_code == 302
    assert messages_of(response) == ["newbie is now support."]
    client.post(BASE + "members/", {"username": "newbie", "role": "operator"})
    with in_tenant(tenant_a):
        newbie = Membership.objects.get(tenant=tenant_a, user__username="newbie")
    assert newbie.role == Role.OPERATOR
    assert client.post(BASE + f"members/{outsider.pk}/remove").status_code == 404
    with in_tenant(tenant_b):
        assert Membership.objects.filter(user=outsider).count() == 1
    response = client.post(BASE + f"members/{newbie.user_id}/remove")
    assert response.status_code == 302
    with in_tenant(tenant_a):
        assert not Membership.objects.filter(tenant=tenant_a, user__username="newbie").exists()
    assert audit_actions(tenant_a) == [
        ("member.role_set", "ada"),
        ("member.role_set", "ada"),
        ("access.denied", "ada"),  # the outsider is no member here: 404, recorded
        ("member.removed", "ada"),
    ]


def test_members_unknown_user_or_role_is_a_form_error(admin_a, tenant_a):
    client = login(admin_a)
    response = client.post(BASE + "members/", {"username": "ghost", "role": "support"})
    assert response.status_code == 422
    assert "No user with this username." in response.content.decode()
    response = client.post(BASE + "members/", {"username": "ada", "role": "owner"})
    assert response.status_code == 422
    assert "Select a valid choice." in response.content.decode()
    assert audit_actions(tenant_a) == []


def test_retention_policy_saved_and_audited(admin_a, tenant_a):
    client = login(admin_a)
    response = client.post(
        BASE + "retention/",
        {"session_items_days": "30", "run_events_days": "", "extra_days_failed_or_approved": "7"},
    )
    assert response.status_code == 302
    with in_tenant(tenant_a):
        policy = RetentionPolicy.objects.get(tenant=tenant_a)
    assert (policy.session_items_days, policy.run_events_days) == (30, None)
    assert policy.extra_days_failed_or_approved == 7
    assert (
        'name="session_items_days" value="30"' in client.get(BASE + "retention/").content.decode()
    )
    assert audit_actions(tenant_a) == [("tenant.retention_changed", "ada")]


def test_retention_policy_rejects_bad_days(admin_a, tenant_a):
    response = login(admin_a).post(BASE + "retention/", {"session_items_days": "0"})
    assert response.status_code == 422
    assert "Ensure this value is greater than or equal to 1." in response.content.decode()
    with in_tenant(tenant_a):
        assert not RetentionPolicy.objects.exists()


def test_settings_get_changes_nothing(admin_a, tenant_a):
    client = login(admin_a)
    for path in PAGES:
        client.get(BASE + path, {"on": "on", "username": "ada", "role": "support"})
    assert audit_actions(tenant_a) == []


def end_sessions(tenant, n: int, *, days_ago: int = 40, prefix: str = "old") -> None:
    """Closed sessions with conversation items, ended `days_ago` days back."""
    past = timezone.now() - timedelta(days=days_ago)
    with in_tenant(tenant):
        store = SessionStore(tenant, Actor.system("test"), clock=lambda: past)
        for i in range(n):
            store.create(session_id=f"{prefix}-{i}", user_id="u1")
            store.append_items(
                session_id=f"{prefix}-{i}",
                items=[{"role": "user", "item_type": "message", "payload": {"text": "hi"}}] * 2,
            )
            store.close(session_id=f"{prefix}-{i}", reason="done")


def test_retention_page_previews_what_would_be_deleted(admin_a, tenant_a):
    client = login(admin_a)
    page = client.get(BASE + "retention/").content.decode()
    assert "No policy yet, so retention deletes nothing." in page
    end_sessions(tenant_a, 2)
    end_sessions(tenant_a, 1, days_ago=5, prefix="recent")
    client.post(BASE + "retention/", {"session_items_days": "30"})
    page = client.get(BASE + "retention/").content.decode()
    assert re.findall(r'<tr data-testid="retention-class">(.*?)</tr>', page) == [
        "<td>Conversation items, Session metadata and end reason</td><td>30 days</td><td>2</td>"
    ]
    assert (
        '<strong>2</strong> sessions due: <a class="mono small" href="/t/acme/sessions/old-0/">'
        "old-0</a>, " in page
    )
    assert "recent-0" not in page
    with in_tenant(tenant_a):
        assert SessionItem.objects.count() == 6  # a preview deletes nothing


def test_retention_preview_respects_the_tenant_hold(admin_a, tenant_a):
    end_sessions(tenant_a, 1)
    client = login(admin_a)
    client.post(BASE + "retention/", {"session_items_days": "30"})
    client.post(BASE + "legal-hold", {"on": "on", "reason": "audit", "confirm": "1"})
    page = client.get(BASE + "retention/").content.decode()
    assert "Tenant on legal hold: retention deletes nothing." in page
    assert 'data-testid="retention-class"' not in page


@pytest.mark.parametrize("due", [1, 20])
def test_retention_page_query_count_does_not_grow_with_due_sessions(
    admin_a, tenant_a, django_assert_num_queries, due
):
    client = login(admin_a)
    client.post(
        BASE + "retention/",
        {
            "session_items_days": "30",
            "run_events_days": "30",
            "checkpoints_days": "30",
            "effect_payloads_days": "30",
        },
    )
    end_sessions(tenant_a, due)
    # Per policy field: a COUNT and a sample of the due sessions (no per-session work).
    with django_assert_num_queries(queries(27)):
        page = client.get(BASE + "retention/").content.decode()
    assert f"<strong>{due}</strong> session{'s' if due > 1 else ''} due" in page


def test_remove_member_needs_admin_csrf_and_same_tenant(
    admin_a, operator_a, support_a, admin_b, csrf_client, tenant_a
):
    path = BASE + f"members/{support_a.pk}/remove"
    assert login(operator_a).post(path).status_code == 403
    assert login(admin_b).post(path).status_code == 404
    assert csrf_client(admin_a).post(path).status_code == 403
    assert login(admin_a).get(path).status_code == 405
    with in_tenant(tenant_a):
        assert Membership.objects.filter(user=support_a).count() == 1
    assert login(admin_a).post(path).status_code == 302
    with in_tenant(tenant_a):
        assert Membership.objects.filter(user=support_a).count() == 0


def test_the_last_admin_cannot_be_removed_or_demoted(admin_a, make_user, tenant_a):
    client = login(admin_a)
    response = client.post(BASE + f"members/{admin_a.pk}/remove")
    assert response.status_code == 302
    assert messages_of(response) == [
        "This is the tenant's last admin: make someone else admin first."
    ]
    client.get(BASE + "members/")  # shows (and so consumes) the message
    response = client.post(BASE + "members/", {"username": "ada", "role": "support"})
    assert messages_of(response) == [
        "This is the tenant's last admin: make someone else admin first."
    ]
    with in_tenant(tenant_a):
        assert Membership.objects.get(tenant=tenant_a, user=admin_a).role == Role.ADMIN
    assert audit_actions(tenant_a) == []
    # With a second admin, either may step down.
    make_user("bea", tenant_a, Role.ADMIN)
    client.get(BASE + "members/")
    response = client.post(BASE + "members/", {"username": "ada", "role": "operator"})
    assert messages_of(response) == ["ada is now operator."]
    with in_tenant(tenant_a):
        assert Membership.objects.get(tenant=tenant_a, user=admin_a).role == Role.OPERATOR
    assert audit_actions(tenant_a) == [("member.role_set", "ada")]


def test_four_eyes_unchanged_is_not_audited(admin_a, tenant_a):
    client = login(admin_a)
    client.post(BASE + "four-eyes", {"on": "on"})
    client.post(BASE + "four-eyes", {"on": "on"})
    assert Tenant.objects.get(pk=tenant_a.pk).four_eyes_critical is True
    with in_tenant(tenant_a):
        events = list(AuditEvent.objects.values_list("action", "before", "after"))
    assert events == [
        ("tenant.settings_changed", {"four_eyes_critical": False}, {"four_eyes_critical": True})
    ]


def test_token_with_webhook_shows_its_signing_secret_once(admin_a, tenant_a):
    from tenancy_app.models import RuntimeToken

    client = login(admin_a)
    response = client.post(
        BASE + "tokens/",
        {"name": "hooked", "role": "runtime", "webhook_url": "https://rt.example/hook"},
    )
    assert response.status_code == 200
    with in_tenant(tenant_a):
        token = RuntimeToken.objects.get()
    assert token.webhook_secret.startswith("whsec_")  # a Standard Webhooks secret
    page = response.content.decode()
    assert f'data-testid="new-webhook-secret">{token.webhook_secret}</pre>' in page
    again = client.get(BASE + "tokens/").content.decode()
    assert token.webhook_secret not in again
    assert "https://rt.example/hook" in again


@pytest.mark.parametrize(
    "url", ["javascript:alert(1)", "file:///etc/passwd", "ftp://x.example/", "not a url"]
)
def test_token_webhook_must_be_http(admin_a, tenant_a, url):
    from tenancy_app.models import RuntimeToken

    client = login(admin_a)
    response = client.post(BASE + "tokens/", {"name": "hooked", "webhook_url": url})
    assert response.status_code == 302
    assert messages_of(response) == [
        "The webhook URL must be an http or https URL of at most 200 characters."
    ]
    with in_tenant(tenant_a):
        assert not RuntimeToken.objects.exists()
    assert audit_actions(tenant_a) == []


def test_token_name_over_100_characters_is_refused(admin_a, tenant_a):
    from tenancy_app.models import RuntimeToken

    response = login(admin_a).post(BASE + "tokens/", {"name": "x" * 101})
    assert messages_of(response) == ["A token name has at most 100 characters."]
    with in_tenant(tenant_a):
        assert not RuntimeToken.objects.exists()


def test_create_token_command_prints_the_webhook_secret_on_stderr(tenant_a):
    import io

    from django.core.management import call_command

    from tenancy_app.models import RuntimeToken

    out, err = io.StringIO(), io.StringIO()
    call_command(
        "create_token", tenant="acme", webhook_url="https://rt.example/h", stdout=out, stderr=err
    )
    with in_tenant(tenant_a):
        token = RuntimeToken.objects.get()
    assert out.getvalue().strip().startswith("sr_")
    assert err.getvalue().strip() == f"Webhook signing secret: {token.webhook_secret}"


def test_retention_dry_run_uses_the_unsaved_values_and_saves_nothing(admin_a, operator_a, tenant_a):
    end_sessions(tenant_a, 2, days_ago=40)
    end_sessions(tenant_a, 1, days_ago=5, prefix="recent")
    client = login(admin_a)
    client.post(BASE + "retention/", {"session_items_days": "30"})
    # Edited to 3 days but not saved: the dry run shows what 3 days would delete.
    form = client.get(BASE + "retention/").content.decode()
    # The dry run posts the form: a GET form would put the CSRF token in the URL.
    assert '<button type="submit" name="dry_run" value="1" data-testid="dry-run">' in form
    assert 'formmethod="get"' not in form
    page = client.post(BASE + "retention/", {"session_items_days": "3", "dry_run": "1"})
    body = page.content.decode()
    assert page.status_code == 200
    assert 'data-testid="unsaved">not saved</strong>' in body
    assert re.findall(r'<tr data-testid="retention-class">(.*?)</tr>', body) == [
        "<td>Conversation items, Session metadata and end reason</td><td>3 days</td><td>3</td>"
    ]
    assert 'name="session_items_days" value="3"' in body
    with in_tenant(tenant_a):
        assert RetentionPolicy.objects.get(tenant=tenant_a).session_items_days == 30
    assert audit_actions(tenant_a)[-1] == ("tenant.retention_changed", "ada")  # the save only
    assert len(audit_actions(tenant_a)) == 4  # three sessions closed, one policy change
    bad = client.post(BASE + "retention/", {"session_items_days": "0", "dry_run": "1"})
    assert bad.status_code == 422
    assert len(audit_actions(tenant_a)) == 4
    lesser = login(operator_a).post(
        BASE + "retention/", {"session_items_days": "3", "dry_run": "1"}
    )
    assert lesser.status_code == 403


def test_an_admin_sets_the_session_lease_of_the_tenant(admin_a, operator_a, tenant_a):
    client = login(admin_a)
    page = client.get(BASE).content.decode()
    assert "Now 30 days." in page
    assert login(operator_a).post(BASE + "session-lease", {"days": "7"}).status_code == 403
    client.post(BASE + "session-lease", {"days": "31"})
    tenant_a.refresh_from_db()
    assert tenant_a.session_lease_seconds == 30 * 86400
    client.post(BASE + "session-lease", {"days": "7"})
    tenant_a.refresh_from_db()
    assert tenant_a.session_lease_seconds == 7 * 86400
    assert "Now 7 days." in client.get(BASE).content.decode()
    with in_tenant(tenant_a):
        event = AuditEvent.objects.filter(action="tenant.settings_changed").latest("seq")
    assert event.after == {"session_lease_seconds": 7 * 86400}


def test_an_admin_sets_how_long_a_run_may_go_unheld(admin_a, operator_a, admin_b, tenant_a):
    client = login(admin_a)
    assert "Now 2 minutes." in client.get(BASE).content.decode()
    url = BASE + "unclaimed-run-warning"
    assert login(operator_a).post(url, {"minutes": "5"}).status_code == 403
    assert login(admin_b).post(url, {"minutes": "5"}).status_code == 404
    for bad in ("0", "1441", "soon"):
        client.post(url, {"minutes": bad})
        tenant_a.refresh_from_db()
        assert tenant_a.unclaimed_run_warning_seconds == 120
    client.post(url, {"minutes": "10"})
    tenant_a.refresh_from_db()
    assert tenant_a.unclaimed_run_warning_seconds == 600
    assert "Now 10 minutes." in client.get(BASE).content.decode()
    with in_tenant(tenant_a):
        event = AuditEvent.objects.filter(action="tenant.settings_changed").latest("seq")
    assert (event.before, event.after) == (
        {"unclaimed_run_warning_seconds": 120},
        {"unclaimed_run_warning_seconds": 600},
    )
