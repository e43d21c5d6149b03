"""Tell a runtime that its approval was decided (or expired), by a signed webhook.

The store enqueues `notify_decision` through the outbox (`outbox_app`) with a
decision or an expiry, when the runtime token that asked has a `webhook_url`.
Delivery is at least once: a receiver dedupes on `X-Stateroom-Delivery`,
which is the same for every attempt of one outcome.

Request: `POST <webhook_url>`, JSON body
`{"event": "approval.decided", "approval": {...same fields as GET /api/v1/approvals/{id}}}`
(`approval.status` says approved, rejected or expired), headers
`X-Stateroom-Event: approval.decided`, `X-Stateroom-Delivery: <id>`,
`X-Stateroom-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>`.
A 2xx answer ends it; a 5xx, 408, 429 or a network error is retried with
exponential, jittered backoff (up to 8 retries); other 4xx answers are final.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time

import httpx
from celery import shared_task

from audit_app.actor import Actor
from stateroom.errors import NotFound
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant

from .models import ApprovalStatus

logger = logging.getLogger(__name__)

EVENT_DECIDED = "approval.decided"
SIGNATURE_HEADER = "X-Stateroom-Signature"
EVENT_HEADER = "X-Stateroom-Event"
DELIVERY_HEADER = "X-Stateroom-Delivery"
TIMEOUT_SECONDS = 10.0
RETRYABLE_STATUSES = frozenset({408, 429})


class WebhookDeliveryError(Exception):
    """The receiver answered with a status worth retrying."""


def sign(secret: str, body: bytes | str, timestamp: int) -> str:
    """The `X-Stateroom-Signature` value for `body` sent at `timestamp`."""
    raw = body.decode() if isinstance(body, bytes) else body
    mac = hmac.new(secret.encode(), f"{timestamp}.{raw}".encode(), hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify_signature(
    secret: str,
    header: str,
    body: bytes | str,
    tolerance: int = 300,
    *,
    now: float | None = None,
) -> bool:
    """True if `header` signs `body` with `secret` and is at most `tolerance` seconds old.

    How a receiver checks a delivery:

    1. Read the raw request body (bytes, before any JSON parsing) and the
       `X-Stateroom-Signature` header, e.g. `t=1767225600,v1=5f2b…`.
    2. Compute `HMAC-SHA256(key=webhook_secret, msg=f"{t}.{body}")` as hex.
    3. Compare it with each `v1=` value in constant time; refuse if none match.
    4. Refuse if `|now - t| > tolerance` (replays of old deliveries).
    5. Dedupe on `X-Stateroom-Delivery`: a retried delivery carries the same id.

    `verify_signature(secret, request.headers["X-Stateroom-Signature"], request.body)`
    does steps 1-4.
    """
    timestamp: int | None = None
    candidates: list[str] = []
    for part in (header or "").split(","):
        key, _, value = part.strip().partition("=")
        if key == "t":
            try:
                timestamp = int(value)
            except ValueError:
                return False
        elif key == "v1" and value:
            candidates.append(value)
    if timestamp is None or not candidates:
        return False
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        return False
    expected = sign(secret, body, timestamp).partition(",v1=")[2]
    return any(hmac.compare_digest(expected, candidate) for candidate in candidates)


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
    body = json.dumps(payload, separators=(",", ":"), sort_keys=True)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "Stateroom-Webhook/1",
        EVENT_HEADER: EVENT_DECIDED,
        DELIVERY_HEADER: delivery,
        SIGNATURE_HEADER: sign(secret, body, int(time.time())),
    }
    response = httpx.post(url, content=body.encode(), headers=headers, timeout=TIMEOUT_SECONDS)
    if response.status_code >= 500 or response.status_code in RETRYABLE_STATUSES:
        raise WebhookDeliveryError(f"{url} answered {response.status_code}")
    if response.status_code >= 300:
        logger.warning("webhook %s for %s refused: %s", delivery, approval_id, response.status_code)
        return f"refused:{response.status_code}"
    return "delivered"
