"""A refund graph for the end-to-end tests: a review that asks a person, then the refund.

The refund's side effect is a line in the file named by `REFUND_LOG`, so a
test (in any process) can count how many times it really ran.
"""

from __future__ import annotations

import os
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel, ConfigDict

from stateroom_client import StateroomClient
from stateroom_client.langgraph import StateroomSaver, idempotent_effect, stateroom_interrupt

REFUND_LOG = "STATEROOM_TEST_REFUND_LOG"


class Refund(TypedDict, total=False):
    order_id: str
    amount_cents: int
    decision: str
    note: str
    outcome: str


class RefundArgs(BaseModel):
    """issue_refund's arguments: an edit must fit them (the approval carries their schema)."""

    model_config = ConfigDict(extra="forbid")
    order_id: str
    amount_cents: int


@idempotent_effect
def issue_refund(order_id: str, amount_cents: int) -> str:
    with open(os.environ[REFUND_LOG], "a") as log:
        log.write(f"{order_id} {amount_cents}\n")
    return f"Refunded {amount_cents} cents on order {order_id}."


def review(state: Refund) -> dict[str, Any]:
    answer = stateroom_interrupt(
        "issue_refund",
        {"order_id": state["order_id"], "amount_cents": state["amount_cents"]},
        risk="high" if state["amount_cents"] > 1000 else "low",
        allowed_decisions=["approve", "edit", "reject", "respond"],
        arguments_schema=RefundArgs,
        description=f"Refund {state['amount_cents']} cents on order {state['order_id']}?",
    )
    if answer["type"] == "accept":
        return {"decision": "approved"}
    if answer["type"] == "edit":
        return {"decision": "approved", "amount_cents": answer["args"]["args"]["amount_cents"]}
    if answer["type"] == "response":
        return {"decision": "declined", "note": answer["args"]}
    return {"decision": "declined"}


def refund(state: Refund) -> dict[str, Any]:
    return {"outcome": issue_refund(state["order_id"], state["amount_cents"])}


def after_review(state: Refund) -> str:
    return "refund" if state.get("decision") == "approved" else END


def build_graph(client: StateroomClient) -> Any:
    builder = StateGraph(Refund)
    builder.add_node("review", review)
    builder.add_node("refund", refund)
    builder.add_edge(START, "review")
    builder.add_conditional_edges("review", after_review, ["refund", END])
    builder.add_edge("refund", END)
    return builder.compile(checkpointer=StateroomSaver(client))


def refunds_made(path: str) -> list[str]:
    if not os.path.exists(path):
        return []
    with open(path) as log:
        return [line.strip() for line in log if line.strip()]
