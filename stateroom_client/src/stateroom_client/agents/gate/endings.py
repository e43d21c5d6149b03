"""How a gate's run ends: succeeded, failed (with the error the run reads), suspended on an
effect, or stopped because another worker holds it."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

from ...errors import Conflict, PayloadTooLarge, RunClaimed, StateroomError
from ..session import StateroomSession
from ..tools import EffectOutcomeUnknown, Ledger, LedgerHalt
from .checkpoint import GateCheckpoints
from .claim import _when
from .outcome import CLAIMED, GateOutcome

TASK_STATUS = {"succeeded": "completed", "failed": "failed", "cancelled": "cancelled"}
# The server takes a tool's error of up to 4,000 characters and 16 KiB of JSON: 2,000
# characters stay under both, however many bytes each takes.
MAX_ERROR_MESSAGE = 2_000

E = TypeVar("E", bound=BaseException)


def _cause(exc: BaseException, kind: type[E]) -> E | None:
    """`exc` or the first exception of type `kind` in its chain (the SDK wraps tool errors)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _halt_in(exc: BaseException) -> LedgerHalt | None:
    return _cause(exc, LedgerHalt)


class GateEndings(GateCheckpoints):
    """Reports the approved calls' outcomes and ends the run."""

    async def _guarded(
        self,
        outcome: GateOutcome,
        session: StateroomSession | None,
        loop: Coroutine[Any, Any, GateOutcome],
    ) -> GateOutcome:
        """The loop's outcome; a write over the server's size limit ends the run `failed`.

        A tool output, a conversation or a checkpoint too large to store would
        otherwise leave the run `running` with nothing to resume from. Another
        worker holding the run stops it cleanly: status `claimed`, nothing
        more written (no failed task, no session item, no tool run).
        """
        claim = self._claim(outcome.run_id)
        try:
            result = await loop
        except Exception as exc:
            claimed = _cause(exc, RunClaimed)
            if claimed is not None:
                await claim.stop()
                outcome.status, outcome.claimed_by = CLAIMED, claimed.claimed_by
                outcome.claim_until = _when(claimed.claim_until)
                return outcome
            too_large = _cause(exc, PayloadTooLarge)
            if too_large is None:
                raise
            error = {
                "code": "payload_too_large",
                "message": "The run wrote more than the server takes in one request"
                f" ({too_large.limit} bytes): {too_large.message}",
                "limit_bytes": too_large.limit,
            }
            await self._end(outcome, "failed", session, error=error)
            return outcome
        finally:
            await claim.stop()
        if result.status == "waiting_approval":
            await claim.let_go_if_waiting()
        return result

    async def _report_outcomes(
        self, outcome: GateOutcome, ledger: Ledger, calls: list[dict[str, Any]]
    ) -> dict[str, Any] | None:
        """Tell the server how each approved call of this pass went; the run's error when one
        failed (its word follows the tool: never `succeeded` on a failed approved call).

        The SDK turns a tool's exception (or arguments it cannot parse, e.g. an operator's
        edit of the wrong type) into an error string for the model, so `Runner.run` returns
        normally; `idempotent_tool` notes the failure on the ledger (`Ledger.failed`). The
        approval then reads `outcome: failed` with the tool's error, and the run ends
        `failed` with `error.code == "tool_failed"`.
        """
        tools = {c["call_id"]: c["tool_name"] for c in calls}
        error: dict[str, Any] | None = None
        for call_id, approval_id in ledger.approvals.items():
            failed = ledger.failed.get(call_id)
            if failed is None and call_id not in ledger.executed:
                continue  # not run in this pass (rejected, answered, or replayed)
            report = None
            if failed is not None:
                report = {"message": failed["message"][:MAX_ERROR_MESSAGE], "type": failed["type"]}
            try:
                await self.client.report_approval_outcome(
                    approval_id,
                    outcome="failed" if report else "succeeded",
                    error=report,
                    worker=self.worker,
                )
            except RunClaimed:
                raise  # another worker holds the run: stop (_guarded)
            except Conflict:
                pass  # reported before a crash (outcome_reported): that report stands
            if report is not None and error is None:
                tool = tools.get(call_id, "")
                error = {
                    "code": "tool_failed",
                    "message": f"The approved call of {tool} failed: {report['message']}",
                    "approval_id": approval_id,
                    "call_id": call_id,
                    "tool_name": tool,
                }
        if error is not None:
            await self._event(outcome.run_id, "approval.tool_failed", error)
        return error

    async def _halted(self, outcome: GateOutcome, halt: LedgerHalt) -> GateOutcome:
        error: dict[str, Any] = {"code": "effect_outcome_unknown", "message": str(halt)}
        if isinstance(halt, EffectOutcomeUnknown):
            error["effect_id"] = halt.effect.effect_id
        else:
            error["code"] = "effect_unrecorded"
        run = await self._update(
            outcome.run_id,
            events=[{"type": "agent.suspended", "payload": error}],
            status="suspended",
            error=error,
        )
        outcome.status, outcome.error = run.status, error
        return outcome

    async def _end(
        self,
        outcome: GateOutcome,
        status: str,
        session: StateroomSession | None,
        *,
        error: dict[str, Any] | None = None,
        **changes: Any,
    ) -> None:
        ended = None
        if error is not None:
            ended = [{"type": "agent.ended", "payload": {"status": status, **error}}]
        try:
            run = await self._update(
                outcome.run_id, events=ended, status=status, error=error, **changes
            )
        except StateroomError as exc:
            if exc.code != "invalid_transition":
                raise
            run = await self.client.get_run(outcome.run_id)  # ended elsewhere (cancelled)
        outcome.status, outcome.error = run.status, run.error
        await self._finish_task(outcome.task_id, TASK_STATUS.get(run.status, "failed"))
        if session is not None:
            await self._detach(session, outcome.run_id)
