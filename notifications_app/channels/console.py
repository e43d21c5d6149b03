"""The console: nothing to send. A console notification is sent when it is written; the
console's badge reads them (`Notification` rows of `channel_kind` console)."""

from __future__ import annotations

from .base import Message, Sent


def send(channel, notification, message: Message) -> Sent:
    return Sent(detail="shown in the console")
