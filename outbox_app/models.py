from django.db import models
from django.db.models import Q

from tenancy_app.models import TenantOwned


class OutboxMessage(TenantOwned):
    """A job to hand to Celery, written in the transaction of the change that needs it.

    The row commits or rolls back with the change, so a committed change
    always has its job; the relay (`outbox_app.relay`) publishes it and sets
    `sent_at`. Publishing is at least once: every task is idempotent.
    """

    task = models.CharField(max_length=200)
    args = models.JSONField(default=list)
    kwargs = models.JSONField(default=dict)
    created_at = models.DateTimeField()
    sent_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=500, blank=True, default="")

    class Meta:
        indexes = [
            models.Index(
                fields=["tenant", "id"],
                condition=Q(sent_at__isnull=True),
                name="outbox_unsent_idx",
            ),
            models.Index(fields=["sent_at"], name="outbox_sent_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.task}{self.args} ({'sent' if self.sent_at else 'pending'})"
