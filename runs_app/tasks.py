"""Celery tasks of the runs domain (the worker finds them here).

`notify_run_control`: tell a runtime that a person cancelled, suspended or
resumed its run (what it sends: `runs_app.webhooks`).
"""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from stateroom.actor import Actor
from stateroom.errors import NotFound
from tenancy_app.jobs import ONE_CALL, for_each_tenant
from tenancy_app.models import RuntimeToken, Tenant
from tenancy_app.scoping import in_tenant
from tenancy_app.webhooks import RETRYABLE_ERRORS, deliver, delivery_id

from . import rollup
from .serializers import run_data  # the run exactly as GET returns it
from .store import RunStateStore
from .webhooks import NOTIFY_RUN_CONTROL, RUN_CONTROL_EVENTS, run_control_payload


@shared_task(
    name=NOTIFY_RUN_CONTROL,
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
        payload = run_control_payload(version, run_data(run))
        url, secret = token.webhook_url, token.webhook_secret
    return deliver(
        url=url,
        secret=secret,
        event=event,
        delivery=delivery_id(tenant_id, "run", run_id, version, event),
        payload=payload,
    )


@shared_task(acks_late=True)
def refresh_rollup(tenant_id: int | None = None) -> dict:
    """Roll up the runs' quarters that can be closed now, per tenant (runs_app.rollup)."""
    return for_each_tenant(
        lambda tenant: rollup.refresh(tenant.pk, timezone.now()),
        limit=ONE_CALL,
        tenant_id=tenant_id,
        name="runs_rollup",
    ).as_dict()
