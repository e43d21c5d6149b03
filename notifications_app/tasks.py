"""Celery tasks of the notifications app: delivering one notification."""

from __future__ import annotations

from celery import shared_task

from . import delivery
from .channels.base import RetryableSendError
from .fanout import DELIVER_TASK

MAX_RETRIES = 8


@shared_task(
    bind=True,
    name=DELIVER_TASK,
    autoretry_for=(RetryableSendError,),
    retry_backoff=2,
    retry_backoff_max=600,
    retry_jitter=True,
    max_retries=MAX_RETRIES,
    acks_late=True,
    ignore_result=True,
)
def deliver_notification(self, tenant_id: int, notification_id: int) -> str:
    """Send one notification (notifications_app.delivery); retried with backoff while the
    channel fails in a way worth retrying, at most `MAX_RETRIES` times. Idempotent."""
    final = self.request.retries >= self.max_retries
    return delivery.deliver(tenant_id, notification_id, final_attempt=final)
