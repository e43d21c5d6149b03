"""The interrupted calls: one approval request per call, its decision waited for, then
applied to the RunState (an edit rewrites the pending call)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import time
from datetime import UTC, datetime
from typing import Any

from agents import Agent, RunState
from agents.items import ToolApprovalItem

from ...errors import AlreadyExists, InvalidTransition, NotFound, StateroomError, VersionConflict
from ...models import Approval
from ..session import StateroomSession
from .claim import _lost
from .endings import GateEndings
from .outcome import GateOutcome


def _arguments(item: ToolApprovalItem) -> dict[str, Any]:
    raw = item.arguments
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {"raw": raw}
    return value if isinstance(value, dict) else {"value": value}


def approval_id_for(run_id: str, call_id: str) -> str:
    """The approval id of one tool call: the same in every process that asks for it."""
    raw = f"{run_id}:{call_id}"
    safe = re.sub(r"[^A-Za-z0-9._:-]", "-", raw)
    return safe if len(safe) <= 128 else "apr-" + hashlib.sha256(raw.encode()).hexdigest()[:40]


class GateCalls(GateEndings):
    """Ask for each interrupted call's decision, wait for it and apply it."""

    def _call_of(self, item: ToolApprovalItem) -> dict[str, Any]:
        """An interrupted call as the checkpoint keeps it, before its approval is asked."""
        return {
            "call_id": item.call_id,
            "tool_name": item.tool_name or "",
            "arguments": _arguments(item),
            "risk": self._risk(item.tool_name or "", _arguments(item)),
            "approval_id": None,
        }

    async def _decide(
        self,
        outcome: GateOutcome,
        state: RunState[Any],
        calls: list[dict[str, Any]],
        session: StateroomSession | None,
        *,
        wait: bool,
        timeout: float | None,
        recovering: bool,
    ) -> RunState[Any] | None:
        """Ask for (or find) each interrupted call's decision and apply it.

        Returns the state to run on (a new one when an edit rewrote a call's
        arguments), or None when the run stopped (pending, ended).
        """
        by_id = {c["call_id"]: c for c in calls}
        decided: dict[str, Approval] = {}
        for item in state.get_interruptions():
            call = by_id.get(item.call_id)
            if call is None:  # a checkpoint from before the call was known
                call = self._call_of(item)
                calls.append(call)
                by_id[item.call_id] = call
            approval = await self._approval_for(outcome, state, calls, call, session, recovering)
            if approval.is_pending and wait:
                approval = await self._wait(approval.approval_id, timeout, session)
            outcome.approvals.append(approval)
            if approval.is_pending:
                outcome.status = "waiting_approval"
                return None
            if not await self._take_up(outcome, call, approval, session):
                return None
            decided[call["call_id"]] = approval
        return await self._apply(outcome, state, by_id, decided, session)

    async def _take_up(
        self,
        outcome: GateOutcome,
        call: dict[str, Any],
        approval: Approval,
        session: StateroomSession | None,
    ) -> bool:
        """A decision is in: claim the run again and record it; False when the run ended
        (lost, cancelled, or the decision ends it: a stopping rejection, an expiry)."""
        # Decided: the run is worked on again, by one worker (the request let
        # the claim go while a person decided).
        try:
            await self._claim(outcome.run_id).hold()
        except InvalidTransition:  # ended meanwhile: a person cancelled it, or we lost
            await _lost(self.client, outcome)
            return False
        await self._event(outcome.run_id, "approval.decided", _decided_event(call, approval))
        ended = {
            "approval_id": approval.approval_id,
            "tool_name": approval.tool_name,
            "decided_by": approval.decided_by,
        }
        if (
            approval.status == "rejected"
            and approval.decision != "respond"
            and self.on_rejection == "stop"
        ):
            message = approval.decision_reason or "Rejected by an operator."
            error = {"code": "approval_rejected", "message": message, **ended}
            await self._end(outcome, "failed", session, error=error)
            return False
        if approval.status == "expired":
            message = f"Approval {approval.approval_id} for {approval.tool_name} expired."
            error = {"code": "approval_expired", "message": message, **ended}
            await self._end(outcome, "failed", session, error=error)
            return False
        return True

    async def _apply(
        self,
        outcome: GateOutcome,
        state: RunState[Any],
        by_id: dict[Any, dict[str, Any]],
        decided: dict[str, Approval],
        session: StateroomSession | None,
    ) -> RunState[Any]:
        """The decisions applied to `state`: edits rewrite their calls, then each call is
        approved or rejected (with the operator's response or reason)."""
        edits = {
            call_id: approval.approved_arguments
            for call_id, approval in decided.items()
            if _edited(by_id[call_id], approval)
        }
        if edits:
            state = await _with_arguments(self.agent, state, edits)
            if session is not None:  # later turns read the call that ran, not the one asked
                await _record_edits(session, outcome.run_id, self.worker, decided, edits)
        for item in state.get_interruptions():
            approval = decided[item.call_id or ""]
            if approval.status == "approved":  # as asked, or as edited just above
                state.approve(item)
            elif approval.decision == "respond" and approval.status in ("responded", "rejected"):
                # ("rejected": how servers before the `responded` status recorded it)
                # The operator's answer is the tool's result; the tool does not run.
                state.reject(item, rejection_message=approval.response)
            elif approval.status == "rejected":
                state.reject(
                    item, rejection_message=approval.decision_reason or "Rejected by an operator."
                )
            else:  # withdrawn by the runtime (cancelled): the call does not happen
                state.reject(
                    item,
                    rejection_message=approval.decision_reason
                    or "The approval request was cancelled.",
                )
        run = await self.client.get_run(outcome.run_id)
        if run.status == "suspended":
            await self._update(outcome.run_id, status="running")
        return state

    async def _approval_for(
        self,
        outcome: GateOutcome,
        state: RunState[Any],
        calls: list[dict[str, Any]],
        call: dict[str, Any],
        session: StateroomSession | None,
        recovering: bool,
    ) -> Approval:
        if call.get("approval_id"):
            return await self.client.get_approval(call["approval_id"])
        wanted = call.get("approval_id_wanted") or approval_id_for(outcome.run_id, call["call_id"])
        approval = None
        if recovering:  # asked before a crash kept its id from the checkpoint?
            with contextlib.suppress(NotFound):
                approval = await self.client.get_approval(wanted)
        if approval is None:
            try:
                approval = await self._request(outcome.run_id, call, wanted)
            except AlreadyExists:
                approval = await self.client.get_approval(wanted)
            else:
                await self._event(
                    outcome.run_id,
                    "approval.requested",
                    {
                        "approval_id": approval.approval_id,
                        "call_id": call["call_id"],
                        "tool_name": call["tool_name"],
                        "risk": call["risk"],
                    },
                )
        call["approval_id"] = approval.approval_id
        checkpoint = await self._checkpoint(outcome.task_id, state, calls, session)
        await self._update(outcome.run_id, last_checkpoint_id=checkpoint)
        return approval

    async def _request(self, run_id: str, call: dict[str, Any], approval_id: str) -> Approval:
        expires_at = datetime.now(UTC) + self.approval_ttl if self.approval_ttl else None
        for _attempt in range(5):
            run = await self.client.get_run(run_id)
            try:
                return await self.client.request_approval(
                    run_id,
                    expected_version=run.version,
                    tool_name=call["tool_name"],
                    arguments=call["arguments"],
                    risk=call["risk"],
                    reason=self.explain(call["tool_name"], call["arguments"]) + _drift_note(call),
                    expires_at=expires_at,
                    approval_id=approval_id,
                    allowed_decisions=list(self.allowed_decisions),
                    worker=self.worker,
                    arguments_schema=self._arguments_schema(call["tool_name"]),
                    **_drift_presentation(call),
                )
            except VersionConflict:
                continue  # the run moved (e.g. a checkpoint id); re-read and ask again
        raise StateroomError(f"Run {run_id} kept changing; could not ask for approval.")

    async def _wait(
        self, approval_id: str, timeout: float | None, session: StateroomSession | None
    ) -> Approval:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = 30.0 if deadline is None else min(30.0, deadline - time.monotonic())
            approval = await self.client.get_approval(approval_id, wait=max(1, int(left)))
            if not approval.is_pending:
                return approval
            if deadline is not None and time.monotonic() >= deadline:
                return approval
            if session is not None:
                # Keep the session's lease while a person thinks.
                with contextlib.suppress(StateroomError):
                    await self.client.heartbeat_session(session.session_id)


def _drift_presentation(call: dict[str, Any]) -> dict[str, Any]:
    """A call asked again because its tool changed: the inbox row and the page say so."""
    if not call.get("drift"):
        return {}
    return {
        "summary": f"The tool changed since this was asked ({call['asked_again_for']})",
        "replaces_approval_id": call["asked_again_for"],
    }


def _drift_note(call: dict[str, Any]) -> str:
    drift = call.get("drift")
    if not drift:
        return ""
    return (
        f"\n\nThe tool changed since this was asked (approval {call['asked_again_for']} was"
        f" for the old tool and is not used). Its schema was:\n{json.dumps(drift['old'])}"
        f"\nand is now:\n{json.dumps(drift['new'])}"
    )


def _edited(call: dict[str, Any], approval: Approval) -> bool:
    """Approved with arguments other than the ones the model asked with."""
    return (
        approval.status == "approved"
        and isinstance(approval.approved_arguments, dict)
        and approval.approved_arguments != call["arguments"]
    )


def _decided_event(call: dict[str, Any], approval: Approval) -> dict[str, Any]:
    """The run event of a decision: with an edit, both the asked and the approved call."""
    payload: dict[str, Any] = {
        "approval_id": approval.approval_id,
        "call_id": call["call_id"],
        "status": approval.status,
        "decision": approval.decision or None,
        "decided_by": approval.decided_by,
        "reason": approval.decision_reason,
    }
    if _edited(call, approval):
        payload["asked"] = {"tool_name": call["tool_name"], "arguments": call["arguments"]}
        payload["approved"] = {
            "tool_name": call["tool_name"],
            "arguments": approval.approved_arguments,
        }
    if approval.decision == "respond":
        payload["response"] = approval.response
    return payload


def _rewrite_call(node: Any, call_id: str, arguments: str) -> None:
    """Set `arguments` of every serialized `function_call` item with `call_id` in `node`."""
    if isinstance(node, dict):
        if (
            node.get("type") == "function_call"
            and node.get("call_id") == call_id
            and "arguments" in node
        ):
            node["arguments"] = arguments
        for value in node.values():
            _rewrite_call(value, call_id, arguments)
    elif isinstance(node, list):
        for value in node:
            _rewrite_call(value, call_id, arguments)


async def _with_arguments(
    agent: Agent[Any], state: RunState[Any], edits: dict[str, dict[str, Any]]
) -> RunState[Any]:
    """`state` with the pending calls in `edits` rewritten to the approved arguments.

    The SDK has no API to change a pending call's arguments, and it runs an
    approved function tool with the arguments of the call's raw item. So the
    serialized state is rewritten wherever that call appears (the model
    response, the generated items, the pending interruption, the processed
    response) and loaded again: the tool runs with the approved arguments and
    the next model turn sees the edited call with its result. SDK releases with
    a per-call fingerprint registry (`context.tool_invocations`, arguments
    included) would refuse the edited call as a reused call id; the call has
    not run, so its record is dropped and approving it registers the edited
    call. The same on every release of the supported range (0.18.1 has no
    registry).
    """
    data = json.loads(state.to_string())
    for call_id, arguments in edits.items():
        _rewrite_call(data, call_id, json.dumps(arguments))
        context = data.get("context")
        invocations = context.get("tool_invocations") if isinstance(context, dict) else None
        if isinstance(invocations, dict):
            invocations.pop(call_id, None)
    return await RunState.from_string(agent, json.dumps(data))


async def _record_edits(
    session: StateroomSession,
    run_id: str,
    worker: str,
    decided: dict[str, Approval],
    edits: dict[str, dict[str, Any]],
) -> None:
    """The session holds each edited call with its approved arguments (the asked ones kept
    on the `sdk.edit` tombstone), so the history the model reads later matches what ran."""
    for call_id, arguments in edits.items():
        approval = decided[call_id]
        await session.replace_call(
            call_id,
            arguments,
            note={
                "approval_id": approval.approval_id,
                "decided_by": approval.decided_by,
                "reason": approval.decision_reason,
            },
            run_id=run_id,
            worker=worker,
            idempotency_key=f"edit:{approval.approval_id}",
        )
