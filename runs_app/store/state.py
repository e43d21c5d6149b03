"""The run's status machine as the store applies it: who may move where, who holds a run."""

from __future__ import annotations

from ..models import RUN_TRANSITIONS, TERMINAL_RUN_STATUSES, RunStatus

NON_TERMINAL_STATUSES = tuple(s for s in RunStatus.values if s not in TERMINAL_RUN_STATUSES)
# Statuses in which no worker works on a run: moving there drops the claim.
UNCLAIMED_STATUSES = frozenset(
    {RunStatus.WAITING_APPROVAL, RunStatus.SUSPENDED, *TERMINAL_RUN_STATUSES}
)
NO_CLAIM = {"claimed_by": "", "claim_until": None}
NOT_FENCED = ('"content_fenced_at" IS NULL', [])


def allowed_from(target: str) -> list[str]:
    """The statuses a run may be in for a CAS that sets `target` (staying put included)."""
    return [s for s in NON_TERMINAL_STATUSES if s == target or target in RUN_TRANSITIONS[s]]
