"""What every domain store shares: its tenant, its actor, the clock and the audit call."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from django.utils import timezone

from audit_app.actor import Actor
from audit_app.services import record_event

from .models import Tenant


class BaseStore:
    """A store is built for one tenant and one actor and cannot see other tenants.

    Callers enter the tenant first (`in_tenant(tenant)`, or the request
    middleware); every query below also filters on `tenant` explicitly.
    """

    def __init__(
        self, tenant: Tenant, actor: Actor, *, clock: Callable[[], datetime] = timezone.now
    ) -> None:
        self.tenant = tenant
        self.actor = actor
        self.now = clock

    def audit(
        self,
        action: str,
        *,
        target_type: str,
        target_id: str,
        before: Mapping[str, Any] | None = None,
        after: Mapping[str, Any] | None = None,
        reason: str = "",
        content: Mapping[str, Any] | None = None,
    ) -> None:
        """One audit event in the caller's transaction; `content`: what a runtime wrote."""
        record_event(
            tenant=self.tenant,
            actor=self.actor,
            action=action,
            target_type=target_type,
            target_id=target_id,
            before=before,
            after=after,
            reason=reason,
            content=content,
        )
