"""Conversation items as chat: OpenAI Responses items and LangChain/LangGraph messages.

A session item's payload is whatever the runtime stored. `as_chat` reads the
shapes agent frameworks write and returns one `ChatMessage` with the role, the
text, the tool calls (name and parsed arguments), the tool result or the
reasoning; anything it does not know is shown as raw JSON. The raw payload is
always one click away, and the templates escape every string.

Shapes read:
- OpenAI Responses items (`payload["type"]`): `message` (content a string or
  parts `input_text`/`output_text`/`text`/`refusal`), `function_call` (`name`,
  `arguments` as a JSON string, `call_id`), `function_call_output` (`call_id`,
  `output`), `reasoning` (`summary` parts); also the Agents SDK's role-only
  items `{"role": "user", "content": "..."}`.
- LangChain messages as `message.dict()` / `model_dump()` (`type` `human`,
  `ai`, `system`, `tool`; `content` a string or parts; `tool_calls` of
  `{name, args, id}`; `tool_call_id`), and the serialized
  `{"lc": 1, "type": "constructor", "id": [..., "AIMessage"], "kwargs": {...}}`.
- OpenAI Chat Completions messages: `{"role", "content", "tool_calls": [{"id",
  "function": {"name", "arguments"}}]}` (and the older `function_call`), and tool
  results `{"role": "tool", "tool_call_id", "content"}` (or `role` `function`).
- Items stored without their `type` (as the demo and some runtimes store them):
  the item's `item_type` names the Responses type (`function_call`,
  `function_call_output`, `reasoning`).
- Stateroom's own simple items: `{"text": ...}`, `{"name", "arguments"}` for a
  `tool_call` item, anything else under `tool_result`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

_LC_TYPES = {
    "human": "user",
    "HumanMessage": "user",
    "ai": "assistant",
    "AIMessage": "assistant",
    "AIMessageChunk": "assistant",
    "system": "system",
    "SystemMessage": "system",
    "tool": "tool",
    "ToolMessage": "tool",
    "function": "tool",
    "FunctionMessage": "tool",
}


@dataclass
class ToolCall:
    name: str
    arguments: Any  # parsed JSON when it parses, else the raw string
    call_id: str = ""


@dataclass
class ChatMessage:
    role: str
    kind: str  # message | tool_call | tool_result | reasoning | raw
    source: str  # openai | langchain | plain | raw
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    call_id: str = ""
    tool_name: str = ""
    output: Any = None
    reasoning: str = ""


def _parts_text(content: Any) -> str:
    """Text of a content string or a list of content parts (OpenAI or LangChain)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                value = part.get("text", part.get("refusal"))
                if isinstance(value, str):
                    texts.append(value)
        return "\n".join(texts)
    return ""


def _parsed(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except (ValueError, RecursionError):  # not JSON, or nested deeper than it can read
            return arguments
    return arguments


# Responses item types that an item's `item_type` supplies when its payload has no `type`.
_RESPONSES_TYPES = frozenset({"function_call", "function_call_output", "reasoning"})


def _is_completions(payload: dict) -> bool:
    """A Chat Completions message: tool calls under `function`, or a tool's answer by id."""
    calls = payload.get("tool_calls")
    return (
        (isinstance(calls, list) and any(isinstance(c, dict) and "function" in c for c in calls))
        or isinstance(payload.get("function_call"), dict)
        or ("tool_call_id" in payload and "content" in payload)
        or (payload.get("role") == "function" and "content" in payload)
    )


def _completions(role: str, payload: dict) -> ChatMessage:
    message_role = str(payload.get("role") or role)
    if message_role in ("tool", "function"):
        return ChatMessage(
            role="tool",
            kind="tool_result",
            source="openai",
            call_id=str(payload.get("tool_call_id") or ""),
            tool_name=str(payload.get("name") or ""),
            output=_parsed(payload.get("content")),
        )
    raw_calls = [c for c in payload.get("tool_calls") or [] if isinstance(c, dict)]
    if isinstance(payload.get("function_call"), dict):
        raw_calls.append({"function": payload["function_call"]})
    calls = []
    for raw in raw_calls:
        function = raw.get("function") if isinstance(raw.get("function"), dict) else {}
        calls.append(
            ToolCall(
                str(function.get("name", "")),
                _parsed(function.get("arguments")),
                str(raw.get("id", "")),
            )
        )
    text = _parts_text(payload.get("content"))
    return ChatMessage(
        role=message_role,
        kind="tool_call" if calls and not text else "message",
        source="openai",
        text=text,
        tool_calls=calls,
    )


def as_chat(role: str, item_type: str, payload: Any) -> ChatMessage:
    """The chat view of one stored item (`role` and `item_type` as the runtime stored them)."""
    if not isinstance(payload, dict):
        return ChatMessage(role=role, kind="raw", source="raw")
    if "type" not in payload and item_type in _RESPONSES_TYPES:
        payload = {**payload, "type": item_type}
    if _is_completions(payload):
        return _completions(role, payload)
    if payload.get("lc") == 1 and isinstance(payload.get("kwargs"), dict):
        ident = payload.get("id") or []
        kind = ident[-1] if isinstance(ident, list) and ident else ""
        return _langchain(role, {**payload["kwargs"], "type": kind})
    kind = payload.get("type")
    if kind in _LC_TYPES and ("content" in payload or "tool_calls" in payload):
        return _langchain(role, payload)
    if kind == "function_call":
        call = ToolCall(
            str(payload.get("name", "")),
            _parsed(payload.get("arguments")),
            str(payload.get("call_id", "")),
        )
        return ChatMessage(role="assistant", kind="tool_call", source="openai", tool_calls=[call])
    if kind == "function_call_output":
        return ChatMessage(
            role="tool",
            kind="tool_result",
            source="openai",
            call_id=str(payload.get("call_id", "")),
            output=_parsed(payload.get("output")),
        )
    if kind == "reasoning":
        summary = _parts_text(payload.get("summary")) or _parts_text(payload.get("content"))
        return ChatMessage(role="assistant", kind="reasoning", source="openai", reasoning=summary)
    if kind == "message" or ("role" in payload and "content" in payload):
        return ChatMessage(
            role=str(payload.get("role") or role),
            kind="message",
            source="openai",
            text=_parts_text(payload.get("content")),
        )
    if isinstance(payload.get("text"), str):
        return ChatMessage(role=role, kind="message", source="plain", text=payload["text"])
    if isinstance(payload.get("content"), str):
        return ChatMessage(role=role, kind="message", source="plain", text=payload["content"])
    if item_type == "tool_call" and isinstance(payload.get("name"), str):
        call = ToolCall(
            payload["name"], _parsed(payload.get("arguments")), str(payload.get("id", ""))
        )
        return ChatMessage(role=role, kind="tool_call", source="plain", tool_calls=[call])
    if item_type == "tool_result" or role == "tool":
        return ChatMessage(role=role, kind="tool_result", source="plain", output=payload)
    return ChatMessage(role=role, kind="raw", source="raw")


def _langchain(role: str, data: dict) -> ChatMessage:
    message_role = _LC_TYPES.get(str(data.get("type")), role)
    if message_role == "tool":
        return ChatMessage(
            role="tool",
            kind="tool_result",
            source="langchain",
            call_id=str(data.get("tool_call_id", "")),
            tool_name=str(data.get("name") or ""),
            output=_parsed(data.get("content")),
        )
    calls = [
        ToolCall(str(c.get("name", "")), _parsed(c.get("args")), str(c.get("id", "")))
        for c in data.get("tool_calls") or []
        if isinstance(c, dict)
    ]
    extra = data.get("additional_kwargs") if isinstance(data.get("additional_kwargs"), dict) else {}
    reasoning = extra.get("reasoning_content") if isinstance(extra, dict) else None
    return ChatMessage(
        role=message_role,
        kind="tool_call" if calls and not _parts_text(data.get("content")) else "message",
        source="langchain",
        text=_parts_text(data.get("content")),
        tool_calls=calls,
        reasoning=reasoning if isinstance(reasoning, str) else "",
    )


def chat_text(message: ChatMessage) -> str:
    """Plain text of a message for the Markdown transcript ('' when it is raw JSON)."""
    lines = []
    if message.reasoning:
        lines.append(f"(reasoning) {message.reasoning}")
    if message.text:
        lines.append(message.text)
    for call in message.tool_calls:
        arguments = json.dumps(call.arguments, ensure_ascii=False, sort_keys=False, default=str)
        lines.append(
            f"-> calls {call.name}({arguments})" + (f" [{call.call_id}]" if call.call_id else "")
        )
    if message.kind == "tool_result":
        output = message.output
        text = (
            output
            if isinstance(output, str)
            else json.dumps(output, ensure_ascii=False, default=str)
        )
        who = message.tool_name or message.call_id
        lines.append(f"<- result{' of ' + who if who else ''}: {text}")
    return "\n".join(lines)
