"""GraphRunner in this process: each decision reaches the graph as Agent Inbox's answer."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from approvals_app.store import ApprovalStore
from stateroom.actor import Actor
from stateroom_client import ValidationError
from stateroom_client.langgraph import GraphRunner, StateroomSaver, stateroom_interrupt
from stateroom_client.langgraph.runtime import Asked, inbox_request
from tenancy_app.scoping import in_tenant

from .refunds import RefundArgs, build_graph, refunds_made


def _start(client, run_id: str, amount: int = 1200):
    runner = GraphRunner(client, build_graph(client), name="refunds")
    outcome = runner.start(
        {"order_id": "A-1", "amount_cents": amount}, thread_id=f"th-{run_id}", run_id=run_id
    )
    assert outcome.status == "waiting_approval"
    return runner, outcome.approvals[0].approval_id


@pytest.mark.parametrize(
    ("decision", "extra", "expected"),
    [
        ("approve", {}, {"decision": "approved", "outcome": "Refunded 1200 cents on order A-1."}),
        ("reject", {}, {"decision": "declined"}),
        (
            "respond",
            {"response": "Ask for the receipt first"},
            {"decision": "declined", "note": "Ask for the receipt first"},
        ),
    ],
)
def test_each_decision_reaches_the_graph_as_agent_inbox_answers(
    client, operator, refund_log, decision, extra, expected
):
    runner, approval_id = _start(client, f"r-{decision}")
    operator.decide_approval(approval_id, decision=decision, reason="Checked", **extra)
    outcome = runner.resume(f"r-{decision}")
    assert (outcome.status, outcome.error) == ("succeeded", None)
    assert outcome.values == {"order_id": "A-1", "amount_cents": 1200, **expected}
    assert refunds_made(refund_log) == (["A-1 1200"] if decision == "approve" else [])
    approval = client.get_approval(approval_id)
    assert approval.decision == decision


def test_an_expired_approval_ends_the_run_failed_without_resuming(server, client, refund_log):
    runner, approval_id = _start(client, "r-exp")
    with in_tenant(server.tenant):
        ApprovalStore(server.tenant, Actor.system("sweep")).expire(approval_id=approval_id)
    outcome = runner.resume("r-exp")
    assert outcome.status == "failed"
    assert outcome.error["code"] == "approval_expired"
    assert client.get_run("r-exp").status == "failed"
    assert refunds_made(refund_log) == []


def test_a_runner_that_finds_the_run_claimed_elsewhere_stops_and_writes_nothing(
    client, operator, refund_log
):
    runner, approval_id = _start(client, "r-held")
    operator.decide_approval(approval_id, decision="approve", reason="Checked")
    run = client.get_run("r-held")
    held = client.claim_run("r-held", worker="elsewhere", expected_version=run.version)
    outcome = runner.resume("r-held")
    assert (outcome.status, outcome.claimed_elsewhere, outcome.claimed_by) == (
        "claimed",
        True,
        "elsewhere",
    )
    assert client.get_run("r-held") == held
    assert (client.list_run_effects("r-held").results, refunds_made(refund_log)) == ([], [])
    # Its own runner claims it, names its worker on every write, and ends it holding nothing.
    done = GraphRunner(client, build_graph(client), worker="elsewhere").resume("r-held")
    assert (done.status, done.error) == ("succeeded", None)
    assert client.get_run("r-held").claimed_by == ""
    assert refunds_made(refund_log) == ["A-1 1200"]


class Inbox(TypedDict, total=False):
    email: str
    sent: str


def test_a_graph_written_for_agent_inbox_works_unchanged(client, operator):
    """The node calls interrupt([HumanInterrupt]) itself; the runner records and answers it."""

    def draft(state: Inbox) -> dict[str, Any]:
        response = interrupt(
            [
                {
                    "action_request": {"action": "send_email", "args": {"body": state["email"]}},
                    "config": {
                        "allow_ignore": True,
                        "allow_respond": False,
                        "allow_edit": True,
                        "allow_accept": True,
                    },
                    "description": "Send this email?",
                }
            ]
        )[0]
        if response["type"] == "edit":
            return {"sent": response["args"]["args"]["body"]}
        return {"sent": state["email"] if response["type"] == "accept" else ""}

    builder = StateGraph(Inbox)
    builder.add_node("draft", draft)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", END)
    graph = builder.compile(checkpointer=StateroomSaver(client))
    runner = GraphRunner(client, graph)
    outcome = runner.start({"email": "Hello"}, thread_id="mail-1", run_id="mail-1")
    (approval,) = outcome.approvals
    assert (approval.tool_name, approval.arguments, approval.reason) == (
        "send_email",
        {"body": "Hello"},
        "Send this email?",
    )
    assert approval.allowed_decisions == ("approve", "edit", "reject")
    operator.decide_approval(
        approval.approval_id, decision="edit", reason="tone", approved_arguments={"body": "Hi!"}
    )
    outcome = runner.resume("mail-1")
    assert (outcome.status, outcome.values) == ("succeeded", {"email": "Hello", "sent": "Hi!"})


def test_a_rejections_reason_reaches_the_graph(client, operator):
    """Agent Inbox's `ignore` carries the operator's reason (every rejection gives one)."""

    def review(state: Inbox) -> dict[str, Any]:
        answer = stateroom_interrupt("send_email", {"body": state["email"]})
        return {"sent": f"{answer['type']}:{answer['args']}"}

    builder = StateGraph(Inbox)
    builder.add_node("review", review)
    builder.add_edge(START, "review")
    builder.add_edge("review", END)
    runner = GraphRunner(client, builder.compile(checkpointer=StateroomSaver(client)))
    run_id, reason = "rej-1", "Refunds over 1000 need a receipt"
    (approval,) = runner.start({"email": "Hi"}, thread_id=run_id, run_id=run_id).approvals
    operator.decide_approval(approval.approval_id, decision="reject", reason=reason)
    outcome = runner.resume(run_id)
    assert (outcome.status, outcome.values["sent"]) == ("succeeded", f"ignore:{reason}")


@pytest.mark.parametrize("decision", ["approve", "edit"])
def test_a_langgraph_effect_names_the_approval_that_allowed_it(
    client, operator, refund_log, decision
):
    runner, approval_id = _start(client, f"r-eff-{decision}")
    extra = {"approved_arguments": {"order_id": "A-1", "amount_cents": 900}}
    operator.decide_approval(
        approval_id, decision=decision, reason="ok", **(extra if decision == "edit" else {})
    )
    outcome = runner.resume(f"r-eff-{decision}")
    assert outcome.status == "succeeded"
    (effect,) = client.list_run_effects(f"r-eff-{decision}").results
    assert (effect.tool_name, effect.status, effect.raw["approval_id"]) == (
        "issue_refund",
        "committed",
        approval_id,
    )
    # Resumed in a fresh runner (another process would do the same), the answer is replayed.
    again = GraphRunner(client, build_graph(client)).resume(f"r-eff-{decision}")
    assert again.status == "succeeded"
    assert len(refunds_made(refund_log)) == 1


def test_the_runner_sends_the_tools_schema_and_an_edit_that_does_not_fit_is_refused(
    client, operator, refund_log
):
    """Before: `{"amount_cents": "lots", "foo": 1}` was approved and reached the graph."""
    runner, approval_id = _start(client, "r-schema")
    assert client.get_approval(approval_id).arguments_schema == RefundArgs.model_json_schema()
    with pytest.raises(ValidationError) as refused:
        operator.decide_approval(
            approval_id,
            decision="edit",
            reason="more",
            approved_arguments={"amount_cents": "lots", "foo": 1},
        )
    assert sorted(refused.value.details) == [
        "approved_arguments.amount_cents",
        "approved_arguments.foo",
        "approved_arguments.order_id",
    ]
    edited = {"order_id": "A-1", "amount_cents": 600}
    operator.decide_approval(approval_id, decision="edit", reason="half", approved_arguments=edited)
    outcome = runner.resume("r-schema")
    assert (outcome.status, outcome.values["outcome"]) == (
        "succeeded",
        "Refunded 600 cents on order A-1.",
    )
    assert refunds_made(refund_log) == ["A-1 600"]


def test_a_langchain_tools_call_schema_is_the_requests_schema():
    @tool
    def send_email(to: str, body: str) -> str:
        """Send an email."""
        return "sent"

    request = inbox_request(
        "send_email", {"to": "a@b.c", "body": "hi"}, arguments_schema=send_email
    )
    schema = request["stateroom"]["arguments_schema"]
    assert (sorted(schema["properties"]), schema["required"]) == (["body", "to"], ["to", "body"])
    assert Asked.of([request]).arguments_schema == schema
    assert "arguments_schema" not in inbox_request("send_email", {})["stateroom"]
    with pytest.raises(TypeError):
        inbox_request("send_email", {}, arguments_schema="not a schema")
