"""Voiding an approval: the approval store ends it, the effect ledger says whether it ran.

An approval may be voided by the runtime that asked only while its call has
not run. The approval store cannot read the effect ledger (another owner),
so the check is here: under the run's and the approval's row locks (taken by
`ApprovalStore.void`, lock order run then approval), an approval with any
effect recorded under it is refused, 409 `effect_recorded`: committed, the
call ran; started or unknown, it may have; failed, it ran and failed. The
ledger answers such a call on resume, never a second approval.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.utils import timezone

from approvals_app.models import ApprovalRequest
from approvals_app.store import ApprovalStore
from effects_app.store import EffectStore
from stateroom.actor import Actor
from stateroom.errors import Conflict
from tenancy_app.models import Tenant


class ApprovalActions:
    """Approval operations that read another domain, for one tenant and one actor."""

    def __init__(
        self, tenant: Tenant, actor: Actor, *, clock: Callable[[], datetime] = timezone.now
    ) -> None:
        self.approvals = ApprovalStore(tenant, actor, clock=clock)
        self.effects = EffectStore(tenant, actor, clock=clock)

    def void(
        self,
        *,
        approval_id: str,
        reason_code: str,
        reason: str,
        details: dict[str, Any] | None = None,
        worker: str | None = None,
    ) -> ApprovalRequest:
        """`ApprovalStore.void`, refused (409 `effect_recorded`) once an effect is recorded
        under the approval."""
        return self.approvals.void(
            approval_id=approval_id,
            reason_code=reason_code,
            reason=reason,
            details=details,
            refuse=self._refuse_if_ran,
            worker=worker,
        )

    def _refuse_if_ran(self, approval: ApprovalRequest) -> None:
        effect = self.effects.first_under_approval(approval.pk)
        if effect is not None:
            raise Conflict(
                f"An effect is recorded under this approval ({effect.status}): its call ran "
                "or may have; the ledger answers it.",
                code="effect_recorded",
                details={
                    "effect_id": effect.effect_id,
                    "effect_status": effect.status,
                    "status": approval.status,
                },
            )
