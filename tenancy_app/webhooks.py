"""Signed webhooks to a runtime token's `webhook_url`: one mechanism for every event.

A runtime token may carry a `webhook_url` and a `webhook_secret`. Domain apps
tell the runtime about what happened through `deliver()`, from a Celery task
enqueued through the outbox with their change (approvals: a decision or an
expiry; runs: a person cancelled, suspended or resumed the run).

Request: `POST <webhook_url>`, JSON body `{"event": "<name>", ...}` (RFC 8785
canonical JSON), signed in the Standard Webhooks format
(https://www.standardwebhooks.com/), so a receiver in any language verifies
it with that project's library:

- `webhook-id`: the same for every attempt of one outcome (dedupe on it),
- `webhook-timestamp`: unix seconds of this attempt,
- `webhook-signature`: `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`,
  keyed with the token's webhook secret (`whsec_…`, shown once when the
  token is made; for a secret made before this format, `sr_…`, the key is the
  secret's own bytes: a receiver uses `whsec_` + base64 of them),

plus `X-Stateroom-Event: <name>`. A 2xx answer ends it; a 5xx, 408, 429 or a
network error raises (the task retries with backoff); other 4xx answers are
final, and so is a URL that resolves to a private, loopback or link-local
address (`stateroom.egress`).
"""

from __future__ import annotations

import hashlib
import logging
from datetime import UTC, datetime
from typing import Any

import httpx
from standardwebhooks import Webhook

from stateroom import egress
from stateroom.canonical import canonical_json

logger = logging.getLogger(__name__)

EVENT_HEADER = "X-Stateroom-Event"
TIMEOUT_SECONDS = 10.0
RETRYABLE_STATUSES = frozenset({408, 429})
SECRET_PREFIX = "whsec_"


class WebhookDeliveryError(Exception):
    """The receiver answered with a status worth retrying."""


# What a task that delivers retries on (its autoretry_for).
RETRYABLE_ERRORS: tuple[type[Exception], ...] = (httpx.TransportError, WebhookDeliveryError)


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


def delivery_id(*parts: Any) -> str:
    """Stable across retries and duplicate runs of a task, distinct per outcome."""
    return hashlib.sha256(":".join(str(p) for p in parts).encode()).hexdigest()[:32]


def deliver(*, url: str, secret: str, event: str, delivery: str, payload: dict[str, Any]) -> str:
    """POST one signed event: "delivered", "refused:<why>", or raise to be retried.

    Called outside any database transaction (the HTTP call may take seconds).
    """
    body = canonical_json({"event": event, **payload})
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "Stateroom-Webhook/1",
        EVENT_HEADER: event,
        **signed_headers(secret, delivery, body, datetime.now(UTC)),
    }
    try:
        response = egress.post(url, content=body.encode(), headers=headers, timeout=TIMEOUT_SECONDS)
    except egress.UnsafeDestination as exc:
        logger.warning("webhook %s (%s) not sent: %s", delivery, event, exc)
        return "refused:unsafe-destination"
    if response.status_code >= 500 or response.status_code in RETRYABLE_STATUSES:
        raise WebhookDeliveryError(f"{url} answered {response.status_code}")
    if response.status_code >= 300:
        logger.warning("webhook %s (%s) refused: %s", delivery, event, response.status_code)
        return f"refused:{response.status_code}"
    return "delivered"
