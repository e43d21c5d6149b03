"""The re-check's fallback: userinfo refuses the stored access token, the refresh token
gets a new one (the groups of the refreshed userinfo apply), or is refused too (the
session ends). Against the real stand-in provider (django-oauth-toolkit): an access
token expires there (its expiry moved into the past in the provider's database), a
refresh token is revoked through its RFC 7009 revocation endpoint, as an IdP does on
sign-out. (Revoking the access token alone would orphan the refresh token: this
provider then refuses both.)"""

from __future__ import annotations

from importlib import import_module

import pytest
import requests
from django.conf import settings

from audit_app.models import AuditEvent
from stateroom.actor import Actor
from tenancy_app.groups import GroupStore
from tenancy_app.scoping import in_tenant
from tenancy_app.sso import crypto, session
from tests.tenancy.sso.conftest import PEOPLE, SECRET_A, sso_login
from tests.tenancy.sso.test_login_flow import actions, member

pytestmark = pytest.mark.browser


def stored_tokens(page, live_server) -> dict[str, str]:
    """The provider's tokens the browser's Stateroom session keeps (decrypted)."""
    [cookie] = [
        c
        for c in page.context.cookies(live_server.url)
        if c["name"] == settings.SESSION_COOKIE_NAME
    ]
    store = import_module(settings.SESSION_ENGINE).SessionStore(session_key=cookie["value"])
    info = store.load()[session.KEY]
    return {"access": crypto.decrypt(info["access"]), "refresh": crypto.decrypt(info["refresh"])}


def revoke(provider, token: str, hint: str) -> None:
    answer = requests.post(
        f"{provider.issuer}/revoke_token/",
        data={
            "token": token,
            "token_type_hint": hint,
            "client_id": "stateroom-a",
            "client_secret": SECRET_A,
        },
        timeout=5,
    )
    assert answer.status_code == 200


def userinfo_status(provider, access_token: str) -> int:
    return requests.get(
        f"{provider.issuer}/userinfo/",
        headers={"Authorization": f"Bearer {access_token}"},
        timeout=5,
    ).status_code


def test_an_expired_access_token_is_refreshed_and_the_role_kept(
    page, live_server, tenant_a, sso_a, p1, sso_clock
):
    sso_login(page, live_server, tenant_a.slug, "olga", p1)
    home = f"{live_server.url}/t/{tenant_a.slug}/"
    before = stored_tokens(page, live_server)
    assert before["refresh"]  # the provider's code grant gave a refresh token
    p1.expire_access_token(before["access"])
    assert userinfo_status(p1, before["access"]) == 401
    sso_clock.advance(901)
    page.goto(home)
    assert page.url == home  # still signed in
    after = stored_tokens(page, live_server)
    assert after["access"] != before["access"] and after["refresh"] != before["refresh"]
    assert userinfo_status(p1, after["access"]) == 200
    assert member(tenant_a, f"{tenant_a.slug}.olga").role == "operator"
    assert actions(tenant_a) == ["sso.config_changed", "sso.login"]  # nothing lost or ended
    # The next re-check asks userinfo with the refreshed token: no second refresh.
    sso_clock.advance(901)
    page.goto(home)
    assert page.url == home and stored_tokens(page, live_server) == after


def test_the_refreshed_userinfo_groups_lower_the_role(
    page, live_server, tenant_a, sso_a, p1, sso_clock
):
    sso_login(page, live_server, tenant_a.slug, "adam", p1)
    settings_page = f"{live_server.url}/t/{tenant_a.slug}/settings/"
    assert page.goto(settings_page).status == 200
    before = stored_tokens(page, live_server)
    p1.expire_access_token(before["access"])
    p1.set_people({**PEOPLE, "adam": {"groups": ["sr-operators"], "amr": ["mfa"]}})
    sso_clock.advance(901)
    assert page.goto(settings_page).status == 403  # an operator now, still signed in
    assert stored_tokens(page, live_server)["access"] != before["access"]
    adam = member(tenant_a, f"{tenant_a.slug}.adam")
    assert adam.role == "operator"
    with in_tenant(tenant_a):
        assert GroupStore(tenant_a, Actor.system("t")).group_ids_of(adam.user_id) == []
        lost = AuditEvent.objects.filter(tenant=tenant_a, action="sso.role_lost").get()
    assert lost.target_id == str(adam.user_id)
    assert lost.before == {"role": "admin"}
    assert lost.after["role"] == "operator" and lost.after["groups"] == ["sr-operators"]


def test_a_refused_refresh_ends_the_session(page, live_server, tenant_a, sso_a, p1, sso_clock):
    sso_login(page, live_server, tenant_a.slug, "olga", p1)
    home = f"{live_server.url}/t/{tenant_a.slug}/"
    tokens = stored_tokens(page, live_server)
    revoke(p1, tokens["refresh"], "refresh_token")  # its access token goes with it
    assert userinfo_status(p1, tokens["access"]) == 401
    sso_clock.advance(899)
    page.goto(home)
    assert page.url == home  # not re-checked yet
    sso_clock.advance(2)
    page.goto(home)
    assert page.url == f"{live_server.url}/login/sso/{tenant_a.slug}/?sso=ended"
    assert page.get_by_role("alert").is_visible()
    olga = member(tenant_a, f"{tenant_a.slug}.olga")
    with in_tenant(tenant_a):
        ended = AuditEvent.objects.filter(tenant=tenant_a, action="sso.session_ended").get()
    assert ended.target_id == str(olga.user_id)
    assert ended.after == {"reason": "the token endpoint answered 400"}
    assert actions(tenant_a)[-1] == "sso.session_ended"
    page.goto(home)
    assert "/login/" in page.url  # signed out
