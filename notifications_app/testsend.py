"""Send a test message on a channel (the console's "Send test" button).

A minimal version: a Notification of kind "test" to one member on one channel,
delivered by `notifications_app.tasks.deliver_notification` through the outbox.
"""

from __future__ import annotations

from outbox_app.relay import enqueue
from stateroom.actor import Actor

from .models import Notification, NotificationStatus
from .store import NotificationStore


def send_test(tenant, actor: Actor, channel_id: str, user_id: int) -> Notification:
    """Queue a test message to `user_id` on `channel_id` (404 for another tenant's channel)."""
    store = NotificationStore(tenant, actor)
    with store.atomic():
        channel = store.channel(channel_id)
        now = store.now()
        notification = Notification.objects.create(
            tenant=tenant,
            approval_id="",
            kind="test",
            ref=now.isoformat(),
            recipient_id=user_id,
            channel=channel,
            channel_kind=channel.kind,
            status=NotificationStatus.QUEUED,
            created_at=now,
        )
        enqueue(
            tenant=tenant,
            task="notifications_app.tasks.deliver_notification",
            args=[tenant.pk, notification.pk],
        )
    return notification
