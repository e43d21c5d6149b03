from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models

from stateroom.fields import TenantForeignKey, TenantOneToOneField
from tenancy_app.models import RollupState, TenantOwned, rollup_tenant


class ApprovalStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    # Answered instead of run: the call did not run; the model got the operator's response.
    RESPONDED = "responded"
    EXPIRED = "expired"
    CANCELLED = "cancelled"
    # The runtime that asked can no longer honour it (e.g. the tool changed since it was
    # asked): it was pending, or approved but its call never ran. Terminal.
    VOIDED = "voided"


class VoidReason(models.TextChoices):
    """Why a runtime voided its approval (`ApprovalRequest.void_code`)."""

    TOOL_CHANGED = "tool_changed"


class ToolOutcome(models.TextChoices):
    """What happened when an approved call ran, as its runtime reported it
    (`ApprovalRequest.outcome`; empty: not reported)."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"


class Risk(models.TextChoices):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"


RISK_RANK = {Risk.LOW: 1, Risk.MEDIUM: 2, Risk.HIGH: 3, Risk.CRITICAL: 4}


class Decision(models.TextChoices):
    """What a person may decide, if the runtime declared it can honour it.

    approve: run the call as asked; edit: run it with `approved_arguments`;
    reject: do not run it (the reason goes to the model); respond: do not run
    it, and give the model `response` as the tool's result.
    """

    APPROVE = "approve"
    EDIT = "edit"
    REJECT = "reject"
    RESPOND = "respond"


DEFAULT_ALLOWED_DECISIONS = [Decision.APPROVE.value, Decision.REJECT.value]


def default_allowed_decisions() -> list[str]:
    return list(DEFAULT_ALLOWED_DECISIONS)


class ApprovalRequest(TenantOwned):
    """A risky tool call waiting for a person; decided exactly once.

    `call_digest` (tool name + canonical arguments) and `run_version` bind the
    decision to the exact call the operator saw.
    """

    approval_id = models.CharField(max_length=128)
    run = TenantForeignKey(
        "runs_app.Run", on_delete=models.PROTECT, related_name="approvals", db_constraint=False
    )
    tool_name = models.CharField(max_length=200)
    arguments = models.JSONField(default=dict)
    call_digest = models.CharField(max_length=64)
    run_version = models.BigIntegerField()
    risk = models.CharField(max_length=16, choices=Risk.choices)
    risk_rank = models.SmallIntegerField()
    reason = models.TextField(blank=True, default="")
    # The runtime's one-line summary of the call, shown in the inbox row.
    summary = models.CharField(max_length=300, blank=True, default="")
    # Up to three argument keys that matter (the inbox shows them); empty: the first scalars.
    key_arguments = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    # The top-level argument keys in the order the runtime sent them (jsonb keeps no order).
    argument_order = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    # The tool's usual call, when the runtime supplies one: the page marks what differs.
    usual_arguments = models.JSONField(null=True, blank=True)
    # The tool's JSON Schema for its arguments, when the runtime sent one: an edit must
    # validate against it, and so must the asked arguments for a plain approve.
    arguments_schema = models.JSONField(null=True, blank=True)
    # The runtime's display hint (approvals_app.display): which arguments are money.
    display = models.JSONField(null=True, blank=True)
    # What the runtime can honour; the console offers only these.
    allowed_decisions = ArrayField(
        models.CharField(max_length=16, choices=Decision.choices),
        default=default_allowed_decisions,
    )
    status = models.CharField(
        max_length=16, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING
    )
    expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    # Four-eyes: the first of two approvals for critical risk.
    first_approved_by = models.CharField(max_length=200, blank=True, default="")
    first_approved_by_id = models.CharField(max_length=64, blank=True, default="")
    first_approved_at = models.DateTimeField(null=True, blank=True)
    first_approval_reason = models.TextField(blank=True, default="")
    decided_by = models.CharField(max_length=200, blank=True, default="")
    decided_by_id = models.CharField(max_length=64, blank=True, default="")
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.TextField(blank=True, default="")
    # The decision taken (approve/edit -> approved; reject -> rejected; respond -> responded).
    decision = models.CharField(max_length=16, choices=Decision.choices, blank=True, default="")
    approved_arguments = models.JSONField(null=True, blank=True)
    # respond: the operator's text, returned to the model as the tool's result.
    response = models.TextField(blank=True, default="")
    # approved: what happened when the runtime ran the call (it reports it; empty until then),
    # and for a failure the tool's error `{message, type?}` (the runtime's words: content).
    outcome = models.CharField(max_length=16, choices=ToolOutcome.choices, blank=True, default="")
    outcome_error = models.JSONField(null=True, blank=True)
    outcome_at = models.DateTimeField(null=True, blank=True)
    # voided by the runtime that asked: who, when, why (a VoidReason and its own words) and
    # its evidence (for tool_changed, the tool's old and new JSON schema). A void leaves the
    # decision fields as they were: an approved-then-voided approval still says who approved.
    voided_by = models.CharField(max_length=200, blank=True, default="")
    voided_at = models.DateTimeField(null=True, blank=True)
    void_code = models.CharField(max_length=32, choices=VoidReason.choices, blank=True, default="")
    void_reason = models.TextField(blank=True, default="")
    void_details = models.JSONField(null=True, blank=True)
    # The voided approval this one asks again (the same call, asked anew after the void).
    replaces = TenantOneToOneField(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="replaced_by",
        db_constraint=False,
    )
    # The runtime token that asked: the one allowed to cancel, and whose
    # webhook (if any) hears about the decision.
    # Set when its content (arguments, reasons, response) was removed with its
    # session's content; call_digest, status and who decided stay.
    redacted_at = models.DateTimeField(null=True, blank=True)
    requested_by_token = models.ForeignKey(
        "tenancy_app.RuntimeToken",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    # Routing (approvals_app.routing): who is asked, recorded when it is asked; a
    # reassignment or an escalation changes them (audited). Member and group pks.
    route_rule = TenantForeignKey(
        "RoutingRule",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_constraint=False,
    )
    assigned_user_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    assigned_group_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    # The rule's schedule, fixed when asked (the store's clock): a reminder to the
    # assignees, an escalation to the next tier; each done once (`*_done_at`).
    remind_at = models.DateTimeField(null=True, blank=True)
    reminded_at = models.DateTimeField(null=True, blank=True)
    escalate_at = models.DateTimeField(null=True, blank=True)
    escalated_at = models.DateTimeField(null=True, blank=True)
    escalate_user_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    escalate_group_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    # Expired undecided: the tenant's admins hear of it (the rule says so).
    notify_admins_on_expiry = models.BooleanField(default=False)

    # Full-text search over what people and runtimes wrote about the call (GIN-indexed).
    search = models.GeneratedField(
        expression=SearchVector("summary", "reason", "decision_reason", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "approval_id"], name="approval_public_id_uniq"
            ),
            # A run waits on at most one approval at a time.
            models.UniqueConstraint(
                fields=["tenant", "run"],
                condition=models.Q(status="pending"),
                name="approval_one_pending_per_run",
            ),
        ]
        indexes = [
            models.Index(
                fields=["tenant", "status", "-risk_rank", "expires_at", "id"],
                name="approval_inbox_idx",
            ),
            models.Index(fields=["tenant", "status", "expires_at"], name="approval_expiry_idx"),
            models.Index(fields=["tenant", "run", "id"], name="approval_run_idx"),
            # History tabs: one status (or the decided pair), newest first.
            models.Index(fields=["tenant", "status", "id"], name="approval_status_id_idx"),
            GinIndex(fields=["search"], name="approval_search_gin"),
            # The dashboard's rollup (approvals_app.rollup) and its raw reads, by each time.
            models.Index(fields=["tenant", "created_at"], name="approval_created_idx"),
            models.Index(
                fields=["tenant", "decided_at"],
                condition=models.Q(decided_at__isnull=False),
                name="approval_decided_idx",
            ),
            models.Index(
                fields=["tenant", "voided_at"],
                condition=models.Q(voided_at__isnull=False),
                name="approval_voided_idx",
            ),
            # The inbox's "assigned to me" and "my groups".
            GinIndex(fields=["assigned_user_ids"], name="approval_assigned_users_gin"),
            GinIndex(fields=["assigned_group_ids"], name="approval_assigned_groups_gin"),
            # The schedule's sweep: pending approvals with a reminder or escalation due.
            models.Index(
                fields=["tenant", "remind_at"],
                condition=models.Q(status="pending", reminded_at__isnull=True),
                name="approval_remind_due_idx",
            ),
            models.Index(
                fields=["tenant", "escalate_at"],
                condition=models.Q(status="pending", escalated_at__isnull=True),
                name="approval_escalate_due_idx",
            ),
        ]

    def __str__(self) -> str:
        return self.approval_id

    @property
    def is_pending(self) -> bool:
        return self.status == ApprovalStatus.PENDING

    @property
    def decision_or_none(self) -> str | None:
        return self.decision or None

    @property
    def outcome_or_none(self) -> str | None:
        return self.outcome or None

    @property
    def void_code_or_none(self) -> str | None:
        return self.void_code or None

    @property
    def replaces_public_id(self) -> str | None:
        """The public id of the approval this one asks again (select_related("replaces"))."""
        return self.replaces.approval_id if self.replaces_id is not None else None


class RoutingRule(TenantOwned):
    """Who is asked for an approval: the first enabled rule (by `position`) that matches
    the call's tool (a glob), risk and session metadata; the tenant's default rule
    (`is_default`, at most one) when none does (approvals_app.routing).
    """

    name = models.CharField(max_length=200)
    position = models.PositiveIntegerField(default=0)
    enabled = models.BooleanField(default=True)
    is_default = models.BooleanField(default=False)
    # Matching: empty means any.
    tool_pattern = models.CharField(max_length=200, blank=True, default="")
    risks = ArrayField(
        models.CharField(max_length=16, choices=Risk.choices), default=list, blank=True
    )
    # {"key": "value"}: the session's metadata has each key with that value (as text).
    session_metadata = models.JSONField(default=dict, blank=True)
    # Who is asked.
    user_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    group_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    # Reminders and escalation: minutes after asking; percent of the time to the deadline.
    remind_after_minutes = models.PositiveIntegerField(null=True, blank=True)
    escalate_at_percent = models.PositiveSmallIntegerField(null=True, blank=True)
    escalate_user_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    escalate_group_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    notify_admins_on_expiry = models.BooleanField(default=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant"], condition=models.Q(is_default=True), name="routing_one_default"
            ),
            models.UniqueConstraint(fields=["tenant", "name"], name="routing_rule_name_uniq"),
        ]
        indexes = [models.Index(fields=["tenant", "position", "id"], name="routing_rule_order_idx")]

    def __str__(self) -> str:
        return self.name


class ApprovalRollup(RollupState):
    """How far a tenant's approvals are rolled up (approvals_app.rollup, stateroom.rollup)."""


class ApprovalQuarter(TenantOwned):
    """Approvals of one closed quarter hour: asked (created then), expired undecided (their
    `expires_at` then) and voided (their `voided_at` then)."""

    pk = models.CompositePrimaryKey("tenant", "quarter", "kind")
    tenant = rollup_tenant()
    quarter = models.DateTimeField()
    kind = models.CharField(max_length=16)  # asked, expired, voided
    n = models.IntegerField()


class ApprovalWaitQuarter(TenantOwned):
    """The approvals a person decided in one closed quarter hour, per tool and risk, and per
    risk over every tool (`tool_name` ''; the API refuses a blank tool name): how long each
    waited, as a log histogram (stateroom.rollup: count and sum per bin)."""

    pk = models.CompositePrimaryKey("tenant", "quarter", "risk", "tool_name", "bin")
    tenant = rollup_tenant()
    quarter = models.DateTimeField()
    risk = models.CharField(max_length=16)
    tool_name = models.CharField(max_length=200)
    bin = models.SmallIntegerField()
    n = models.IntegerField()
    total = models.FloatField()  # seconds


class ApprovalWaitSince(TenantOwned):
    """The waits' histograms summed from an origin (a UTC midnight) up to the UTC midnight
    `day`, per tool and risk, and per risk over all tools (`tool_name` ''; the API refuses
    a blank tool name): the difference of two days is the histogram of the decisions
    between them, so a month's is two reads, not one per quarter (approvals_app.rollup)."""

    pk = models.CompositePrimaryKey("tenant", "day", "tool_name", "risk", "bin")
    tenant = rollup_tenant()
    day = models.DateTimeField()
    tool_name = models.CharField(max_length=200)
    risk = models.CharField(max_length=16)
    bin = models.SmallIntegerField()
    n = models.BigIntegerField()
    total = models.FloatField()  # seconds
