"""On resume: a call whose tool changed is not run on the approval given for the old tool."""

from __future__ import annotations

from typing import Any

from ...errors import AlreadyDecided, StateroomError
from ..session import item_digest
from ..tools import effect_key
from .calls import GateCalls, approval_id_for
from .outcome import GateOutcome


class GateRevalidation(GateCalls):
    """Void the approvals of calls whose tool changed, and ask for those calls again."""

    async def _revalidate(
        self, outcome: GateOutcome, calls: list[dict[str, Any]], drift: dict[str, Any]
    ) -> None:
        """A call whose tool changed is not run on the approval given for the old tool.

        Its approval, pending or approved but not yet run (no effect recorded
        for the call), is voided on the server (`void_approval`, reason code
        `tool_changed`, the schema diff as details): it reads `voided`, a
        pending one no longer holds the run. The call is asked again under a
        new approval id that names the voided one (`replaces_approval_id`),
        whose summary says the tool changed and whose reason carries the
        schema diff. The decision the operator gave for the old tool is never
        applied. A call with an effect recorded is left to the ledger, which
        answers it without running the tool again.
        """
        changed = drift.get("tools") or {}
        for call in calls:
            old_id = call.get("approval_id")
            if not old_id or call["tool_name"] not in changed:
                continue
            effect = await self.client.find_effect(effect_key(outcome.run_id, call["call_id"]))
            if effect is not None:
                continue  # it ran (or may have) under the old tool: the ledger answers it
            diff = {"tool": call["tool_name"], **changed[call["tool_name"]]}
            status = await self._void(old_id, diff)
            if status is None:
                continue  # decided otherwise first (rejected, expired, cancelled): applied as is
            new_id = approval_id_for(
                outcome.run_id, f"{call['call_id']}:{item_digest(diff['new'])[:8]}"
            )
            call["approval_id"] = None
            call["asked_again_for"] = old_id
            call["drift"] = diff
            call["approval_id_wanted"] = new_id
            await self._event(
                outcome.run_id,
                "approval.voided",
                {
                    "approval_id": old_id,
                    "call_id": call["call_id"],
                    "status": status,
                    "reason": "tool_changed",
                    "tool_name": call["tool_name"],
                    "schema": diff,
                },
            )

    async def _void(self, approval_id: str, diff: dict[str, Any]) -> str | None:
        """Void the approval; the status it had (None: it was closed otherwise, keep it).

        A decision may land between the read and the void: an approval then
        still voidable (approved) is voided on the next try; one rejected,
        expired or cancelled is not, and is applied as decided. Voided already
        (by this gate before a crash): asked again all the same.
        """
        for _attempt in range(3):
            approval = await self.client.get_approval(approval_id)
            if approval.status == "voided":
                return approval.status
            if approval.status not in ("pending", "approved"):
                return None
            try:
                await self.client.void_approval(
                    approval_id,
                    reason_code="tool_changed",
                    reason="The tool changed since this was asked: its JSON schema differs.",
                    details=diff,
                    worker=self.worker,
                )
            except AlreadyDecided:
                continue  # decided meanwhile: read it again
            return approval.status
        raise StateroomError(f"Approval {approval_id} kept changing; could not void it.")
