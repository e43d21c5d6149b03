"""`graph.invoke` with StateroomSaver and nothing else: no GraphRunner, as with PostgresSaver.

Over real HTTP against the live server: a new thread's first call in every
durability mode, a node that interrupts twice, thread ids of any text, a
search across threads, and a message history larger than the API's usual
body limit.
"""

from __future__ import annotations

import asyncio
import operator
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, TypedDict

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt

from stateroom_client import StateroomClient, ValidationError
from stateroom_client.langgraph import StateroomSaver
from tasks_app.models import Task
from tenancy_app.scoping import in_tenant

DURABILITIES = ["sync", "async", "exit"]


class Steps(TypedDict):
    steps: Annotated[list[str], operator.add]


def two_steps() -> StateGraph:
    builder = StateGraph(Steps)
    builder.add_node("one", lambda state: {"steps": ["one"]})
    builder.add_node("two", lambda state: {"steps": ["two"]})
    builder.add_edge(START, "one")
    builder.add_edge("one", "two")
    builder.add_edge("two", END)
    return builder


def asks_twice() -> StateGraph:
    """One node, two questions: LangGraph re-runs it and answers each in turn."""

    def review(state: Steps) -> dict:
        amount = interrupt({"question": "amount?"})
        reason = interrupt({"question": f"why {amount}?"})
        return {"steps": [f"{amount}:{reason}"]}

    builder = StateGraph(Steps)
    builder.add_node("review", review)
    builder.add_edge(START, "review")
    builder.add_edge("review", END)
    return builder


def cfg(thread_id: str) -> dict:
    return {"configurable": {"thread_id": thread_id}}


@pytest.fixture
def saver(client):
    return StateroomSaver(client)


@pytest.mark.parametrize("durability", DURABILITIES)
def test_the_first_invoke_of_a_new_thread_works(saver, server, durability):
    graph = two_steps().compile(checkpointer=saver)
    thread_id = f"new-{durability}"
    assert graph.invoke({"steps": []}, cfg(thread_id), durability=durability) == {
        "steps": ["one", "two"]
    }
    assert graph.get_state(cfg(thread_id)).values == {"steps": ["one", "two"]}
    # The next call goes on from what the thread holds.
    assert graph.invoke({"steps": ["again"]}, cfg(thread_id), durability=durability) == {
        "steps": ["one", "two", "again", "one", "two"]
    }
    with in_tenant(server.tenant):
        assert list(Task.objects.values_list("task_id", flat=True)) == [thread_id]


@pytest.mark.parametrize("durability", DURABILITIES)
def test_the_first_ainvoke_of_a_new_thread_works(server, durability):
    async def run() -> tuple[dict, dict]:
        saver = StateroomSaver.from_url(server.url, server.token)
        try:
            graph = two_steps().compile(checkpointer=saver)
            out = await graph.ainvoke({"steps": []}, cfg("new-a"), durability=durability)
            state = await graph.aget_state(cfg("new-a"))
            return out, state.values
        finally:
            await saver.aclose()

    assert asyncio.run(run()) == ({"steps": ["one", "two"]}, {"steps": ["one", "two"]})


@pytest.mark.parametrize("durability", DURABILITIES)
def test_a_node_that_interrupts_twice_resumes_through_each(saver, client, durability):
    client.create_task(task_id="twice", objective="made first: this test is about resumes")
    graph = asks_twice().compile(checkpointer=saver)
    first = graph.invoke({"steps": []}, cfg("twice"), durability=durability)
    assert [i.value for i in first["__interrupt__"]] == [{"question": "amount?"}]
    second = graph.invoke(Command(resume="40"), cfg("twice"), durability=durability)
    assert [i.value for i in second["__interrupt__"]] == [{"question": "why 40?"}]
    done = graph.invoke(Command(resume="damaged"), cfg("twice"), durability=durability)
    assert done == {"steps": ["40:damaged"]}
    state = graph.get_state(cfg("twice"))
    assert (state.values, state.next, state.interrupts) == ({"steps": ["40:damaged"]}, (), ())


@pytest.mark.parametrize(
    "thread_id",
    ["user@example.com/chat 1", "slack:C123/1712345.678", "Gespräch über Fäden 🧵", "t" * 200],
)
def test_any_thread_id_langgraph_takes_works(saver, server, thread_id):
    graph = two_steps().compile(checkpointer=saver)
    assert graph.invoke({"steps": []}, cfg(thread_id)) == {"steps": ["one", "two"]}
    history = list(graph.get_state_history(cfg(thread_id)))
    assert len(history) == 4
    assert {h.config["configurable"]["thread_id"] for h in history} == {thread_id}
    assert [t.config["configurable"]["thread_id"] for t in saver.list(None, limit=1)] == [thread_id]
    saver.delete_thread(thread_id)
    assert saver.get_tuple(cfg(thread_id)) is None


def test_a_thread_id_past_the_bound_is_a_clear_422(saver, server):
    graph = two_steps().compile(checkpointer=saver)
    with pytest.raises(ValidationError) as refused:
        graph.invoke({"steps": []}, cfg("x" * 513))
    assert refused.value.status == 422
    assert "thread_id" in refused.value.details
    with in_tenant(server.tenant):
        assert not Task.objects.exists()


def test_list_without_a_config_searches_every_thread(saver, server):
    graph = two_steps().compile(checkpointer=saver)
    for thread_id in ("s-1", "s 2", "s-3"):
        graph.invoke({"steps": []}, cfg(thread_id))
    inputs = list(saver.list(None, filter={"source": "input"}))
    assert sorted(t.config["configurable"]["thread_id"] for t in inputs) == ["s 2", "s-1", "s-3"]
    assert all(t.metadata["source"] == "input" for t in inputs)
    assert len(list(saver.list(None))) == 12
    assert len(list(saver.list(None, limit=5))) == 5
    assert list(saver.list(None, filter={"source": "nowhere"})) == []
    # Another tenant's search finds none of them.
    with StateroomClient(server.url, server.other_token) as other:
        assert list(StateroomSaver(other).list(None)) == []

    async def search() -> list:
        async_saver = StateroomSaver.from_url(server.url, server.token)
        try:
            return [t async for t in async_saver.alist(None, filter={"step": 1})]
        finally:
            await async_saver.aclose()

    assert sorted(t.config["configurable"]["thread_id"] for t in asyncio.run(search())) == [
        "s 2",
        "s-1",
        "s-3",
    ]


class Chat(TypedDict):
    messages: Annotated[list, add_messages]


def test_a_long_message_history_is_not_held_to_the_body_limit(saver, client):
    """~0.8 MB of text a turn: the checkpoint (and the writes) go over the usual 1 MB."""
    chunk = "lorem ipsum dolor sit amet " * 3000  # ~80 KB

    def reply(state: Chat) -> dict:
        return {"messages": [AIMessage(content=chunk)]}

    builder = StateGraph(Chat)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    graph = builder.compile(checkpointer=saver)
    client.create_task(task_id="long", objective="made first: this test is about size")
    for _turn in range(5):
        graph.invoke({"messages": [HumanMessage(content=chunk)]}, cfg("long"))
    state = graph.get_state(cfg("long"))
    assert len(state.values["messages"]) == 10
    text = sum(len(m.content) for m in state.values["messages"])
    assert text > 800_000  # base64 of its msgpack puts each checkpoint over 1 MB
    assert [type(m).__name__ for m in state.values["messages"][:2]] == [
        "HumanMessage",
        "AIMessage",
    ]


def test_a_new_threads_first_put_and_write_at_once_make_one_thread(server, client):
    """LangGraph's "async" durability sends them together: both land, on one task."""
    body = {
        "checkpoint": {
            "v": 4,
            "id": "c1",
            "ts": "2026-12-05T10:00:00+00:00",
            "channel_versions": {},
            "versions_seen": {},
        },
        "blobs": [],
    }
    writes = {"checkpoint_id": "c1", "graph_task_id": "t1", "writes": []}
    thread_ids = [f"race {n}/x" for n in range(20)]
    with (
        StateroomClient(server.url, server.token) as one,
        StateroomClient(server.url, server.token) as two,
        ThreadPoolExecutor(max_workers=2) as pool,
    ):
        for thread_id in thread_ids:
            barrier = threading.Barrier(2)

            def put(thread_id=thread_id, barrier=barrier):
                barrier.wait()
                return one.put_graph_checkpoint(thread_id, body)

            def write(thread_id=thread_id, barrier=barrier):
                barrier.wait()
                return two.put_graph_writes(thread_id, writes)

            put_done, write_done = pool.submit(put), pool.submit(write)
            assert put_done.result()["checkpoint_id"] == "c1"
            assert write_done.result() == 0
    with in_tenant(server.tenant):
        assert sorted(Task.objects.values_list("thread_id", flat=True)) == sorted(thread_ids)
