from django.db import models

from tenancy_app.models import TenantOwned


class ApprovalStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


class Risk(models.TextChoices):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"


RISK_RANK = {Risk.LOW: 1, Risk.MEDIUM: 2, Risk.HIGH: 3, Risk.CRITICAL: 4}


class ApprovalRequest(TenantOwned):
    """A risky tool call waiting for a person; decided exactly once.

    `call_digest` (tool name + canonical arguments) and `run_version` bind the
    decision to the exact call the operator saw.
    """

    approval_id = models.CharField(max_length=128)
    run = models.ForeignKey("runs_app.Run", on_delete=models.PROTECT, related_name="approvals")
    tool_name = models.CharField(max_length=200)
    arguments = models.JSONField(default=dict)
    call_digest = models.CharField(max_length=64)
    run_version = models.BigIntegerField()
    risk = models.CharField(max_length=16, choices=Risk.choices)
    risk_rank = models.SmallIntegerField()
    reason = models.TextField(blank=True, default="")
    status = models.CharField(
        max_length=16, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING
    )
    expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    # Four-eyes: the first of two approvals for critical risk.
    first_approved_by = models.CharField(max_length=200, blank=True, default="")
    first_approved_by_id = models.CharField(max_length=64, blank=True, default="")
    first_approved_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.CharField(max_length=200, blank=True, default="")
    decided_by_id = models.CharField(max_length=64, blank=True, default="")
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.TextField(blank=True, default="")
    approved_arguments = models.JSONField(null=True, blank=True)
    # The runtime token that asked: the one allowed to cancel, and whose
    # webhook (if any) hears about the decision.
    requested_by_token = models.ForeignKey(
        "tenancy_app.RuntimeToken",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
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
        ]

    def __str__(self) -> str:
        return self.approval_id

    @property
    def is_pending(self) -> bool:
        return self.status == ApprovalStatus.PENDING
