"""Celery tasks of the data lifecycle: the lease sweep, content deletion, retention, the reaper.

Tasks take primitive ids, enter the tenant (`tenancy_app.jobs`), call store
methods and are idempotent: running one twice, or two at once, changes
nothing more than running it once. They are acknowledged late and rejected
when their worker dies (settings: `CELERY_TASK_ACKS_LATE`,
`CELERY_TASK_REJECT_ON_WORKER_LOST`), and a deletion runs in slices of at
most `STATEROOM_JOB_SLICE_SECONDS`, each re-enqueueing the next, so the
Redis `visibility_timeout` (`STATEROOM_JOB_VISIBILITY_TIMEOUT`) fits the
longest task. A job a dead worker held is found by its heartbeat
(`reap_stalled_jobs`, every `STATEROOM_JOB_REAP_INTERVAL` seconds) well
before the broker would redeliver it.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from stateroom.actor import Actor
from stateroom.errors import NotFound
from tenancy_app.jobs import for_each_tenant, tenant_scope
from tenancy_app.scoping import tenant_transaction

from . import retention
from .deletion import DeletionStore, enqueue_job, progress
from .endings import SessionEndings
from .models import OPEN_STATUSES

logger = logging.getLogger(__name__)

SWEEP_BATCH = 500
DELETION_MAX_RETRIES = 5


@shared_task(acks_late=True)
def sweep_expired_sessions(tenant_id: int | None = None, limit: int = SWEEP_BATCH) -> dict:
    """Expire live sessions past their lease (settling their waiting runs), per tenant."""
    result = for_each_tenant(
        lambda tenant: SessionEndings(tenant, Actor.system("sweep")).expire_overdue(limit=limit),
        limit=limit,
        tenant_id=tenant_id,
        name="sweep_expired_sessions",
    )
    return result.as_dict()


@shared_task(bind=True, acks_late=True, max_retries=DELETION_MAX_RETRIES)
def delete_session_content(
    self, tenant_id: int, deletion_id: str, batch_size: int | None = None
) -> dict | None:
    """Run (or resume) one content deletion job, one time slice; the next slice is enqueued.

    At-least-once delivery is fine: a finished job is returned unchanged, and
    a job that died mid-way continues where its last committed batch ended.
    After `max_retries` failures the job is marked failed (audited).
    """
    with tenant_scope(tenant_id) as tenant:
        if tenant is None:
            return None
        store = DeletionStore(tenant, Actor.system("deletion"))
        try:
            deletion = store.run(
                deletion_id=deletion_id,
                batch_size=batch_size or settings.STATEROOM_DELETION_BATCH_SIZE,
                time_budget=settings.STATEROOM_JOB_SLICE_SECONDS,
            )
        except NotFound:
            logger.warning("deletion %s of tenant %s no longer exists", deletion_id, tenant_id)
            return None
        except Exception as exc:
            if self.request.retries >= self.max_retries:
                logger.exception("deletion %s failed for good", deletion_id)
                store.fail(deletion_id=deletion_id, error=f"{type(exc).__name__}: {exc}")
                return None
            raise self.retry(exc=exc, countdown=min(300, 5 * 2**self.request.retries)) from exc
        state = progress(deletion, timezone.now())
        if deletion.status in OPEN_STATUSES:  # the time slice is spent: the rest is a new job
            with tenant_transaction(tenant_id):
                enqueue_job(tenant, deletion_id)
    return state


@shared_task(acks_late=True)
def reap_stalled_jobs(tenant_id: int | None = None, limit: int = SWEEP_BATCH) -> dict:
    """Re-enqueue deletion jobs no live worker holds (heartbeat older than the bound)."""
    result = for_each_tenant(
        lambda tenant: len(DeletionStore(tenant, Actor.system("reaper")).reap_stalled(limit=limit)),
        limit=limit,
        tenant_id=tenant_id,
        name="reap_stalled_jobs",
    )
    return result.as_dict()


@shared_task(acks_late=True)
def apply_retention(
    tenant_id: int | None = None, limit: int = retention.DEFAULT_SESSIONS_PER_RUN
) -> dict:
    """Daily: request deletion of content the tenants' retention policies say is due.

    Each batch (up to `limit` sessions per group) is one tenant transaction;
    the deletion jobs it requests are enqueued when it commits.
    """
    now = timezone.now()
    result = for_each_tenant(
        lambda tenant: len(retention.apply(tenant, now=now, limit=limit)),
        limit=limit,
        tenant_id=tenant_id,
        name="apply_retention",
    )
    return result.as_dict()
