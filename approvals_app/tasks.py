"""Celery tasks of the approvals domain: the expiry sweep, the reminder and escalation
schedule, the decision webhook and the notices to people (approvals_app.notices)."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from stateroom import ports
from stateroom.actor import Actor
from stateroom.errors import NotFound
from tenancy_app.jobs import ONE_CALL, for_each_tenant
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant
from tenancy_app.webhooks import RETRYABLE_ERRORS, deliver

from . import rollup
from .models import ApprovalStatus
from .notices import APPROVAL_NOTICE_TASK
from .serializers import approval_data  # the payload is exactly what GET returns
from .store import ApprovalStore
from .webhook_payloads import EVENT_DECIDED, NOTIFY_DECISION_TASK, decided_payload, delivery_id

SWEEP_BATCH = 500


@shared_task(acks_late=True)
def sweep_expired_approvals(tenant_id: int | None = None, limit: int = SWEEP_BATCH) -> dict:
    """Expire pending approvals past `expires_at`, per tenant, in batches.

    The store's rule applies: the run waiting on an expired approval is
    suspended, and the asking runtime's webhook hears of it.
    """
    result = for_each_tenant(
        lambda tenant: ApprovalStore(tenant, Actor.system("sweep")).expire_overdue(limit=limit),
        limit=limit,
        tenant_id=tenant_id,
        name="sweep_expired_approvals",
    )
    return result.as_dict()


@shared_task(acks_late=True)
def sweep_approval_schedule(tenant_id: int | None = None, limit: int = SWEEP_BATCH) -> dict:
    """Send the reminders and escalations that came due (`ApprovalStore.run_schedule`)."""
    result = for_each_tenant(
        lambda tenant: sum(
            ApprovalStore(tenant, Actor.system("schedule")).run_schedule(limit=limit).values()
        ),
        limit=limit,
        tenant_id=tenant_id,
        name="sweep_approval_schedule",
    )
    return result.as_dict()


@shared_task(name=APPROVAL_NOTICE_TASK, acks_late=True, ignore_result=True)
def approval_notice(tenant_id: int, approval_id: str, kind: str, ref: str = "") -> object:
    """Hand a notice to the notifications app (`ports.approval_notices`): it decides who
    hears it on which channels, and sends each message once. Idempotent."""
    return ports.approval_notices()(tenant_id, approval_id, kind, ref)


@shared_task(
    bind=True,
    name=NOTIFY_DECISION_TASK,
    autoretry_for=RETRYABLE_ERRORS,
    retry_backoff=2,
    retry_backoff_max=600,
    retry_jitter=True,
    max_retries=8,
    acks_late=True,
)
def notify_decision(self, tenant_id: int, approval_id: str) -> str:
    """POST the decided approval to the requesting token's webhook (`approvals_app.webhook_payloads`).
    Idempotent."""
    tenant = Tenant.objects.filter(pk=tenant_id).first()
    if tenant is None:
        return "no-tenant"
    with in_tenant(tenant):
        try:
            approval = ApprovalStore(tenant, Actor.system("webhook")).get(approval_id)
        except NotFound:
            return "no-approval"
        token = approval.requested_by_token
        if approval.status == ApprovalStatus.PENDING:
            return "pending"
        if token is None or token.revoked_at is not None or not token.webhook_url:
            return "no-webhook"
        payload = decided_payload(approval_data(approval))
        url, secret = token.webhook_url, token.webhook_secret
        delivery = delivery_id(tenant_id, approval_id, approval.status)
    # The HTTP call happens outside any database transaction.
    return deliver(url=url, secret=secret, event=EVENT_DECIDED, delivery=delivery, payload=payload)


@shared_task(acks_late=True)
def refresh_rollup(tenant_id: int | None = None) -> dict:
    """Roll up the approvals' quarters that can be closed now, per tenant (approvals_app.rollup)."""
    return for_each_tenant(
        lambda tenant: rollup.refresh(tenant.pk, timezone.now()),
        limit=ONE_CALL,
        tenant_id=tenant_id,
        name="approvals_rollup",
    ).as_dict()
