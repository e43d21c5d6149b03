"""The outbox's depth at scrape time (stateroom.metrics): one bounded query, across
tenants through the SECURITY DEFINER function `outbox_metrics_depth` (migration 0003)."""

from __future__ import annotations

from django.db import connection
from django.utils import timezone
from prometheus_client.core import Metric

from stateroom import metrics


def depth() -> list[Metric]:
    """Jobs written but not yet handed to the broker, and the age of the oldest."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT tenant_slug, waiting, oldest FROM outbox_metrics_depth()")
        rows = cursor.fetchall()
    return metrics.depth_gauges(
        "stateroom_outbox_waiting",
        "Outbox jobs not yet published to the broker.",
        rows,
        now=timezone.now(),
    )
