"""What a runtime's webhook hears of its approval: the event, the task that tells it, the
delivery id. Below the store and the API; the task itself is `approvals_app.tasks`.

The store enqueues `NOTIFY_DECISION_TASK` through the outbox (`outbox_app`) with a
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

from typing import Any

from tenancy_app.store import new_webhook_secret
from tenancy_app.webhooks import delivery_id as _delivery_id

EVENT_DECIDED = "approval.decided"
# The registered name of `approvals_app.tasks.notify_decision`: queued jobs carry it, so it
# stays the name the task had when it lived in `approvals_app.webhooks`.
NOTIFY_DECISION_TASK = "approvals_app.webhooks.notify_decision"


def new_secret() -> str:
    """A Standard Webhooks secret, as tokens get (tenancy_app.store)."""
    return new_webhook_secret()


def delivery_id(tenant_id: int, approval_id: str, status: str) -> str:
    """Stable across retries and duplicate runs of the task, distinct per outcome."""
    return _delivery_id(tenant_id, approval_id, status)


def decided_payload(approval: dict[str, Any]) -> dict[str, Any]:
    """The body's payload: the approval exactly as GET returns it (`event` is added on delivery)."""
    return {"approval": approval}
