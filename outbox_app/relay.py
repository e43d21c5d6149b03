"""Writing jobs into the outbox, and relaying them to Celery.

`enqueue(tenant=…, task=…, args=[…])` is what stores call instead of
`transaction.on_commit(lambda: task.delay(…))`: the row is written in the
store's transaction, so the job exists exactly when the change committed,
whether or not the broker is reachable at that moment.

After the commit the row is published right away (`publish_committed`); if
the broker is down, the row waits. The relay (`relay_all`, run by the Celery
beat task `outbox_app.tasks.relay_outbox` and by `manage.py relay_outbox`)
publishes whatever waits, tenant by tenant, oldest first. A row is locked
(`FOR UPDATE SKIP LOCKED`) while it is published and marked sent in the same
transaction, so two relays do not publish it twice at once; a relay that dies
after publishing and before committing publishes it again later: delivery is
at least once, and every task is idempotent. The Celery task id of a row is
`outbox-<tenant>-<row id>` for every attempt.

In eager mode (`CELERY_TASK_ALWAYS_EAGER`: demo and unit tests) the job runs
in the process right after the commit, as `transaction.on_commit` ran it
before.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from tenancy_app.models import Tenant
from tenancy_app.scoping import as_a_job, in_tenant

from .models import OutboxMessage

logger = logging.getLogger(__name__)

BATCH = 100
# Sent rows are kept this long (what was published, when), then purged by the relay.
KEEP_SENT = timedelta(days=1)


def enqueue(
    *,
    tenant: Tenant,
    task: str,
    args: list[Any],
    kwargs: dict | None = None,
    right_away: bool = True,
) -> int:
    """Write a job for `task` into the caller's transaction; it is published after the commit.

    `right_away=False`: not by the committing thread but by the relay, within its
    interval (beat's `relay_outbox`, 5 s): for jobs a person waits on anyway (the
    notices of an approval), so the request that writes them does not pay the
    broker's round trip. In eager mode every job runs right after the commit.
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("jobs are enqueued inside the transaction of the change")
    message = OutboxMessage.objects.create(
        tenant=tenant, task=task, args=args, kwargs=kwargs or {}, created_at=timezone.now()
    )
    message_id = message.pk
    if right_away or _eager():
        transaction.on_commit(lambda: publish_committed(tenant, [message_id]))
    return message_id


def publish_committed(tenant: Tenant, ids: list[int]) -> None:
    """Right after the commit: run the jobs (eager) or publish them, leaving them on failure."""
    if _eager():
        with in_tenant(tenant):
            rows = list(_claim(tenant, ids))
        with as_a_job():  # not under the committing caller's in_tenant(atomic=False)
            for row in rows:
                _celery_task(row.task).apply_async(
                    args=row.args, kwargs=row.kwargs, task_id=_task_id(row)
                )
        return
    if not settings.STATEROOM_OUTBOX_PUBLISH_ON_COMMIT:
        return
    try:
        relay_tenant(tenant, ids=ids)
    except Exception:  # the relay publishes it later; the request has committed
        logger.exception("publishing outbox rows %s after commit failed", ids)


def relay_all(*, limit: int = BATCH) -> int:
    """Publish every waiting job of every tenant; how many were published."""
    published = 0
    for tenant in Tenant.objects.filter(pk__in=_tenants_waiting()).order_by("pk"):
        while True:
            count, more = relay_tenant(tenant, limit=limit)
            published += count
            if not more or not count:
                break
    _purge_sent()
    return published


def relay_tenant(
    tenant: Tenant, *, ids: list[int] | None = None, limit: int = BATCH
) -> tuple[int, bool]:
    """Publish up to `limit` waiting jobs of `tenant`; (published, whether more may wait).

    Stops at the first publishing failure (the broker is down): that row's
    `attempts` and `last_error` say so, and it stays waiting.
    """
    published: list[int] = []
    failed: tuple[int, str] | None = None
    with in_tenant(tenant):
        rows = OutboxMessage.objects.select_for_update(skip_locked=True).filter(
            tenant=tenant, sent_at__isnull=True
        )
        if ids is not None:
            rows = rows.filter(pk__in=ids)
        batch = list(rows.order_by("pk")[:limit])
        for row in batch:
            try:
                # By name: publishing needs no import of the task's module.
                _app().send_task(
                    row.task, args=row.args, kwargs=row.kwargs, task_id=_task_id(row), retry=False
                )
            except Exception as exc:
                failed = (row.pk, f"{type(exc).__name__}: {exc}"[:500])
                logger.warning(
                    "outbox: publishing %s (row %s) failed, it waits: %s", row.task, row.pk, exc
                )
                break
            published.append(row.pk)
        now = timezone.now()
        if published:
            OutboxMessage.objects.filter(tenant=tenant, pk__in=published).update(sent_at=now)
        if failed:
            row_id, error = failed
            OutboxMessage.objects.filter(tenant=tenant, pk=row_id).update(
                attempts=_plus_one(), last_error=error
            )
    return len(published), failed is None and len(batch) == limit


def waiting(tenant: Tenant) -> list[OutboxMessage]:
    with in_tenant(tenant):
        return list(
            OutboxMessage.objects.filter(tenant=tenant, sent_at__isnull=True).order_by("pk")
        )


def _claim(tenant: Tenant, ids: list[int]):
    now = timezone.now()
    rows = list(
        OutboxMessage.objects.select_for_update(skip_locked=True).filter(
            tenant=tenant, pk__in=ids, sent_at__isnull=True
        )
    )
    OutboxMessage.objects.filter(tenant=tenant, pk__in=[r.pk for r in rows]).update(sent_at=now)
    return rows


def _tenants_waiting() -> list[int]:
    """Tenants with waiting jobs: one narrow SECURITY DEFINER function (the table has RLS)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT tenant_id FROM outbox_tenants_waiting()")
        return [row[0] for row in cursor.fetchall()]


def _purge_sent() -> None:
    cutoff = timezone.now() - KEEP_SENT
    with connection.cursor() as cursor:
        cursor.execute("SELECT outbox_purge_sent(%s, %s)", [cutoff, 1000])


def _plus_one():
    from django.db.models import F

    return F("attempts") + 1


def _task_id(row: OutboxMessage) -> str:
    return f"outbox-{row.tenant_id}-{row.pk}"


def _app():
    from stateroom.celery import app

    return app


def _celery_task(name: str):
    app = _app()
    if name not in app.tasks:
        app.loader.import_default_modules()
    return app.tasks[name]


def _eager() -> bool:
    return bool(_app().conf.task_always_eager)
