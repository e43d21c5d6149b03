"""Tell a runtime that a person cancelled, suspended or resumed its run (signed webhook).

`RunStateStore` enqueues `notify_run_control` through the outbox with the
change, when the run was created by a runtime token that has a
`webhook_url`. Signing (Standard Webhooks), the egress check and retries are
`tenancy_app.webhooks`, as for approval decisions.

Body: `{"event": "run.cancelled" | "run.suspended" | "run.resumed",
"version": <the run's version after the change>, "run": {...as GET /api/v1/runs/{id}}}`.
`run` is the run as it is when the webhook is sent (it may have moved on;
`version` says which change this delivery is about). What the runtime does:
cancelled - stop, write nothing more (the run is terminal); suspended - stop
at the next safe point, the run waits for a person; resumed - claim the run
at `run.version` (`POST /api/v1/runs/{id}/claim`) and continue from
`run.last_checkpoint_id` (README "Run control").
"""

from __future__ import annotations

from celery import shared_task

from stateroom.actor import Actor
from stateroom.errors import NotFound
from tenancy_app.models import RuntimeToken, Tenant
from tenancy_app.scoping import in_tenant
from tenancy_app.webhooks import RETRYABLE_ERRORS, deliver, delivery_id

RUN_CONTROL_EVENTS = ("run.cancelled", "run.suspended", "run.resumed")


@shared_task(
    bind=True,
    autoretry_for=RETRYABLE_ERRORS,
    retry_backoff=2,
    retry_backoff_max=600,
    retry_jitter=True,
    max_retries=8,
    acks_late=True,
)
def notify_run_control(self, tenant_id: int, run_id: str, version: int, event: str) -> str:
    """POST the run to the webhook of the token that created it. Idempotent."""
    from .api import run_data
    from .store import RunStateStore

    if event not in RUN_CONTROL_EVENTS:
        return "unknown-event"
    tenant = Tenant.objects.filter(pk=tenant_id).first()
    if tenant is None:
        return "no-tenant"
    with in_tenant(tenant):
        try:
            run = RunStateStore(tenant, Actor.system("webhook")).get(run_id)
        except NotFound:
            return "no-run"
        token = RuntimeToken.objects.filter(
            pk=run.created_by_token_id, tenant=tenant, revoked_at__isnull=True
        ).first()
        if token is None or not token.webhook_url:
            return "no-webhook"
        payload = {"version": version, "run": run_data(run)}
        url, secret = token.webhook_url, token.webhook_secret
    return deliver(
        url=url,
        secret=secret,
        event=event,
        delivery=delivery_id(tenant_id, "run", run_id, version, event),
        payload=payload,
    )
