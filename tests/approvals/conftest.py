"""Fixtures and helpers for the approvals domain."""

import pytest

from approvals_app.models import ApprovalRequest
from approvals_app.store import ApprovalStore
from stateroom.actor import Actor
from tenancy_app.scoping import in_tenant

from ..runs.conftest import Clock, make_run

ARGS = {"to": "ops@example.com", "amount": 1200, "tags": ["q3", "refund"]}


def approval_store(tenant, actor: Actor | None = None, **kw) -> ApprovalStore:
    return ApprovalStore(tenant, actor or Actor.system("test"), **kw)


def make_approval(
    tenant,
    *,
    run_id: str = "run-1",
    risk: str = "medium",
    actor: Actor | None = None,
    clock=None,
    **kw,
) -> ApprovalRequest:
    """A running run that asks for an approval (the run is then at version 3)."""
    run = make_run(tenant, "running", run_id=run_id)
    kw.setdefault("tool_name", "send_refund")
    kw.setdefault("arguments", dict(ARGS))
    extra = {"clock": clock} if clock else {}
    with in_tenant(tenant):
        return approval_store(tenant, actor, **extra).request(
            run_id=run_id, expected_version=run.version, risk=risk, **kw
        )


def reload_approval(tenant, approval_id: str) -> dict:
    with in_tenant(tenant):
        return ApprovalRequest.objects.filter(tenant=tenant, approval_id=approval_id).values().get()


@pytest.fixture
def clock() -> Clock:
    return Clock()
