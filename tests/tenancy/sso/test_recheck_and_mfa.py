"""A lost group is a lost role at the next request after the re-check interval; the
provider's MFA (amr/acr) spares Stateroom's own TOTP."""

from __future__ import annotations

import pytest

from stateroom.actor import Actor
from tenancy_app.scoping import in_tenant
from tenancy_app.sso.store import SsoStore
from tenancy_app.store import TenancyStore
from tests.conftest import PASSWORD
from tests.tenancy.sso.conftest import PEOPLE, sso_login
from tests.tenancy.sso.test_login_flow import actions, member

pytestmark = pytest.mark.browser


def test_a_lost_group_is_a_lost_membership_after_the_interval(
    page, live_server, tenant_a, sso_a, p1, sso_clock, settings
):
    assert settings.STATEROOM_SSO_RECHECK_SECONDS == 900  # the default: 15 minutes
    sso_login(page, live_server, tenant_a.slug, "olga", p1)
    home = f"{live_server.url}/t/{tenant_a.slug}/"
    assert page.url == home
    p1.set_people({**PEOPLE, "olga": {"groups": []}})  # IT removes her from the group
    sso_clock.advance(899)
    page.goto(home)
    assert page.url == home  # not re-checked yet
    sso_clock.advance(2)
    page.goto(home)
    assert page.url == f"{live_server.url}/login/sso/{tenant_a.slug}/?sso=ended"
    assert page.get_by_role("alert").is_visible()
    assert member(tenant_a, f"{tenant_a.slug}.olga") is None
    assert actions(tenant_a)[-1] == "sso.role_lost"
    page.goto(home)
    assert "/login/" in page.url  # signed out


def test_a_lower_group_lowers_the_role_and_leaves_member_groups(
    page, live_server, tenant_a, sso_a, p1, sso_clock
):
    sso_login(page, live_server, tenant_a.slug, "adam", p1)
    settings_page = f"{live_server.url}/t/{tenant_a.slug}/settings/"
    assert page.goto(settings_page).status == 200
    p1.set_people({**PEOPLE, "adam": {"groups": ["sr-operators"], "amr": ["mfa"]}})
    sso_clock.advance(901)
    assert page.goto(settings_page).status == 403
    adam = member(tenant_a, f"{tenant_a.slug}.adam")
    assert adam.role == "operator"
    with in_tenant(tenant_a):
        from tenancy_app.groups import GroupStore

        assert GroupStore(tenant_a, Actor.system("t")).group_ids_of(adam.user_id) == []
    assert actions(tenant_a)[-1] == "sso.role_lost"


def test_amr_mfa_spares_the_totp_of_a_tenant_that_requires_it(
    page, live_server, tenant_a, sso_a, p1
):
    with in_tenant(tenant_a):
        TenancyStore(tenant_a, Actor.system("t")).set_require_2fa(on=True)
    sso_login(page, live_server, tenant_a.slug, "adam", p1)  # amr: ["pwd", "mfa"]
    assert page.url == f"{live_server.url}/t/{tenant_a.slug}/"


def test_without_amr_the_tenants_2fa_rule_applies(page, live_server, tenant_a, sso_a, p1):
    with in_tenant(tenant_a):
        TenancyStore(tenant_a, Actor.system("t")).set_require_2fa(on=True)
    sso_login(page, live_server, tenant_a.slug, "olga", p1)
    page.wait_for_url(lambda url: "/2fa/setup/" in url)


def test_a_configured_acr_counts_as_mfa(page, live_server, tenant_a, sso_a, p1):
    with in_tenant(tenant_a):
        TenancyStore(tenant_a, Actor.system("t")).set_require_2fa(on=True)
        store = SsoStore(tenant_a, Actor.system("t"))
        store.save_config(require_sso=False, mfa_acr_values=["urn:acme:gold"])
    sso_login(page, live_server, tenant_a.slug, "ines", p1)
    assert page.url == f"{live_server.url}/t/{tenant_a.slug}/"


def test_require_sso_keeps_password_members_out_but_admins(
    page, new_page, live_server, tenant_a, sso_a, make_user, console_login
):
    make_user("otto", tenant_a, "operator")
    with in_tenant(tenant_a):
        SsoStore(tenant_a, Actor.system("t")).save_config(require_sso=True)
    page.goto(f"{live_server.url}/login/?next=/t/{tenant_a.slug}/")
    page.fill("input[name=username]", "otto")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/login/sso/{tenant_a.slug}/")
    assert page.locator("#sso-start").is_visible()
    admin = new_page()
    console_login(admin, live_server, "ada")  # break-glass: a local admin
    admin.goto(f"{live_server.url}/t/{tenant_a.slug}/")
    assert admin.url == f"{live_server.url}/t/{tenant_a.slug}/"
