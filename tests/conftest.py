"""Shared fixtures: tenants, people of each role, runtime tokens, API clients.

Tests marked `postgres` need PostgreSQL; outside CI they skip with a reason
on SQLite, and in CI (CI=true) a missing infrastructure fails the test.
"""

import os

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from audit_app.actor import Actor
from tenancy_app.models import Membership, Role, Tenant, TokenRole
from tenancy_app.scoping import in_tenant
from tenancy_app.store import TenancyStore

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
PASSWORD = "correct-horse-battery-staple"


def require_infrastructure(ok: bool, reason: str) -> None:
    """Skip locally, fail in CI: CI must really run every test."""
    if ok:
        return
    if IN_CI:
        pytest.fail(f"missing infrastructure in CI: {reason}")
    pytest.skip(reason)


def pytest_runtest_setup(item):
    if item.get_closest_marker("postgres"):
        require_infrastructure(
            settings.IS_POSTGRES, "needs PostgreSQL: set DATABASE_URL (see README, Testing)"
        )


@pytest.fixture
def make_tenant(db):
    def make(slug: str, **kw) -> Tenant:
        return Tenant.objects.create(slug=slug, name=kw.pop("name", slug.title()), **kw)

    return make


@pytest.fixture
def tenant_a(make_tenant) -> Tenant:
    return make_tenant("acme", name="Acme")


@pytest.fixture
def tenant_b(make_tenant) -> Tenant:
    return make_tenant("globex", name="Globex")


@pytest.fixture
def make_user(db):
    def make(username: str, tenant: Tenant | None = None, role: str = Role.SUPPORT):
        user = get_user_model().objects.create_user(username=username, password=PASSWORD)
        if tenant is not None:
            Membership.objects.create(user=user, tenant=tenant, role=role)
        return user

    return make


@pytest.fixture
def admin_a(make_user, tenant_a):
    return make_user("ada", tenant_a, Role.ADMIN)


@pytest.fixture
def operator_a(make_user, tenant_a):
    return make_user("otto", tenant_a, Role.OPERATOR)


@pytest.fixture
def support_a(make_user, tenant_a):
    return make_user("sue", tenant_a, Role.SUPPORT)


@pytest.fixture
def admin_b(make_user, tenant_b):
    return make_user("bob", tenant_b, Role.ADMIN)


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def make_token(db):
    def make(tenant: Tenant, role: str = TokenRole.RUNTIME, name: str = "worker") -> str:
        with in_tenant(tenant):
            _, raw = TenancyStore(tenant, Actor.system("test")).create_token(name=name, role=role)
        return raw

    return make


@pytest.fixture
def api_a(make_token, tenant_a) -> Client:
    return Client(headers={"Authorization": f"Bearer {make_token(tenant_a)}"})


@pytest.fixture
def api_b(make_token, tenant_b) -> Client:
    return Client(headers={"Authorization": f"Bearer {make_token(tenant_b)}"})
