"""Deleting the content of a session (DESIGN.md section 4: close is not delete).

`ContentDeletionStore.request` records a deletion job (and its audit event)
and enqueues it on commit; `run` is the job. The job works in batches of
bounded size, each batch one short transaction that removes content AND adds
it to the receipt's counts, so a job killed at any point is resumed by
running it again and its counts still add up. Between batches it
re-reads the legal holds (session and tenant) and stops with status
`refused` when one is on.

What goes, per data class:
- `session_items`: the session's conversation items (rows deleted);
- `run_event_payloads`: payloads of the session's runs' events (NULL + payload_deleted_at);
- `checkpoint_bodies`: checkpoint states of the tasks those runs worked on
  (NULL + body_deleted_at), except tasks that also serve a session on legal hold;
- `effect_payloads`: request/result/error of the runs' effect records
  (NULL + redacted_at); key, digest, status and tool stay, so idempotency holds.

What stays: the Session row as a tombstone (ids, user id, status, times,
metadata; the counts are in the receipts), audit events, effect records
(redacted), runs with their transitions and node executions, and approval
requests (the decided call is part of the audit record).

Late writes: a closed/expired session takes no new items (terminal). Runs and
tasks are not stopped by a deletion: a run still executing can append events,
checkpoints or effects afterwards. Those are new content: `preview` shows
them, a new deletion removes them, and retention selects sessions by
remaining content, so it removes them on its next run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime

from django.db import transaction
from django.db.models import Q, QuerySet

from audit_app.models import AuditEvent
from effects_app.models import ExternalEffect
from outbox_app import relay as outbox
from runs_app.models import Run, RunEvent
from stateroom.errors import Conflict, NotFound, Unprocessable
from stateroom.ids import new_public_id
from tasks_app.models import Task, TaskCheckpoint
from tenancy_app.base_store import BaseStore
from tenancy_app.models import Tenant
from tenancy_app.scoping import tenant_transaction

from .models import ContentDeletion, DeletionStatus, Session, SessionAttachment, SessionItem

SESSION_ITEMS = "session_items"
RUN_EVENT_PAYLOADS = "run_event_payloads"
CHECKPOINT_BODIES = "checkpoint_bodies"
EFFECT_PAYLOADS = "effect_payloads"
# Deletion order: what people read first goes first.
DATA_CLASSES: tuple[str, ...] = (
    SESSION_ITEMS,
    RUN_EVENT_PAYLOADS,
    CHECKPOINT_BODIES,
    EFFECT_PAYLOADS,
)
OPEN_STATUSES = (DeletionStatus.PENDING, DeletionStatus.RUNNING)
DEFAULT_BATCH_SIZE = 1000
MAX_BATCH_SIZE = 50_000

BatchHook = Callable[[ContentDeletion], None]


def _session_pks(sessions: Session | QuerySet | list[int]):
    return [sessions.pk] if isinstance(sessions, Session) else sessions


def session_runs(tenant: Tenant, sessions: Session | QuerySet | list[int]) -> QuerySet[Run]:
    """Runs whose content belongs to the session(s): created in it or ever attached to it.

    `sessions` is one Session, or session pks (a list or a `values("pk")` queryset).
    """
    pks = _session_pks(sessions)
    attached = SessionAttachment.objects.filter(tenant=tenant, session__in=pks).values("run_id")
    return Run.objects.filter(tenant=tenant).filter(Q(session__in=pks) | Q(run_id__in=attached))


def session_tasks(tenant: Tenant, sessions: Session | QuerySet | list[int]) -> QuerySet[Task]:
    """Tasks the session's runs worked on, minus those shared with a session on legal hold."""
    runs = session_runs(tenant, sessions).values("task_id")
    # task_id IS NOT NULL: one task-less held run would put a NULL in the list,
    # and `NOT IN (…, NULL)` is never true, so no checkpoint would ever go.
    held = Run.objects.filter(tenant=tenant, session__legal_hold=True, task__isnull=False).values(
        "task_id"
    )
    return Task.objects.filter(tenant=tenant, pk__in=runs).exclude(pk__in=held)


def remaining(
    tenant: Tenant, sessions: Session | QuerySet | list[int], data_class: str
) -> QuerySet:
    """The rows of one data class of the session(s) that still hold content."""
    if data_class == SESSION_ITEMS:
        return SessionItem.objects.filter(tenant=tenant, session__in=_session_pks(sessions))
    runs = session_runs(tenant, sessions).values("pk")
    if data_class == RUN_EVENT_PAYLOADS:
        return RunEvent.objects.filter(tenant=tenant, run__in=runs, payload_deleted_at__isnull=True)
    if data_class == CHECKPOINT_BODIES:
        tasks = session_tasks(tenant, sessions).values("pk")
        return TaskCheckpoint.objects.filter(
            tenant=tenant, task__in=tasks, body_deleted_at__isnull=True
        )
    if data_class == EFFECT_PAYLOADS:
        return ExternalEffect.objects.filter(tenant=tenant, run__in=runs, redacted_at__isnull=True)
    raise ValueError(f"unknown data class {data_class!r}")


class _Sweep:
    """Where one `run` call has got to: a keyset cursor per (data class, container).

    Containers are what the rows hang off and are indexed by: the session
    (items, by seq), each run (events by seq, effects by id), each task
    (checkpoints by seq). Walking each container's index from the last key
    keeps every batch's queries short however far the job has got; the
    cursors live in memory only, so a resumed job rescans from the start
    once, and the "nothing left" check before closing the receipt reads the
    tables themselves.
    """

    def __init__(self, tenant: Tenant, session: Session, classes: Iterable[str]) -> None:
        self.tenant = tenant
        self.classes = list(classes)
        self.restart(session)

    def restart(self, session: Session) -> None:
        tenant = self.tenant
        runs = list(session_runs(tenant, session).order_by("pk").values_list("pk", flat=True))
        tasks = list(session_tasks(tenant, session).order_by("pk").values_list("pk", flat=True))
        containers = {
            SESSION_ITEMS: [session.pk],
            RUN_EVENT_PAYLOADS: runs,
            CHECKPOINT_BODIES: tasks,
            EFFECT_PAYLOADS: runs,
        }
        self.todo: list[tuple[str, int]] = [
            (cls, pk) for cls in DATA_CLASSES if cls in self.classes for pk in containers[cls]
        ]
        self.cursor: dict[tuple[str, int], int] = {}

    def _rows(self, data_class: str, container: int, after: int) -> tuple[QuerySet, str]:
        tenant = self.tenant
        if data_class == SESSION_ITEMS:
            rows = SessionItem.objects.filter(tenant=tenant, session_id=container)
            return rows.filter(seq__gt=after), "seq"
        if data_class == RUN_EVENT_PAYLOADS:
            rows = RunEvent.objects.filter(
                tenant=tenant, run_id=container, payload_deleted_at__isnull=True
            )
            return rows.filter(seq__gt=after), "seq"
        if data_class == CHECKPOINT_BODIES:
            rows = TaskCheckpoint.objects.filter(
                tenant=tenant, task_id=container, body_deleted_at__isnull=True
            )
            return rows.filter(seq__gt=after), "seq"
        rows = ExternalEffect.objects.filter(
            tenant=tenant, run_id=container, redacted_at__isnull=True
        )
        return rows.filter(pk__gt=after), "pk"

    def batch(self, *, limit: int, now: datetime) -> dict[str, int]:
        """Remove the content of up to `limit` rows; returns how many per data class.

        Per container: find the key of the `budget`-th row with content after
        the cursor, then clear the whole key range up to it in one statement
        (an index range, no list of ids); without such a row, clear the rest
        and move on to the next container.
        """
        handled: dict[str, int] = {}
        budget = limit
        while self.todo and budget:
            data_class, container = key = self.todo[0]
            rows, order = self._rows(data_class, container, self.cursor.get(key, 0))
            boundary = rows.order_by(order).values_list(order, flat=True)[budget - 1 : budget]
            boundary = boundary[0] if boundary else None
            if boundary is None:
                count = _remove(data_class, rows, now)
                self.todo.pop(0)
            else:
                count = _remove(data_class, rows.filter(**{f"{order}__lte": boundary}), now)
                self.cursor[key] = boundary
            if count:
                handled[data_class] = handled.get(data_class, 0) + count
            budget -= min(count, budget)
        return handled


def _remove(data_class: str, rows: QuerySet, now: datetime) -> int:
    if data_class == SESSION_ITEMS:
        deleted, _ = rows.delete()
        return deleted
    if data_class == RUN_EVENT_PAYLOADS:
        return rows.update(payload=None, payload_deleted_at=now)
    if data_class == CHECKPOINT_BODIES:
        return rows.update(state=None, body_deleted_at=now)
    return rows.update(request=None, result=None, error=None, redacted_at=now)


def progress(deletion: ContentDeletion) -> dict:
    """What the console shows while a job runs: planned vs deleted, and whether it is done.

    `percent` reaches 100 only at status `done` (the console never says
    "deleted" before the job has finished); counts may pass the plan when
    content was written between the request and the job.
    """
    planned_total = sum(deletion.planned.values())
    deleted_total = sum(deletion.counts.values())
    done = deletion.status == DeletionStatus.DONE
    if done:
        percent = 100
    elif planned_total:
        percent = min(99, deleted_total * 100 // planned_total)
    else:
        percent = 0
    elapsed = None
    rate = None
    if deletion.started_at:
        end = deletion.finished_at if deletion.finished_at else None
        if end is not None:
            elapsed = (end - deletion.started_at).total_seconds()
            rate = round(deleted_total / elapsed, 1) if elapsed > 0 else None
    return {
        "deletion_id": deletion.deletion_id,
        "status": deletion.status,
        "planned": dict(deletion.planned),
        "counts": dict(deletion.counts),
        "planned_total": planned_total,
        "deleted_total": deleted_total,
        "percent": percent,
        "done": done,
        "finished": deletion.status not in OPEN_STATUSES,
        "elapsed_seconds": elapsed,
        "rows_per_second": rate,
    }


# The Celery task that runs a deletion job (sessions_app.tasks imports this module).
DELETE_TASK = "sessions_app.tasks.delete_session_content"


class ContentDeletionStore(BaseStore):
    """Content deletion jobs of one tenant, and their receipts."""

    # --- reads ---------------------------------------------------------------
    def _session(self, session_id: str, *, lock: bool = False) -> Session:
        queryset = Session.objects.filter(tenant=self.tenant, session_id=session_id)
        if lock:
            queryset = queryset.select_for_update()
        session = queryset.first()
        if session is None:
            raise NotFound("No such session.", details={"session_id": session_id})
        return session

    def get(self, deletion_id: str) -> ContentDeletion:
        deletion = (
            ContentDeletion.objects.filter(tenant=self.tenant, deletion_id=deletion_id)
            .select_related("session")
            .first()
        )
        if deletion is None:
            raise NotFound("No such deletion.", details={"deletion_id": deletion_id})
        return deletion

    def for_session(self, session_id: str) -> QuerySet[ContentDeletion]:
        """The session's deletion jobs and receipts, newest first (404 for an unknown session)."""
        session = self._session(session_id)
        return ContentDeletion.objects.filter(tenant=self.tenant, session=session).order_by("-id")

    def progress(self, deletion_id: str) -> dict:
        return progress(self.get(deletion_id))

    def legal_hold(self, session: Session) -> str | None:
        """Which legal hold blocks deleting this session's content: "tenant", "session" or None.

        Read from the database, not from objects that may be stale.
        """
        tenant_held = Tenant.objects.filter(pk=self.tenant.pk).values_list("legal_hold", flat=True)
        if tenant_held.first():
            return "tenant"
        session_held = Session.objects.filter(tenant=self.tenant, pk=session.pk).values_list(
            "legal_hold", flat=True
        )
        if session_held.first():
            return "session"
        return None

    def count_remaining(
        self, session: Session, classes: Iterable[str] = DATA_CLASSES
    ) -> dict[str, int]:
        return {cls: remaining(self.tenant, session, cls).count() for cls in classes}

    def preview(self, *, session_id: str) -> dict:
        """What a deletion of this session would remove now, and what it keeps."""
        session = self._session(session_id)
        runs = session_runs(self.tenant, session)
        run_ids = list(runs.values_list("run_id", flat=True))
        audit_events = AuditEvent.objects.filter(tenant=self.tenant).filter(
            Q(target_type="session", target_id=session.session_id)
            | Q(target_type="run", target_id__in=run_ids)
        )
        open_deletion = (
            ContentDeletion.objects.filter(
                tenant=self.tenant, session=session, status__in=OPEN_STATUSES
            )
            .values_list("deletion_id", flat=True)
            .first()
        )
        return {
            "session_id": session.session_id,
            "status": session.status,
            "delete": self.count_remaining(session),
            "retain": {
                "audit_events": audit_events.count(),
                "effect_records": ExternalEffect.objects.filter(
                    tenant=self.tenant, run__in=runs.values("pk")
                ).count(),
                "runs": len(run_ids),
            },
            "legal_hold": self.legal_hold(session),
            "deletion_in_progress": open_deletion,
            "content_deleted_at": session.content_deleted_at,
        }

    # --- request -------------------------------------------------------------
    def request(
        self,
        *,
        session_id: str,
        reason: str,
        policy: str = "manual",
        classes: Iterable[str] | None = None,
        enqueue: bool = True,
    ) -> ContentDeletion:
        """Record a deletion job for a closed/expired session and enqueue it on commit.

        `classes` limits the job to some data classes (retention deletes each
        class on its own schedule); default all. `enqueue=False` leaves the
        job for the caller to `run` (benchmarks, tests, commands). Errors: 404 unknown session;
        422 no reason; 409 `session_not_ended` (close or expire it first),
        `deletion_in_progress`, `legal_hold` (the refusal is recorded as a
        receipt with status `refused` and audited, and kept).
        """
        reason = (reason or "").strip()
        classes = list(DATA_CLASSES if classes is None else classes)
        unknown = [cls for cls in classes if cls not in DATA_CLASSES]
        if unknown or not classes:
            raise Unprocessable(
                "Unknown data classes.",
                details={"classes": [f"choose from {list(DATA_CLASSES)}"]},
            )
        classes = [cls for cls in DATA_CLASSES if cls in classes]
        if not reason:
            raise Unprocessable("Say why the content is deleted.", details={"reason": ["required"]})
        with transaction.atomic():
            session = self._session(session_id, lock=True)
            if not session.is_terminal:
                raise Conflict(
                    "Close or expire the session before deleting its content.",
                    code="session_not_ended",
                    details={"status": session.status},
                )
            hold = self.legal_hold(session)
            if hold is None:
                open_deletion = ContentDeletion.objects.filter(
                    tenant=self.tenant, session=session, status__in=OPEN_STATUSES
                ).first()
                if open_deletion is not None:
                    raise Conflict(
                        "A deletion of this session's content is already in progress.",
                        code="deletion_in_progress",
                        details={"deletion_id": open_deletion.deletion_id},
                    )
            now = self.now()
            planned = self.count_remaining(session, classes)
            deletion = ContentDeletion.objects.create(
                tenant=self.tenant,
                deletion_id=new_public_id("del"),
                session=session,
                status=DeletionStatus.REFUSED if hold else DeletionStatus.PENDING,
                requested_by=self.actor.label,
                requested_by_id=self.actor.id if self.actor.kind == "user" else "",
                reason=reason,
                policy=policy,
                planned=planned,
                counts={cls: 0 for cls in classes},
                error=f"legal hold on the {hold}" if hold else "",
                created_at=now,
                finished_at=now if hold else None,
            )
            after = {"deletion_id": deletion.deletion_id, "policy": policy, "planned": planned}
            if hold:
                self._audit_session(
                    "session.content_deletion_refused",
                    session,
                    after={**after, "legal_hold": hold},
                    reason=reason,
                )
            else:
                self._audit_session(
                    "session.content_deletion_requested", session, after=after, reason=reason
                )
                if enqueue:
                    outbox.enqueue(
                        tenant=self.tenant,
                        task=DELETE_TASK,
                        args=[self.tenant.pk, deletion.deletion_id],
                    )
        if hold:
            refusal = Conflict(
                f"The {hold} is under legal hold; nothing was deleted.",
                code="legal_hold",
                details={"legal_hold": hold, "deletion_id": deletion.deletion_id},
            )
            refusal.keep_changes = True  # the refused receipt and its audit event stay
            raise refusal
        return deletion

    def _audit_session(self, action: str, session: Session, **kw) -> None:
        self.audit(action, target_type="session", target_id=session.session_id, **kw)

    # --- the job -------------------------------------------------------------
    def run(
        self,
        *,
        deletion_id: str,
        batch_size: int = DEFAULT_BATCH_SIZE,
        on_batch: BatchHook | None = None,
    ) -> ContentDeletion:
        """Run (or resume) a deletion job until it is done or refused.

        Each batch is its own short tenant transaction: lock the session and
        the job, stop if a legal hold is on, remove the content of up to
        `batch_size` rows (class by class, in `DATA_CLASSES` order), add them
        to the counts. When
        nothing is left, the same kind of transaction sets
        `Session.content_deleted_at`, closes the receipt and audits
        `session.content_deleted` with the counts. A finished job is returned
        as it is, so running a job twice is harmless.

        `on_batch(deletion)` is called inside each batch's transaction, after
        the counts are updated (tests use it to crash a job mid-way).
        """
        if not 1 <= batch_size <= MAX_BATCH_SIZE:
            raise Unprocessable(
                "Batch size out of range.", details={"batch_size": [f"1..{MAX_BATCH_SIZE}"]}
            )
        sweep: _Sweep | None = None
        while True:
            with tenant_transaction(self.tenant.pk):
                deletion, session = self._lock_job(deletion_id)
                if sweep is None:
                    sweep = _Sweep(self.tenant, session, deletion.planned)
                deletion, finished = self._run_batch(deletion, session, sweep, batch_size)
                if on_batch is not None and not finished:
                    on_batch(deletion)
            if finished:
                return deletion

    def _lock_job(self, deletion_id: str) -> tuple[ContentDeletion, Session]:
        # Same lock order as `request` (session, then job): concurrent runs of
        # one job queue up here and each batch sees the previous one's counts.
        # The tenant row comes along unlocked, for its current legal hold.
        session = (
            Session.objects.select_for_update(of=("self",))
            .select_related("tenant")
            .filter(tenant=self.tenant, deletions__deletion_id=deletion_id)
            .first()
        )
        if session is None:
            raise NotFound("No such deletion.", details={"deletion_id": deletion_id})
        deletion = ContentDeletion.objects.select_for_update().get(
            tenant=self.tenant, deletion_id=deletion_id
        )
        deletion.session = session
        return deletion, session

    def _run_batch(
        self, deletion: ContentDeletion, session: Session, sweep: _Sweep, batch_size: int
    ) -> tuple[ContentDeletion, bool]:
        if deletion.status not in OPEN_STATUSES:
            return deletion, True
        now = self.now()
        fields = ["status", "counts"]
        if deletion.status == DeletionStatus.PENDING:
            deletion.status = DeletionStatus.RUNNING
            deletion.started_at = now
            fields.append("started_at")

        # Both rows were just read under the session's lock: current holds.
        hold = "tenant" if session.tenant.legal_hold else None
        hold = hold or ("session" if session.legal_hold else None)
        if hold:
            deletion.status = DeletionStatus.REFUSED
            deletion.error = f"legal hold on the {hold}"
            deletion.finished_at = now
            deletion.save(update_fields=[*fields, "error", "finished_at"])
            self._audit_session(
                "session.content_deletion_refused",
                session,
                after={
                    "deletion_id": deletion.deletion_id,
                    "legal_hold": hold,
                    "counts": deletion.counts,
                },
                reason=deletion.reason,
            )
            return deletion, True

        handled = sweep.batch(limit=batch_size, now=now)
        if not handled and any(
            remaining(self.tenant, session, cls).exists() for cls in deletion.planned
        ):
            # Written since this run started (a late run event, a new attachment):
            # walk the containers again.
            sweep.restart(session)
            handled = sweep.batch(limit=batch_size, now=now)
        if handled:
            deletion.counts = {
                cls: deletion.counts.get(cls, 0) + handled.get(cls, 0) for cls in deletion.planned
            }
            deletion.save(update_fields=fields)
            return deletion, False

        # Nothing of the job's classes is left: close the receipt.
        deletion.status = DeletionStatus.DONE
        deletion.finished_at = now
        deletion.save(update_fields=[*fields, "finished_at"])
        if not any(remaining(self.tenant, session, cls).exists() for cls in DATA_CLASSES):
            Session.objects.filter(tenant=self.tenant, pk=session.pk).update(content_deleted_at=now)
            session.content_deleted_at = now
        self._audit_session(
            "session.content_deleted",
            session,
            after={
                "deletion_id": deletion.deletion_id,
                "policy": deletion.policy,
                "counts": deletion.counts,
            },
            reason=deletion.reason,
        )
        return deletion, True

    def fail(self, *, deletion_id: str, error: str) -> ContentDeletion:
        """Give up on a job (the worker exhausted its retries); audited. Rows deleted stay deleted."""
        with transaction.atomic():
            deletion = (
                ContentDeletion.objects.select_for_update()
                .select_related("session")
                .filter(tenant=self.tenant, deletion_id=deletion_id)
                .first()
            )
            if deletion is None:
                raise NotFound("No such deletion.", details={"deletion_id": deletion_id})
            if deletion.status not in OPEN_STATUSES:
                return deletion
            deletion.status = DeletionStatus.FAILED
            deletion.error = error[:2000]
            deletion.finished_at = self.now()
            deletion.save(update_fields=["status", "error", "finished_at"])
            self._audit_session(
                "session.content_deletion_failed",
                deletion.session,
                after={"deletion_id": deletion.deletion_id, "counts": deletion.counts},
                reason=deletion.error,
            )
        return deletion
