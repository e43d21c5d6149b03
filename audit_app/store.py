"""Scoped reads of the audit log (writes go through `services.record_event` in each store)."""

from __future__ import annotations

from datetime import datetime

from django.db.models import QuerySet

from tenancy_app.base_store import BaseStore

from .models import AuditEvent
from .services import verify_chain


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

    def verify(self) -> tuple[AuditEvent | None, int]:
        """The first event that breaks the chain (or None), and how many events exist."""
        return verify_chain(self.tenant), AuditEvent.objects.filter(tenant=self.tenant).count()
