"""A scripted, local `Model` for the OpenAI Agents SDK: no network, no API key.

Tests and the demo need agents that call tools and answer deterministically,
and that behave the same when a run is resumed in another process. So the
script is a function of the conversation, not of the model object's memory:
the step to play is worked out from the input the SDK sends (the number of
scripted tool-call rounds since the last user message), and the call ids are
derived from the position in the conversation, so they are unique across the
turns of a session and identical when a checkpointed run is replayed.

    model = ScriptModel(lambda view: [
        ToolCall("issue_refund", {"order_id": "A-1", "amount_cents": 1200}),
        Reply(f"Done: {view.last_output}"),
    ])
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.items import ModelResponse, TResponseInputItem
from agents.models.interface import Model, ModelTracing
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

_CALL_ID = re.compile(r"^scripted-u(\d+)-s(\d+)-(\d+)$")


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asks for."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Reply:
    """The final assistant message; `text` may depend on what the tools answered."""

    text: str | Callable[[ScriptView], str]


Step = ToolCall | Reply | Sequence[ToolCall]


@dataclass(frozen=True)
class ScriptView:
    """What a script can look at: the conversation as the SDK sent it."""

    items: list[dict[str, Any]]
    user_turn: int  # 1 for the first user message in the conversation
    step: int  # 0 before any tool call answering the last user message
    user_message: str
    outputs: list[str]  # tool outputs since the last user message, in order

    @property
    def last_output(self) -> str:
        return self.outputs[-1] if self.outputs else ""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def view_of(input: str | list[TResponseInputItem]) -> ScriptView:
    items: list[dict[str, Any]] = (
        [{"role": "user", "content": input}] if isinstance(input, str) else [dict(i) for i in input]
    )
    user_positions = [
        index
        for index, item in enumerate(items)
        if item.get("role") == "user" and item.get("type", "message") == "message"
    ]
    last_user = user_positions[-1] if user_positions else -1
    tail = items[last_user + 1 :]
    steps_done = {
        int(match.group(2))
        for item in tail
        if item.get("type") == "function_call"
        and (match := _CALL_ID.match(str(item.get("call_id", ""))))
    }
    outputs = [
        item["output"] if isinstance(item.get("output"), str) else json.dumps(item.get("output"))
        for item in tail
        if item.get("type") == "function_call_output"
    ]
    return ScriptView(
        items=items,
        user_turn=len(user_positions),
        step=max(steps_done) + 1 if steps_done else 0,
        user_message=_text(items[last_user].get("content")) if last_user >= 0 else "",
        outputs=outputs,
    )


class ScriptModel(Model):
    """Plays `script(view)[view.step]`; past the end of the script it says `fallback`."""

    def __init__(
        self,
        script: Sequence[Step] | Callable[[ScriptView], Sequence[Step]],
        *,
        fallback: str = "Done.",
        tokens_per_turn: int = 40,
        name: str = "script-model",
    ) -> None:
        self.script = script
        self.model = name  # its name, as the SDK's OpenAI models keep theirs (`model`)
        self.fallback = fallback
        self.tokens_per_turn = tokens_per_turn
        self.calls = 0

    def _steps(self, view: ScriptView) -> Sequence[Step]:
        return self.script(view) if callable(self.script) else self.script

    def respond(self, input: str | list[TResponseInputItem]) -> list[Any]:
        view = view_of(input)
        steps = self._steps(view)
        step: Step = steps[view.step] if view.step < len(steps) else Reply(self.fallback)
        if isinstance(step, Reply):
            text = step.text(view) if callable(step.text) else step.text
            return [
                ResponseOutputMessage(
                    id=f"msg-u{view.user_turn}-s{view.step}",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
                )
            ]
        calls = [step] if isinstance(step, ToolCall) else list(step)
        return [
            ResponseFunctionToolCall(
                type="function_call",
                id=f"fc-u{view.user_turn}-s{view.step}-{index}",
                call_id=f"scripted-u{view.user_turn}-s{view.step}-{index}",
                name=call.name,
                arguments=json.dumps(call.arguments),
                status="completed",
            )
            for index, call in enumerate(calls)
        ]

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: Any,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any = None,
    ) -> ModelResponse:
        self.calls += 1
        half = self.tokens_per_turn // 2
        return ModelResponse(
            output=self.respond(input),
            usage=Usage(
                requests=1,
                input_tokens=half,
                output_tokens=self.tokens_per_turn - half,
                total_tokens=self.tokens_per_turn,
            ),
            response_id=None,
        )

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("ScriptModel does not stream; use Runner.run")
