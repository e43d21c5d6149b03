"""Tell a runtime that its approval was decided (or expired), by a signed webhook.

The store enqueues `notify_decision` through the outbox (`outbox_app`) with a
decision or an expiry, when the runtime token that asked has a `webhook_url`.
Delivery is at least once.

Request: `POST <webhook_url>`, JSON body
`{"event": "approval.decided", "approval": {...same fields as GET /api/v1/approvals/{id}}}`
(`approval.status` says approved, rejected or expired), signed in the
Standard Webhooks format (https://www.standardwebhooks.com/), so a receiver in
any language verifies it with that project's library:

- `webhook-id`: the same for every attempt of one outcome (dedupe on it),
- `webhook-timestamp`: unix seconds of this attempt,
- `webhook-signature`: `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`,
  keyed with the token's webhook secret (`whsec_…`, shown once when the
  token is made; for a secret made before this format, `sr_…`, the key is the
  secret's own bytes: a receiver uses `whsec_` + base64 of them),

plus `X-Stateroom-Event: approval.decided`. A 2xx answer ends it; a 5xx, 408,
429 or a network error is retried with exponential, jittered backoff (up to 8
retries); other 4xx answers are final, and so is a URL that resolves to a
private, loopback or link-local address (`stateroom.egress`).
"""

from __future__ import annotations

import hashlib
import logging
from datetime import UTC, datetime

import httpx
from celery import shared_task
from standardwebhooks import Webhook

from audit_app.actor import Actor
from stateroom import egress
from stateroom.canonical import canonical_json
from stateroom.errors import NotFound
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant
from tenancy_app.store import new_webhook_secret

from .models import ApprovalStatus

logger = logging.getLogger(__name__)

EVENT_DECIDED = "approval.decided"
EVENT_HEADER = "X-Stateroom-Event"
TIMEOUT_SECONDS = 10.0
RETRYABLE_STATUSES = frozenset({408, 429})
SECRET_PREFIX = "whsec_"


class WebhookDeliveryError(Exception):
    """The receiver answered with a status worth retrying."""


def new_secret() -> str:
    """A Standard Webhooks secret, as tokens get (tenancy_app.store)."""
    return new_webhook_secret()


def signer(secret: str) -> Webhook:
    if secret.startswith(SECRET_PREFIX):
        return Webhook(secret)
    return Webhook(secret.encode())  # a secret from before the Standard Webhooks format


def signed_headers(secret: str, msg_id: str, body: str, when: datetime) -> dict[str, str]:
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(when.timestamp())),
        "webhook-signature": signer(secret).sign(msg_id, when, body),
    }


def delivery_id(tenant_id: int, approval_id: str, status: str) -> str:
    """Stable across retries and duplicate runs of the task, distinct per outcome."""
    return hashlib.sha256(f"{tenant_id}:{approval_id}:{status}".encode()).hexdigest()[:32]


@shared_task(
    bind=True,
    autoretry_for=(httpx.TransportError, WebhookDeliveryError),
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
        payload = {"event": EVENT_DECIDED, "approval": ApprovalSerializer(approval).data}
        url, secret = token.webhook_url, token.webhook_secret
        delivery = delivery_id(tenant_id, approval_id, approval.status)
    # The HTTP call happens outside any database transaction.
    body = canonical_json(payload)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "Stateroom-Webhook/1",
        EVENT_HEADER: EVENT_DECIDED,
        **signed_headers(secret, delivery, body, datetime.now(UTC)),
    }
    try:
        response = egress.post(url, content=body.encode(), headers=headers, timeout=TIMEOUT_SECONDS)
    except egress.UnsafeDestination as exc:
        logger.warning("webhook %s for %s not sent: %s", delivery, approval_id, exc)
        return "refused:unsafe-destination"
    if response.status_code >= 500 or response.status_code in RETRYABLE_STATUSES:
        raise WebhookDeliveryError(f"{url} answered {response.status_code}")
    if response.status_code >= 300:
        logger.warning("webhook %s for %s refused: %s", delivery, approval_id, response.status_code)
        return f"refused:{response.status_code}"
    return "delivered"
