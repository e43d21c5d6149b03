"""Celery tasks whose step spans domains."""

from __future__ import annotations

from celery import shared_task

from stateroom.actor import Actor
from tenancy_app.jobs import for_each_tenant

from .runs import RunActions

SWEEP_BATCH = 500


@shared_task(acks_late=True)
def sweep_overdue_runs(tenant_id: int | None = None, limit: int = SWEEP_BATCH) -> dict:
    """Fail non-terminal runs past their deadline (`deadline_exceeded`), per tenant, in batches.

    Each failed run's pending approval is withdrawn in the same transaction.
    """
    result = for_each_tenant(
        lambda tenant: RunActions(tenant, Actor.system("sweep")).fail_overdue(limit=limit),
        limit=limit,
        tenant_id=tenant_id,
        name="sweep_overdue_runs",
    )
    return result.as_dict()
