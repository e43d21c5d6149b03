"""What every domain store shares: its tenant, its actor, the clock and the audit call."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils import timezone

from stateroom import ports
from stateroom.actor import Actor
from stateroom.sql import current_tenant, scope_tenant, tenant_block

if TYPE_CHECKING:
    from django.db.models import Model


class BaseStore:
    """A store is built for one tenant and one actor and cannot see other tenants.

    `tenant` is a `tenancy_app.models.Tenant` (a floor above this one).

    Callers enter the tenant first (`in_tenant(tenant)`, or the request
    middleware); every query below also filters on `tenant` explicitly.
    """

    def __init__(
        self, tenant: Model, actor: Actor, *, clock: Callable[[], datetime] = timezone.now
    ) -> None:
        self.tenant = tenant
        self.actor = actor
        self.now = clock

    def atomic(self, *, savepoint: bool = True):
        """A transaction carrying the tenant's RLS setting: the caller's, or a new one.

        Inside a tenant transaction (`in_tenant(tenant)`, a request) it is
        `transaction.atomic`; outside one (`in_tenant(tenant, atomic=False)`)
        it opens a `tenant_block` of the scope's tenant (the request's, the
        job's: never the store's own idea of it, so RLS still checks the store).
        """
        if current_tenant() is not None:
            return transaction.atomic(savepoint=savepoint)
        return tenant_block(scope_tenant() or self.tenant.pk)

    def reading(self):
        """For reads: nothing inside a tenant transaction, else a `tenant_block`.

        Unlike `atomic(savepoint=False)`, an error raised inside (a 404) does not
        doom the caller's transaction.
        """
        if current_tenant() is not None:
            return contextlib.nullcontext()
        return tenant_block(scope_tenant() or self.tenant.pk)

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
        ports.audit().record_event(
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
