"""What every channel sender shares: the message it is given and how it reports.

A sender module (`email`, `slack`, `webhook`, `console`) provides

    send(channel: Channel | None, notification: Notification, message: Message) -> Sent
    update(channel: Channel, notification: Notification, message: Message) -> None  # optional

`send` delivers one message to one recipient (`notification.address`) and
returns `Sent` (with `external_ref`, where the message now is, when the
channel can update it later); it raises `RetryableSendError` for what is worth
retrying (a network error, a 5xx, 429) and `SendRefused` for what is not.
`update` rewrites a sent message with the approval's outcome (chat). They are
called by `notifications_app.delivery` outside any database transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


class RetryableSendError(Exception):
    """Worth trying again later (the task retries with backoff)."""


class SendRefused(Exception):
    """Final: the destination refused it, or it may not be sent there."""


@dataclass(frozen=True)
class Sent:
    external_ref: dict[str, Any] | None = None
    detail: str = ""


@dataclass(frozen=True)
class Message:
    """One notice of one approval, as one recipient may see it (notifications_app.messages).

    `key_arguments` holds only the call's key arguments, trimmed; nothing else of
    the arguments and no secret is ever in a message. `url` is the approval's
    page in the console (it asks to log in; no decision is taken by following it).
    """

    kind: str
    tenant_slug: str
    approval_id: str
    title: str
    text: str
    url: str
    tool_name: str = ""
    risk: str = ""
    summary: str = ""
    key_arguments: list[tuple[str, str]] = field(default_factory=list)
    expires_at: datetime | None = None
    status: str = "pending"
    outcome: str = ""
    # Binding for a decision given from the message (chat buttons): the call as shown.
    digest: str = ""
    run_version: int | None = None
    allowed_decisions: list[str] = field(default_factory=list)
    recipient_can_decide: bool = False
