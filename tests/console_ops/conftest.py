"""Fixtures of the operator/admin console tests."""

import pytest
from django.conf import settings
from django.test import Client

from audit_app.actor import Actor
from audit_app.services import record_event
from tenancy_app.scoping import in_tenant


def queries(sqlite: int, postgres_extra: int = 3) -> int:
    """A pinned query count of one console request.

    On PostgreSQL the tenant transaction adds its RLS setting; inside the test's
    own transaction it is a nested one, which reads the outer setting first and
    restores it after (3 queries; 1 in production).
    """
    return sqlite + (postgres_extra if settings.IS_POSTGRES else 0)


@pytest.fixture
def record_audit():
    """Append `n` audit events to a tenant's chain, as a given actor."""

    def record(tenant, n=1, *, actor=None, action="session.closed", target_type="session", **kw):
        with in_tenant(tenant):
            return [
                record_event(
                    tenant=tenant,
                    actor=actor or Actor.system("sweep"),
                    action=action,
                    target_type=target_type,
                    target_id=kw.get("target_id", f"s-{i}"),
                    before=kw.get("before", {"status": "active"}),
                    after=kw.get("after", {"status": "closed"}),
                    reason=kw.get("reason", "lease passed"),
                )
                for i in range(n)
            ]

    return record


@pytest.fixture
def csrf_client():
    def make(user) -> Client:
        client = Client(enforce_csrf_checks=True)
        client.force_login(user)
        return client

    return make
