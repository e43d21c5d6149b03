from django.db import models

from tenancy_app.models import TenantOwned


class TaskStatus(models.TextChoices):
    ACTIVE = "active"
    WAITING = "waiting"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


TERMINAL_TASK_STATUSES = frozenset({TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED})


class Task(TenantOwned):
    """DurableTaskState of seed 000: the facts a long task needs to continue in a new process."""

    task_id = models.CharField(max_length=128)
    objective = models.TextField()
    constraints = models.JSONField(default=list, blank=True)
    plan_version = models.CharField(max_length=64, blank=True, default="")
    completed_nodes = models.JSONField(default=list, blank=True)
    pending_nodes = models.JSONField(default=list, blank=True)
    pending_approvals = models.JSONField(default=list, blank=True)
    artifact_refs = models.JSONField(default=list, blank=True)
    external_effect_records = models.JSONField(default=list, blank=True)
    latest_checkpoint_id = models.CharField(max_length=128, blank=True, default="")
    schema_version = models.IntegerField(default=1)
    status = models.CharField(max_length=16, choices=TaskStatus.choices, default=TaskStatus.ACTIVE)
    version = models.BigIntegerField(default=1)
    last_checkpoint_seq = models.BigIntegerField(default=0)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "task_id"], name="task_public_id_uniq"),
        ]
        indexes = [models.Index(fields=["tenant", "status", "id"], name="task_status_idx")]

    def __str__(self) -> str:
        return self.task_id


class TaskCheckpoint(TenantOwned):
    """Append-only, numbered snapshot of domain data (never process objects)."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="checkpoints")
    checkpoint_id = models.CharField(max_length=128)
    seq = models.BigIntegerField()
    schema_version = models.IntegerField()
    node_id = models.CharField(max_length=200, blank=True, default="")
    state = models.JSONField(null=True, blank=True)
    size_bytes = models.IntegerField(default=0)
    created_at = models.DateTimeField()
    body_deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "checkpoint_id"], name="checkpoint_public_id_uniq"
            ),
            models.UniqueConstraint(fields=["tenant", "task", "seq"], name="checkpoint_seq_uniq"),
        ]

    def __str__(self) -> str:
        return self.checkpoint_id
