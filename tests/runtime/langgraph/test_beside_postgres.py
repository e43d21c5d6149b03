"""LangGraph's own `StateGraph` examples on StateroomSaver beside PostgresSaver.

Each example runs twice, the same way: once with LangGraph's `PostgresSaver`
(langgraph-checkpoint-postgres, run by the owner role in a scratch schema of
the test database, as bench/ sets it up) and once with `StateroomSaver` over
HTTP against the live server. The final state, what the graph streamed and
the thread's history (values, next nodes, step and source, pending tasks
and their interrupts) must be the same: StateroomSaver is a drop-in for it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from typing import Annotated, Any, TypedDict

import psycopg
import pytest
from django.conf import settings
from django.db import connection
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from psycopg.rows import dict_row

from stateroom.database import url_of
from stateroom_client.langgraph import StateroomSaver

SCHEMA = "langgraph_peer_test"


@pytest.fixture
def postgres_saver(live_server) -> Iterator[PostgresSaver]:
    """PostgresSaver in a schema of its own (it makes its tables), dropped afterwards."""
    url = url_of(connection.settings_dict, role=settings.DATABASE_OWNER)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
        conn.execute(f"CREATE SCHEMA {SCHEMA}")
    try:
        with psycopg.connect(
            url,
            autocommit=True,
            prepare_threshold=0,
            row_factory=dict_row,
            options=f"-c search_path={SCHEMA}",
        ) as conn:
            saver = PostgresSaver(conn)
            saver.setup()
            yield saver
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")


@pytest.fixture
def savers(postgres_saver, client) -> dict[str, Any]:
    return {"postgres": postgres_saver, "stateroom": StateroomSaver(client)}


def both(savers: dict[str, Any], run: Callable[[Any], Any]) -> dict[str, Any]:
    return {name: run(saver) for name, saver in savers.items()}


def shape(snapshot) -> dict[str, Any]:
    """What a StateSnapshot says, without what differs by nature (ids, times)."""
    return {
        "values": snapshot.values,
        "next": snapshot.next,
        "step": snapshot.metadata["step"],
        "source": snapshot.metadata["source"],
        "has_parent": snapshot.parent_config is not None,
        "tasks": [
            (task.name, [i.value for i in task.interrupts], task.result) for task in snapshot.tasks
        ],
        "interrupts": [i.value for i in snapshot.interrupts],
    }


def history(graph, config: dict) -> list[dict[str, Any]]:
    return [shape(s) for s in graph.get_state_history(config)]


class Steps(TypedDict):
    steps: Annotated[list[str], operator.add]
    count: int


def branching() -> StateGraph:
    """LangGraph's quickstart shape: nodes, a conditional edge, a loop."""

    def work(state: Steps) -> dict:
        return {"steps": [f"work{state['count']}"], "count": state["count"] + 1}

    def again(state: Steps) -> str:
        return "work" if state["count"] < 3 else "finish"

    builder = StateGraph(Steps)
    builder.add_node("work", work)
    builder.add_node("finish", lambda state: {"steps": ["done"]})
    builder.add_edge(START, "work")
    builder.add_conditional_edges("work", again, ["work", "finish"])
    builder.add_edge("finish", END)
    return builder


def test_invoke_gives_the_same_state_and_history(savers):
    def run(saver) -> tuple:
        graph = branching().compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "peer-invoke"}}
        out = graph.invoke({"steps": [], "count": 0}, config)
        again = graph.invoke({"steps": ["more"], "count": 2}, config)
        return out, again, history(graph, config)

    got = both(savers, run)
    assert got["stateroom"] == got["postgres"]
    out, again, steps = got["stateroom"]
    assert out == {"steps": ["work0", "work1", "work2", "done"], "count": 3}
    assert again["steps"][-3:] == ["more", "work2", "done"]
    assert len(steps) == 10


def test_stream_gives_the_same_chunks_and_history(savers):
    def run(saver) -> tuple:
        graph = branching().compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "user@example.com/stream 1"}}
        updates = list(graph.stream({"steps": [], "count": 0}, config, stream_mode="updates"))
        values = list(graph.stream({"steps": [], "count": 1}, config, stream_mode="values"))
        return updates, values, history(graph, config)

    got = both(savers, run)
    assert got["stateroom"] == got["postgres"]
    updates = got["stateroom"][0]
    assert [next(iter(u)) for u in updates] == ["work", "work", "work", "finish"]


def asks_twice() -> StateGraph:
    def review(state: Steps) -> dict:
        amount = interrupt({"question": "amount?"})
        reason = interrupt({"question": f"why {amount}?"})
        return {"steps": [f"{amount}:{reason}"], "count": state["count"] + 1}

    builder = StateGraph(Steps)
    builder.add_node("review", review)
    builder.add_node("pay", lambda state: {"steps": ["paid"]})
    builder.add_edge(START, "review")
    builder.add_edge("review", "pay")
    builder.add_edge("pay", END)
    return builder


def test_command_resume_through_two_interrupts_in_one_node(savers):
    def run(saver) -> tuple:
        graph = asks_twice().compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "slack:C123/1712345.678"}}
        seen = [graph.invoke({"steps": [], "count": 0}, config)["__interrupt__"][0].value]
        paused = shape(graph.get_state(config))
        seen.append(graph.invoke(Command(resume=40), config)["__interrupt__"][0].value)
        done = graph.invoke(Command(resume="damaged"), config)
        return seen, paused, done, history(graph, config)

    got = both(savers, run)
    assert got["stateroom"] == got["postgres"]
    seen, paused, done, _ = got["stateroom"]
    assert seen == [{"question": "amount?"}, {"question": "why 40?"}]
    assert paused["next"] == ("review",)
    assert done == {"steps": ["40:damaged", "paid"], "count": 1}


class Outer(TypedDict):
    steps: Annotated[list[str], operator.add]
    count: int


def with_subgraph() -> StateGraph:
    """A compiled subgraph as a node (shared state keys), asking a person inside."""

    def inner_ask(state: Steps) -> dict:
        answer = interrupt({"question": "inner ok?"})
        return {"steps": [f"inner:{answer}"]}

    inner = StateGraph(Steps)
    inner.add_node("inner_work", lambda state: {"steps": ["inner_work"]})
    inner.add_node("inner_ask", inner_ask)
    inner.add_edge(START, "inner_work")
    inner.add_edge("inner_work", "inner_ask")
    inner.add_edge("inner_ask", END)

    outer = StateGraph(Outer)
    outer.add_node("before", lambda state: {"steps": ["before"]})
    outer.add_node("sub", inner.compile())
    outer.add_node("after", lambda state: {"steps": ["after"]})
    outer.add_edge(START, "before")
    outer.add_edge("before", "sub")
    outer.add_edge("sub", "after")
    outer.add_edge("after", END)
    return outer


def test_subgraphs_keep_the_same_state_and_history(savers):
    def run(saver) -> tuple:
        graph = with_subgraph().compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "Gespräch 🧵 sub"}}
        paused = graph.invoke({"steps": [], "count": 0}, config)
        state = graph.get_state(config, subgraphs=True)
        inner = state.tasks[0].state
        configurable = inner.config["configurable"]
        inner_config = {
            "configurable": {
                "thread_id": configurable["thread_id"],
                "checkpoint_ns": configurable["checkpoint_ns"],
            }
        }
        inner_history = history(graph, inner_config)
        done = graph.invoke(Command(resume="yes"), config)
        return (
            [i.value for i in paused["__interrupt__"]],
            shape(state),
            shape(inner),
            inner_history,
            done,
            history(graph, config),
        )

    got = both(savers, run)
    assert got["stateroom"] == got["postgres"]
    asked, _, inner, inner_history, done, _ = got["stateroom"]
    assert asked == [{"question": "inner ok?"}]
    assert inner["next"] == ("inner_ask",)
    assert len(inner_history) >= 3
    # The subgraph hands back its whole state, which the reducer adds again (LangGraph's way).
    assert done == {
        "steps": ["before", "before", "inner_work", "inner:yes", "after"],
        "count": 0,
    }
