"""Celery tasks of the approvals domain."""

from __future__ import annotations

from celery import shared_task

from stateroom.actor import Actor
from tenancy_app.jobs import for_each_tenant

from .store import ApprovalStore
from .webhooks import notify_decision  # noqa: F401  (registered with the worker from here)

SWEEP_BATCH = 500


@shared_task(acks_late=True)
def sweep_expired_approvals(tenant_id: int | None = None, limit: int = SWEEP_BATCH) -> dict:
    """Expire pending approvals past `expires_at`, per tenant, in batches.

    The store's rule applies: the run waiting on an expired approval is
    suspended, and the asking runtime's webhook hears of it.
    """
    result = for_each_tenant(
        lambda tenant: ApprovalStore(tenant, Actor.system("sweep")).expire_overdue(limit=limit),
        limit=limit,
        tenant_id=tenant_id,
        name="sweep_expired_approvals",
    )
    return result.as_dict()
