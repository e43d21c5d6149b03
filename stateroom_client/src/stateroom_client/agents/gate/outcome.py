"""Where a gate's run stands when the gate returns, and the error of a run it cannot resume."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ...errors import StateroomError
from ...models import Approval, Run

CLAIMED = "claimed"


class ResumeError(StateroomError):
    """The run cannot be resumed (no checkpoint, or not one this gate wrote)."""


@dataclass
class GateOutcome:
    """Where the run stands when the gate returns."""

    run_id: str
    task_id: str
    status: str  # the Stateroom run status: succeeded, failed, waiting_approval, suspended...
    final_output: Any = None
    error: dict[str, Any] | None = None
    approvals: list[Approval] = field(default_factory=list)  # decided or pending, this pass
    executed: list[str] = field(default_factory=list)  # tool call ids run in this process
    replayed: list[str] = field(default_factory=list)  # tool call ids answered from the ledger

    claimed_by: str | None = None  # status "claimed": the worker that holds the run
    # status "claimed": until when that worker's claim holds the run (its lease; a killed
    # worker's claim holds it until then). None when the run ended elsewhere meanwhile.
    claim_until: datetime | None = None

    @property
    def finished(self) -> bool:
        return self.status in Run.TERMINAL

    @property
    def claimed_elsewhere(self) -> bool:
        """Another worker holds the run: this process stopped and wrote nothing more."""
        return self.status == CLAIMED
