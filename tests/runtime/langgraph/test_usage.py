"""The runner reports a graph's usage from LangChain's usage metadata (AIMessage.usage_metadata).

A graph whose nodes call a chat model (LangChain's GenericFakeChatModel, answering
with the counts and the model name a provider's message carries) and keep its
messages in the state; the run's totals follow the thread's messages across a
pause for a person and a resume, and a report repeated counts once.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from stateroom_client.langgraph import GraphRunner, StateroomSaver, stateroom_interrupt
from stateroom_client.langgraph.usage import Usage, usage_changes, usage_of


def answer(text: str, message_id: str, model: str, tokens_in: int, tokens_out: int) -> AIMessage:
    return AIMessage(
        content=text,
        id=message_id,
        usage_metadata={
            "input_tokens": tokens_in,
            "output_tokens": tokens_out,
            "total_tokens": tokens_in + tokens_out,
        },
        response_metadata={"model_name": model},
    )


def build_graph(client, model) -> Any:
    def draft(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def review(state: MessagesState) -> dict[str, Any]:
        stateroom_interrupt("send_reply", {"text": state["messages"][-1].content}, risk="low")
        return {}

    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("draft", draft)
    builder.add_node("review", review)
    builder.add_node("reply", reply)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "review")
    builder.add_edge("review", "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=StateroomSaver(client))


def price(usage: Usage) -> Decimal:
    """$1 per million input tokens, $4 per million output tokens."""
    return (usage.input_tokens + 4 * usage.output_tokens) / Decimal(1_000_000)


def test_the_runs_totals_follow_the_threads_messages_across_a_pause(client, operator):
    model = GenericFakeChatModel(
        messages=iter(
            [
                answer("A draft", "m-1", "gpt-5-mini", 100, 20),
                answer("The reply", "m-2", "gpt-5-nano", 50, 30),
            ]
        )
    )
    graph = build_graph(client, model)
    runner = GraphRunner(client, graph, name="writer", price=price)
    outcome = runner.start(
        {"messages": [HumanMessage("Write to the customer")]}, thread_id="th-u1", run_id="u-1"
    )
    assert outcome.status == "waiting_approval"
    paused = client.get_run("u-1")
    assert (paused.token_used, paused.cost_used, paused.model) == (
        120,
        Decimal("0.000180"),
        "gpt-5-mini",
    )
    operator.decide_approval(outcome.approvals[0].approval_id, decision="approve", reason="ok")
    assert GraphRunner(client, graph, price=price).resume("u-1").status == "succeeded"
    ended = client.get_run("u-1")
    # Both answers once each (the review node re-ran on resume; the draft did not count twice).
    assert (ended.token_used, ended.cost_used, ended.model) == (
        200,
        Decimal("0.000350"),
        "gpt-5-nano",
    )


def test_a_repeated_report_writes_nothing_and_counts_once(client):
    model = GenericFakeChatModel(messages=iter([answer("A draft", "m-1", "gpt-5-mini", 10, 5)]))
    graph = build_graph(client, model)
    runner = GraphRunner(client, graph, name="writer")
    runner.start({"messages": [HumanMessage("Hi")]}, thread_id="th-u2", run_id="u-2")
    before = client.get_run("u-2")
    assert (before.token_used, before.cost_used, before.model) == (15, Decimal(0), "gpt-5-mini")
    values = graph.get_state({"configurable": {"thread_id": "th-u2"}}).values
    runner._report_usage("u-2", values)  # the same totals again: no write at all
    assert client.get_run("u-2").version == before.version


def test_each_message_counts_once_and_the_last_named_model_wins():
    first = answer("a", "m-1", "gpt-5-mini", 10, 5)
    second = answer("b", "m-2", "gpt-5-nano", 1, 2)
    values = {"messages": [HumanMessage("q"), first, second], "last": second, "n": 3}
    assert usage_of(values) == Usage(11, 7, 18, "gpt-5-nano")
    assert usage_of({"messages": [HumanMessage("q")]}) == Usage()
    assert usage_changes(usage_of(values), price) == {
        "token_used": 18,
        "model": "gpt-5-nano",
        "cost_used": Decimal("0.000039"),
    }
