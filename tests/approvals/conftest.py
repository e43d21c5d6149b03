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


# --- routing and notices (issue 34) ---------------------------------------------------
class RecordedNotices(list):
    """What reached the `approval_notices` port: (approval_id, kind, ref), in order."""

    def kinds(self, approval_id: str | None = None) -> list[str]:
        return [k for a, k, _ in list(self) if approval_id in (None, a)]


@pytest.fixture
def notices():
    """A recording fake behind `ports.approval_notices` (the notifications app's place),
    thread-safe; the previous implementation is back afterwards."""
    import threading

    from stateroom import ports

    recorded = RecordedNotices()
    lock = threading.Lock()

    def record(tenant_id: int, approval_id: str, kind: str, ref: str) -> str:
        with lock:
            recorded.append((approval_id, kind, ref))
        return "recorded"

    previous = ports.approval_notices._impl
    ports.approval_notices.provide(record)
    try:
        yield recorded
    finally:
        ports.approval_notices._impl = previous


def notice_rows(tenant) -> list[list]:
    """The outbox rows of approval notices: their args (tenant_id, approval_id, kind, ref)."""
    from approvals_app.notices import APPROVAL_NOTICE_TASK
    from outbox_app.models import OutboxMessage

    with in_tenant(tenant):
        return list(
            OutboxMessage.objects.filter(tenant=tenant, task=APPROVAL_NOTICE_TASK)
            .order_by("id")
            .values_list("args", flat=True)
        )


def routing_rules(tenant, actor: Actor | None = None, **kw):
    from approvals_app.routing import RoutingRules

    return RoutingRules(tenant, actor or Actor.system("test"), **kw)


def save_rule(tenant, **values):
    with in_tenant(tenant):
        return routing_rules(tenant).save_rule(**values)


def save_group(tenant, name: str, user_ids, **kw):
    from tenancy_app.groups import GroupStore

    with in_tenant(tenant):
        return GroupStore(tenant, Actor.system("test"), **kw).save_group(
            name=name, user_ids=user_ids
        )
