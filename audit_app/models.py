from django.db import models

from stateroom.fields import TenantOneToOneField
from tenancy_app.models import TenantOwned


class AuditEvent(TenantOwned):
    """Append-only record of an operator/admin action or a lifecycle transition.

    It keeps references, digests and people's own words, never content a
    runtime or an end user wrote: that goes to its `AuditPayload`.

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
    # sha256 of the detached payload's canonical JSON (AuditPayload), when the
    # event carries content a runtime wrote; part of `hash`, so the chain
    # still verifies after the payload is deleted.
    payload_hash = models.CharField(max_length=64, blank=True, default="", db_default="")

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


class AuditPayload(TenantOwned):
    """Content an audit event must show but the append-only log may not keep.

    What a runtime wrote (an approval's reason, a runtime token's reasons,
    diffs of tool arguments) is stored here, detached from its event, whose
    `payload_hash` chains a digest of it. Deleting a session's content
    deletes the payloads of the events about it; the chain still verifies.
    """

    event = TenantOneToOneField(
        AuditEvent, on_delete=models.PROTECT, related_name="payload", db_constraint=False
    )
    # The event's target, copied: content is deleted per subject.
    target_type = models.CharField(max_length=32)
    target_id = models.CharField(max_length=128)
    content = models.JSONField()
    created_at = models.DateTimeField()

    class Meta:
        indexes = [
            models.Index(
                fields=["tenant", "target_type", "target_id", "id"], name="audit_payload_target_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"payload of {self.event_id}"


class SecurityNotice(models.Model):
    """A fact about the deployment the web processes noticed (no tenant's data).

    One row per kind (`key`), e.g. `forwarded_for_untrusted`: requests carried
    `X-Forwarded-For` while no proxy is trusted. `manage.py check --deploy`
    reads these, since it runs in another process than the one that saw them.
    """

    key = models.CharField(max_length=64, primary_key=True)
    first_seen_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()
    detail = models.JSONField(default=dict)

    def __str__(self) -> str:
        return f"{self.key} (last {self.last_seen_at:%Y-%m-%d %H:%M})"
