from django.db import models

from stateroom.fields import TenantForeignKey
from tenancy_app.models import TenantOwned, hot_row_tenant


class EffectStatus(models.TextChoices):
    STARTED = "started"
    COMMITTED = "committed"
    FAILED = "failed"
    UNKNOWN = "unknown"


class ExternalEffect(TenantOwned):
    """The effect ledger: one record per idempotency key, so a resume can ask "did this happen?".

    The run and approval keys `(tenant_id, …)` are kept; the tenant's own key and the
    one-column indexes are not (`hot_row_tenant`): every index leads with the tenant,
    and the approval's is partial (most effects have none)."""

    tenant = hot_row_tenant()
    effect_id = models.CharField(max_length=128)
    run = TenantForeignKey(
        "runs_app.Run",
        on_delete=models.PROTECT,
        related_name="effects",
        db_constraint=False,
        db_index=False,
    )
    approval = TenantForeignKey(
        "approvals_app.ApprovalRequest",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="effects",
        db_constraint=False,
        db_index=False,
    )
    node_id = models.CharField(max_length=200, blank=True, default="")
    idempotency_key = models.CharField(max_length=255)
    tool_name = models.CharField(max_length=200)
    request = models.JSONField(null=True, blank=True)
    request_digest = models.CharField(max_length=64)
    status = models.CharField(
        max_length=16, choices=EffectStatus.choices, default=EffectStatus.STARTED
    )
    result = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)
    settled_by = models.CharField(max_length=200, blank=True, default="")
    settle_reason = models.TextField(blank=True, default="")
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    redacted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "idempotency_key"], name="effect_key_uniq"),
            models.UniqueConstraint(fields=["tenant", "effect_id"], name="effect_public_id_uniq"),
        ]
        indexes = [
            models.Index(fields=["tenant", "run", "id"], name="effect_run_idx"),
            models.Index(fields=["tenant", "status", "id"], name="effect_status_idx"),
            models.Index(
                fields=["tenant", "approval"],
                condition=models.Q(approval__isnull=False),
                name="effect_approval_idx",
            ),
        ]

    def __str__(self) -> str:
        return self.effect_id
