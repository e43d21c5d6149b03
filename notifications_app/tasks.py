"""Celery tasks of the notifications app: delivering a notice's notifications."""

from __future__ import annotations

from collections import Counter

from celery import shared_task

from . import delivery
from .channels.base import RetryableSendError
from .fanout import DELIVER_MANY_TASK, DELIVER_TASK

MAX_RETRIES = 8

RETRIED = {
    "bind": True,
    "autoretry_for": (RetryableSendError,),
    "retry_backoff": 2,
    "retry_backoff_max": 600,
    "retry_jitter": True,
    "max_retries": MAX_RETRIES,
    "acks_late": True,
    "ignore_result": True,
}


@shared_task(name=DELIVER_MANY_TASK, **RETRIED)
def deliver_notifications(self, tenant_id: int, notification_ids: list[int]) -> str:
    """Send a notice's notifications (notifications_app.delivery.deliver_many: one
    approval read, one SMTP connection, one UPDATE); retried with backoff while a
    channel fails in a way worth retrying, at most `MAX_RETRIES` times, each retry
    sending only what is not sent yet. Idempotent. What became of them, counted."""
    final = self.request.retries >= self.max_retries
    outcomes = delivery.deliver_many(tenant_id, notification_ids, final_attempt=final)
    return ", ".join(f"{n} {said}" for said, n in sorted(Counter(outcomes.values()).items()))


@shared_task(name=DELIVER_TASK, **RETRIED)
def deliver_notification(self, tenant_id: int, notification_id: int) -> str:
    """Send one notification (jobs queued one per notification, a channel's test
    message): `deliver_notifications` of one. Idempotent."""
    final = self.request.retries >= self.max_retries
    return delivery.deliver(tenant_id, notification_id, final_attempt=final)
