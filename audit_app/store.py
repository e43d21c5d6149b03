"""Scoped reads of the audit log (writes go through `services.record_event` in each store),
and the detached payloads' content, which goes with the content of what it is about."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet

from stateroom.content import SUBJECT, Batch, ContentClass, content_class, redact_in_key_order
from stateroom.store import BaseStore

from .models import AuditEvent, AuditPayload
from .services import verify_chain

AUDIT_PAYLOADS = "audit_payloads"
CONTENT: tuple[ContentClass, ...] = (
    ContentClass(
        name=AUDIT_PAYLOADS,
        label="What runtimes wrote into audit events (reasons, argument diffs)",
        table=AuditPayload._meta.db_table,
        fields=("content",),
        container=SUBJECT,
        removal="rows deleted",
        retention="run_events_days",
        kept=(
            "Every audit event: who did what to which object, when, the states before and "
            "after, people's own reasons, and the digest of the deleted payload, so the "
            "hash chain still verifies."
        ),
    ),
)


class AuditStore(BaseStore):
    def list_events(
        self,
        *,
        actor: str | None = None,
        action: str | None = None,
        target_type: str | None = None,
        target_id: str | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
    ) -> QuerySet[AuditEvent]:
        """Events of this tenant, unordered; callers keyset on `seq`.

        `actor` matches part of the actor label; `action` is a full action
        (`approval.approved`, matched exactly, an index range scan in seq
        order) or a namespace (`approval` or `approval.`: every approval
        event); the rest match exactly; `created_to` is exclusive.
        """
        events = AuditEvent.objects.filter(tenant=self.tenant)
        if actor:
            events = events.filter(actor_label__icontains=actor)
        if action:
            namespace, dot, name = action.partition(".")
            if dot and name:
                events = events.filter(action=action)
            else:
                events = events.filter(action__startswith=namespace + ".")
        if target_type:
            events = events.filter(target_type=target_type)
        if target_id:
            events = events.filter(target_id=target_id)
        if created_from:
            events = events.filter(created_at__gte=created_from)
        if created_to:
            events = events.filter(created_at__lt=created_to)
        return events

    def about(self, subjects: Sequence[tuple[str, str]]) -> QuerySet[AuditEvent]:
        """Events whose target is one of these (target_type, target_id) subjects."""
        match = Q(pk__in=[])
        for target_type, target_id in subjects:
            match |= Q(target_type=target_type, target_id=target_id)
        return AuditEvent.objects.filter(tenant=self.tenant).filter(match)

    def payloads(self, events: Iterable[AuditEvent]) -> dict[int, dict[str, Any]]:
        """event pk -> its detached payload's content, for those whose payload still exists."""
        ids = [event.pk for event in events if event.payload_hash]
        if not ids:
            return {}
        return dict(
            AuditPayload.objects.filter(tenant=self.tenant, event_id__in=ids).values_list(
                "event_id", "content"
            )
        )

    # --- content ----------------------------------------------------------------
    CONTENT = CONTENT

    def _payload_rows(self, subjects: Sequence[tuple[str, str]]) -> QuerySet[AuditPayload]:
        match = Q(pk__in=[])
        for target_type, target_id in subjects:
            match |= Q(target_type=target_type, target_id=target_id)
        return AuditPayload.objects.filter(tenant=self.tenant).filter(match)

    def content_left(self, name: str, containers: Sequence[tuple[str, str]]) -> int:
        content_class(CONTENT, name)
        if not containers:
            return 0
        return self._payload_rows(containers).count()

    def redact_content(
        self, name: str, container: tuple[str, str], *, after: Any, limit: int, now: datetime
    ) -> Batch:
        """Delete up to `limit` payloads of events about one subject (the events stay)."""
        content_class(CONTENT, name)
        return redact_in_key_order(
            self._payload_rows([tuple(container)]),
            "pk",
            after=after,
            limit=limit,
            remove=lambda qs: qs.delete()[0],
        )

    def verify(self) -> tuple[AuditEvent | None, int]:
        """The first event that breaks the chain (or None), and how many events exist."""
        return verify_chain(self.tenant), AuditEvent.objects.filter(tenant=self.tenant).count()
