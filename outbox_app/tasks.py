"""The relay as a Celery beat task (the other way to run it is `manage.py relay_outbox`)."""

from __future__ import annotations

from celery import shared_task

from .relay import relay_all


@shared_task(acks_late=True, ignore_result=True)
def relay_outbox() -> int:
    """Publish every job waiting in the outbox (left there while the broker was down)."""
    return relay_all()
