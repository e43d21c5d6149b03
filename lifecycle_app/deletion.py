"""Deleting the content of a session (DESIGN.md section 4: close is not delete).

`DeletionStore.request` (an admin, the retention policy or an erasure, on a
closed or expired session) settles the session's waiting runs, **fences**
the session, its runs and their tasks (from now on every content-bearing
write to them is 409 `content_deleted`), records the job with the counts it
plans to remove, audits the request and enqueues the job on commit.

`DeletionStore.run` is the job. It asks the owners of the content (the
registry, `lifecycle_app.content`) to remove it, container by container, in
batches of bounded size; each batch is one short transaction that removes
content, adds it to the job's counts and stamps the job's heartbeat, so a
job killed at any point is resumed by running it again and its counts still
add up. Between batches it re-reads the legal holds (session and tenant) and
stops with status `refused` when one is on. When nothing of its classes is
left it closes the receipt (`status` done): the tables it touched, the rows
per class, and what was kept and why (`receipt()`).

What goes and what stays is declared by each owner (`stateroom.content`):
conversation items and audit payloads are deleted; session metadata, run
event payloads and errors, checkpoint bodies, task objectives and
constraints, approval arguments and reasons, effect requests, results and
errors are cleared in place. The session row stays as the tombstone, with
every id, status, digest, time and audit event.

A job no live worker holds is never shown as running: a worker stamps
`heartbeat_at` with every batch, the reaper (`reap_stalled`, a beat task)
re-enqueues a job whose heartbeat is older than `STATEROOM_JOB_STALL_SECONDS`
(default 120), and until then the job reads as `queued` (`shown_status`).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet

from outbox_app import relay as outbox
from stateroom.errors import Conflict, NotFound, Unprocessable
from stateroom.ids import new_public_id
from stateroom.reasons import MAX_REASON_LENGTH  # a person's reason: one rule
from stateroom.store import BaseStore
from tenancy_app.models import Tenant
from tenancy_app.scoping import tenant_transaction

from .content import CLASS_NAMES, CLASSES, Owners, Scope, content_left, resolve, work
from .endings import SessionEndings
from .models import OPEN_STATUSES, Deletion, DeletionStatus, Erasure

DEFAULT_BATCH_SIZE = 1000
MAX_BATCH_SIZE = 50_000
# Containers (a session, a run, an effect, an audit target…) one batch visits at
# most: a session with many small ones (a run's transitions, each effect's
# record) would otherwise be swept in one transaction of a few hundred
# statements (bench/README.md: 279 statements, 250 ms, for the bench's
# 100,000-item session).
MAX_CONTAINERS_PER_BATCH = 20

BatchHook = Callable[[Deletion], None]


def check_reason(reason: Any, missing: str) -> str:
    """The reason a deletion or an erasure gives, stripped; 422 when empty or too long."""
    if isinstance(reason, str) and len(reason) > MAX_REASON_LENGTH:
        raise Unprocessable(
            "The reason is too long.",
            details={"reason": [f"at most {MAX_REASON_LENGTH} characters"]},
        )
    reason = reason.strip() if isinstance(reason, str) else ""
    if not reason:
        raise Unprocessable(missing, details={"reason": ["required"]})
    return reason


def _checked_classes(classes: list[str] | None) -> list[str]:
    """The content classes a deletion asks for, in deletion order; 422 when unknown or none."""
    names = list(CLASS_NAMES if classes is None else classes)
    if not names or any(name not in CLASS_NAMES for name in names):
        raise Unprocessable(
            "Unknown content classes.",
            details={"classes": [f"choose from {list(CLASS_NAMES)}"]},
        )
    return [name for name in CLASS_NAMES if name in names]


def _legal_hold_refusal(hold: str, deletion: Deletion) -> Conflict:
    """The 409 for a request refused under a legal hold; its receipt and audit event stay."""
    refusal = Conflict(
        f"The {hold} is under legal hold; nothing was deleted.",
        code="legal_hold",
        details={"legal_hold": hold, "deletion_id": deletion.deletion_id},
    )
    refusal.keep_changes = True  # the refused receipt and its audit event stay
    return refusal


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"[:200]


def stall_bound() -> timedelta:
    """How old a heartbeat may be before the job counts as held by no worker."""
    return timedelta(seconds=settings.STATEROOM_JOB_STALL_SECONDS)


def shown_status(deletion: Deletion, now: datetime) -> str:
    """The status people and runtimes are told: `running` only while a live worker holds it."""
    if deletion.status == DeletionStatus.RUNNING and (
        deletion.heartbeat_at is None or deletion.heartbeat_at < now - stall_bound()
    ):
        return DeletionStatus.QUEUED
    return deletion.status


def progress(deletion: Deletion, now: datetime) -> dict[str, Any]:
    """What the console and the API show while a job runs: planned vs removed, and its state.

    `percent` reaches 100 only at status `done` (nothing says "deleted"
    before the job has finished).
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
    elapsed = rate = None
    if deletion.started_at and deletion.finished_at:
        elapsed = (deletion.finished_at - deletion.started_at).total_seconds()
        rate = round(deleted_total / elapsed, 1) if elapsed > 0 else None
    status = shown_status(deletion, now)
    return {
        "deletion_id": deletion.deletion_id,
        "status": status,
        "stalled": status != deletion.status,
        "held_by": deletion.worker if status == DeletionStatus.RUNNING else None,
        "heartbeat_at": deletion.heartbeat_at,
        "requeues": deletion.requeues,
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


GENERAL_KEPT = (
    {
        "what": "This receipt, and the audit events of the request and of the deletion",
        "why": "Proof of what was deleted, when, by whom and why.",
    },
)


def receipt(deletion: Deletion) -> dict[str, Any] | None:
    """Tables touched, rows per table and class, what was kept and why; only once done."""
    if deletion.status != DeletionStatus.DONE:
        return None
    tables: dict[str, dict[str, Any]] = {}
    for name, count in deletion.counts.items():
        cls = CLASSES.get(name)
        if cls is None:  # a class this version no longer knows (an older receipt)
            continue
        table = tables.setdefault(cls.table, {"table": cls.table, "rows": 0, "classes": []})
        table["rows"] += count
        table["classes"].append({**cls.describe(), "rows": count})
    return {
        "deleted": dict(deletion.counts),
        "tables": list(tables.values()),
        "kept": [
            *(
                {"class": name, "what": CLASSES[name].label, "why": CLASSES[name].kept}
                for name in deletion.counts
                if name in CLASSES
            ),
            *GENERAL_KEPT,
        ],
        "finished_at": deletion.finished_at.isoformat() if deletion.finished_at else None,
    }


# The Celery task that runs a deletion job (lifecycle_app.tasks imports this module).
DELETE_TASK = "lifecycle_app.tasks.delete_session_content"


def enqueue_job(tenant: Tenant, deletion_id: str) -> None:
    """Enqueue the job in the caller's transaction (the outbox publishes it after the commit)."""
    outbox.enqueue(tenant=tenant, task=DELETE_TASK, args=[tenant.pk, deletion_id])


class _Sweep:
    """Where the job has got to: a keyset cursor per (class, container).

    Walking each container's index from the last key keeps every batch's
    statements short however far the job has got. The cursors of the
    append-only classes (items: below the key a batch reached none can hold
    content again) are saved with each batch (`Deletion.swept`), so a resumed
    job starts there and the "nothing left" check before closing the receipt
    counts past them only: no statement walks the index entries of the rows
    the batches deleted (1.5 s at 1 M items before). The other classes'
    cursors live in memory only: their rows are cleared in place, and a
    resumed job walks them from the start once.
    """

    def __init__(
        self, owners: Owners, scope: Scope, names: list[str], swept: dict[str, Any]
    ) -> None:
        self.owners = owners
        self.names = names
        self.cursor: dict[tuple[str, Any], Any] = {
            (cls.name, container): swept[f"{cls.name}:{container}"]
            for cls, _, container in work(owners, scope, names)
            if cls.append_only and f"{cls.name}:{container}" in swept
        }
        self.restart(scope)

    def restart(self, scope: Scope) -> None:
        """Walk every container again, the append-only ones from where they were swept to."""
        self.scope = scope
        self.todo = list(work(self.owners, scope, self.names))
        self.cursor = {key: at for key, at in self.cursor.items() if CLASSES[key[0]].append_only}

    def swept(self) -> dict[str, Any]:
        """The append-only classes' cursors, to save with the batch (`Deletion.swept`)."""
        return {
            f"{name}:{container}": key
            for (name, container), key in self.cursor.items()
            if CLASSES[name].append_only
        }

    def batch(self, *, limit: int, now: datetime) -> dict[str, int]:
        """Remove the content of up to `limit` rows; how many per class."""
        handled: dict[str, int] = {}
        budget = limit
        visits = 0
        while self.todo and budget and visits < MAX_CONTAINERS_PER_BATCH:
            visits += 1
            cls, store, container = self.todo[0]
            key = (cls.name, container)
            done = store.redact_content(
                cls.name, container, after=self.cursor.get(key), limit=budget, now=now
            )
            if done.last is None:
                self.todo.pop(0)
            else:
                self.cursor[key] = done.last
            if done.count:
                handled[cls.name] = handled.get(cls.name, 0) + done.count
            budget -= min(done.count, budget)
        return handled


class DeletionStore(BaseStore):
    """Content deletion jobs of one tenant, and their receipts."""

    def __init__(self, tenant: Tenant, actor, *, clock=None) -> None:
        kwargs = {"clock": clock} if clock is not None else {}
        super().__init__(tenant, actor, **kwargs)
        self.owners = Owners.build(tenant, actor, self.now)
        self.endings = SessionEndings(tenant, actor, clock=self.now)

    # --- reads ---------------------------------------------------------------
    def _jobs(self) -> QuerySet[Deletion]:
        return Deletion.objects.filter(tenant=self.tenant)

    def get(self, deletion_id: str) -> Deletion:
        deletion = self._jobs().filter(deletion_id=deletion_id).select_related("session").first()
        if deletion is None:
            raise NotFound("No such deletion.", details={"deletion_id": deletion_id})
        return deletion

    def for_session(self, session_id: str) -> QuerySet[Deletion]:
        """The session's deletion jobs and receipts, newest first (404 for an unknown session)."""
        session = self.owners.sessions.get(session_id)
        return self._jobs().filter(session_id=session.pk).order_by("-id")

    def open_for(self, session_pk: int) -> Deletion | None:
        return self._jobs().filter(session_id=session_pk, status__in=OPEN_STATUSES).first()

    def progress(self, deletion: Deletion) -> dict[str, Any]:
        return progress(deletion, self.now())

    def legal_hold(self, session) -> str | None:
        """Which legal hold blocks deleting this session's content: "tenant", "session" or None.

        Read from the database, not from objects that may be stale.
        """
        if Tenant.objects.filter(pk=self.tenant.pk).values_list("legal_hold", flat=True).first():
            return "tenant"
        if self.owners.sessions.get_by_pk(session.pk).legal_hold:
            return "session"
        return None

    def preview(self, *, session_id: str) -> dict[str, Any]:
        """What a deletion of this session would remove now, and what it keeps."""
        session = self.owners.sessions.get(session_id)
        scope = resolve(self.owners, session)
        open_deletion = self.open_for(session.pk)
        return {
            "session_id": session.session_id,
            "status": session.status,
            "delete": content_left(self.owners, scope, list(CLASS_NAMES)),
            "retain": {
                "audit_events": self.owners.audit.about(scope.audit_subjects()).count(),
                "effect_records": len(scope.effects),
                "approvals": len(scope.approvals),
                "runs": len(scope.runs),
                "tasks": len(scope.tasks),
            },
            "legal_hold": self.legal_hold(session),
            "deletion_in_progress": open_deletion.deletion_id if open_deletion else None,
            "content_deleted_at": session.content_deleted_at,
        }

    # --- request -------------------------------------------------------------
    def request(
        self,
        *,
        session_id: str,
        reason: str,
        policy: str = "manual",
        classes: list[str] | None = None,
        enqueue: bool = True,
        erasure: Erasure | None = None,
    ) -> Deletion:
        """Record a deletion job for a closed/expired session, fence it, enqueue it on commit.

        `classes` limits the job to some content classes (retention deletes
        each on its own schedule); default all. `enqueue=False` leaves the
        job for the caller to `run` (benchmarks, tests). Errors: 404 unknown
        session; 422 no reason, unknown classes; 409 `session_not_ended`
        (close or expire it first), `deletion_running` (details.deletion_id),
        `legal_hold` (the refusal is recorded as a receipt with status
        `refused` and audited, and kept).
        """
        names = _checked_classes(classes)
        reason = check_reason(reason, "Say why the content is deleted.")
        with transaction.atomic():
            session = self.owners.sessions.lock_session(session_id)
            hold = self._check_deletable(session)
            planned = dict.fromkeys(names, 0) if hold else self._fence(session, names)
            deletion = self._record_request(
                session,
                names=names,
                planned=planned,
                hold=hold,
                reason=reason,
                policy=policy,
                erasure=erasure,
            )
            if not hold and enqueue:
                enqueue_job(self.tenant, deletion.deletion_id)
        if hold:
            raise _legal_hold_refusal(hold, deletion)
        return deletion

    def _check_deletable(self, session) -> str | None:
        """The legal hold on the locked session, if any; 409 unless its content may go."""
        if not session.is_terminal:
            raise Conflict(
                "Close or expire the session before deleting its content.",
                code="session_not_ended",
                details={"status": session.status},
            )
        hold = self.legal_hold(session)
        if hold is None and (running := self.open_for(session.pk)) is not None:
            raise Conflict(
                "A deletion of this session's content is already running.",
                code="deletion_running",
                details={"deletion_id": running.deletion_id},
            )
        return hold

    def _fence(self, session, names: list[str]) -> dict[str, int]:
        """Settle and fence the session, its runs and their tasks; the rows planned per class."""
        # Nothing may wait on content that goes, and nothing may add to it.
        self.endings.settle(session)
        scope = resolve(self.owners, session)
        self.owners.sessions.fence_content(session)
        self.owners.runs.fence_content(scope.containers("run"))
        self.owners.tasks.fence_content(scope.containers("task"))
        return content_left(self.owners, scope, names)

    def _record_request(
        self,
        session,
        *,
        names: list[str],
        planned: dict[str, int],
        hold: str | None,
        reason: str,
        policy: str,
        erasure: Erasure | None,
    ) -> Deletion:
        """The job's receipt (queued, or refused under a legal hold) and its audit event."""
        now = self.now()
        deletion = Deletion.objects.create(
            tenant=self.tenant,
            deletion_id=new_public_id("del"),
            session=session,
            erasure=erasure,
            status=DeletionStatus.REFUSED if hold else DeletionStatus.QUEUED,
            requested_by=self.actor.label,
            requested_by_id=self.actor.id if self.actor.kind == "user" else "",
            reason=reason,
            policy=policy,
            planned=planned,
            counts=dict.fromkeys(names, 0),
            error=f"legal hold on the {hold}" if hold else "",
            created_at=now,
            heartbeat_at=now,
            finished_at=now if hold else None,
        )
        after = {"deletion_id": deletion.deletion_id, "policy": policy, "planned": planned}
        if erasure is not None:
            after["erasure_id"] = erasure.erasure_id
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
        return deletion

    def _audit_session(self, action: str, session, **kw) -> None:
        self.audit(action, target_type="session", target_id=session.session_id, **kw)

    # --- the job -------------------------------------------------------------
    def run(
        self,
        *,
        deletion_id: str,
        batch_size: int = DEFAULT_BATCH_SIZE,
        on_batch: BatchHook | None = None,
        time_budget: float | None = None,
    ) -> Deletion:
        """Run (or resume) a deletion job until it is done or refused (or the time budget is spent).

        Each batch is its own short tenant transaction: lock the job, stop if
        a legal hold is on, remove the content of up to `batch_size` rows
        (class by class, in deletion order), add them to the counts and
        stamp the heartbeat. When nothing is left, the same kind of
        transaction marks the session's content deleted, closes the receipt
        and audits `session.content_deleted` with the counts. A finished job
        is returned as it is, so running a job twice is harmless. With
        `time_budget` (seconds) it returns an unfinished job after the batch
        that spends it, for the caller to continue later.

        `on_batch(deletion)` is called inside each batch's transaction, after
        the counts are updated (tests use it to crash a job mid-way).
        """
        if not 1 <= batch_size <= MAX_BATCH_SIZE:
            raise Unprocessable(
                "Batch size out of range.", details={"batch_size": [f"1..{MAX_BATCH_SIZE}"]}
            )
        sweep: _Sweep | None = None
        started = time.monotonic()
        worker = worker_name()
        while True:
            with tenant_transaction(self.tenant.pk):
                deletion = self._lock_job(deletion_id)
                if deletion.status not in OPEN_STATUSES:
                    return deletion
                if sweep is None:
                    names = list(deletion.planned)
                    scope = resolve(self.owners, deletion.session)
                    sweep = _Sweep(self.owners, scope, names, deletion.swept)
                finished = self._run_batch(deletion, sweep, batch_size, worker)
                if on_batch is not None and not finished:
                    on_batch(deletion)
            if finished:
                return deletion
            if time_budget is not None and time.monotonic() - started >= time_budget:
                return deletion

    def _lock_job(self, deletion_id: str) -> Deletion:
        deletion = (
            self._jobs()
            .select_for_update(of=("self",))
            .select_related("session")
            .filter(deletion_id=deletion_id)
            .first()
        )
        if deletion is None:
            raise NotFound("No such deletion.", details={"deletion_id": deletion_id})
        return deletion

    def _run_batch(self, deletion: Deletion, sweep: _Sweep, batch_size: int, worker: str) -> bool:
        """One batch of an open job, in the caller's transaction; True once the job is finished."""
        now = self.now()
        fields = ["status", "counts", "swept", "heartbeat_at", "worker"]
        deletion.status = DeletionStatus.RUNNING
        deletion.heartbeat_at = now
        deletion.worker = worker
        if deletion.started_at is None:
            deletion.started_at = now
            fields.append("started_at")
        session = deletion.session
        hold = self.legal_hold(session)
        if hold:
            self._refuse_held(deletion, hold, fields=fields, now=now)
            return True

        names = list(deletion.planned)
        handled = sweep.batch(limit=batch_size, now=now)
        left: dict[str, int] | None = None  # every class's rows with content, asked once
        if not handled and not sweep.todo:
            left = content_left(self.owners, sweep.scope, list(CLASS_NAMES), sweep.cursor)
            if any(left.get(name) for name in names):
                # Reached since this run started (a run attached late): walk again.
                sweep.restart(resolve(self.owners, session))
                handled, left = sweep.batch(limit=batch_size, now=now), None
        if handled or sweep.todo:
            deletion.counts = {
                name: deletion.counts.get(name, 0) + handled.get(name, 0) for name in names
            }
            deletion.swept = sweep.swept()
            deletion.save(update_fields=fields)
            return False

        self._close_receipt(deletion, sweep, left, fields=fields, now=now)
        return True

    def _refuse_held(
        self, deletion: Deletion, hold: str, *, fields: list[str], now: datetime
    ) -> None:
        """A legal hold came on while the job ran: it stops as refused, audited."""
        deletion.status = DeletionStatus.REFUSED
        deletion.error = f"legal hold on the {hold}"
        deletion.finished_at = now
        deletion.save(update_fields=[*fields, "error", "finished_at"])
        self._audit_session(
            "session.content_deletion_refused",
            deletion.session,
            after={
                "deletion_id": deletion.deletion_id,
                "legal_hold": hold,
                "counts": deletion.counts,
            },
            reason=deletion.reason,
        )

    def _close_receipt(
        self,
        deletion: Deletion,
        sweep: _Sweep,
        left: dict[str, int] | None,
        *,
        fields: list[str],
        now: datetime,
    ) -> None:
        """Nothing of the job's classes is left: the job is done, the session's content deleted
        when none of any class is left, audited with the counts."""
        deletion.status = DeletionStatus.DONE
        deletion.finished_at = now
        deletion.save(update_fields=[*fields, "finished_at"])
        if left is None:
            left = content_left(self.owners, sweep.scope, list(CLASS_NAMES), sweep.cursor)
        if not any(left.values()):
            self.owners.sessions.mark_content_deleted(deletion.session, now=now)
        self._audit_session(
            "session.content_deleted",
            deletion.session,
            after={
                "deletion_id": deletion.deletion_id,
                "policy": deletion.policy,
                "counts": deletion.counts,
            },
            reason=deletion.reason,
        )

    def fail(self, *, deletion_id: str, error: str) -> Deletion:
        """Give up on a job (the worker exhausted its retries); audited. Rows removed stay removed."""
        with transaction.atomic():
            deletion = self._lock_job(deletion_id)
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

    # --- jobs no worker holds --------------------------------------------------
    def reap_stalled(self, *, limit: int = 500) -> list[str]:
        """Re-enqueue open jobs whose heartbeat is older than the bound; their ids.

        A job a worker is in the middle of holds its row lock: it is skipped
        (`skip_locked`), it is alive. The job goes back to `queued` with a
        fresh heartbeat (so it is re-enqueued once per bound at most) and is
        enqueued when this transaction commits.
        """
        now = self.now()
        cutoff = now - stall_bound()
        with transaction.atomic():
            stalled = list(
                self._jobs()
                .select_for_update(skip_locked=True)
                .filter(status__in=OPEN_STATUSES)
                .filter(Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True))
                .order_by("id")[:limit]
            )
            for deletion in stalled:
                deletion.status = DeletionStatus.QUEUED
                deletion.heartbeat_at = now
                deletion.worker = ""
                deletion.requeues += 1
                deletion.save(update_fields=["status", "heartbeat_at", "worker", "requeues"])
                enqueue_job(self.tenant, deletion.deletion_id)
        return [deletion.deletion_id for deletion in stalled]
