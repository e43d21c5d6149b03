"""`ApprovalGate`: the entry points (`run`, `resume`) and the loop that runs the agent until
it ends or waits for a person."""

from __future__ import annotations

import json
import secrets
from datetime import datetime, timedelta
from typing import Any, Literal

from agents import Agent, RunConfig, Runner, RunState
from agents.result import RunResult

from ...aio import AsyncStateroomClient
from ...errors import InvalidTransition, PayloadTooLarge, RunClaimed
from ..session import StateroomSession
from ..tools import LEDGER, Ledger
from .claim import _lost, default_worker
from .endings import _cause, _halt_in
from .outcome import GateOutcome
from .policy import DECISIONS, default_risk
from .revalidation import GateRevalidation
from .usage import Price, usage_report
from .writes import Explain, RiskPolicy


def _summary(input: Any) -> str:
    if isinstance(input, str):
        text = input
    else:
        texts = [i.get("content") for i in input if isinstance(i, dict)]
        text = next((t for t in reversed(texts) if isinstance(t, str)), "agent run")
    return text if len(text) <= 500 else text[:497] + "..."


def _text(output: Any) -> Any:
    if isinstance(output, str | int | float | bool) or output is None:
        return output
    try:
        json.dumps(output)
    except (TypeError, ValueError):
        return str(output)
    return output


class ApprovalGate(GateRevalidation):
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
        price: Price | None = None,
    ) -> None:
        if on_rejection not in ("continue", "stop"):
            raise ValueError("on_rejection must be 'continue' or 'stop'")
        if lease_seconds < 3:
            raise ValueError("lease_seconds must be at least 3 (it is renewed every third)")
        self.worker = worker or default_worker()
        self.lease_seconds = lease_seconds
        self._claims = {}
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
        self.price = price  # the run's cost from its usage (gate/usage.py); None: not reported

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
            # One request: the claim, the start event and the move to running.
            await self._claim(run_id).hold(
                events=[{"type": "agent.started", "payload": {"agent": self.agent.name}}],
                status="running",
            )
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
        data, session, state = await self._restore(run)
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
                outcome.run_id,
                approvals={c["call_id"]: c["approval_id"] for c in calls if c.get("approval_id")},
                worker=self.worker,
            )
            result = await self._pass(outcome, input, session, ledger)
            if isinstance(result, GateOutcome):
                return result
            outcome.executed += ledger.executed
            outcome.replayed += ledger.replayed
            paused = await self._settle(outcome, result, ledger, calls, session)
            if paused is None:
                return outcome
            (input, calls), interrupted = paused, True

    async def _pass(
        self,
        outcome: GateOutcome,
        input: Any,
        session: StateroomSession | None,
        ledger: Ledger,
    ) -> RunResult | GateOutcome:
        """One `Runner.run` with the ledger of this pass; the outcome when an effect halted it.

        An agent's error ends the run `failed` and is raised again.
        """
        token = LEDGER.set(ledger)
        # Items of this run carry its id while it runs, and only then: the
        # session object outlives the run (later plain Runner.run calls).
        previous_run_id = session.run_id if session is not None else None
        previous_worker = session.worker if session is not None else None
        if session is not None:
            session.run_id, session.worker = outcome.run_id, self.worker
        try:
            return await Runner.run(
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

    async def _settle(
        self,
        outcome: GateOutcome,
        result: RunResult,
        ledger: Ledger,
        calls: list[dict[str, Any]],
        session: StateroomSession | None,
    ) -> tuple[RunState[Any], list[dict[str, Any]]] | None:
        """After a pass: end the run (None), or checkpoint its interrupted calls and return
        the state and calls to decide on."""
        usage: dict[str, Any] = {
            **usage_report(
                result.context_wrapper.usage, result.last_agent, self.run_config, self.price
            ),
            "turn_index": len(result.raw_responses),
        }
        if not result.interruptions:
            outcome.final_output = result.final_output
            await self._event(
                outcome.run_id, "agent.final_output", {"output": _text(result.final_output)}
            )
        failure = await self._report_outcomes(outcome, ledger, calls)
        if failure is not None:
            await self._end(outcome, "failed", session, error=failure, **usage)
            return None
        if not result.interruptions:
            await self._end(outcome, "succeeded", session, **usage)
            return None
        state = result.to_state()
        calls = [self._call_of(item) for item in result.interruptions]
        await self._event(
            outcome.run_id,
            "agent.interrupted",
            {"calls": [{k: c[k] for k in ("call_id", "tool_name", "risk")} for c in calls]},
        )
        checkpoint = await self._checkpoint(outcome.task_id, state, calls, session)
        await self._update(outcome.run_id, last_checkpoint_id=checkpoint, **usage)
        return state, calls
