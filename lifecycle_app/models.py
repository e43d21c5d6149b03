"""The lifecycle orchestrator's own state: deletion jobs (with their receipts) and erasures.

Everything else it changes belongs to the domain apps and is changed
through their stores.
"""

from django.db import models

from stateroom.fields import TenantForeignKey
from tenancy_app.models import TenantOwned


class DeletionStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    REFUSED = "refused"
    FAILED = "failed"


OPEN_STATUSES = (DeletionStatus.QUEUED, DeletionStatus.RUNNING)


class Deletion(TenantOwned):
    """A content deletion job of one session and, once done, its receipt (DESIGN.md section 4).

    `planned` holds the counts found when the job was requested (for the
    progress bar); `counts` what has been removed so far; both are keyed by
    content class (`stateroom.content`). A worker running the job stamps
    `heartbeat_at` (and `worker`) with every batch; a job whose heartbeat is
    older than `STATEROOM_JOB_STALL_SECONDS` is held by no live worker and
    is re-enqueued by the reaper (`requeues` counts how often).
    """

    deletion_id = models.CharField(max_length=128)
    session = TenantForeignKey(
        "sessions_app.Session",
        on_delete=models.PROTECT,
        related_name="deletions",
        db_constraint=False,
    )
    erasure = TenantForeignKey(
        "Erasure",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="deletions",
        db_constraint=False,
    )
    status = models.CharField(
        max_length=16, choices=DeletionStatus.choices, default=DeletionStatus.QUEUED
    )
    requested_by = models.CharField(max_length=200)
    requested_by_id = models.CharField(max_length=64, blank=True, default="")
    reason = models.TextField(blank=True, default="")
    policy = models.CharField(max_length=200, blank=True, default="manual")
    planned = models.JSONField(default=dict)
    counts = models.JSONField(default=dict)
    # For append-only classes (items): "<class>:<container>" -> the key every row up to
    # which this job has removed, saved with each batch. A resumed job starts there,
    # and the finishing check counts past it only: neither walks what was deleted.
    swept = models.JSONField(default=dict)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True, default="")
    requeues = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "deletion_id"], name="deletion_public_id_uniq"
            ),
        ]
        indexes = [
            models.Index(fields=["tenant", "session", "id"], name="deletion_session_idx"),
            models.Index(fields=["tenant", "status", "id"], name="deletion_status_idx"),
            models.Index(
                fields=["tenant", "heartbeat_at"],
                condition=models.Q(status__in=["queued", "running"]),
                name="deletion_open_heartbeat_idx",
            ),
        ]

    def __str__(self) -> str:
        return self.deletion_id


class Erasure(TenantOwned):
    """Erasure of a data subject: every session of one user closed and its content deleted.

    `sessions` lists, in order, each session found and what became of it
    (`{"session_id", "deletion_id", "outcome"}`, outcome `deleting` or
    `held`); the deletions' own rows say how far each got, so the erasure's
    status is read from them, never stored twice.
    """

    erasure_id = models.CharField(max_length=128)
    user_id = models.CharField(max_length=128)
    requested_by = models.CharField(max_length=200)
    requested_by_id = models.CharField(max_length=64, blank=True, default="")
    reason = models.TextField()
    sessions = models.JSONField(default=list)
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "erasure_id"], name="erasure_public_id_uniq"),
        ]
        indexes = [models.Index(fields=["tenant", "user_id", "id"], name="erasure_user_idx")]

    def __str__(self) -> str:
        return self.erasure_id
