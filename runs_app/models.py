from datetime import datetime, timedelta

from django.db import models
from django.utils.functional import cached_property

from stateroom.fields import TenantForeignKey
from tenancy_app.models import RollupState, TenantOwned, hot_row_tenant, rollup_tenant


class RunStatus(models.TextChoices):
    CREATED = "created"
    RUNNING = "running"
    WAITING_APPROVAL = "waiting_approval"
    SUSPENDED = "suspended"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


TERMINAL_RUN_STATUSES = frozenset({RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED})

# The run state machine (DESIGN.md section 3). Staying in the same status is
# allowed for non-terminal runs (a CAS that only moves counters or the node).
RUN_TRANSITIONS: dict[str, frozenset[str]] = {
    RunStatus.CREATED: frozenset({RunStatus.RUNNING, RunStatus.CANCELLED, RunStatus.FAILED}),
    RunStatus.RUNNING: frozenset(
        {
            RunStatus.WAITING_APPROVAL,
            RunStatus.SUSPENDED,
            RunStatus.SUCCEEDED,
            RunStatus.FAILED,
            RunStatus.CANCELLED,
        }
    ),
    RunStatus.WAITING_APPROVAL: frozenset(
        {RunStatus.RUNNING, RunStatus.SUSPENDED, RunStatus.FAILED, RunStatus.CANCELLED}
    ),
    RunStatus.SUSPENDED: frozenset({RunStatus.RUNNING, RunStatus.FAILED, RunStatus.CANCELLED}),
    RunStatus.SUCCEEDED: frozenset(),
    RunStatus.FAILED: frozenset(),
    RunStatus.CANCELLED: frozenset(),
}


class Run(TenantOwned):
    """RunState of seed 000: the current facts of one execution, changed only by CAS."""

    run_id = models.CharField(max_length=128)
    session = TenantForeignKey(
        "sessions_app.Session",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="runs",
        db_constraint=False,
    )
    task = TenantForeignKey(
        "tasks_app.Task",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="runs",
        db_constraint=False,
    )
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.CREATED)
    # The status before the last version bump: the conditional UPDATE sets it
    # from the old row (`previous_status = status`), so its RETURNING clause
    # gives the transition history both ends without reading the row first.
    previous_status = models.CharField(max_length=20, blank=True, default="")
    turn_index = models.IntegerField(default=0)
    active_agent = models.CharField(max_length=200, blank=True, default="")
    current_node_id = models.CharField(max_length=200, blank=True, default="")
    deadline_at = models.DateTimeField(null=True, blank=True)
    token_used = models.BigIntegerField(default=0)
    cost_used = models.DecimalField(max_digits=18, decimal_places=6, default=0)
    # The model the runtime last reported using (its usage reports: token_used and
    # cost_used are the run's totals so far, set, never added to).
    model = models.CharField(max_length=200, blank=True, default="")
    # The W3C trace id (32 hex digits) of the runtime call that created the run, or of
    # the first call that carried a `traceparent` (stateroom.tracing); null: none did.
    trace_id = models.CharField(max_length=32, null=True, blank=True)
    pending_approval_id = models.CharField(max_length=128, blank=True, default="")
    last_checkpoint_id = models.CharField(max_length=128, blank=True, default="")
    error = models.JSONField(null=True, blank=True)
    version = models.BigIntegerField(default=1)
    # Worker claim (lease): a superseded worker's writes are refused.
    claimed_by = models.CharField(max_length=200, blank=True, default="")
    claim_until = models.DateTimeField(null=True, blank=True)
    last_event_seq = models.BigIntegerField(default=0)
    # Set when a deletion of its session's content is requested: the run takes
    # no more runtime writes (409 content_deleted).
    content_fenced_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    # The runtime token that created the run: whose webhook hears when a person
    # cancels, suspends or resumes it (runs_app.tasks, runs_app.webhooks).
    created_by_token = models.ForeignKey(
        "tenancy_app.RuntimeToken",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    @cached_property
    def session_public_id(self) -> str | None:
        """The session's public id; the store sets it from the row it read, sparing a query."""
        return self.session.session_id if self.session_id else None

    @cached_property
    def task_public_id(self) -> str | None:
        """The task's public id; the store sets it from the row it read, sparing a query."""
        return self.task.task_id if self.task_id else None

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "run_id"], name="run_public_id_uniq"),
        ]
        indexes = [
            models.Index(
                fields=["tenant", "status", "deadline_at"], name="run_status_deadline_idx"
            ),
            models.Index(fields=["tenant", "session", "id"], name="run_session_idx"),
            models.Index(fields=["tenant", "task", "id"], name="run_task_idx"),
            models.Index(fields=["tenant", "status", "id"], name="run_status_id_idx"),
            # The dashboard's rollup (runs_app.rollup) and its raw reads: runs by creation.
            models.Index(fields=["tenant", "created_at"], name="run_created_idx"),
        ]

    def __str__(self) -> str:
        return self.run_id

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_RUN_STATUSES

    # Set by the run store's reads (`get`, `list_runs`) from its clock and the tenant's
    # `unclaimed_run_warning_seconds`; a run the store just wrote was changed now, so
    # it cannot be waiting yet and None is right for it.
    unclaimed_since: datetime | None = None

    def waiting_for_worker_since(self, *, now: datetime, grace: timedelta) -> datetime | None:
        """When a running run was last held or changed, if no claim is live at `now` and that
        was `grace` or longer ago; else None. `RunStateStore.list_runs` says the same in SQL.

        Every change of status or claim sets `updated_at`, and a claim lapses at
        `claim_until`: the later of the two is when a worker was last seen to hold it.
        """
        if self.status != RunStatus.RUNNING:
            return None
        held_until = self.claim_until if self.claimed_by else None
        if held_until is not None and held_until > now:
            return None  # a live claim: a worker holds it
        since = max(self.updated_at, held_until) if held_until else self.updated_at
        return since if since <= now - grace else None


class RunTransition(TenantOwned):
    """One successful compare-and-set: the version history shown in the run inspector.

    Written by the compare-and-set's own statement from its UPDATE's row: the run key
    `(tenant_id, run_id)` is kept, the tenant's own key and the one-column indexes not
    (`hot_row_tenant`; `run_transition_uniq` leads with tenant and run)."""

    tenant = hot_row_tenant()
    run = TenantForeignKey(
        Run,
        on_delete=models.CASCADE,
        related_name="transitions",
        db_constraint=False,
        db_index=False,
    )
    version = models.BigIntegerField()
    from_status = models.CharField(max_length=20)
    to_status = models.CharField(max_length=20)
    changes = models.JSONField(default=dict)
    actor_label = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "run", "version"], name="run_transition_uniq"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run_id} v{self.version}"


class RunEvent(TenantOwned):
    """Append-only events of a run, numbered per run. Payloads go with content deletion."""

    run = TenantForeignKey(
        Run, on_delete=models.CASCADE, related_name="events", db_constraint=False
    )
    seq = models.BigIntegerField()
    type = models.CharField(max_length=64)
    node_id = models.CharField(max_length=200, blank=True, default="")
    payload = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField()
    payload_deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "run", "seq"], name="run_event_seq_uniq"),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}#{self.seq} {self.type}"


class NodeStatus(models.TextChoices):
    STARTED = "started"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class NodeExecution(TenantOwned):
    """One attempt at one node of a run's plan."""

    run = TenantForeignKey(
        Run, on_delete=models.CASCADE, related_name="node_executions", db_constraint=False
    )
    node_id = models.CharField(max_length=200)
    attempt = models.IntegerField(default=1)
    status = models.CharField(max_length=16, choices=NodeStatus.choices, default=NodeStatus.STARTED)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "run", "node_id", "attempt"], name="node_execution_uniq"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}:{self.node_id}#{self.attempt}"


class RunRollup(RollupState):
    """How far a tenant's runs are rolled up (runs_app.rollup, stateroom.rollup.State)."""


class RunQuarter(TenantOwned):
    """The runs created in one closed quarter hour, by status, agent and failure reason."""

    pk = models.CompositePrimaryKey("tenant", "quarter", "status", "agent", "reason")
    tenant = rollup_tenant()
    quarter = models.DateTimeField()
    status = models.CharField(max_length=20)
    agent = models.CharField(max_length=200)
    reason = models.CharField(max_length=200)  # a failed run's error code, else ""
    n = models.IntegerField()
    tokens = models.BigIntegerField()
    cost = models.DecimalField(max_digits=24, decimal_places=6)


class RunSince(TenantOwned):
    """The runs of RunQuarter summed from an origin (a UTC midnight) up to the UTC midnight
    `day`: the difference of two days is the runs between them (runs_app.rollup)."""

    pk = models.CompositePrimaryKey("tenant", "day", "status", "agent", "reason")
    tenant = rollup_tenant()
    day = models.DateTimeField()
    status = models.CharField(max_length=20)
    agent = models.CharField(max_length=200)
    reason = models.CharField(max_length=200)
    n = models.BigIntegerField()
    tokens = models.BigIntegerField()
    cost = models.DecimalField(max_digits=30, decimal_places=6)


class RunSessionQuarter(TenantOwned):
    """The runs created in one closed quarter hour, per session: its top sessions by cost."""

    pk = models.CompositePrimaryKey("tenant", "quarter", "session")
    tenant = rollup_tenant()
    quarter = models.DateTimeField()
    session = TenantForeignKey(
        "sessions_app.Session",
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="+",
    )
    n = models.IntegerField()
    tokens = models.BigIntegerField()
    cost = models.DecimalField(max_digits=24, decimal_places=6)
