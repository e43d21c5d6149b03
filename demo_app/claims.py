"""The demo's LangGraph agent: shipping claims, with a scripted model (no network).

A claim is a LangGraph thread (a Stateroom task); each claim is one Stateroom
run of `GraphRunner`. The graph:

    assess (the scripted model reads the claim and proposes a voucher)
      -> review (stateroom_interrupt: the voucher waits in the approvals inbox)
      -> compensate (issue_voucher through the effect ledger) -> reply
      or -> reply (the operator declined, or answered in words)

Like the rest of the demo runtime it imports nothing from Django.
"""

from __future__ import annotations

import re
import secrets
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph

from stateroom_client import StateroomClient
from stateroom_client.langgraph import StateroomSaver, idempotent_effect, stateroom_interrupt

AGENT = "claims-graph"


class Claim(TypedDict, total=False):
    customer: str
    message: str
    order_id: str
    problem: str
    voucher_cents: int
    decision: str
    operator_note: str
    voucher: str
    reply: str


def scripted_model(message: str) -> dict[str, Any]:
    """What a model would extract from the customer's message: a deterministic script."""
    order = re.search(r"(A-\d+)", message)
    amount = re.search(r"(\d+)\.(\d\d)", message)
    problem = "lost parcel" if "never arrived" in message else "late delivery"
    cents = int(amount.group(1)) * 100 + int(amount.group(2)) if amount else 1500
    share = 1.0 if problem == "lost parcel" else 0.2
    return {
        "order_id": order.group(1) if order else "A-0000",
        "problem": problem,
        "voucher_cents": round(cents * share),
    }


@idempotent_effect
def issue_voucher(order_id: str, voucher_cents: int) -> str:
    """The side effect: a voucher code for the customer (once per claim, whatever the restarts)."""
    return f"V-{order_id}-{voucher_cents}-{secrets.token_hex(3)}"


# issue_voucher's arguments: the console refuses an edit that does not fit (say, cents as text).
VOUCHER_SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "pattern": "^A-[0-9]+$"},
        "voucher_cents": {"type": "integer", "minimum": 1, "maximum": 100_000},
    },
    "required": ["order_id", "voucher_cents"],
    "additionalProperties": False,
}


def assess(state: Claim) -> dict[str, Any]:
    return scripted_model(state["message"])


def review(state: Claim) -> dict[str, Any]:
    cents = state["voucher_cents"]
    answer = stateroom_interrupt(
        "issue_voucher",
        {"order_id": state["order_id"], "voucher_cents": cents},
        risk="low" if cents < 5_000 else "medium" if cents < 20_000 else "high",
        allowed_decisions=["approve", "edit", "reject", "respond"],
        arguments_schema=VOUCHER_SCHEMA,
        description=(
            f"{state['customer']} reports a {state['problem']} on {state['order_id']}:"
            f" voucher of {cents / 100:.2f} EUR?"
        ),
    )
    if answer["type"] == "accept":
        return {"decision": "approved"}
    if answer["type"] == "edit":
        return {
            "decision": "approved",
            "voucher_cents": int(answer["args"]["args"]["voucher_cents"]),
        }
    if answer["type"] == "response":
        return {"decision": "declined", "operator_note": str(answer["args"])}
    return {"decision": "declined"}


def compensate(state: Claim) -> dict[str, Any]:
    return {"voucher": issue_voucher(state["order_id"], state["voucher_cents"])}


def reply(state: Claim) -> dict[str, Any]:
    if state.get("voucher"):
        text = (
            f"Sorry about the {state['problem']}: here is a voucher of"
            f" {state['voucher_cents'] / 100:.2f} EUR ({state['voucher']})."
        )
    elif state.get("operator_note"):
        text = f"About order {state['order_id']}: {state['operator_note']}"
    else:
        text = f"We looked into order {state['order_id']} and cannot offer a voucher this time."
    return {"reply": text}


def build_claims_graph(client: StateroomClient) -> Any:
    builder = StateGraph(Claim)
    for name, node in (
        ("assess", assess),
        ("review", review),
        ("compensate", compensate),
        ("reply", reply),
    ):
        builder.add_node(name, node)
    builder.add_edge(START, "assess")
    builder.add_edge("assess", "review")
    builder.add_conditional_edges(
        "review",
        lambda state: "compensate" if state.get("decision") == "approved" else "reply",
        ["compensate", "reply"],
    )
    builder.add_edge("compensate", "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=StateroomSaver(client))
