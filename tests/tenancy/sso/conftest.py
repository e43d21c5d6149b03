"""Fixtures of the SSO tests: two stand-in providers, tenants configured to use them."""

from __future__ import annotations

import pytest
from django.db import connection

from stateroom.actor import Actor
from tenancy_app.groups import GroupStore
from tenancy_app.models import Role
from tenancy_app.scoping import in_tenant
from tenancy_app.sso import clock
from tenancy_app.sso.store import SsoStore
from tests.console.browser import _playwright, browser, console_login, new_page, page  # noqa: F401
from tests.tenancy.sso import provider as op

PEOPLE = {
    "olga": {"groups": ["sr-operators"]},
    "adam": {"groups": ["sr-admins", "payments"], "amr": ["pwd", "mfa"]},
    "nora": {"groups": ["marketing"]},
    "ines": {"groups": ["sr-operators"], "acr": "urn:acme:gold"},
}
SECRET_A = "client-secret-of-tenant-a"
SECRET_B = "client-secret-of-tenant-b"


@pytest.fixture(scope="session")
def providers(live_server, tmp_path_factory):
    """P1 knows Stateroom's tenants a and b; P2, another issuer, registers the same client
    id as tenant a (so only its issuer and its key tell its tokens apart)."""
    callback = f"{live_server.url}/login/sso/callback/"
    both = [
        {"client_id": "stateroom-a", "client_secret": SECRET_A, "redirect_uri": callback},
        {"client_id": "stateroom-b", "client_secret": SECRET_B, "redirect_uri": callback},
    ]
    root = tmp_path_factory.mktemp("oidc")
    owner = owner_url()
    names = [f"{connection.settings_dict['NAME']}_op_{n}" for n in ("p1", "p2")]
    p1 = op.start(
        root / "p1", database=op.create_database(owner, names[0]), people=PEOPLE, clients=both
    )
    try:
        p2 = op.start(
            root / "p2",
            database=op.create_database(owner, names[1]),
            people=PEOPLE,
            clients=both[:1],
        )
    except Exception:
        op.stop(p1)
        raise
    yield p1, p2
    op.stop(p1)
    op.stop(p2)
    for name in names:
        op.drop_database(owner, name)


def owner_url() -> str:
    """The owner role's URL to the test database (the stand-in providers' databases are
    created beside it)."""
    from django.conf import settings

    from stateroom.database import url_of

    return url_of(connection.settings_dict, role=settings.DATABASE_OWNER)


@pytest.fixture
def p1(providers):
    providers[0].set_people(PEOPLE)
    yield providers[0]
    providers[0].set_people(PEOPLE)


@pytest.fixture
def p2(providers):
    return providers[1]


@pytest.fixture
def allow_loopback(settings):
    """The providers are on 127.0.0.1: stateroom.egress refuses it unless allowed."""
    settings.STATEROOM_WEBHOOK_ALLOW = ["127.0.0.1/32"]


def configure(tenant, provider, *, client_id, secret, **extra):
    with in_tenant(tenant):
        GroupStore(tenant, Actor.system("test")).save_group(name="Payments", user_ids=[])
        return SsoStore(tenant, Actor.system("test")).save_config(
            issuer=provider.issuer,
            client_id=client_id,
            client_secret=secret,
            display_name="Acme ID",
            role_map={"sr-operators": Role.OPERATOR, "sr-admins": Role.ADMIN},
            group_map={"payments": "payments"},
            require_sso=extra.pop("require_sso", False),
            **extra,
        )


@pytest.fixture
def sso_a(tenant_a, admin_a, p1, allow_loopback):
    """Tenant a signs in through P1 (ada is its local admin: break-glass)."""
    return configure(tenant_a, p1, client_id="stateroom-a", secret=SECRET_A)


@pytest.fixture
def sso_b(tenant_b, admin_b, p1, allow_loopback):
    return configure(tenant_b, p1, client_id="stateroom-b", secret=SECRET_B)


class Clock:
    """The SSO clock, moved by the test."""

    def __init__(self):
        self.offset = 0.0
        self.real = clock.now

    def __call__(self) -> float:
        return self.real() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds


@pytest.fixture
def sso_clock(monkeypatch):
    moved = Clock()
    monkeypatch.setattr(clock, "now", moved)
    return moved


def sso_login(tab, live_server, slug: str, username: str, provider) -> None:
    """Through the login page's company sign-in to the provider's form and back."""
    tab.goto(f"{live_server.url}/login/")
    tab.fill("input[name=tenant]", slug)
    tab.click("text=Continue to single sign-on")
    tab.click("#sso-start")
    at_form = provider.url + "/login/"
    back = (live_server.url + "/t/", live_server.url + "/login/sso/callback/")
    tab.wait_for_url(lambda url: url.startswith(at_form) or url.startswith(back))
    if tab.url.startswith(at_form):  # else the provider remembered its session
        tab.fill("#op-username", username)
        tab.fill("#op-password", provider.password(username))
        tab.click("text=Sign in at the provider")
        tab.wait_for_url(lambda url: url.startswith(live_server.url))
