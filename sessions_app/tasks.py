"""Celery tasks of the sessions domain: lease expiry sweep, content deletion, retention.

Tasks take primitive ids, enter the tenant (`tenancy_app.jobs`), call store
methods and are idempotent: running one twice, or two at once, changes
nothing more than running it once.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.utils import timezone

from audit_app.actor import Actor
from stateroom.errors import NotFound
from tenancy_app.jobs import for_each_tenant, tenant_scope

from . import retention
from .deletion import DEFAULT_BATCH_SIZE, ContentDeletionStore, progress
from .store import SessionStore

logger = logging.getLogger(__name__)

SWEEP_BATCH = 500
DELETION_MAX_RETRIES = 5


@shared_task(acks_late=True)
def sweep_expired_sessions(tenant_id: int | None = None, limit: int = SWEEP_BATCH) -> dict:
    """Expire live sessions past their lease, per tenant, in batches of `limit`."""
    result = for_each_tenant(
        lambda tenant: SessionStore(tenant, Actor.system("sweep")).expire_overdue(limit=limit),
        limit=limit,
        tenant_id=tenant_id,
        name="sweep_expired_sessions",
    )
    return result.as_dict()


@shared_task(bind=True, acks_late=True, max_retries=DELETION_MAX_RETRIES)
def delete_session_content(
    self, tenant_id: int, deletion_id: str, batch_size: int = DEFAULT_BATCH_SIZE
) -> dict | None:
    """Run (or resume) one content deletion job.

    At-least-once delivery is fine: a finished job is returned unchanged, and
    a job that died mid-way continues where its last committed batch ended.
    After `max_retries` failures the job is marked failed (audited).
    """
    with tenant_scope(tenant_id) as tenant:
        if tenant is None:
            return None
        store = ContentDeletionStore(tenant, Actor.system("deletion"))
        try:
            deletion = store.run(deletion_id=deletion_id, batch_size=batch_size)
        except NotFound:
            logger.warning("deletion %s of tenant %s no longer exists", deletion_id, tenant_id)
            return None
        except Exception as exc:
            if self.request.retries >= self.max_retries:
                logger.exception("deletion %s failed for good", deletion_id)
                store.fail(deletion_id=deletion_id, error=f"{type(exc).__name__}: {exc}")
                return None
            raise self.retry(exc=exc, countdown=min(300, 5 * 2**self.request.retries)) from exc
        return progress(deletion)


@shared_task(acks_late=True)
def apply_retention(
    tenant_id: int | None = None, limit: int = retention.DEFAULT_SESSIONS_PER_RUN
) -> dict:
    """Daily: request deletion of content the tenants' retention policies say is due.

    Each batch (up to `limit` sessions per data class) is one tenant
    transaction; the deletion jobs it requests are enqueued when it commits.
    """
    now = timezone.now()
    result = for_each_tenant(
        lambda tenant: len(retention.apply(tenant, now=now, limit=limit)),
        limit=limit,
        tenant_id=tenant_id,
        name="apply_retention",
    )
    return result.as_dict()
