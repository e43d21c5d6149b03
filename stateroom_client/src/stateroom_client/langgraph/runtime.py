"""A LangGraph graph as a Stateroom run: interrupts decided in the inbox, effects in the ledger.

    graph = builder.compile(checkpointer=StateroomSaver(client))
    runner = GraphRunner(client, graph, name="refunds")
    outcome = runner.start({"order_id": "A-1", "amount_cents": 1200}, thread_id="order-A-1")
    # ...an operator decides in the console; here or in any other process:
    outcome = GraphRunner(client, graph).resume(outcome.run_id)

Inside the graph's nodes:

- `stateroom_interrupt(tool_name, arguments, risk=..., allowed_decisions=...,
  description=..., arguments_schema=...)` asks a person. With the tool's
  arguments schema (a JSON Schema dict, a pydantic model class, or a LangChain
  tool: its `tool_call_schema`) the server refuses an edit that does not fit
  it, and a plain approval of arguments that do not. It calls LangGraph's `interrupt()` with
  the request Agent Inbox expects (`[{"action_request": {"action", "args"},
  "config": {"allow_accept", "allow_edit", "allow_respond", "allow_ignore"},
  "description"}]`) and, when LangGraph pauses the graph, records it as an
  approval request of the run. It returns Agent Inbox's answer,
  `{"type": "accept" | "edit" | "response" | "ignore", "args": ...}`, so a
  node written for Agent Inbox reads its answer unchanged; graphs that call
  `interrupt([HumanInterrupt])` themselves work too (the runner records those).
- `@idempotent_effect` wraps a function with a side effect (a refund, an
  email): its call goes through the effect ledger under a key made of the
  thread, the LangGraph task (its checkpoint namespace, the same when a node
  re-runs from the same checkpoint) and the call's arguments. A node re-run
  after a crash gets the committed result back instead of repeating it. Under
  a `GraphRunner` the effect names the approval that let the graph go on (the
  last one approved or edited in the pass that runs it), as the Agents SDK
  gate's effects do.

Decisions map onto Agent Inbox's answers: approve -> accept, edit -> edit
(with the operator's arguments), respond -> response (the operator's text),
reject -> ignore, whose `args` is the rejection's reason (None when the
operator gave none), so the graph can tell the model why. Agent Inbox's `allow_*` flags map the other way onto the
approval's `allowed_decisions` (allow_ignore -> reject). An approval that
expires or is cancelled ends the run `failed` with `approval_expired` /
`approval_cancelled`.

The runner is synchronous (`graph.invoke`); the saver has async methods for
graphs driven with `ainvoke`.

One resumer at a time, as with the Agents SDK gate: the runner claims the run
(`claim_run`, as `worker`) when it starts it and before it resumes it (once
the decision is in, for a run that waited on a person), renews the claim from
a background thread every third of `lease_seconds`, and names its worker on
its run writes and effects. A runner that finds the run claimed by another
worker returns `GraphOutcome(status="claimed", claimed_by=...)` and writes
nothing more.
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import json
import os
import secrets
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langgraph.config import get_config
from langgraph.errors import GraphInterrupt
from langgraph.types import Command, Interrupt, interrupt

from ..client import StateroomClient
from ..errors import (
    AlreadyExists,
    IdempotencyKeyReused,
    InvalidTransition,
    NotFound,
    RunClaimed,
    StateroomError,
    VersionConflict,
)
from ..models import Approval, Effect, Run
from .usage import Price, usage_changes, usage_of

F = TypeVar("F", bound=Callable[..., Any])
RISKS = ("low", "medium", "high", "critical")
DECISIONS = ("approve", "edit", "reject", "respond")
# Agent Inbox's config flags and the approval decisions they allow.
FLAGS = {
    "allow_accept": "approve",
    "allow_edit": "edit",
    "allow_respond": "respond",
    "allow_ignore": "reject",
}
TASK_STATUS = {"succeeded": "completed", "failed": "failed", "cancelled": "cancelled"}


@dataclass
class Binding:
    """The Stateroom run a graph executes as, for the helpers called inside its nodes."""

    client: StateroomClient
    run_id: str
    thread_id: str
    executed: list[str] = field(default_factory=list)  # effect keys run in this process
    replayed: list[str] = field(default_factory=list)  # effect keys answered from the ledger
    worker: str | None = None  # the worker that claimed the run: named on every write
    approval_id: str | None = None  # the approval that let the graph go on: named on effects


BINDING: contextvars.ContextVar[Binding | None] = contextvars.ContextVar(
    "stateroom_langgraph_binding", default=None
)


@contextmanager
def bound(binding: Binding) -> Iterator[Binding]:
    token = BINDING.set(binding)
    try:
        yield binding
    finally:
        BINDING.reset(token)


# --- interrupts as approvals -----------------------------------------------------
def inbox_request(
    tool_name: str,
    arguments: dict[str, Any],
    *,
    risk: str = "medium",
    allowed_decisions: Sequence[str] = ("approve", "reject"),
    description: str = "",
    arguments_schema: Any = None,
) -> dict[str, Any]:
    """Agent Inbox's `HumanInterrupt` for a tool call, with Stateroom's risk (and the tool's
    arguments schema, if given) beside it."""
    if risk not in RISKS:
        raise ValueError(f"risk must be one of {', '.join(RISKS)}")
    unknown = sorted(set(allowed_decisions) - set(DECISIONS))
    if unknown or not allowed_decisions:
        raise ValueError(f"allowed_decisions must be some of {', '.join(DECISIONS)}")
    return {
        "action_request": {"action": tool_name, "args": dict(arguments)},
        "config": {flag: decision in allowed_decisions for flag, decision in FLAGS.items()},
        "description": description,
        "stateroom": {"risk": risk, **_schema_entry(arguments_schema)},
    }


def _schema_entry(schema: Any) -> dict[str, Any]:
    """`{"arguments_schema": <JSON Schema>}` of a dict, a pydantic model class or a LangChain
    tool (its `tool_call_schema`, what a model's call is validated against); {} for None."""
    if schema is None:
        return {}
    schema = getattr(schema, "tool_call_schema", schema)
    if hasattr(schema, "model_json_schema"):
        schema = schema.model_json_schema()
    if not isinstance(schema, dict):
        raise TypeError("arguments_schema must be a JSON Schema dict, a pydantic model or a tool")
    return {"arguments_schema": json.loads(json.dumps(schema))}


def stateroom_interrupt(
    tool_name: str,
    arguments: dict[str, Any],
    *,
    risk: str = "medium",
    allowed_decisions: Sequence[str] = ("approve", "reject"),
    description: str = "",
    arguments_schema: Any = None,
) -> dict[str, Any]:
    """Ask a person about a tool call; returns Agent Inbox's answer (`type`, `args`).

    The first time the node runs, LangGraph pauses the graph here; the
    request becomes an approval of the run (when a `GraphRunner` drives the
    graph). When the graph resumes with the decision, the node runs again and
    this call returns the answer.
    """
    request = inbox_request(
        tool_name,
        arguments,
        risk=risk,
        allowed_decisions=allowed_decisions,
        description=description,
        arguments_schema=arguments_schema,
    )
    try:
        answers = interrupt([request])
    except GraphInterrupt as paused:
        binding = BINDING.get()
        if binding is not None:
            for raised in paused.args[0] if paused.args else ():
                # Best effort: the runner records any approval missing here
                # (another one pending, a lost answer) once the graph pauses.
                with suppress(StateroomError):
                    _ensure_approval(binding.client, binding.run_id, raised)
        raise
    answer: dict[str, Any] = answers[0] if isinstance(answers, list) else answers
    return answer


def approval_id_for(run_id: str, interrupt_id: str) -> str:
    """The approval of one LangGraph interrupt in one run: the same in every process."""
    return "lg-" + hashlib.sha256(f"{run_id}\n{interrupt_id}".encode()).hexdigest()[:40]


@dataclass(frozen=True)
class Asked:
    """What an interrupt asks, read from its value (Agent Inbox's request, or anything else)."""

    tool_name: str
    arguments: dict[str, Any]
    risk: str
    allowed_decisions: list[str]
    description: str
    listed: bool  # the value was a list of requests (Agent Inbox's form): answer with a list
    arguments_schema: dict[str, Any] | None = None  # the tool's, when the request carried it

    @classmethod
    def of(cls, value: Any) -> Asked:
        listed = isinstance(value, list)
        request = value[0] if listed and value else value
        if isinstance(request, dict) and isinstance(request.get("action_request"), dict):
            action = request["action_request"]
            config = request.get("config") or {}
            allowed = [decision for flag, decision in FLAGS.items() if config.get(flag)]
            extra = request.get("stateroom") or {}
            risk = extra.get("risk", "medium")
            schema = extra.get("arguments_schema")
            return cls(
                tool_name=str(action.get("action") or "interrupt"),
                arguments=dict(action.get("args") or {}),
                risk=risk if risk in RISKS else "medium",
                allowed_decisions=allowed or ["approve", "reject"],
                description=str(request.get("description") or ""),
                listed=listed,
                arguments_schema=schema if isinstance(schema, dict) else None,
            )
        # A plain `interrupt(value)`: a person can answer in words or decline.
        arguments = request if isinstance(request, dict) else {"value": request}
        return cls(
            tool_name="interrupt",
            arguments=json.loads(json.dumps(arguments, default=str)),
            risk="medium",
            allowed_decisions=["respond", "reject"],
            description="",
            listed=False,
        )

    def answer(self, approval: Approval) -> Any:
        """Agent Inbox's answer for a decided approval, in the form the interrupt asked."""
        response: dict[str, Any]
        if approval.decision == "edit":
            response = {
                "type": "edit",
                "args": {"action": self.tool_name, "args": approval.approved_arguments},
            }
        elif approval.decision == "respond":
            response = {"type": "response", "args": approval.response}
        elif approval.status == "approved":
            response = {"type": "accept", "args": None}
        else:  # rejected: the reason, when the operator gave one, reaches the graph
            response = {"type": "ignore", "args": approval.decision_reason or None}
        if self.tool_name == "interrupt" and not self.listed:
            return response["args"] if response["type"] == "response" else None
        return [response] if self.listed else response


def _ensure_approval(
    client: StateroomClient, run_id: str, raised: Interrupt, worker: str | None = None
) -> Approval:
    """The interrupt's approval, asked now unless an earlier pass (or process) asked it."""
    approval_id = approval_id_for(run_id, raised.id)
    with suppress(NotFound):
        return client.get_approval(approval_id)
    asked = Asked.of(raised.value)
    run = client.get_run(run_id)
    try:
        return client.request_approval(
            run_id,
            expected_version=run.version,
            tool_name=asked.tool_name,
            arguments=asked.arguments,
            risk=asked.risk,
            reason=asked.description or None,
            approval_id=approval_id,
            allowed_decisions=asked.allowed_decisions,
            worker=worker,
            arguments_schema=asked.arguments_schema,
        )
    except AlreadyExists:
        return client.get_approval(approval_id)


# --- effects in nodes ---------------------------------------------------------------
class LedgerHalt(Exception):
    """Stops the run: an effect's outcome is unknown or could not be recorded."""


class EffectOutcomeUnknown(LedgerHalt):
    def __init__(self, effect: Effect) -> None:
        super().__init__(
            f"Effect {effect.effect_id} ({effect.tool_name}) is {effect.status!r}: it may have "
            "happened. Settle it in the console before resuming."
        )
        self.effect = effect


class EffectFailed(Exception):
    """The ledger says this call failed before; it is not run again."""

    def __init__(self, effect: Effect) -> None:
        message = (effect.error or {}).get("message") if isinstance(effect.error, dict) else None
        super().__init__(message or f"{effect.tool_name} failed earlier")
        self.effect = effect


def effect_key(thread_id: str, checkpoint_ns: str, name: str, arguments: dict[str, Any]) -> str:
    """The ledger key of one call in one LangGraph task: the same when the node re-runs."""
    digest = hashlib.sha256(
        json.dumps([checkpoint_ns, name, arguments], sort_keys=True, default=str).encode()
    ).hexdigest()[:40]
    return f"lg:{thread_id}:{digest}"


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
    return value


def _record(
    binding: Binding, tool_name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[str, Effect]:
    """The call's effect key and its effect on the ledger, recorded now or found there."""
    arguments = _jsonable({"args": list(args), "kwargs": kwargs})
    if not isinstance(arguments, dict):
        arguments = {"repr": arguments}
    ns = str(get_config()["configurable"].get("checkpoint_ns") or "")
    key = effect_key(binding.thread_id, ns, tool_name, arguments)
    try:
        effect = binding.client.record_effect(
            binding.run_id,
            idempotency_key=key,
            tool_name=tool_name,
            request={"arguments": arguments},
            node_id=ns.split(":", 1)[0] or None,
            approval_id=binding.approval_id,
            worker=binding.worker,
        )
    except IdempotencyKeyReused as exc:
        raise LedgerHalt(f"The ledger holds {key} for a different call: {exc}") from exc
    return key, effect


def idempotent_effect(func: F | None = None, /, *, name: str | None = None) -> Any:
    """Route a side effect called inside a LangGraph node through the effect ledger.

    Outside a `GraphRunner` the function simply runs. Under one, the call is
    recorded under `effect_key(...)` (the thread, the node's task, the
    function's name and its keyword and positional arguments) before it runs
    and committed with its result after; a node that runs again, in this
    process or another one, gets the committed result back. Two identical
    calls in one node are one effect: pass an argument that tells them apart.
    The result should be JSON (anything else is recorded as its `str`).
    """

    def wrap(fn: F) -> F:
        tool_name = name or fn.__name__

        @functools.wraps(fn)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            binding = BINDING.get()
            if binding is None:
                return fn(*args, **kwargs)
            key, effect = _record(binding, tool_name, args, kwargs)
            client = binding.client
            if effect.status == "committed":
                binding.replayed.append(key)
                result = effect.result
                return result.get("output") if isinstance(result, dict) else result
            if effect.status == "failed":
                raise EffectFailed(effect)
            if not effect.created:
                raise EffectOutcomeUnknown(effect)
            try:
                output = fn(*args, **kwargs)
            except Exception as exc:
                client.fail_effect(
                    effect.effect_id,
                    error={"message": str(exc), "type": type(exc).__name__},
                    worker=binding.worker,
                )
                raise
            binding.executed.append(key)
            try:
                client.commit_effect(
                    effect.effect_id, result={"output": _jsonable(output)}, worker=binding.worker
                )
            except StateroomError as exc:
                raise LedgerHalt(
                    f"{tool_name} ran but effect {effect.effect_id} could not be committed: {exc}"
                ) from exc
            return output

        return guarded  # type: ignore[return-value]

    return wrap(func) if func is not None else wrap


# --- the runner ---------------------------------------------------------------------
@dataclass
class GraphOutcome:
    """Where the run stands when the runner returns."""

    run_id: str
    thread_id: str
    status: str  # the Stateroom run status
    values: dict[str, Any] | None = None  # the graph's state when it finished
    error: dict[str, Any] | None = None
    approvals: list[Approval] = field(default_factory=list)  # asked or decided, this pass
    executed: list[str] = field(default_factory=list)  # effect keys run in this process
    replayed: list[str] = field(default_factory=list)  # effect keys answered from the ledger
    claimed_by: str | None = None  # status "claimed": the worker that holds the run

    @property
    def finished(self) -> bool:
        return self.status in Run.TERMINAL

    @property
    def claimed_elsewhere(self) -> bool:
        """Another worker holds the run: this runner stopped and wrote nothing more."""
        return self.status == "claimed"


class _Claim:
    """The runner's claim on a run: taken before work, renewed from a thread while it works."""

    def __init__(self, client: StateroomClient, run_id: str, worker: str, lease: int) -> None:
        self.client, self.run_id, self.worker, self.lease = client, run_id, worker, lease
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    def hold(self, **changes: Any) -> Run:
        """Claim the run, or renew our claim; `RunClaimed` if another worker holds it.

        With transition `changes`, the claim and the transition go as one request
        (`step_run`): both or neither.
        """
        for _attempt in range(10):
            run = self.client.get_run(self.run_id)
            try:
                if changes:
                    run = self.client.step_run(
                        self.run_id,
                        expected_version=run.version,
                        worker=self.worker,
                        claim=True,
                        lease_seconds=self.lease,
                        **changes,
                    )
                else:
                    run = self.client.claim_run(
                        self.run_id,
                        worker=self.worker,
                        expected_version=run.version,
                        lease_seconds=self.lease,
                    )
            except VersionConflict:
                continue
            if self._renewer is None:
                self._renewer = threading.Thread(target=self._renew, daemon=True)
                self._renewer.start()
            return run
        raise StateroomError(f"Run {self.run_id} kept changing; could not claim it.")

    def _renew(self) -> None:
        while not self._stop.wait(self.lease / 3):
            try:
                if self.client.get_run(self.run_id).claimed_by != self.worker:
                    continue  # waiting for a person (held by nobody), or lost: not ours
                self.hold()
            except StateroomError:
                continue  # the next write of the runner says what happened

    def stop(self) -> None:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join(timeout=30)


class GraphRunner:
    """Runs a compiled graph (with a `StateroomSaver`) as Stateroom runs, one per `start`.

    The thread is a task (`task_id` = thread id), the run is created on it,
    and its status follows the graph: `running`, `waiting_approval` while an
    interrupt waits for a person, `succeeded` when the graph ends, `failed`
    on an error, an expired or cancelled approval, `suspended` when an
    effect's outcome is unknown (a person settles it, then `resume`).
    """

    def __init__(
        self,
        client: StateroomClient,
        graph: Any,
        *,
        name: str = "langgraph",
        poll: float = 30,
        worker: str | None = None,
        lease_seconds: int = 60,
        price: Price | None = None,
    ) -> None:
        if lease_seconds < 3:
            raise ValueError("lease_seconds must be at least 3 (it is renewed every third)")
        self.client = client
        self.graph = graph
        self.name = name
        self.poll = poll
        self.worker = worker or (
            f"{socket.gethostname()[:100]}:{os.getpid()}:{secrets.token_hex(4)}"
        )
        self.lease_seconds = lease_seconds
        self.price = price  # the run's cost from its usage (langgraph/usage.py); None: not reported

    def _held(self, run: Run, body: Callable[[_Claim], GraphOutcome]) -> GraphOutcome:
        """`body` with the run's claim; another worker holding the run ends it `claimed`."""
        claim = _Claim(self.client, run.run_id, self.worker, self.lease_seconds)
        try:
            return body(claim)
        except Exception as exc:
            claimed = _cause(exc, RunClaimed)
            if claimed is None:
                raise
            return GraphOutcome(run.run_id, run.task_id, "claimed", claimed_by=claimed.claimed_by)
        finally:
            claim.stop()

    def start(
        self,
        input: Any,
        *,
        thread_id: str,
        run_id: str | None = None,
        session_id: str | None = None,
        wait: bool = False,
        timeout: float | None = None,
    ) -> GraphOutcome:
        """Create the run on the thread and run the graph until it ends or asks a person.

        With `wait`, it waits for each decision (long-polling) and goes on.
        """
        with suppress(AlreadyExists):
            self.client.create_task(task_id=thread_id, objective=f"LangGraph thread {thread_id}")
        run = self.client.create_run(
            run_id=run_id, task_id=thread_id, session_id=session_id, active_agent=self.name
        )

        def body(claim: _Claim) -> GraphOutcome:
            running = claim.hold(status="running")  # one request: claimed and running
            return self._drive(running, input, claim, wait=wait, timeout=timeout)

        return self._held(run, body)

    def resume(
        self, run_id: str, *, wait: bool = True, timeout: float | None = None
    ) -> GraphOutcome:
        """Carry a run on from what Stateroom holds: its thread's checkpoints and its approvals."""
        run = self.client.get_run(run_id)
        if run.is_terminal:
            return GraphOutcome(run.run_id, run.task_id, run.status, error=run.error)

        def body(claim: _Claim) -> GraphOutcome:
            current = run
            # A run waiting on a person is held by nobody: it is claimed once
            # the decision is in (`_decisions`).
            if current.status != "waiting_approval":
                try:
                    current = claim.hold()
                except InvalidTransition:  # it ended meanwhile, elsewhere
                    ended = self.client.get_run(run_id)
                    return GraphOutcome(run_id, ended.task_id, ended.status, error=ended.error)
            if current.status == "suspended":
                current = self.client.transition_run(
                    run_id,
                    expected_version=current.version,
                    status="running",
                    error=None,
                    worker=self.worker,
                )
            return self._drive(current, None, claim, wait=wait, timeout=timeout, resuming=True)

        return self._held(run, body)

    # --- one pass after another until the graph ends or waits -------------------
    def _drive(
        self,
        run: Run,
        input: Any,
        claim: _Claim,
        *,
        wait: bool,
        timeout: float | None,
        resuming: bool = False,
    ) -> GraphOutcome:
        thread_id = run.task_id
        config = {"configurable": {"thread_id": thread_id, "stateroom_run_id": run.run_id}}
        binding = Binding(self.client, run.run_id, thread_id, worker=self.worker)
        outcome = GraphOutcome(run.run_id, thread_id, run.status)
        payload: Any = input
        invoke = not resuming  # a resume first looks at what the thread holds
        while True:
            if invoke and not self._invoke(payload, config, binding, outcome):
                return outcome
            state = self.graph.get_state(config)
            self._report_usage(run.run_id, state.values)
            if state.interrupts:
                answers = self._decisions(
                    run.run_id, state.interrupts, outcome, wait, timeout, claim
                )
                if answers is None:
                    return self._finish_pass(outcome, binding)
                binding.approval_id = _allowing(outcome.approvals) or binding.approval_id
                payload, invoke = Command(resume=answers), True
                continue
            if state.next and not (invoke and payload is None):
                # Nodes left to run and no question pending: a pass that stopped
                # early (the process died). Run them from the last checkpoint.
                payload, invoke = None, True
                continue
            if state.next:
                error = {
                    "code": "graph_stalled",
                    "message": f"The graph stopped before {', '.join(state.next)} without an"
                    " interrupt (a static breakpoint?); the runner cannot go on.",
                }
                self._end(run.run_id, "failed", error=error)
                outcome.error = error
                return self._finish_pass(outcome, binding)
            self._end(run.run_id, "succeeded", error=None)
            outcome.values = dict(state.values)
            return self._finish_pass(outcome, binding)

    def _invoke(
        self, payload: Any, config: dict[str, Any], binding: Binding, outcome: GraphOutcome
    ) -> bool:
        """One `graph.invoke`; False when it ended the run (an error)."""
        try:
            with bound(binding):
                self.graph.invoke(payload, config)
        except Exception as exc:
            if _cause(exc, RunClaimed) is not None:
                raise  # another worker holds the run: stop, write nothing (`_held`)
            return self._invoke_failed(exc, binding, outcome)
        return True

    def _invoke_failed(self, exc: Exception, binding: Binding, outcome: GraphOutcome) -> bool:
        """A pass that raised ends the run: suspended on the ledger's halts, failed otherwise."""
        if isinstance(exc, EffectOutcomeUnknown):
            status, error = "suspended", _error("effect_outcome_unknown", exc)
        elif isinstance(exc, LedgerHalt):
            status, error = "suspended", _error("effect_unrecorded", exc)
        else:
            status, error = "failed", _error("graph_error", exc)
        self._end(binding.run_id, status, error=error)
        outcome.status, outcome.error = status, error
        self._finish_pass(outcome, binding)
        return False

    def _decisions(
        self,
        run_id: str,
        interrupts: Sequence[Interrupt],
        outcome: GraphOutcome,
        wait: bool,
        timeout: float | None,
        claim: _Claim,
    ) -> dict[str, Any] | None:
        """The answer to every pending interrupt, asking one approval at a time.

        None when the run waits (an undecided approval and no `wait`) or ended
        (an approval expired or was cancelled).
        """
        answers: dict[str, Any] = {}
        for raised in interrupts:
            approval = _ensure_approval(self.client, run_id, raised, self.worker)
            if approval.is_pending and wait:
                approval = self.client.wait_for_decision(
                    approval.approval_id, timeout=timeout, poll=self.poll
                )
            outcome.approvals.append(approval)
            if approval.is_pending:
                outcome.status = "waiting_approval"
                return None
            try:  # decided: one worker goes on (the request let the claim go)
                claim.hold()
            except InvalidTransition:  # ended meanwhile (a person cancelled it)
                outcome.status = self.client.get_run(run_id).status
                return None
            if approval.status in ("expired", "cancelled"):
                code = f"approval_{approval.status}"
                error = {
                    "code": code,
                    "message": f"Approval {approval.approval_id} {approval.status}.",
                }
                self._end(run_id, "failed", error=error)
                outcome.status, outcome.error = "failed", error
                return None
            answers[raised.id] = Asked.of(raised.value).answer(approval)
        return answers

    def _report_usage(self, run_id: str, values: Any) -> None:
        """The thread's usage totals on the run (langgraph/usage.py), written when they changed."""
        usage = usage_of(values)
        if not usage.total_tokens and not usage.model:
            return  # no model answer in the state: nothing to report
        changes = usage_changes(usage, self.price)
        for _attempt in range(5):
            run = self.client.get_run(run_id)
            if run.is_terminal or all(getattr(run, k) == v for k, v in changes.items()):
                return
            try:
                self.client.transition_run(
                    run_id, expected_version=run.version, worker=self.worker, **changes
                )
                return
            except VersionConflict:
                continue

    def _end(self, run_id: str, status: str, *, error: dict[str, Any] | None) -> None:
        """Move the run to `status` (compare-and-set on its current version) and its task along."""
        run = self.client.get_run(run_id)
        if run.is_terminal or (run.status == status and run.error == error):
            return
        self.client.transition_run(
            run_id, expected_version=run.version, status=status, error=error, worker=self.worker
        )

    def _finish_pass(self, outcome: GraphOutcome, binding: Binding) -> GraphOutcome:
        """The outcome with the run's status as the server has it now (the authority)."""
        outcome.executed = list(binding.executed)
        outcome.replayed = list(binding.replayed)
        outcome.status = self.client.get_run(outcome.run_id).status
        return outcome


E = TypeVar("E", bound=BaseException)


def _cause(exc: BaseException, kind: type[E]) -> E | None:
    """`exc` or the first exception of type `kind` in its chain."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _allowing(approvals: Sequence[Approval]) -> str | None:
    """The last approval that let a call go ahead (approved or edited; not a response)."""
    for approval in reversed(approvals):
        if approval.status == "approved" and approval.decision in ("approve", "edit", ""):
            return approval.approval_id
    return None


def _error(code: str, exc: BaseException) -> dict[str, Any]:
    return {"code": code, "message": str(exc) or type(exc).__name__, "type": type(exc).__name__}


__all__ = [
    "BINDING",
    "Asked",
    "Binding",
    "EffectFailed",
    "EffectOutcomeUnknown",
    "GraphOutcome",
    "GraphRunner",
    "LedgerHalt",
    "approval_id_for",
    "effect_key",
    "idempotent_effect",
    "inbox_request",
    "stateroom_interrupt",
]
