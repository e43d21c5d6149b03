"""Sign-in through a real OpenID Connect provider, driven by Chromium end to end."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from audit_app.models import AuditEvent
from tenancy_app.models import GroupMember, Membership, SsoIdentity
from tenancy_app.scoping import in_tenant
from tests.tenancy.sso.conftest import sso_login

pytestmark = pytest.mark.browser


def actions(tenant) -> list[str]:
    with in_tenant(tenant):
        return list(
            AuditEvent.objects.filter(tenant=tenant, action__startswith="sso.")
            .order_by("seq")
            .values_list("action", flat=True)
        )


def member(tenant, username: str):
    with in_tenant(tenant):
        return Membership.objects.filter(tenant=tenant, user__username=username).first()


def test_login_lands_in_the_console_with_the_mapped_role_and_groups(
    page, live_server, tenant_a, sso_a, p1
):
    sso_login(page, live_server, tenant_a.slug, "adam", p1)
    assert page.url == f"{live_server.url}/t/{tenant_a.slug}/"
    assert member(tenant_a, f"{tenant_a.slug}.adam").role == "admin"
    with in_tenant(tenant_a):
        identity = SsoIdentity.objects.get(tenant=tenant_a)
        assert identity.issuer == p1.issuer and identity.user.username == f"{tenant_a.slug}.adam"
        assert list(
            GroupMember.objects.filter(tenant=tenant_a).values_list("group__slug", "user_id")
        ) == [("payments", identity.user.pk)]
    assert not identity.user.has_usable_password()
    assert "sso.login" in actions(tenant_a)
    # An admin page answers: the role is the mapped one.
    page.goto(f"{live_server.url}/t/{tenant_a.slug}/settings/")
    assert page.locator("h1").first.is_visible()


def test_no_mapped_group_is_refused_and_audited(page, live_server, tenant_a, sso_a, p1):
    sso_login(page, live_server, tenant_a.slug, "nora", p1)
    assert "/login/sso/callback/" in page.url
    assert page.locator("[data-reason=no_mapped_group]").count() == 1
    assert member(tenant_a, f"{tenant_a.slug}.nora") is None
    assert not get_user_model().objects.filter(username__endswith=".nora").exists()
    assert actions(tenant_a) == ["sso.config_changed", "sso.login_refused"]
    page.goto(f"{live_server.url}/t/{tenant_a.slug}/")
    assert "/login/" in page.url  # not signed in


def test_a_replayed_state_is_refused(page, live_server, tenant_a, sso_a, p1):
    callbacks = []
    page.on("request", lambda r: callbacks.append(r.url) if "/sso/callback/" in r.url else None)
    sso_login(page, live_server, tenant_a.slug, "olga", p1)
    assert page.url.endswith(f"/t/{tenant_a.slug}/")
    page.goto(callbacks[0])  # the same code and state again
    assert page.locator("[data-reason=unknown_state]").count() == 1


def test_an_expired_state_is_refused(page, live_server, tenant_a, sso_a, p1, sso_clock):
    page.goto(f"{live_server.url}/login/sso/{tenant_a.slug}/")
    page.click("#sso-start")
    page.wait_for_url(lambda url: url.startswith(p1.url))
    sso_clock.advance(601)  # STATEROOM_SSO_STATE_MAX_AGE_SECONDS is 600
    page.fill("#op-username", "olga")
    page.fill("#op-password", p1.password("olga"))
    page.click("text=Sign in at the provider")
    page.wait_for_url(lambda url: url.startswith(live_server.url))
    assert page.locator("[data-reason=expired_state]").count() == 1
    assert member(tenant_a, f"{tenant_a.slug}.olga") is None
    assert actions(tenant_a)[-1] == "sso.login_refused"


def test_a_callback_nobody_started_is_refused(page, live_server, sso_a):
    page.goto(f"{live_server.url}/login/sso/callback/?code=abc&state=forged")
    assert page.locator("[data-reason=unknown_state]").count() == 1


def test_tenant_a_sso_does_not_open_tenant_b(
    page, live_server, tenant_a, tenant_b, sso_a, sso_b, p1
):
    sso_login(page, live_server, tenant_a.slug, "olga", p1)
    response = page.goto(f"{live_server.url}/t/{tenant_b.slug}/")
    assert response.status == 404
    # Tenant b's own sign-in makes its own user: a's membership does not carry over.
    sso_login(page, live_server, tenant_b.slug, "olga", p1)
    assert page.url.endswith(f"/t/{tenant_b.slug}/")
    assert member(tenant_b, f"{tenant_b.slug}.olga").role == "operator"
    assert member(tenant_b, f"{tenant_a.slug}.olga") is None
    assert member(tenant_a, f"{tenant_b.slug}.olga") is None


def test_the_password_login_still_works_beside_sso(
    page, live_server, tenant_a, sso_a, console_login
):
    console_login(page, live_server, "ada")
    page.goto(f"{live_server.url}/t/{tenant_a.slug}/")
    assert page.url.endswith(f"/t/{tenant_a.slug}/")
