from django.contrib.postgres.indexes import OpClass
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Upper

from stateroom.fields import TenantForeignKey
from stateroom.leases import DEFAULT_SESSION_LEASE_SECONDS
from tenancy_app.models import TenantOwned, hot_row_tenant


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
    # Not indexed: every append renews it, and an index on it would make each append
    # write a new entry into every index of the row (no HOT update). The lease sweep
    # walks the tenant's live sessions by `session_status_id_idx` instead.
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
    # Items up to this seq are in the search index (`sessions_app.search_index`): the
    # indexer's high-water mark, behind `last_seq` for the moments after an append.
    indexed_seq = models.BigIntegerField(default=0, db_default=0)
    # True from an append until the indexer has caught up (`last_seq > indexed_seq`):
    # the indexer's work list is the sessions where it is set. A flag, not the
    # comparison, in the list's predicate: an append then changes no indexed value
    # (a flag already set stays set) and its UPDATE of the row is HOT, with no new
    # entry in any of the session's indexes (docs/architecture.md).
    search_pending = models.BooleanField(default=False, db_default=False)
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
            models.Index(fields=["tenant", "user_id", "id"], name="session_user_idx"),
            models.Index(fields=["tenant", "status", "id"], name="session_status_id_idx"),
            models.Index(fields=["tenant", "ended_at"], name="session_ended_idx"),
            # The indexer's work list: sessions with items not yet in the search index.
            models.Index(
                fields=["tenant", "id"],
                condition=Q(search_pending=True, content_fenced_at__isnull=True),
                name="session_search_pending_idx",
            ),
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

    session = TenantForeignKey(
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
    """One conversation event; `seq` is gap-free per session.

    No foreign-key constraints in the database (`db_constraint=False`): items
    are written only by the append statement, which holds the session's row
    lock (and the session its tenant's key) while it inserts them, so a
    per-row check would test what the statement already guarantees; the
    session's deletion removes its items first (lifecycle_app.deletion).
    No single-column indexes on them either: every read of items names the
    tenant and the session (`item_session_seq_uniq`) or the tenant alone
    (`item_tenant_newest`, migration 0006).
    """

    tenant = hot_row_tenant()
    session = TenantForeignKey(
        Session, on_delete=models.CASCADE, related_name="items", db_constraint=False, db_index=False
    )
    seq = models.BigIntegerField()
    role = models.CharField(max_length=32)
    item_type = models.CharField(max_length=64)
    payload = models.JSONField(default=dict)
    run_id = models.CharField(max_length=128, blank=True, default="")
    created_at = models.DateTimeField()
    # Full-text search reads sessions_app_itemsearch, filled off the append path by the
    # indexer (sessions_app.search_index; migration 0009).

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "session", "seq"], name="item_session_seq_uniq"
            ),
        ]
        # No search column or GIN index here: under the items' row-level security
        # PostgreSQL cannot use one for @@ (not LEAKPROOF); search reads
        # sessions_app_itemsearch (migration 0006), whose policy carries the match.

    def __str__(self) -> str:
        return f"{self.session_id}#{self.seq}"


class ItemAppend(TenantOwned):
    """Remembers an append made with an idempotency key, so a retry returns the same seqs.

    No foreign-key constraints in the database, as for the items: the append
    statement that writes it holds the session's row lock."""

    tenant = hot_row_tenant()
    session = TenantForeignKey(
        Session, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False
    )
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
