"""`idempotent_tool`: a function tool whose side effect goes through the effect ledger.

    @idempotent_tool(needs_approval=True)
    def issue_refund(order_id: str, amount_cents: int) -> str:
        ...

It is `agents.function_tool` plus this, whenever the tool runs under an
`ApprovalGate` (which binds the Stateroom run):

1. record the effect under ``f"{run_id}:{tool_call_id}"`` (`record_effect`);
   the key is the same on every replay of this call, in any process;
2. if the ledger already holds it ``committed``: return the recorded output,
   do not run the function again;
   if ``failed``: raise `EffectFailed` (the model sees a tool error);
   if ``started`` or ``unknown`` from an earlier attempt: the effect may or may
   not have happened; raise `EffectOutcomeUnknown`, which stops the run (it is
   not turned into a tool error for the model, which could call again under a
   new call id) until a person settles the effect in the console;
3. otherwise run the function, then `commit_effect` with its output (or
   `fail_effect` with the error, and re-raise). If the commit cannot be
   made, or the key was recorded for a different call, the run stops
   (`EffectUnrecorded`) rather than let the model call the tool again.

Outside a gate the tool simply runs.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar, get_origin, get_type_hints, overload

from agents import function_tool
from agents.run_context import RunContextWrapper
from agents.tool import FunctionTool, default_tool_error_function
from agents.tool_context import ToolContext

from ..aio import AsyncStateroomClient
from ..errors import IdempotencyKeyReused, PayloadTooLarge, RunClaimed, StateroomError
from ..models import Effect

P = ParamSpec("P")
R = TypeVar("R")


class LedgerHalt(Exception):
    """Stops the whole run: never reported to the model as a tool error."""


class EffectOutcomeUnknown(LedgerHalt):
    """An earlier attempt recorded the effect but never committed or failed it."""

    def __init__(self, effect: Effect) -> None:
        super().__init__(
            f"Effect {effect.effect_id} ({effect.tool_name}) is {effect.status!r}: it may have "
            "happened. Settle it in the console before resuming."
        )
        self.effect = effect


class EffectUnrecorded(LedgerHalt):
    """The tool ran but the ledger could not be told (or refused the call): stop, don't retry."""


class ClaimLost(LedgerHalt):
    """Another worker holds the run (`RunClaimed` is the cause): stop, write nothing more."""


class OutputTooLarge(LedgerHalt):
    """The tool ran and its effect is committed, but its output is too large to store."""


class EffectFailed(Exception):
    """The ledger says this call failed before; it is not run again."""

    def __init__(self, effect: Effect) -> None:
        message = (effect.error or {}).get("message") if isinstance(effect.error, dict) else None
        super().__init__(message or f"{effect.tool_name} failed earlier")
        self.effect = effect


@dataclass
class Ledger:
    """What a tool needs to consult the ledger: bound by the gate while a run executes."""

    client: AsyncStateroomClient
    run_id: str
    approvals: dict[str, str] = field(default_factory=dict)  # call_id -> approval_id
    worker: str | None = None  # the worker that claimed the run: named on every write
    executed: list[str] = field(default_factory=list)  # call ids run in this process
    replayed: list[str] = field(default_factory=list)  # call ids answered from the ledger
    # call id -> the tool's error {message, type}, for calls that raised (or whose arguments
    # the SDK could not parse): the SDK gives the model an error string instead, so this is
    # how the gate knows an approved call failed.
    failed: dict[str, dict[str, str]] = field(default_factory=dict)


LEDGER: contextvars.ContextVar[Ledger | None] = contextvars.ContextVar(
    "stateroom_ledger", default=None
)


def effect_key(run_id: str, call_id: str) -> str:
    return f"{run_id}:{call_id}"


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
    return value


def _recorded_output(effect: Effect) -> Any:
    if isinstance(effect.result, dict) and "output" in effect.result:
        return effect.result["output"]
    # Settled by a person without a recorded output.
    return f"{effect.tool_name} already completed (effect {effect.effect_id})."


async def _record(ledger: Ledger, ctx: ToolContext[Any]) -> Effect:
    """The call's effect on the ledger, recorded now or found there (a call run before)."""
    try:
        arguments = json.loads(ctx.tool_arguments or "{}")
    except ValueError:
        arguments = {"raw": ctx.tool_arguments}
    key = effect_key(ledger.run_id, ctx.tool_call_id)
    try:
        return await ledger.client.record_effect(
            ledger.run_id,
            idempotency_key=key,
            tool_name=ctx.tool_name,
            request={"arguments": arguments},
            approval_id=ledger.approvals.get(ctx.tool_call_id),
            worker=ledger.worker,
        )
    except RunClaimed as exc:
        raise ClaimLost(f"Another worker holds run {ledger.run_id}: {exc.message}") from exc
    except IdempotencyKeyReused as exc:
        raise EffectUnrecorded(
            f"The ledger holds {key} for a different call: {exc.message}"
        ) from exc


async def _through_ledger(ctx: ToolContext[Any], invoke: Callable[[], Any], is_async: bool) -> Any:
    async def run() -> Any:
        if is_async:
            return await invoke()
        return await asyncio.to_thread(invoke)

    ledger = LEDGER.get()
    if ledger is None:
        return await run()
    effect = await _record(ledger, ctx)
    if effect.status == "committed":
        ledger.replayed.append(ctx.tool_call_id)
        return _recorded_output(effect)
    if effect.status == "failed":
        raise EffectFailed(effect)
    if not effect.created:
        raise EffectOutcomeUnknown(effect)
    try:
        output = await run()
    except Exception as exc:
        try:
            await ledger.client.fail_effect(
                effect.effect_id,
                error={"message": str(exc), "type": type(exc).__name__},
                worker=ledger.worker,
            )
        except RunClaimed as lost:
            raise ClaimLost(f"Another worker holds run {ledger.run_id}: {lost.message}") from lost
        raise
    ledger.executed.append(ctx.tool_call_id)
    try:
        await ledger.client.commit_effect(
            effect.effect_id, result={"output": _jsonable(output)}, worker=ledger.worker
        )
    except PayloadTooLarge as exc:
        # It happened, but its output is over the server's limit: record that it
        # happened (so no resume runs it again) and stop the run (the gate ends
        # it `failed` with `payload_too_large`).
        await ledger.client.commit_effect(
            effect.effect_id,
            result={"output_too_large": {"limit_bytes": exc.limit}},
            worker=ledger.worker,
        )
        raise OutputTooLarge(
            f"{ctx.tool_name} ran, but its output is over the server's limit of"
            f" {exc.limit} bytes; effect {effect.effect_id} is committed without it."
        ) from exc
    except StateroomError as exc:
        # It happened, but the ledger still says "started": telling the model
        # the tool failed could make it try again. Stop; a resume will find
        # the effect unsettled and a person settles it.
        raise EffectUnrecorded(
            f"{ctx.tool_name} ran but effect {effect.effect_id} could not be committed: {exc}"
        ) from exc
    return output


def _note_failure(ctx: RunContextWrapper[Any], error: Exception) -> None:
    """Tell the gate's ledger this call failed: the tool raised, or the SDK refused its
    arguments before calling it (`ModelBehaviorError`), e.g. an operator's edit of the wrong
    type. Either way the model is about to get an error string as the tool's output."""
    ledger = LEDGER.get()
    call_id = getattr(ctx, "tool_call_id", None)
    if ledger is not None and call_id:
        ledger.failed[call_id] = {
            "message": str(error) or type(error).__name__,
            "type": type(error).__name__,
        }


def _takes_context(func: Callable[..., Any], hints: dict[str, Any]) -> bool:
    params = list(inspect.signature(func).parameters.values())
    if not params:
        return False
    annotation = hints.get(params[0].name, params[0].annotation)
    origin = get_origin(annotation) or annotation
    return origin is RunContextWrapper or origin is ToolContext


def _guard(func: Callable[P, R]) -> Callable[..., Awaitable[Any]]:
    """`func` with a leading ToolContext parameter (so the SDK passes the call id)."""
    hints = get_type_hints(func, include_extras=True)
    signature = inspect.signature(func)
    takes_context = _takes_context(func, hints)
    is_async = inspect.iscoroutinefunction(func)
    call: Callable[..., Any] = func  # called with the arguments the SDK parsed for it

    async def guarded(ctx: ToolContext[Any], *args: Any, **kwargs: Any) -> Any:
        call_args = (ctx, *args) if takes_context else args
        return await _through_ledger(ctx, lambda: call(*call_args, **kwargs), is_async)

    params = list(signature.parameters.values())
    if takes_context:
        params[0] = params[0].replace(annotation=ToolContext)
        hints[params[0].name] = ToolContext
    else:
        params.insert(
            0,
            inspect.Parameter(
                "ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=ToolContext
            ),
        )
        hints = {"ctx": ToolContext, **hints}
    guarded.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    guarded.__annotations__ = hints
    guarded.__name__ = getattr(func, "__name__", "tool")
    guarded.__qualname__ = getattr(func, "__qualname__", guarded.__name__)
    guarded.__doc__ = func.__doc__
    guarded.__module__ = func.__module__
    return guarded


@overload
def idempotent_tool(func: Callable[P, R], /) -> FunctionTool: ...


@overload
def idempotent_tool(
    func: None = None, /, **tool_kwargs: Any
) -> Callable[[Callable[P, R]], FunctionTool]: ...


def idempotent_tool(
    func: Callable[P, R] | None = None, /, **tool_kwargs: Any
) -> FunctionTool | Callable[[Callable[P, R]], FunctionTool]:
    """Like `agents.function_tool` (same keyword arguments), with the effect ledger.

    ``@idempotent_tool`` or ``@idempotent_tool(needs_approval=True, ...)`` on a
    sync or async function; either way the result is the SDK's `FunctionTool`.
    """

    user_failure = tool_kwargs.pop("failure_error_function", default_tool_error_function)

    def on_failure(ctx: RunContextWrapper[Any], error: Exception) -> Any:
        if isinstance(error, LedgerHalt) or user_failure is None:
            raise error
        _note_failure(ctx, error)
        return user_failure(ctx, error)

    def build(fn: Callable[P, R]) -> FunctionTool:
        return function_tool(_guard(fn), failure_error_function=on_failure, **tool_kwargs)

    return build(func) if func is not None else build
