"""Tell a runtime that its approval was decided (or expired), by a signed webhook.

The store enqueues `notify_decision` through the outbox (`outbox_app`) with a
decision or an expiry, when the runtime token that asked has a `webhook_url`.
Delivery is at least once. Signing, headers, retries and the egress check
are `tenancy_app.webhooks` (runs tell their runtimes through it too).

Request: `POST <webhook_url>`, JSON body
`{"event": "approval.decided", "approval": {...same fields as GET /api/v1/approvals/{id}}}`
(`approval.status` says approved, rejected, responded, expired, cancelled or voided,
and `approval.decision` which decision was taken), signed in the
Standard Webhooks format (`webhook-id`, the same for every attempt of one
outcome; `webhook-timestamp`; `webhook-signature`), plus
`X-Stateroom-Event: approval.decided`. A 2xx answer ends it; a 5xx, 408,
429 or a network error is retried with exponential, jittered backoff (up to
8 retries); other 4xx answers are final, and so is a URL that resolves to a
private, loopback or link-local address (`stateroom.egress`).
"""

from __future__ import annotations

from celery import shared_task

from stateroom.actor import Actor
from stateroom.errors import NotFound
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant
from tenancy_app.store import new_webhook_secret
from tenancy_app.webhooks import (  # noqa: F401  (signer, signed_headers: for receivers and tests)
    EVENT_HEADER,
    RETRYABLE_ERRORS,
    SECRET_PREFIX,
    WebhookDeliveryError,
    deliver,
    signed_headers,
    signer,
)
from tenancy_app.webhooks import delivery_id as _delivery_id

from .models import ApprovalStatus

EVENT_DECIDED = "approval.decided"


def new_secret() -> str:
    """A Standard Webhooks secret, as tokens get (tenancy_app.store)."""
    return new_webhook_secret()


def delivery_id(tenant_id: int, approval_id: str, status: str) -> str:
    """Stable across retries and duplicate runs of the task, distinct per outcome."""
    return _delivery_id(tenant_id, approval_id, status)


@shared_task(
    bind=True,
    autoretry_for=RETRYABLE_ERRORS,
    retry_backoff=2,
    retry_backoff_max=600,
    retry_jitter=True,
    max_retries=8,
    acks_late=True,
)
def notify_decision(self, tenant_id: int, approval_id: str) -> str:
    """POST the decided approval to the requesting token's webhook. Idempotent."""
    from .api import ApprovalSerializer  # the payload is exactly what GET returns
    from .store import ApprovalStore

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
        payload = {"approval": ApprovalSerializer(approval).data}
        url, secret = token.webhook_url, token.webhook_secret
        delivery = delivery_id(tenant_id, approval_id, approval.status)
    # The HTTP call happens outside any database transaction.
    return deliver(url=url, secret=secret, event=EVENT_DECIDED, delivery=delivery, payload=payload)
