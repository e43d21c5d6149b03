"""What a graph's run has used, from LangChain's usage metadata on the model's messages.

Chat models put each answer's counts on the message (`AIMessage.usage_metadata`:
`input_tokens`, `output_tokens`, `total_tokens`) and its model's name in
`response_metadata` (`model_name` for OpenAI, `model` for Anthropic and others).
The runner reads them from the thread's state after each pass: every
`AIMessage` in the state's values (a channel holding a message or a list of
them, as `MessagesState`'s `messages`), each message once by its id.

So the report is a total derived from the checkpointed state, not a count of
what this process saw: a node re-run after a crash (from the same checkpoint)
replaces its message rather than adding one, a resumed run in another process
reads the same messages, and a report sent twice leaves the same totals.
What the state does not keep (a graph whose nodes call a model and keep only
its text) is not counted: keep the messages, or report through
`client.transition_run` yourself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from langchain_core.messages import AIMessage

COST_PLACES = Decimal("0.000001")  # the server keeps 6 decimal places


@dataclass(frozen=True)
class Usage:
    """The run's totals so far, over the messages of its thread's state."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    model: str | None = None  # the model of the last message that named one


# The run's cost for its usage so far: Price(usage) -> a decimal.
Price = Callable[[Usage], Decimal | str | int]


def _messages(values: Any) -> Iterator[AIMessage]:
    channels = values.values() if isinstance(values, Mapping) else [values]
    for value in channels:
        if isinstance(value, AIMessage):
            yield value
        elif isinstance(value, list | tuple):
            yield from (item for item in value if isinstance(item, AIMessage))


def usage_of(values: Any) -> Usage:
    """The totals of the AI messages in a graph state's `values` (each message once)."""
    seen: set[str | int] = set()
    input_tokens = output_tokens = total_tokens = 0
    model: str | None = None
    for message in _messages(values):
        key = message.id or id(message)
        if key in seen:
            continue
        seen.add(key)
        counts: Mapping[str, Any] = message.usage_metadata or {}
        input_tokens += int(counts.get("input_tokens") or 0)
        output_tokens += int(counts.get("output_tokens") or 0)
        total_tokens += int(counts.get("total_tokens") or 0)
        metadata = message.response_metadata or {}
        name = metadata.get("model_name") or metadata.get("model")
        if isinstance(name, str) and name:
            model = name
    return Usage(input_tokens, output_tokens, total_tokens, model)


def usage_changes(usage: Usage, price: Price | None) -> dict[str, Any]:
    """The run's changes that report `usage` (totals), the cost when given a price."""
    changes: dict[str, Any] = {"token_used": usage.total_tokens}
    if usage.model:
        changes["model"] = usage.model[:200]
    if price is not None:
        cost = Decimal(str(price(usage)))
        changes["cost_used"] = cost.quantize(COST_PLACES, rounding=ROUND_HALF_UP)
    return changes
