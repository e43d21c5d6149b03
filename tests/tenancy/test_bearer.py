"""Resolving runtime bearer tokens: one statement, no write on most calls, revocation at once."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tenancy_app.auth import LAST_USED_RESOLUTION, resolve_bearer
from tenancy_app.models import RuntimeToken, Tenant
from tenancy_app.scoping import in_tenant

# Tokens have row-level security: the test reads and writes them inside the tenant,
# as the app does (resolve_bearer reads through its SECURITY DEFINER function).


@pytest.fixture
def raw(make_token, tenant_a) -> str:
    return make_token(tenant_a, name="w1")


def test_resolves_token_and_tenant_in_one_statement(raw, tenant_a):
    Tenant.objects.filter(pk=tenant_a.pk).update(legal_hold=True, allow_concurrent_runs=True)
    with in_tenant(tenant_a):
        RuntimeToken.objects.update(last_used_at=timezone.now())
    with CaptureQueriesContext(connection) as queries:
        token = resolve_bearer(f"Bearer {raw}")
        seen = (token.pk, token.name, token.role, token.tenant.pk, token.tenant.slug)
        flags = (token.tenant.legal_hold, token.tenant.four_eyes_critical)
        concurrent = token.tenant.allow_concurrent_runs
    assert len(queries) == 1, [q["sql"] for q in queries]
    with in_tenant(tenant_a):
        stored = RuntimeToken.objects.get()
    assert seen == (stored.pk, "w1", "runtime", tenant_a.pk, "acme")
    # Values as the ORM gives them (booleans, aware datetimes).
    assert flags == (True, False) and concurrent is True
    assert token.tenant.created_at == Tenant.objects.get().created_at
    assert token.last_used_at == stored.last_used_at and token.last_used_at.tzinfo is not None
    # The whole row, as the ORM would load it.
    assert token.prefix == stored.prefix and token.secret_hash == stored.secret_hash


def stored_last_used(tenant):
    with in_tenant(tenant):
        return RuntimeToken.objects.get().last_used_at


def test_last_used_at_is_written_at_most_once_a_minute(raw, tenant_a):
    assert stored_last_used(tenant_a) is None
    with CaptureQueriesContext(connection) as queries:
        resolve_bearer(f"Bearer {raw}")
    assert len(queries) == 2  # read, then the first stamp
    first = stored_last_used(tenant_a)
    assert first is not None
    with CaptureQueriesContext(connection) as queries:
        resolve_bearer(f"Bearer {raw}")
    assert len(queries) == 1
    assert stored_last_used(tenant_a) == first

    stale = timezone.now() - LAST_USED_RESOLUTION - timedelta(seconds=1)
    with in_tenant(tenant_a):
        RuntimeToken.objects.update(last_used_at=stale)
    token = resolve_bearer(f"Bearer {raw}")
    assert stored_last_used(tenant_a) == token.last_used_at > stale


@pytest.mark.parametrize(
    "header", ["", "Bearer", "Bearer   ", "Basic abc", "Bearer sr_nope", "Token sr_x"]
)
def test_bad_headers_resolve_to_nothing(raw, header):
    assert resolve_bearer(header) is None


def test_scheme_is_case_insensitive_and_whitespace_around_the_secret_ignored(raw):
    assert resolve_bearer(f"bearer  {raw} ").name == "w1"


def test_revoked_token_is_refused_on_the_next_call(raw, client, tenant_a):
    headers = {"Authorization": f"Bearer {raw}"}
    assert client.get("/api/v1/me", headers=headers).status_code == 200
    with in_tenant(tenant_a):
        RuntimeToken.objects.update(revoked_at=timezone.now())
    assert resolve_bearer(f"Bearer {raw}") is None
    assert client.get("/api/v1/me", headers=headers).status_code == 401
