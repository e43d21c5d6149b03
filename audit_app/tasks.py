"""Celery tasks of the audit domain."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from .anchor import write_anchors

logger = logging.getLogger(__name__)


@shared_task(acks_late=True, ignore_result=True)
def anchor_audit_heads() -> int:
    """Append every tenant's audit chain head to the anchor file (STATEROOM_AUDIT_ANCHOR_DIR)."""
    if not settings.STATEROOM_AUDIT_ANCHOR_DIR:
        logger.warning("STATEROOM_AUDIT_ANCHOR_DIR is not set: audit chain heads are not anchored")
        return 0
    return write_anchors()
