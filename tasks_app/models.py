from django.db import models

from stateroom.fields import TenantForeignKey
from tenancy_app.models import TenantOwned, hot_row_tenant


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
    # A LangGraph thread id as LangGraph gave it, when it is not itself a
    # public id (the task id is then derived from it: langgraph_store.task_id_for).
    thread_id = models.CharField(max_length=512, null=True, blank=True)
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
    # Set when a deletion of the content of a session it served is requested:
    # the task takes no more state or checkpoints (409 content_deleted).
    content_fenced_at = models.DateTimeField(null=True, blank=True)
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
    """Append-only, numbered snapshot of domain data (never process objects).

    The task key `(tenant_id, task_id)` is kept; the tenant's own key and the one-column
    indexes are not (`hot_row_tenant`; `checkpoint_seq_uniq` leads with tenant and task)."""

    tenant = hot_row_tenant()
    task = TenantForeignKey(
        Task,
        on_delete=models.CASCADE,
        related_name="checkpoints",
        db_constraint=False,
        db_index=False,
    )
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


# --- LangGraph threads ---------------------------------------------------------
# A LangGraph thread is a durable task (its `task_id` is the thread id). What
# LangGraph's checkpointer keeps lives in three tables of its own, so a
# checkpoint's channel values are stored once per channel version however many
# checkpoints share them (docs/architecture.md, "LangGraph threads"). Each row keeps
# its task key `(tenant_id, task_id)`, not the tenant's own key nor the one-column
# indexes (`hot_row_tenant`: every unique key leads with tenant and task).


class GraphCheckpoint(TenantOwned):
    """One LangGraph checkpoint of a thread: the checkpoint minus its channel values.

    `checkpoint` holds LangGraph's `Checkpoint` without `channel_values` (v, id,
    ts, channel_versions, versions_seen, updated_channels): the values are
    `GraphBlob` rows named by (namespace, channel, version).
    """

    tenant = hot_row_tenant()
    task = TenantForeignKey(
        Task,
        on_delete=models.CASCADE,
        related_name="graph_checkpoints",
        db_constraint=False,
        db_index=False,
    )
    checkpoint_ns = models.CharField(max_length=255, blank=True, default="")
    checkpoint_id = models.CharField(max_length=128)
    parent_checkpoint_id = models.CharField(max_length=128, blank=True, default="")
    checkpoint = models.JSONField()
    metadata = models.JSONField(default=dict)
    # LangGraph's run id (metadata.run_id), kept apart for delete_for_runs.
    run_id = models.CharField(max_length=128, blank=True, default="")
    size_bytes = models.IntegerField(default=0)
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "task", "checkpoint_ns", "checkpoint_id"],
                name="graph_checkpoint_uniq",
            ),
        ]
        indexes = [models.Index(fields=["tenant", "run_id"], name="graph_checkpoint_run_idx")]

    def __str__(self) -> str:
        return self.checkpoint_id


class GraphBlob(TenantOwned):
    """A channel's value at one version, stored once per (thread, namespace, channel, version).

    `type` is `json` (the value is plain JSON, in `value`), `empty` (the
    channel had no value) or a LangGraph serializer type such as `msgpack`
    (the serialized bytes are in `data`).
    """

    tenant = hot_row_tenant()
    task = TenantForeignKey(
        Task,
        on_delete=models.CASCADE,
        related_name="graph_blobs",
        db_constraint=False,
        db_index=False,
    )
    checkpoint_ns = models.CharField(max_length=255, blank=True, default="")
    channel = models.CharField(max_length=255)
    version = models.CharField(max_length=128)
    type = models.CharField(max_length=32)
    value = models.JSONField(null=True, blank=True)
    data = models.BinaryField(null=True, blank=True)
    size_bytes = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "task", "checkpoint_ns", "channel", "version"],
                name="graph_blob_uniq",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.channel}@{self.version}"


class GraphWrite(TenantOwned):
    """A pending write of a LangGraph task against one checkpoint (its own owned row).

    `graph_task_id`/`graph_task_path` are LangGraph's task id and path (not a
    Stateroom task); `idx` is the write's index, negative for the special
    channels (error, interrupt, resume, scheduled), which a later write replaces.
    The checkpoint is named, not referenced: LangGraph saves a step's writes
    while the checkpoint before it may still be on its way.
    """

    tenant = hot_row_tenant()
    task = TenantForeignKey(
        Task,
        on_delete=models.CASCADE,
        related_name="graph_writes",
        db_constraint=False,
        db_index=False,
    )
    checkpoint_ns = models.CharField(max_length=255, blank=True, default="")
    checkpoint_id = models.CharField(max_length=128)
    graph_task_id = models.CharField(max_length=128)
    graph_task_path = models.CharField(max_length=512, blank=True, default="")
    idx = models.IntegerField()
    channel = models.CharField(max_length=255)
    type = models.CharField(max_length=32)
    value = models.JSONField(null=True, blank=True)
    data = models.BinaryField(null=True, blank=True)
    size_bytes = models.IntegerField(default=0)
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=[
                    "tenant",
                    "task",
                    "checkpoint_ns",
                    "checkpoint_id",
                    "graph_task_id",
                    "idx",
                ],
                name="graph_write_uniq",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.graph_task_id}[{self.idx}] {self.channel}"
