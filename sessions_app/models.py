from django.contrib.postgres.indexes import OpClass
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import F, Func
from django.db.models.functions import Upper

from stateroom.leases import DEFAULT_SESSION_LEASE_SECONDS
from tenancy_app.models import TenantOwned


class SessionStatus(models.TextChoices):
    CREATING = "creating"
    ACTIVE = "active"
    IDLE = "idle"
    CLOSED = "closed"
    EXPIRED = "expired"


TERMINAL_SESSION_STATUSES = frozenset({SessionStatus.CLOSED, SessionStatus.EXPIRED})


class Session(TenantOwned):
    """The interaction container of seed 004: metadata, lease and revision.

    `last_seq` is the highest item seq handed out; appenders advance it with one
    conditional UPDATE, whose row lock makes seqs gap-free and commit-ordered.
    """

    session_id = models.CharField(max_length=128)
    user_id = models.CharField(max_length=128)
    status = models.CharField(
        max_length=16, choices=SessionStatus.choices, default=SessionStatus.ACTIVE
    )
    lease_until = models.DateTimeField()
    # The lease's length: every activity (append, attach, detach, heartbeat)
    # renews `lease_until` to now + this. Default from the tenant.
    lease_seconds = models.IntegerField(
        default=DEFAULT_SESSION_LEASE_SECONDS, db_default=DEFAULT_SESSION_LEASE_SECONDS
    )
    revision = models.BigIntegerField(default=0)
    metadata = models.JSONField(default=dict, blank=True)
    legal_hold = models.BooleanField(default=False)
    last_seq = models.BigIntegerField(default=0)
    created_at = models.DateTimeField()
    last_active_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    end_reason = models.TextField(blank=True, default="")
    # Set when a deletion of the session's content is first requested: from
    # then on the session takes no new content (409 content_deleted).
    content_fenced_at = models.DateTimeField(null=True, blank=True)
    # Set when a deletion has removed every content class of the session.
    content_deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "session_id"], name="session_public_id_uniq"),
        ]
        indexes = [
            models.Index(
                fields=["tenant", "status", "lease_until"], name="session_status_lease_idx"
            ),
            models.Index(fields=["tenant", "user_id", "id"], name="session_user_idx"),
            models.Index(fields=["tenant", "status", "id"], name="session_status_id_idx"),
            models.Index(fields=["tenant", "ended_at"], name="session_ended_idx"),
            # User search: a case-insensitive prefix (`user_id__istartswith`).
            models.Index(
                F("tenant"),
                OpClass(Upper("user_id"), name="varchar_pattern_ops"),
                name="session_user_prefix_idx",
            ),
        ]

    def __str__(self) -> str:
        return self.session_id

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_SESSION_STATUSES


class SessionAttachment(TenantOwned):
    """A run mounted on a session (seed 004: run_id, attached_at, detached_at)."""

    session = models.ForeignKey(
        Session, on_delete=models.CASCADE, related_name="attachments", db_constraint=False
    )
    run_id = models.CharField(max_length=128)
    attached_at = models.DateTimeField()
    detached_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "session", "run_id"],
                condition=models.Q(detached_at__isnull=True),
                name="attachment_open_uniq",
            ),
        ]
        indexes = [
            models.Index(fields=["tenant", "session", "attached_at"], name="attach_session_idx"),
            # "Is this run mounted on some other session?" (run ownership on attach).
            models.Index(
                fields=["tenant", "run_id"],
                condition=models.Q(detached_at__isnull=True),
                name="attach_open_run_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}@{self.session_id}"


class SessionItem(TenantOwned):
    """One conversation event; `seq` is gap-free per session."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="items")
    seq = models.BigIntegerField()
    role = models.CharField(max_length=32)
    item_type = models.CharField(max_length=64)
    payload = models.JSONField(default=dict)
    run_id = models.CharField(max_length=128, blank=True, default="")
    created_at = models.DateTimeField()
    # Full-text search over the payload's strings (the first 100,000 characters), computed by
    # PostgreSQL (migration 0004's stateroom_item_search); it goes when the row goes.
    search = models.GeneratedField(
        expression=Func(F("payload"), function="stateroom_item_search"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "session", "seq"], name="item_session_seq_uniq"
            ),
        ]
        # No GIN index on `search`: under the items' row-level security PostgreSQL
        # cannot use one for @@ (not LEAKPROOF); search reads sessions_app_itemsearch
        # (migration 0006), whose policy carries the match.

    def __str__(self) -> str:
        return f"{self.session_id}#{self.seq}"


class ItemAppend(TenantOwned):
    """Remembers an append made with an idempotency key, so a retry returns the same seqs."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="+")
    idempotency_key = models.CharField(max_length=200)
    request_digest = models.CharField(max_length=64)
    first_seq = models.BigIntegerField()
    last_seq = models.BigIntegerField()
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "session", "idempotency_key"], name="item_append_key_uniq"
            ),
        ]

    def __str__(self) -> str:
        return self.idempotency_key
