"""The gate's checkpoints: the SDK's RunState, its calls and a reference to the conversation
(schema in the package's docstring), written on a pause and read back on a resume."""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from agents import RunState

from ...errors import NotFound
from ...models import Run
from ..session import StateroomSession, item_digest, seqs_in
from .outcome import ResumeError
from .policy import GatePolicy

CHECKPOINT_KIND = "openai-agents.run_state"
SCHEMA_VERSION = 2

try:
    SDK_VERSION = version("openai-agents")
except PackageNotFoundError:  # pragma: no cover - vendored SDK
    SDK_VERSION = "unknown"


class GateCheckpoints(GatePolicy):
    """Write a checkpoint; read the latest one back into a RunState."""

    async def _checkpoint(
        self,
        task_id: str,
        state: RunState[Any],
        calls: list[dict[str, Any]],
        session: StateroomSession | None,
    ) -> str:
        run_state = json.loads(state.to_string())
        body = {
            "kind": CHECKPOINT_KIND,
            "sdk_version": SDK_VERSION,
            "agent": self.agent.name,
            "session": {"session_id": session.session_id, "user_id": session.user_id}
            if session
            else None,
            "calls": calls,
            "conversation": _reference(run_state, session),
            "fingerprint": self._fingerprint(),
            "run_state": run_state,
        }
        pending = next((c for c in calls if not c.get("approval_id")), None)
        node = f"approval:{pending['tool_name']}" if pending else "awaiting_decisions"
        ref = await self.client.append_checkpoint(
            task_id, state=body, schema_version=SCHEMA_VERSION, node_id=node
        )
        return ref.checkpoint_id

    async def _restore(
        self, run: Run
    ) -> tuple[dict[str, Any], StateroomSession | None, RunState[Any]]:
        """The latest checkpoint of `run`'s task, its session and its RunState, read back."""
        if not run.task_id:
            raise ResumeError(
                f"Run {run.run_id} has no task, so no checkpoint.", code="no_checkpoint"
            )
        try:
            checkpoint = await self.client.latest_checkpoint(run.task_id)
        except NotFound as exc:
            raise ResumeError(
                f"Run {run.run_id} has no checkpoint to resume from.", code="no_checkpoint"
            ) from exc
        data = checkpoint.state if isinstance(checkpoint.state, dict) else {}
        if data.get("kind") != CHECKPOINT_KIND:
            raise ResumeError(
                f"Checkpoint {checkpoint.checkpoint_id} was not written by an ApprovalGate.",
                code="foreign_checkpoint",
            )
        session = None
        if data.get("session"):
            session = StateroomSession(
                self.client,
                data["session"]["session_id"],
                user_id=data["session"].get("user_id", ""),
                run_id=run.run_id,
            )
        run_state = await _restored(data, session)
        state = await RunState.from_string(self.agent, json.dumps(run_state))
        return data, session, state


def _reference(
    run_state: dict[str, Any], session: StateroomSession | None
) -> dict[str, Any] | None:
    """Take the RunState's `original_input` out, as session seq ranges where the session holds
    its items (read or written by this session object) and as copies where it does not (the
    SDK may normalize an item it read, e.g. an assistant message given as plain text)."""
    original = run_state.get("original_input")
    if session is None or not isinstance(original, list) or not original:
        return None
    pieces: list[Any] = []  # [first_seq, last_seq] or {"item": <a copy>}
    last = 0
    for item in original:
        seq = session.seq_of(item, after=last)
        if seq is None:
            pieces.append({"item": item})
            continue
        if pieces and isinstance(pieces[-1], list) and pieces[-1][1] + 1 == seq:
            pieces[-1][1] = seq
        else:
            pieces.append([seq, seq])
        last = seq
    if not any(isinstance(piece, list) for piece in pieces):
        return None
    run_state["original_input"] = []
    return {
        "session_id": session.session_id,
        "pieces": pieces,
        "items": len(original),
        "digest": item_digest(original),
    }


async def _restored(data: dict[str, Any], session: StateroomSession | None) -> dict[str, Any]:
    """The checkpoint's RunState JSON with its referenced conversation read back in."""
    run_state: dict[str, Any] = data["run_state"]
    conversation = data.get("conversation")
    if not conversation:
        return run_state
    if session is None or conversation.get("session_id") != session.session_id:
        raise ResumeError(
            "The checkpoint references a conversation of another session.",
            code="conversation_missing",
        )
    pieces = conversation["pieces"]
    try:
        stored = await session.items_at(seqs_in([p for p in pieces if isinstance(p, list)]))
    except NotFound as exc:
        raise ResumeError(
            f"The conversation this run started from is gone from session "
            f"{session.session_id}: {exc.message}",
            code="conversation_missing",
        ) from exc
    reading = iter(stored)
    items: list[Any] = []
    for piece in pieces:
        if isinstance(piece, list):
            items += [next(reading) for _ in range(piece[0], piece[1] + 1)]
        else:
            items.append(piece["item"])
    if len(items) != conversation.get("items") or item_digest(items) != conversation.get("digest"):
        raise ResumeError(
            f"The items of session {session.session_id} this run started from have changed.",
            code="conversation_changed",
        )
    return {**run_state, "original_input": items}
