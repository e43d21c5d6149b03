"""The pending backlog at scrape time (stateroom.metrics): one bounded query, across
tenants through the SECURITY DEFINER function `approvals_metrics_backlog` (migration 0012)."""

from __future__ import annotations

from django.db import connection
from django.utils import timezone
from prometheus_client.core import Metric

from stateroom import metrics

from .models import Risk


def backlog() -> list[Metric]:
    """Pending approvals (not past their deadline) by risk, and the age of the oldest."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT tenant_slug, risk, pending, oldest FROM approvals_metrics_backlog()")
        rows = cursor.fetchall()
    return metrics.depth_gauges(
        "stateroom_approvals_pending",
        "Approvals waiting for a decision, by risk.",
        rows,
        labels=("risk",),
        keys=[(risk.value,) for risk in Risk],
        now=timezone.now(),
    )
