"""A small payments agent for the end-to-end tests: a scripted model and a refund tool.

The tool's side effect is a line in the file named by `REFUND_LOG`, so a test
(in any process) can count how many times the refund really ran.
"""

from __future__ import annotations

import os
import re
from typing import Any

from agents import Agent

from stateroom_client.agents import Reply, ScriptModel, ScriptView, ToolCall, idempotent_tool

REFUND_LOG = "STATEROOM_TEST_REFUND_LOG"


@idempotent_tool(needs_approval=True)
def issue_refund(order_id: str, amount_cents: int) -> str:
    """Refund part of an order to the customer's card.

    Args:
        order_id: The order to refund.
        amount_cents: How much to refund, in cents.
    """
    return issue_refund_log(order_id, amount_cents)


def issue_refund_log(order_id: str, amount: Any) -> str:
    """The refund's side effect: a line in the log, counted by the tests."""
    with open(os.environ[REFUND_LOG], "a") as log:
        log.write(f"{order_id} {amount}\n")
    return f"Refunded {amount} cents on order {order_id}."


def script(view: ScriptView) -> list[Any]:
    match = re.search(r"(\d+) cents on order (\S+)", view.user_message)
    amount, order = (int(match.group(1)), match.group(2)) if match else (100, "unknown")
    return [
        ToolCall("issue_refund", {"order_id": order, "amount_cents": amount}),
        Reply(lambda v: f"Outcome: {v.last_output}"),
    ]


def risk(tool_name: str, arguments: dict[str, Any]) -> str:
    return "high" if arguments.get("amount_cents", 0) > 1000 else "low"


def build_agent() -> Agent[Any]:
    return Agent(
        name="payments",
        instructions="Issue refunds when asked.",
        model=ScriptModel(script),
        tools=[issue_refund],
    )


def refunds_made(path: str) -> list[str]:
    if not os.path.exists(path):
        return []
    with open(path) as log:
        return [line.strip() for line in log if line.strip()]
