from django.db import models

from tenancy_app.models import TenantOwned


class AuditEvent(TenantOwned):
    """Append-only record of an operator/admin action or a lifecycle transition.

    Events of one tenant form a hash chain (`prev_hash` → `hash`) in `seq`
    order, so a changed or removed row is detectable (`manage.py verify_audit`).
    On PostgreSQL a trigger refuses UPDATE and DELETE.
    """

    seq = models.BigIntegerField()
    created_at = models.DateTimeField()
    actor_type = models.CharField(max_length=16)
    actor_id = models.CharField(max_length=64)
    actor_label = models.CharField(max_length=200)
    action = models.CharField(max_length=64)
    target_type = models.CharField(max_length=32)
    target_id = models.CharField(max_length=128)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    reason = models.TextField(blank=True, default="")
    request_id = models.CharField(max_length=64, blank=True, default="")
    ip = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.CharField(max_length=256, blank=True, default="")
    # How `hash` was computed: 1 before RFC 8785 (rows written then keep it), 2 since.
    canon = models.PositiveSmallIntegerField(default=2)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "seq"], name="audit_tenant_seq_uniq"),
        ]
        indexes = [
            models.Index(fields=["tenant", "target_type", "target_id"], name="audit_target_idx"),
            models.Index(fields=["tenant", "action", "seq"], name="audit_action_idx"),
            models.Index(fields=["tenant", "created_at"], name="audit_created_idx"),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.action} {self.target_type}:{self.target_id}"
