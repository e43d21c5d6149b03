"""`ApprovalGate`: run an SDK agent whose risky tools wait for a person in Stateroom.

    gate = ApprovalGate(client, agent, risk_policy=lambda tool, args: "high")
    outcome = await gate.run("Refund order A-1", session=session)   # waits for decisions
    # ...or, in another process after a restart:
    outcome = await ApprovalGate(client, agent).resume(run_id)

What it keeps in Stateroom, per agent run:

- a run (`created -> running -> waiting_approval -> running -> succeeded|failed`,
  every change a compare-and-set) and a task `<run_id>.task` whose checkpoints
  hold the SDK's serialized `RunState` (`RunState.to_json()`, schema below);
- when `Runner.run` stops on tool approvals (`result.interruptions`), one
  approval request per interrupted call (tool name, arguments, risk from
  `risk_policy`), with the id `<run_id>:<tool_call_id>` so that a process
  asking again after a crash finds it instead of asking twice. They are asked
  one after the other: a run waits on one approval at a time, so each request
  moves it to `waiting_approval` and each decision moves it back;
- run events `agent.*` / `approval.*` for the run inspector.

Decisions are applied with `RunState.approve(item)` / `RunState.reject(item,
rejection_message=<operator's reason>)` and the run resumes with
`Runner.run(agent, state)`, in this process or, after a restart, in another
one: `resume(run_id)` rebuilds everything from the latest checkpoint and the
approvals on the server. Tools made with `idempotent_tool` record their effect
under `<run_id>:<tool_call_id>` and commit it, so a call that already happened
is answered from the ledger on resume instead of running twice.

Every approval request declares the decisions the gate honours
(`allowed_decisions`, all four by default): *approve* runs the call; *edit*
runs it once with the operator's `approved_arguments` instead of the model's
(the pending call is rewritten in the RunState before it is approved, see
`_with_arguments`), so the tool, the effect ledger's request and the model's
next turn all see the approved call; *respond* does not run the tool and gives
the model the operator's `response` as its result; *reject* does not run it and
gives the model the reason. The run event `approval.decided` records the
decision, and for an edit both the asked and the approved call. The session
(append-only; the call as asked was stored when the run paused) gets an
`sdk.edit` tombstone that takes the asked call out of the history and keeps
its arguments, then the call with the approved arguments
(`StateroomSession.replace_call`): later turns read the call that ran next to
its output. Each request carries the tool's `params_json_schema` (`arguments_schema`): the
server refuses an edit that does not fit it, so the SDK never gets approved
arguments it would refuse (it would tell the model to retry, and the run could
end succeeded without the call), and refuses a plain approval of asked
arguments that no longer fit (a call asked again after its tool changed can
only be edited to the new schema, or rejected).

Endings: a rejection (not a response) is sent to the model as the tool's output and the run
goes on (`on_rejection="continue"`, the SDK's own behaviour), or the run ends
`failed` with `error.code == "approval_rejected"` and the reason
(`on_rejection="stop"`). An expired approval ends the run `failed` with
`error.code == "approval_expired"`. An effect whose outcome is unknown (a
crash between recording and committing it) suspends the run with
`error.code == "effect_outcome_unknown"` until a person settles it; a tool
that ran but could not be committed suspends it with `effect_unrecorded`.
An approved call whose tool fails (it raises, or the SDK refuses the arguments,
e.g. an operator's edit of the wrong type) is told to the model as the SDK's
error string, but the run ends `failed` with `error.code == "tool_failed"` and
the approval reads `outcome: failed` with the tool's error (run event
`approval.tool_failed`); an approved call that ran is reported `succeeded`
(`report_approval_outcome`). This needs the tool made with `idempotent_tool`,
whose failure function notes the failure on the ledger. A response reads
`responded` (servers before it said `rejected` with `decision: respond`).

One resumer at a time: the gate claims the run (`claim_run`, as `worker`,
default ``host:pid:random``) when it starts it and before it resumes it, renews
the claim in the background every third of `lease_seconds` while it works,
and names its worker on every run write (transition, events, approval
requests, effects). A process that finds the run claimed by another worker,
or loses the claim, stops at once: it returns `GateOutcome(status="claimed",
claimed_by=..., claim_until=...)` (`.claimed_elsewhere`; `claim_until`: until
when the holder's lease holds the run, also a killed holder's) without failing
the task, appending to the session or running a tool. One that finds the run
ended by another worker as it claims it (it lost the race) reports `claimed`
too, never the winner's `succeeded`. A run that waits for a person is held by
nobody (the server drops the claim when the run goes to `waiting_approval`),
so whoever continues it after the decision claims it afresh; a gate that
leaves a run waiting while it holds the claim lets it go.

Checkpoint state (schema_version 2)::

    {"kind": "openai-agents.run_state", "sdk_version": "0.24.0", "agent": "payments",
     "session": {"session_id": ..., "user_id": ...} | null,
     "calls": [{"call_id", "tool_name", "arguments", "risk", "approval_id"}],
     "run_state": <RunState.to_json(), its "original_input" emptied when referenced>,
     "conversation": {"session_id": ..., "items": n,
                      "pieces": [[first_seq, last_seq] | {"item": <a copy>}, ...],
                      "digest": <sha256 of the items' sorted-key JSON>} | null}

The conversation is referenced, not copied: the RunState's `original_input`
(the session's history the run started from, plus its new input) is rebuilt
from `pieces`, runs of session items by seq (and copies of the few items the
SDK rewrote when it read them, e.g. an assistant message given as text), so a checkpoint stays small however long the
conversation is (a copy of 1 MB of history would be over the server's body
limit, and the run could not pause). `resume` reads those items back, checks
`digest`, and puts them back into the RunState; items whose content was
deleted, or that differ, make the resume fail (`ResumeError`,
`conversation_missing` / `conversation_changed`) rather than run on another
conversation. Without a session, or when no item of the input is known to be
stored in it, `conversation` is null and the RunState is kept whole.
Schema 1 checkpoints (always a whole RunState) are still resumed.

`fingerprint` (schema 2) records what the run's facts depend on: each tool's
name and JSON schema, a digest of the model settings and the approval policy
(risk policy, allowed decisions, on_rejection, approval TTL). `resume`
compares it with the gate it runs in and records any drift as the run event
`agent.drift`. A call whose tool's schema changed is not run on the approval
given for the old tool: that approval, pending or approved but not yet run (no
effect recorded for the call), is voided on the server (`void_approval`,
`tool_changed`, the schema diff as details; run event `approval.voided`) and
the call is asked again under a new approval id that names it
(`replaces_approval_id`), whose summary says the tool changed and whose reason
carries the old and new schema.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import secrets
import socket
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Literal, TypeVar

from agents import Agent, RunConfig, Runner, RunState
from agents.items import ToolApprovalItem

from ..aio import AsyncStateroomClient
from ..errors import (
    AlreadyDecided,
    AlreadyExists,
    Conflict,
    InvalidTransition,
    NotFound,
    PayloadTooLarge,
    RunClaimed,
    StateroomError,
    VersionConflict,
)
from ..models import Approval, Run
from .session import StateroomSession, item_digest, seqs_in
from .tools import LEDGER, EffectOutcomeUnknown, Ledger, LedgerHalt, effect_key

CHECKPOINT_KIND = "openai-agents.run_state"
SCHEMA_VERSION = 2
RISKS = ("low", "medium", "high", "critical")
# Every decision the server knows, and the gate honours each: approve runs the
# call, edit runs it with the approved arguments, reject tells the model the
# reason, respond gives the model the operator's text as the tool's result.
DECISIONS = ("approve", "edit", "reject", "respond")
TASK_STATUS = {"succeeded": "completed", "failed": "failed", "cancelled": "cancelled"}
# The server's bound on an approval's `arguments_schema` (approvals_app.schemas).
MAX_SCHEMA_BYTES = 64 * 1024
# The server takes a tool's error of up to 4,000 characters and 16 KiB of JSON: 2,000
# characters stay under both, however many bytes each takes.
MAX_ERROR_MESSAGE = 2_000

RiskPolicy = Callable[[str, dict[str, Any]], str]
Explain = Callable[[str, dict[str, Any]], str]

try:
    SDK_VERSION = version("openai-agents")
except PackageNotFoundError:  # pragma: no cover - vendored SDK
    SDK_VERSION = "unknown"


def default_risk(tool_name: str, arguments: dict[str, Any]) -> str:
    return "medium"


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


def default_worker() -> str:
    """A name no other process uses: host, process id and a random part."""
    return f"{socket.gethostname()[:100]}:{os.getpid()}:{secrets.token_hex(4)}"


class _Claim:
    """The gate's claim on its run: taken before work, renewed while it works, given up when
    the run waits for a person."""

    def __init__(
        self, client: AsyncStateroomClient, run_id: str, worker: str, lease_seconds: int
    ) -> None:
        self.client = client
        self.run_id = run_id
        self.worker = worker
        self.lease_seconds = lease_seconds
        self._renewer: asyncio.Task[None] | None = None

    async def hold(self) -> Run:
        """Claim the run, or renew our claim; `RunClaimed` if another worker holds it."""
        for _attempt in range(10):
            run = await self.client.get_run(self.run_id)
            try:
                run = await self.client.claim_run(
                    self.run_id,
                    worker=self.worker,
                    expected_version=run.version,
                    lease_seconds=self.lease_seconds,
                )
            except VersionConflict:
                continue  # the run moved (a decision, our own write): re-read, claim again
            if self._renewer is None or self._renewer.done():
                self._renewer = asyncio.create_task(self._renew())
            return run
        raise StateroomError(f"Run {self.run_id} kept changing; could not claim it.")

    async def _renew(self) -> None:
        """Renew before the lease runs out, while the claim is ours; stop when it is not."""
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            try:
                run = await self.client.get_run(self.run_id)
                if run.claimed_by != self.worker:
                    return  # the run waits for a person or has ended (or is lost): not ours
                await self.hold()
            except StateroomError:
                return  # lost or gone: the next write says so and the gate stops

    async def let_go_if_waiting(self) -> None:
        """A run left waiting on a person with our claim on it: drop the claim (a transition
        to `waiting_approval` drops it), so whoever continues it after the decision can."""
        await self.stop()
        with contextlib.suppress(StateroomError):
            run = await self.client.get_run(self.run_id)
            if run.status == "waiting_approval" and run.claimed_by == self.worker:
                await self.client.transition_run(
                    self.run_id,
                    expected_version=run.version,
                    status="waiting_approval",
                    worker=self.worker,
                )

    async def stop(self) -> None:
        if self._renewer is not None:
            self._renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._renewer
            self._renewer = None


CLAIMED = "claimed"


def _arguments(item: ToolApprovalItem) -> dict[str, Any]:
    raw = item.arguments
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {"raw": raw}
    return value if isinstance(value, dict) else {"value": value}


def _summary(input: Any) -> str:
    if isinstance(input, str):
        text = input
    else:
        texts = [i.get("content") for i in input if isinstance(i, dict)]
        text = next((t for t in reversed(texts) if isinstance(t, str)), "agent run")
    return text if len(text) <= 500 else text[:497] + "..."


def approval_id_for(run_id: str, call_id: str) -> str:
    """The approval id of one tool call: the same in every process that asks for it."""
    raw = f"{run_id}:{call_id}"
    safe = re.sub(r"[^A-Za-z0-9._:-]", "-", raw)
    return safe if len(safe) <= 128 else "apr-" + hashlib.sha256(raw.encode()).hexdigest()[:40]


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


class ApprovalGate:
    """Runs `agent` with Stateroom holding its run, approvals, checkpoints and effects."""

    def __init__(
        self,
        client: AsyncStateroomClient,
        agent: Agent[Any],
        *,
        risk_policy: RiskPolicy = default_risk,
        explain: Explain | None = None,
        run_config: RunConfig | None = None,
        max_turns: int = 10,
        approval_ttl: timedelta | None = None,
        on_rejection: Literal["continue", "stop"] = "continue",
        allowed_decisions: tuple[str, ...] = DECISIONS,
        worker: str | None = None,
        lease_seconds: int = 60,
    ) -> None:
        if on_rejection not in ("continue", "stop"):
            raise ValueError("on_rejection must be 'continue' or 'stop'")
        if lease_seconds < 3:
            raise ValueError("lease_seconds must be at least 3 (it is renewed every third)")
        self.worker = worker or default_worker()
        self.lease_seconds = lease_seconds
        self._claims: dict[str, _Claim] = {}
        unknown = [d for d in allowed_decisions if d not in DECISIONS]
        if not allowed_decisions or unknown:
            raise ValueError(f"allowed_decisions must be a non-empty subset of {DECISIONS}")
        self.client = client
        self.agent = agent
        self.risk_policy = risk_policy
        self.explain = explain or (
            lambda tool, args: f"{agent.name} wants to call {tool} with {json.dumps(args)}"
        )
        self.run_config = run_config or RunConfig(tracing_disabled=True)
        self.max_turns = max_turns
        self.approval_ttl = approval_ttl
        self.on_rejection = on_rejection
        self.allowed_decisions = tuple(d for d in DECISIONS if d in allowed_decisions)

    # --- entry points --------------------------------------------------------
    async def run(
        self,
        input: str | list[Any],
        *,
        run_id: str | None = None,
        session: StateroomSession | None = None,
        objective: str | None = None,
        deadline_at: datetime | None = None,
        wait: bool = True,
        decision_timeout: float | None = None,
    ) -> GateOutcome:
        """Start a new run. With `wait=False` it returns at the first pending approval."""
        run_id = run_id or f"run-{secrets.token_hex(8)}"
        task_id = f"{run_id}.task"
        await self.client.create_task(task_id=task_id, objective=objective or _summary(input))
        await self.client.create_run(
            run_id=run_id,
            session_id=session.session_id if session else None,
            task_id=task_id,
            active_agent=self.agent.name,
            deadline_at=deadline_at,
        )
        if session is not None:
            await self._attach(session, run_id)
        outcome = GateOutcome(run_id, task_id, "running")

        async def start() -> GateOutcome:
            claimed = await self._claim(run_id).hold()
            await self.client.transition_run(
                run_id, expected_version=claimed.version, status="running", worker=self.worker
            )
            await self._event(run_id, "agent.started", {"agent": self.agent.name})
            return await self._loop(
                outcome, input, session, [], wait=wait, timeout=decision_timeout
            )

        return await self._guarded(outcome, session, start())

    async def resume(
        self, run_id: str, *, wait: bool = True, decision_timeout: float | None = None
    ) -> GateOutcome:
        """Continue `run_id` from its latest checkpoint (any process, any time)."""
        run = await self.client.get_run(run_id)
        if run.is_terminal:
            final = None
            async for event in self.client.iter_events(run_id):
                if event.type == "agent.final_output" and isinstance(event.payload, dict):
                    final = event.payload.get("output")
            return GateOutcome(run_id, run.task_id, run.status, final_output=final, error=run.error)
        if not run.task_id:
            raise ResumeError(f"Run {run_id} has no task, so no checkpoint.", code="no_checkpoint")
        try:
            checkpoint = await self.client.latest_checkpoint(run.task_id)
        except NotFound as exc:
            raise ResumeError(
                f"Run {run_id} has no checkpoint to resume from.", code="no_checkpoint"
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
                run_id=run_id,
            )
        run_state = await _restored(data, session)
        state = await RunState.from_string(self.agent, json.dumps(run_state))
        outcome = GateOutcome(run_id, run.task_id, "running")
        calls = list(data.get("calls") or [])

        async def proceed() -> GateOutcome:
            # One resumer at a time. A run waiting on a person is held by nobody:
            # it is claimed once the decision is in (`_decide`).
            if run.status != "waiting_approval":
                try:
                    await self._claim(run_id).hold()
                except InvalidTransition:  # it ended meanwhile, elsewhere: we lost
                    return await _lost(self.client, outcome)
            drift = self._drift(data.get("fingerprint"))
            if drift:
                await self._event(run_id, "agent.drift", drift)
                await self._revalidate(outcome, calls, drift)
            return await self._loop(
                outcome,
                state,
                session,
                calls,
                wait=wait,
                timeout=decision_timeout,
                interrupted=True,
                recovering=True,
            )

        return await self._guarded(outcome, session, proceed())

    def _claim(self, run_id: str) -> _Claim:
        claim = self._claims.get(run_id)
        if claim is None:
            claim = self._claims[run_id] = _Claim(
                self.client, run_id, self.worker, self.lease_seconds
            )
        return claim

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

    # --- the loop ------------------------------------------------------------
    async def _loop(
        self,
        outcome: GateOutcome,
        input: Any,
        session: StateroomSession | None,
        calls: list[dict[str, Any]],
        *,
        wait: bool,
        timeout: float | None,
        interrupted: bool = False,
        recovering: bool = False,
    ) -> GateOutcome:
        run_id, task_id = outcome.run_id, outcome.task_id
        while True:
            if interrupted:
                state: RunState[Any] = input
                decided_state = await self._decide(
                    outcome,
                    state,
                    calls,
                    session,
                    wait=wait,
                    timeout=timeout,
                    recovering=recovering,
                )
                if decided_state is None:
                    return outcome
                input, recovering = decided_state, False
            ledger = Ledger(
                self.client,
                run_id,
                approvals={c["call_id"]: c["approval_id"] for c in calls if c.get("approval_id")},
                worker=self.worker,
            )
            token = LEDGER.set(ledger)
            # Items of this run carry its id while it runs, and only then: the
            # session object outlives the run (later plain Runner.run calls).
            previous_run_id = session.run_id if session is not None else None
            previous_worker = session.worker if session is not None else None
            if session is not None:
                session.run_id, session.worker = run_id, self.worker
            try:
                result = await Runner.run(
                    self.agent,
                    input,
                    session=session,
                    run_config=self.run_config,
                    max_turns=self.max_turns,
                )
            except Exception as exc:
                outcome.executed += ledger.executed
                outcome.replayed += ledger.replayed
                if _cause(exc, RunClaimed) is not None or _cause(exc, PayloadTooLarge) is not None:
                    raise  # another worker holds the run, or it ends failed (_guarded)
                halt = _halt_in(exc)
                if halt is not None:
                    return await self._halted(outcome, halt)
                await self._end(
                    outcome,
                    "failed",
                    session,
                    error={"code": "agent_error", "message": f"{type(exc).__name__}: {exc}"},
                )
                raise
            finally:
                LEDGER.reset(token)
                if session is not None:
                    session.run_id, session.worker = previous_run_id, previous_worker
            outcome.executed += ledger.executed
            outcome.replayed += ledger.replayed
            usage: dict[str, Any] = {
                "token_used": result.context_wrapper.usage.total_tokens,
                "turn_index": len(result.raw_responses),
            }
            if not result.interruptions:
                outcome.final_output = result.final_output
                await self._event(
                    run_id, "agent.final_output", {"output": _text(result.final_output)}
                )
            failure = await self._report_outcomes(outcome, ledger, calls)
            if failure is not None:
                await self._end(outcome, "failed", session, error=failure, **usage)
                return outcome
            if not result.interruptions:
                await self._end(outcome, "succeeded", session, **usage)
                return outcome
            state = result.to_state()
            calls = [
                {
                    "call_id": item.call_id,
                    "tool_name": item.tool_name or "",
                    "arguments": _arguments(item),
                    "risk": self._risk(item.tool_name or "", _arguments(item)),
                    "approval_id": None,
                }
                for item in result.interruptions
            ]
            await self._event(
                run_id,
                "agent.interrupted",
                {"calls": [{k: c[k] for k in ("call_id", "tool_name", "risk")} for c in calls]},
            )
            checkpoint = await self._checkpoint(task_id, state, calls, session)
            await self._update(run_id, last_checkpoint_id=checkpoint, **usage)
            input, interrupted = state, True

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
                call = {
                    "call_id": item.call_id,
                    "tool_name": item.tool_name or "",
                    "arguments": _arguments(item),
                    "risk": self._risk(item.tool_name or "", _arguments(item)),
                    "approval_id": None,
                }
                calls.append(call)
                by_id[item.call_id] = call
            approval = await self._approval_for(outcome, state, calls, call, session, recovering)
            if approval.is_pending and wait:
                approval = await self._wait(approval.approval_id, timeout, session)
            outcome.approvals.append(approval)
            if approval.is_pending:
                outcome.status = "waiting_approval"
                return None
            # Decided: the run is worked on again, by one worker (the request let
            # the claim go while a person decided).
            try:
                await self._claim(outcome.run_id).hold()
            except InvalidTransition:  # ended meanwhile: a person cancelled it, or we lost
                await _lost(self.client, outcome)
                return None
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
                return None
            if approval.status == "expired":
                message = f"Approval {approval.approval_id} for {approval.tool_name} expired."
                error = {"code": "approval_expired", "message": message, **ended}
                await self._end(outcome, "failed", session, error=error)
                return None
            decided[call["call_id"]] = approval
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

    # --- endings -------------------------------------------------------------
    async def _halted(self, outcome: GateOutcome, halt: LedgerHalt) -> GateOutcome:
        error: dict[str, Any] = {"code": "effect_outcome_unknown", "message": str(halt)}
        if isinstance(halt, EffectOutcomeUnknown):
            error["effect_id"] = halt.effect.effect_id
        else:
            error["code"] = "effect_unrecorded"
        await self._event(outcome.run_id, "agent.suspended", error)
        run = await self._update(outcome.run_id, status="suspended", error=error)
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
        if error is not None:
            await self._event(outcome.run_id, "agent.ended", {"status": status, **error})
        try:
            run = await self._update(outcome.run_id, status=status, error=error, **changes)
        except StateroomError as exc:
            if exc.code != "invalid_transition":
                raise
            run = await self.client.get_run(outcome.run_id)  # ended elsewhere (cancelled)
        outcome.status, outcome.error = run.status, run.error
        await self._finish_task(outcome.task_id, TASK_STATUS.get(run.status, "failed"))
        if session is not None:
            await self._detach(session, outcome.run_id)

    # --- revalidation on resume -----------------------------------------------
    def _fingerprint(self) -> dict[str, Any]:
        """What the run's execution facts depend on: each tool's name and JSON schema, the
        model settings and the approval policy in force."""
        tools = {
            tool.name: _jsonable(getattr(tool, "params_json_schema", None))
            for tool in self.agent.tools
        }
        settings = getattr(self.agent.model_settings, "to_json_dict", None)
        policy = getattr(self.risk_policy, "__qualname__", repr(self.risk_policy))
        return {
            "tools": tools,
            "model_settings": item_digest(_jsonable(settings() if settings else None)),
            "policy": {
                "risk_policy": f"{getattr(self.risk_policy, '__module__', '')}.{policy}",
                "allowed_decisions": list(self.allowed_decisions),
                "on_rejection": self.on_rejection,
                "approval_ttl": self.approval_ttl.total_seconds() if self.approval_ttl else None,
            },
        }

    def _drift(self, recorded: Any) -> dict[str, Any]:
        """What changed since the checkpoint's fingerprint: {} when nothing did."""
        if not isinstance(recorded, dict):
            return {}  # a schema 1 checkpoint: nothing to compare with
        now = self._fingerprint()
        drift: dict[str, Any] = {}
        old_tools, new_tools = recorded.get("tools") or {}, now["tools"]
        tools = {
            name: {"old": old_tools.get(name), "new": new_tools.get(name)}
            for name in sorted(set(old_tools) | set(new_tools))
            if old_tools.get(name) != new_tools.get(name)
        }
        if tools:
            drift["tools"] = tools
        if recorded.get("model_settings") != now["model_settings"]:
            drift["model_settings"] = {
                "old": recorded.get("model_settings"),
                "new": now["model_settings"],
            }
        if recorded.get("policy") != now["policy"]:
            drift["policy"] = {"old": recorded.get("policy"), "new": now["policy"]}
        return drift

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

    # --- small helpers -------------------------------------------------------
    def _arguments_schema(self, tool_name: str) -> dict[str, Any] | None:
        """The tool's JSON schema as the SDK validates its arguments (`params_json_schema`):
        the server then refuses an edit the tool would refuse, and a plain approval of
        arguments it would (after the tool changed). None for a schema over the server's
        bound: the approval is still asked, unchecked."""
        for tool in self.agent.tools:
            schema = getattr(tool, "params_json_schema", None)
            if getattr(tool, "name", None) == tool_name and isinstance(schema, dict):
                schema = _jsonable(schema)
                return schema if len(json.dumps(schema)) <= MAX_SCHEMA_BYTES else None
        return None

    def _risk(self, tool_name: str, arguments: dict[str, Any]) -> str:
        risk = self.risk_policy(tool_name, arguments)
        if risk not in RISKS:
            raise ValueError(f"risk_policy returned {risk!r}, not one of {RISKS}")
        return risk

    async def _update(self, run_id: str, **changes: Any) -> Run:
        """Compare-and-set on the freshest version; re-read on a conflict (not a blind retry)."""
        if changes.get("error", ...) is None:
            changes.pop("error")
        for _attempt in range(5):
            run = await self.client.get_run(run_id)
            try:
                return await self.client.transition_run(
                    run_id, expected_version=run.version, worker=self.worker, **changes
                )
            except VersionConflict:
                continue
        raise StateroomError(f"Run {run_id} kept changing; could not update it.")

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

    async def _finish_task(self, task_id: str, status: str) -> None:
        for _attempt in range(5):
            task = await self.client.get_task(task_id)
            if task.status == status:
                return
            try:
                await self.client.save_task_state(
                    task_id, expected_version=task.version, status=status
                )
                return
            except VersionConflict:
                continue

    async def _attach(self, session: StateroomSession, run_id: str) -> None:
        for _attempt in range(5):
            record = await self.client.get_session(session.session_id)
            if run_id in record.attached_run_ids:
                return
            try:
                await self.client.attach_session(
                    session.session_id,
                    run_id=run_id,
                    user_id=session.user_id,
                    expected_revision=record.revision,
                )
                return
            except VersionConflict:
                continue

    async def _detach(self, session: StateroomSession, run_id: str) -> None:
        for _attempt in range(5):
            record = await self.client.get_session(session.session_id)
            if run_id not in record.attached_run_ids or record.status in ("closed", "expired"):
                return
            try:
                await self.client.detach_session(
                    session.session_id,
                    run_id=run_id,
                    user_id=session.user_id,
                    expected_revision=record.revision,
                )
                return
            except VersionConflict:
                continue

    async def _event(self, run_id: str, type: str, payload: dict[str, Any]) -> None:
        await self.client.append_events(
            run_id, [{"type": type, "payload": payload}], worker=self.worker
        )


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


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


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


async def _lost(client: AsyncStateroomClient, outcome: GateOutcome) -> GateOutcome:
    """The run ended while this gate was about to claim it. Cancelled by a person: say so.
    Ended by another worker: this one lost the race and did nothing, so it reports
    `claimed` (never the other worker's `succeeded`)."""
    run = await client.get_run(outcome.run_id)
    if run.status == "cancelled":
        outcome.status, outcome.error = run.status, run.error
    else:
        outcome.status, outcome.claimed_by = CLAIMED, run.claimed_by or None
    return outcome


def _when(value: str | None) -> datetime | None:
    """A claim's `claim_until` as the API sends it (ISO 8601), as a datetime."""
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


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


def _text(output: Any) -> Any:
    if isinstance(output, str | int | float | bool) or output is None:
        return output
    try:
        json.dumps(output)
    except (TypeError, ValueError):
        return str(output)
    return output
