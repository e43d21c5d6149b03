"""Shared fixtures: tenants, people of each role, runtime tokens, API clients.

The test databases are created and migrated by the owner role; the tests
then connect as the app role (NOSUPERUSER NOBYPASSRLS, owns no table), as
the app does in production. Infrastructure a test needs (Redis, Chromium)
is required: outside CI a test may skip with the reason, in CI (CI=true)
it fails instead.
"""

import os

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.test.testcases import QuietWSGIRequestHandler

from stateroom.actor import Actor
from stateroom.database import as_app, as_owner
from tenancy_app.models import Membership, Role, Tenant, TokenRole
from tenancy_app.scoping import in_tenant
from tenancy_app.store import TenancyStore

# The live server answers HTTP/1.1 keep-alive in two writes (headers, then body): with
# Nagle's algorithm the body waits for the client's delayed ACK, 40 ms on every
# request a runtime, a browser or a child process makes of it. Production's server
# is not Django's test server.
QuietWSGIRequestHandler.disable_nagle_algorithm = True

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
PASSWORD = "correct-horse-battery-staple"


def require_infrastructure(ok: bool, reason: str) -> None:
    """Skip locally, fail in CI: CI must really run every test."""
    if ok:
        return
    if IN_CI:
        pytest.fail(f"missing infrastructure in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings):
    """The test databases are created, migrated and dropped by the owner role..."""
    with as_owner():
        yield


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one and a half workers per core. Much of the suite waits rather than
    computes (a browser, a live server, a child process, a long poll, PostgreSQL's
    own work), so on CI's 2 cores a third worker cut the run from 13.7 to 11 minutes."""
    return max(2, (os.cpu_count() or 1) * 3 // 2)


def pytest_addoption(parser):
    parser.addoption(
        "--through-pooler",
        action="store_true",
        help="connect to the test database through PgBouncer in pool_mode=transaction,"
        " started for the run, as DB_POOLER=transaction (docs/scaling.md)",
    )


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, request):
    """...and the tests connect as the app role, as the app does (through PgBouncer in
    transaction mode with `--through-pooler`)."""
    with as_app():
        if request.config.getoption("--through-pooler"):
            from tests.infra import through_pooler

            with through_pooler():
                yield
        else:
            yield


@pytest.fixture
def owner_sql():
    """Run SQL as the owner role on the test database, in its own committed connection.

    For what the app role may not do (tamper with the audit table, change a
    role): the owner is still subject to forced row-level security, so a
    `tenant` argument sets `app.tenant_id` first. Pair it with
    `django_db(transaction=True)` to see rows a test wrote.
    """
    import psycopg
    from django.conf import settings
    from django.db import connection

    from stateroom.database import url_of

    assert settings.DATABASE_OWNER, "the tests need an owner role (DATABASE_OWNER_URL)"
    url = url_of(connection.settings_dict, role=settings.DATABASE_OWNER)

    def run(*statements, tenant=None):
        """Each statement is SQL or (SQL, parameters); one transaction; the last one's rows."""
        with psycopg.connect(url, autocommit=tenant is None) as conn:
            if tenant is not None:
                conn.execute("SELECT set_config('app.tenant_id', %s, true)", [str(tenant.pk)])
            for statement in statements:
                sql, params = (statement, ()) if isinstance(statement, str) else statement
                cursor = conn.execute(sql, params)
            return cursor.fetchall() if cursor.description else cursor.rowcount

    return run


@pytest.fixture
def tamper_audit(owner_sql):
    """Rewrite one audit event's reason as only the tables' owner can (trigger off and on).

    The test must be `django_db(transaction=True)`: the owner's connection sees committed rows.
    """

    def tamper(tenant, seq: int, reason: str) -> None:
        owner_sql(
            "ALTER TABLE audit_app_auditevent DISABLE TRIGGER audit_event_append_only",
            (
                "UPDATE audit_app_auditevent SET reason = %s WHERE tenant_id = %s AND seq = %s",
                [reason, tenant.pk, seq],
            ),
            "ALTER TABLE audit_app_auditevent ENABLE TRIGGER audit_event_append_only",
            tenant=tenant,
        )

    return tamper


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
            with in_tenant(tenant):  # memberships have row-level security
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


@pytest.fixture(autouse=True, scope="session")
def _apps_write_only_their_own_tables():
    """Every connection of the run, in every thread, refuses a write to another app's table."""
    from django.db import connections
    from django.db.backends.signals import connection_created

    from stateroom.sql import PIPELINED_STATEMENT_CHECKS
    from tests.ownership import OwnTablesOnly

    guard = OwnTablesOnly()
    PIPELINED_STATEMENT_CHECKS.append(guard.check)  # the hot statements Django's wrappers miss

    def install(sender, connection, **kwargs):
        if guard not in connection.execute_wrappers:
            connection.execute_wrappers.append(guard)

    connection_created.connect(install, weak=False)
    for connection in connections.all():
        install(None, connection)
    yield
    connection_created.disconnect(install)
    PIPELINED_STATEMENT_CHECKS.remove(guard.check)
    for connection in connections.all():
        if guard in connection.execute_wrappers:
            connection.execute_wrappers.remove(guard)


# Host names tests give webhooks, and what the stub resolver answers for them.
# No test looks a name up in the real DNS (there is none to ask here).
TEST_DNS = {
    "rt.example": ["93.184.215.14"],
    "hooks.example": ["93.184.215.14"],
    "localhost": ["127.0.0.1", "::1"],
}


class StubResolver:
    """Answers from a table and records every lookup; unknown names do not resolve."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = dict(table)
        self.lookups: list[str] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.lookups.append(host)
        if host not in self.table:
            raise OSError(f"stub resolver: {host} does not resolve")
        return list(self.table[host])


@pytest.fixture(autouse=True)
def stub_dns(monkeypatch) -> StubResolver:
    from stateroom import egress

    resolver = StubResolver(TEST_DNS)
    monkeypatch.setattr(egress, "RESOLVER", resolver)
    return resolver
