"""A generic signed webhook, for chat tools other than Slack (a bridge the tenant runs).

Each message is POSTed to the channel's `config.url` as JSON, signed in the
Standard Webhooks format with the channel's secret (`tenancy_app.webhooks`: the
same headers as the runtime webhooks, so any Standard Webhooks library
verifies it), through `stateroom.egress` (a private address only when
STATEROOM_WEBHOOK_ALLOW lists it):

    {"event": "approval.notice", "notification_id": "...", "recipient": "<chat user id>",
     "message": {kind, approval_id, title, text, url, tool_name, risk, summary,
                 key_arguments: [[name, value]], expires_at, status, outcome},
     "actions": {"open": "<console url>",
                 "decide": {"url": "<POST here>", "decisions": ["approve"],
                            "approval_id", "digest", "run_version"}}}

`actions.decide` is there only when the recipient may decide it now. The bridge
answers a person's choice by POSTing, signed the same way with the same secret,
`{"approval_id", "decision", "digest", "run_version", "user": "<chat user id>",
"reason": "..."}` to that URL (`notifications_app.interactions.webhook_action`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from django.urls import reverse

from stateroom import egress
from stateroom.canonical import canonical_json
from tenancy_app.webhooks import EVENT_HEADER, RETRYABLE_STATUSES, delivery_id, signed_headers

from .base import Message, RetryableSendError, SendRefused, Sent
from .slack import BUTTON_DECISIONS, decidable

EVENT = "approval.notice"
EVENT_UPDATED = "approval.updated"
TIMEOUT_SECONDS = 10.0


def send(channel, notification, message: Message) -> Sent:
    msg_id = delivery_id("notification", notification.tenant_id, notification.pk)
    return _post(channel, payload(channel, notification, message), msg_id)


def update(channel, notification, message: Message) -> None:
    """The outcome, as event `approval.updated` (the bridge rewrites its message)."""
    body = payload(channel, notification, message) | {"event": EVENT_UPDATED}
    _post(channel, body, delivery_id("notification-update", notification.pk, message.status))


def _post(channel, body_of: dict[str, Any], msg_id: str) -> Sent:
    url = str((channel.config or {}).get("url", ""))
    body = canonical_json(body_of)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "Stateroom-Webhook/1",
        EVENT_HEADER: body_of["event"],
        **signed_headers(channel.secret, msg_id, body, datetime.now(UTC)),
    }
    try:
        response = egress.post(url, content=body.encode(), headers=headers, timeout=TIMEOUT_SECONDS)
    except egress.UnsafeDestination as exc:
        raise SendRefused(f"Destination refused: {exc}") from exc
    except httpx.TransportError as exc:
        raise RetryableSendError(f"Could not reach the webhook: {exc}") from exc
    status = response.status_code
    if status >= 500 or status in RETRYABLE_STATUSES:
        raise RetryableSendError(f"The webhook answered {status}.")
    if status >= 300:
        raise SendRefused(f"The webhook answered {status}.")
    return Sent(detail=f"answered {status}")


def payload(channel, notification, message: Message) -> dict[str, Any]:
    actions: dict[str, Any] = {"open": message.url}
    if decidable(message):
        path = reverse(
            "hooks:webhook", kwargs={"slug": message.tenant_slug, "channel_id": channel.channel_id}
        )
        parts = urlsplit(message.url)
        actions["decide"] = {
            "url": urlunsplit((parts.scheme, parts.netloc, path, "", "")),
            "decisions": [d for d in BUTTON_DECISIONS if d in message.allowed_decisions],
            "approval_id": message.approval_id,
            "digest": message.digest,
            "run_version": message.run_version,
        }
    return {
        "event": EVENT,
        "notification_id": str(notification.pk),
        "recipient": notification.address,
        "message": {
            "kind": message.kind,
            "approval_id": message.approval_id,
            "title": message.title,
            "text": message.text,
            "url": message.url,
            "tool_name": message.tool_name,
            "risk": message.risk,
            "summary": message.summary,
            "key_arguments": [[name, value] for name, value in message.key_arguments],
            "expires_at": message.expires_at.isoformat() if message.expires_at else None,
            "status": message.status,
            "outcome": message.outcome,
        },
        "actions": actions,
    }
