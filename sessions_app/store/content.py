"""SessionStore's content: what it declares (`CONTENT`), fences and removes, for its own tables.

The lifecycle orchestrator (`lifecycle_app`) calls these; see `stateroom.content`.
A session's content is its conversation items (rows deleted) and its
metadata and end reason (cleared). The session row stays as the tombstone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from django.db.models import Q, QuerySet

from stateroom.content import SESSION, Batch, ContentClass, content_class, redact_in_key_order

from ..models import Session, SessionItem
from .base import SessionStoreBase, not_found

SESSION_ITEMS = "session_items"
SESSION_METADATA = "session_metadata"

CONTENT: tuple[ContentClass, ...] = (
    ContentClass(
        name=SESSION_ITEMS,
        label="Conversation items",
        table=SessionItem._meta.db_table,
        fields=("payload",),
        container=SESSION,
        removal="rows deleted",
        retention="session_items_days",
        kept="The session's last_seq: how many items it ever had.",
        append_only=True,  # seq grows under the session's lock; the fence stops appends
    ),
    ContentClass(
        name=SESSION_METADATA,
        label="Session metadata and end reason",
        table=Session._meta.db_table,
        fields=("metadata", "end_reason"),
        container=SESSION,
        removal="fields cleared",
        retention="session_items_days",
        kept=(
            "The session row (session id, user id, status, lease, revision, times, legal "
            "hold) as the tombstone that shows the session existed and how it ended; the "
            "reason a person gave for closing it stays in the audit log."
        ),
    ),
)


class SessionContent(SessionStoreBase):
    CONTENT = CONTENT

    # --- the fence ------------------------------------------------------------
    def lock_session(self, session_id: str) -> Session:
        """The session, locked for the rest of the caller's transaction (404 if unknown)."""
        return self._lock(session_id)

    def fence_content(self, session: Session) -> Session:
        """From now on the session takes no new content (409 `content_deleted`). Idempotent."""
        if session.content_fenced_at is None:
            now = self.now()
            Session.objects.filter(
                tenant=self.tenant, pk=session.pk, content_fenced_at__isnull=True
            ).update(content_fenced_at=now)
            session.content_fenced_at = now
        return session

    def mark_content_deleted(self, session: Session, *, now: datetime) -> None:
        """Every content class of the session is gone: say so on the tombstone."""
        Session.objects.filter(tenant=self.tenant, pk=session.pk).update(content_deleted_at=now)
        session.content_deleted_at = now

    def get_by_pk(self, pk: int) -> Session:
        session = Session.objects.filter(tenant=self.tenant, pk=pk).first()
        if session is None:
            raise not_found(str(pk))
        return session

    # --- content ----------------------------------------------------------------
    def _content_rows(self, name: str, containers: Sequence[int]) -> QuerySet:
        content_class(CONTENT, name)
        if name == SESSION_ITEMS:
            return SessionItem.objects.filter(tenant=self.tenant, session__in=containers)
        return Session.objects.filter(tenant=self.tenant, pk__in=containers).filter(
            ~Q(metadata={}) | ~Q(end_reason="")
        )

    def content_left(
        self, name: str, containers: Sequence[int], *, after: Mapping[int, int] | None = None
    ) -> int:
        """Rows of this class in these sessions that still hold content.

        `after` (items only): session pk -> the seq a sweep has removed every
        item up to; those sessions are counted past it only.
        """
        if not after:
            return self._content_rows(name, containers).count()
        if name != SESSION_ITEMS:
            raise ValueError(f"{name} is not append-only")
        match = Q(session__in=[pk for pk in containers if pk not in after])
        for pk in containers:
            if pk in after:
                match |= Q(session=pk, seq__gt=after[pk])
        return SessionItem.objects.filter(tenant=self.tenant).filter(match).count()

    def redact_content(
        self, name: str, container: int, *, after: int | None, limit: int, now: datetime
    ) -> Batch:
        """Remove the content of up to `limit` rows of one session (in the caller's transaction)."""
        rows = self._content_rows(name, [container])
        with self.atomic(savepoint=False):
            if name == SESSION_ITEMS:
                return redact_in_key_order(
                    rows, "seq", after=after, limit=limit, remove=lambda qs: qs.delete()[0]
                )
            return redact_in_key_order(
                rows,
                "pk",
                after=after,
                limit=limit,
                remove=lambda qs: qs.update(metadata={}, end_reason=""),
            )
