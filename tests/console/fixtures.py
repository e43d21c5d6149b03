"""Fixtures of the operator/admin console tests."""

import pytest
from django.test import Client

from audit_app.services import record_event
from stateroom.actor import Actor
from stateroom.errors import NotFound
from tenancy_app.scoping import in_tenant


def queries(view: int) -> int:
    """A pinned query count of one console request: `view`'s own, plus the tenant transaction.

    The tenant transaction sets the RLS setting; inside the test's own
    transaction (which has no tenant) it is a nested one, which clears the
    setting again after (2 queries; 1 in production).
    """
    return view + 2


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


def make_pending(
    tenant,
    *,
    run_id: str = "run-1",
    session_id: str | None = "sess-1",
    risk: str = "medium",
    tool_name: str = "send_refund",
    arguments: dict | None = None,
    reason: str = "Customer asked for a refund",
    expires_at=None,
    items: int = 2,
    events: int = 2,
    effects: int = 1,
    approval_id: str | None = None,
    allowed_decisions: list[str] | None = None,
    asked_at=None,
    **extra,
):
    """A run (in a session) that did some work and now waits for an approval.

    `extra` goes to `ApprovalStore.request` (summary, key_arguments, usual_arguments);
    `asked_at`: the store's clock when it asks (so `expires_at` may be in the past now).
    """
    from approvals_app.store import ApprovalStore
    from effects_app.store import EffectStore
    from runs_app.store import RunStateStore
    from sessions_app.store import SessionStore

    actor = Actor.system("runtime")
    with in_tenant(tenant):
        sessions = SessionStore(tenant, actor)
        if session_id is not None:
            try:
                sessions.get(session_id)
            except NotFound:
                sessions.create(session_id=session_id, user_id="user-42")
        runs = RunStateStore(tenant, actor)
        run = runs.create(run_id=run_id, session_id=session_id)
        run = runs.compare_and_set(
            run_id=run_id, expected_version=run.version, changes={"status": "running"}
        )
        if session_id is not None and items:
            sessions.append_items(
                session_id=session_id,
                run_id=run_id,
                items=[
                    {"role": "user", "item_type": "message", "payload": {"text": f"msg {i}"}}
                    for i in range(items)
                ],
            )
        if events:
            runs.append_events(
                run_id=run_id,
                events=[
                    {"type": "tool_called", "node_id": f"n{i}", "payload": {"i": i}}
                    for i in range(events)
                ],
            )
        for i in range(effects):
            EffectStore(tenant, actor).record(
                run_id=run_id,
                idempotency_key=f"{run_id}-eff-{i}",
                tool_name="lookup_order",
                request={"order": i},
            )
        clock = {"clock": lambda: asked_at} if asked_at is not None else {}
        return ApprovalStore(tenant, actor, **clock).request(
            run_id=run_id,
            expected_version=run.version,
            tool_name=tool_name,
            arguments=arguments if arguments is not None else {"amount": 1200, "to": "acct-9"},
            risk=risk,
            reason=reason,
            expires_at=expires_at,
            approval_id=approval_id,
            allowed_decisions=allowed_decisions,
            **extra,
        )
