"""StateroomSession against a live server, held to the checks the SDK holds its own sessions to:
order, limit, pop, clear, isolation between sessions, session settings, and the
Runner using it as memory. Plus what is particular to Stateroom: removals are
tombstones folded by readers, and history survives any process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner
from agents.memory import Session, SessionSettings

from stateroom_client import AsyncStateroomClient, ItemTooLarge, PayloadTooLarge
from stateroom_client.agents import Reply, ScriptModel, StateroomSession

NO_TRACE = RunConfig(tracing_disabled=True)


def run(server, body: Callable[[AsyncStateroomClient], Awaitable[Any]]) -> Any:
    async def go() -> Any:
        async with AsyncStateroomClient(server.url, server.token) as client:
            return await body(client)

    return asyncio.run(go())


def contents(items: list[Any]) -> list[Any]:
    return [item.get("content") for item in items]


class RecordingModel(ScriptModel):
    """Answers `reply` and remembers the input of its last turn."""

    def __init__(self, reply: str) -> None:
        super().__init__([Reply(reply)])
        self.last_input: list[dict[str, Any]] = []

    def respond(self, input: Any) -> list[Any]:
        self.last_input = (
            [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        )
        return super().respond(input)


def test_it_is_an_sdk_session_and_keeps_items_in_order(server):
    async def body(client: AsyncStateroomClient) -> None:
        session = await StateroomSession.create(client, user_id="u-1", session_id="s-1")
        assert isinstance(session, Session)
        assert session.session_id == "s-1"
        assert await session.get_items() == []
        await session.add_items(
            [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there!"}]
        )
        await session.add_items([])  # nothing to do
        retrieved = await session.get_items()
        assert retrieved == [
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi there!"},
        ]
        # What Stateroom holds: one item per SDK item, typed by the SDK item type.
        stored = await client.get_items("s-1")
        assert [(i.seq, i.role, i.item_type, i.payload) for i in stored] == [
            (1, "user", "openai.message", {"role": "user", "content": "Hello"}),
            (2, "assistant", "openai.message", {"role": "assistant", "content": "Hi there!"}),
        ]

        await session.clear_session()
        assert await session.get_items() == []
        await session.add_items([{"role": "user", "content": "Fresh start"}])
        assert contents(await session.get_items()) == ["Fresh start"]

    run(server, body)


def test_get_items_with_limit_returns_the_latest_in_order(server):
    async def body(client: AsyncStateroomClient) -> None:
        session = await StateroomSession.create(client, user_id="u-1")
        await session.add_items(
            [
                {"role": role, "content": f"{label} {n}"}
                for n in (1, 2, 3)
                for role, label in (("user", "Message"), ("assistant", "Response"))
            ]
        )
        everything = await session.get_items()
        assert len(everything) == 6
        assert (everything[0]["content"], everything[-1]["content"]) == ("Message 1", "Response 3")
        assert contents(await session.get_items(limit=2)) == ["Message 3", "Response 3"]
        assert contents(await session.get_items(limit=4)) == [
            "Message 2",
            "Response 2",
            "Message 3",
            "Response 3",
        ]
        assert len(await session.get_items(limit=10)) == 6
        assert await session.get_items(limit=0) == []

    run(server, body)


def test_pop_item_removes_the_newest_until_empty(server):
    async def body(client: AsyncStateroomClient) -> None:
        session = await StateroomSession.create(client, user_id="u-1", session_id="s-1")
        assert await session.pop_item() is None
        await session.add_items(
            [
                {"role": "user", "content": "Hello"},
                {"role": "assistant", "content": "Hi there!"},
                {"role": "user", "content": "How are you?"},
            ]
        )
        assert await session.pop_item() == {"role": "user", "content": "How are you?"}
        assert contents(await session.get_items()) == ["Hello", "Hi there!"]
        assert await session.pop_item() == {"role": "assistant", "content": "Hi there!"}
        assert await session.pop_item() == {"role": "user", "content": "Hello"}
        assert await session.pop_item() is None
        assert await session.get_items() == []

        # Nothing was deleted: each pop is a tombstone naming the seq it removes.
        stored = await client.get_items("s-1")
        assert [(i.seq, i.item_type, i.payload.get("seq")) for i in stored] == [
            (1, "openai.message", None),
            (2, "openai.message", None),
            (3, "openai.message", None),
            (4, "sdk.pop", 3),
            (5, "sdk.pop", 2),
            (6, "sdk.pop", 1),
        ]

        # Popped items stay removed when newer items arrive, and clear hides all before it.
        await session.add_items([{"role": "user", "content": "Again"}])
        assert contents(await session.get_items()) == ["Again"]
        await session.clear_session()
        assert await session.pop_item() is None

    run(server, body)


def test_pop_and_clear_only_touch_their_own_session(server):
    async def body(client: AsyncStateroomClient) -> None:
        one = await StateroomSession.create(client, user_id="u-1", session_id="s-1")
        two = await StateroomSession.create(client, user_id="u-1", session_id="s-2")
        await one.add_items([{"role": "user", "content": "Session 1 message"}])
        await two.add_items(
            [
                {"role": "user", "content": "Session 2 message 1"},
                {"role": "user", "content": "Session 2 message 2"},
            ]
        )
        assert (await two.pop_item())["content"] == "Session 2 message 2"
        assert contents(await one.get_items()) == ["Session 1 message"]
        assert contents(await two.get_items()) == ["Session 2 message 1"]
        await two.clear_session()
        assert contents(await one.get_items()) == ["Session 1 message"]

    run(server, body)


def test_history_lives_in_stateroom_not_in_the_object(server):
    async def body(client: AsyncStateroomClient) -> None:
        first = await StateroomSession.create(client, user_id="u-1", session_id="s-1")
        await first.add_items(
            [
                {"role": "user", "content": "こんにちは"},
                {"role": "assistant", "content": "😊👍"},
                {"role": "user", "content": "Robert'); DROP TABLE students;--"},
            ]
        )
        await first.pop_item()
        # A new object, as in another process after a restart.
        again = await StateroomSession.open(client, "s-1", user_id="u-1")
        assert contents(await again.get_items()) == ["こんにちは", "😊👍"]
        created = await StateroomSession.open(client, "s-new", user_id="u-2")
        assert (await client.get_session("s-new")).user_id == "u-2"
        assert await created.get_items() == []

    run(server, body)


def test_session_settings_limit_is_the_default_and_an_explicit_limit_wins(server):
    async def body(client: AsyncStateroomClient) -> None:
        session = await StateroomSession.create(
            client, user_id="u-1", session_settings=SessionSettings(limit=3)
        )
        assert session.session_settings.limit == 3
        await session.add_items([{"role": "user", "content": f"Message {i}"} for i in range(10)])
        assert contents(await session.get_items()) == ["Message 7", "Message 8", "Message 9"]
        assert contents(await session.get_items(limit=2)) == ["Message 8", "Message 9"]
        plain = StateroomSession(client, session.session_id)
        assert plain.session_settings.limit is None
        assert len(await plain.get_items()) == 10

    run(server, body)


def test_runner_uses_it_as_memory_across_turns(server):
    async def body(client: AsyncStateroomClient) -> None:
        session = await StateroomSession.create(client, user_id="u-1", session_id="s-1")
        model = RecordingModel("San Francisco")
        agent = Agent(name="guide", model=model)
        first = await Runner.run(
            agent, "What city is the Golden Gate Bridge in?", session=session, run_config=NO_TRACE
        )
        assert first.final_output == "San Francisco"
        model.script = [Reply("California")]
        second = await Runner.run(
            agent, "What state is it in?", session=session, run_config=NO_TRACE
        )
        assert second.final_output == "California"
        assert [(i.get("role"), _text(i)) for i in model.last_input] == [
            ("user", "What city is the Golden Gate Bridge in?"),
            ("assistant", "San Francisco"),
            ("user", "What state is it in?"),
        ]
        assert len(await session.get_items()) == 4

        # A list input is appended to the stored history, and RunConfig can limit it.
        await Runner.run(
            agent,
            [{"role": "user", "content": "Test message"}],
            session=session,
            run_config=RunConfig(tracing_disabled=True, session_settings=SessionSettings(limit=2)),
        )
        assert [(i.get("role"), _text(i)) for i in model.last_input] == [
            ("user", "What state is it in?"),
            ("assistant", "California"),
            ("user", "Test message"),
        ]

    run(server, body)


def _text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [])


def test_concurrent_pops_never_return_the_same_item(server):
    async def body(client: AsyncStateroomClient) -> None:
        session = await StateroomSession.create(client, user_id="u-1")
        await session.add_items([{"role": "user", "content": c} for c in "abcde"])
        popped = await asyncio.gather(*(session.pop_item() for _ in range(3)))
        assert sorted(item["content"] for item in popped) == ["c", "d", "e"]
        assert contents(await session.get_items()) == ["a", "b"]

    run(server, body)


def test_session_settings_given_as_a_dict_go_through_the_sdks_coercion(server):
    async def body(client: AsyncStateroomClient) -> None:
        session = await StateroomSession.create(
            client, user_id="u-1", session_id="s-1", session_settings={"limit": 2}
        )
        assert session.session_settings == SessionSettings(limit=2)
        await session.add_items([{"role": "user", "content": f"Message {i}"} for i in range(4)])
        assert contents(await session.get_items()) == ["Message 2", "Message 3"]
        with pytest.raises(TypeError, match="Unknown session settings: limitt"):
            StateroomSession(client, "s-1", session_settings={"limitt": 1})
        # Refused before anything is created on the server.
        with pytest.raises(TypeError, match="Unknown session settings: limitt"):
            await StateroomSession.create(
                client, user_id="u-1", session_id="s-2", session_settings={"limitt": 1}
            )
        assert [s.session_id for s in await client.list_sessions()] == ["s-1"]

    run(server, body)


def test_runner_run_sync_works_in_every_order_with_one_session_object(server):
    """A session made in one event loop serves Runner.run_sync, asyncio.run and threads after it.

    Each asyncio.run() closes its loop; Runner.run_sync runs on a loop of its
    own. The session's client must not carry connections from one to another.
    """
    client = AsyncStateroomClient(server.url, server.token)
    session = asyncio.run(StateroomSession.create(client, user_id="u-1", session_id="s-1"))
    model = RecordingModel("ok")
    agent = Agent(name="guide", model=model)

    policy = asyncio.get_event_loop_policy()
    first = Runner.run_sync(agent, "one", session=session, run_config=NO_TRACE)
    sync_loops = [policy.get_event_loop()]  # run_sync's loop, which it leaves open
    second = asyncio.run(Runner.run(agent, "two", session=session, run_config=NO_TRACE))
    third = Runner.run_sync(agent, "three", session=session, run_config=NO_TRACE)
    sync_loops.append(policy.get_event_loop())  # a new one: asyncio.run unset the first

    def in_a_thread() -> Any:  # a loop of its own, while this thread's loop stays open
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            return Runner.run_sync(agent, "four", session=session, run_config=NO_TRACE)
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())  # as asyncio.run does
            loop.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        fourth = pool.submit(in_a_thread).result(timeout=60)
    assert [r.final_output for r in (first, second, third, fourth)] == ["ok"] * 4
    assert [(i.get("role"), _text(i)) for i in model.last_input] == [
        ("user", "one"),
        ("assistant", "ok"),
        ("user", "two"),
        ("assistant", "ok"),
        ("user", "three"),
        ("assistant", "ok"),
        ("user", "four"),
    ]
    assert len(asyncio.run(session.get_items())) == 8
    for loop in sync_loops:  # what closing those loops would do: their connections close
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
    asyncio.run(client.close())


def test_runner_run_sync_twice_in_a_row_on_one_session(server, client):
    """Back-to-back `Runner.run_sync` calls, nothing in between, on one loop the SDK keeps.

    After each run the SDK runs `shutdown_asyncgens()` on the loop it leaves
    open, which closes that loop's pooled httpx client: the next run on the
    same loop must get a fresh one, not "the client has been closed".
    """
    client.create_session(user_id="u-1", session_id="s-1")
    async_client = AsyncStateroomClient(server.url, server.token)
    session = StateroomSession(async_client, "s-1", user_id="u-1")
    model = RecordingModel("ok")
    agent = Agent(name="guide", model=model)

    def in_a_thread() -> list[Any]:  # a thread of its own: run_sync makes and keeps its loop
        try:
            return [
                Runner.run_sync(agent, text, session=session, run_config=NO_TRACE).final_output
                for text in ("x", "y", "z")
            ]
        finally:
            loop = asyncio.get_event_loop_policy().get_event_loop()
            loop.run_until_complete(async_client.close())
            loop.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        assert pool.submit(in_a_thread).result(timeout=60) == ["ok"] * 3
    assert [(i.get("role"), _text(i)) for i in model.last_input] == [
        ("user", "x"),
        ("assistant", "ok"),
        ("user", "y"),
        ("assistant", "ok"),
        ("user", "z"),
    ]
    assert [item.payload.get("role") for item in client.get_items("s-1").results] == [
        "user",
        "assistant",
    ] * 3


def _big(index: int, size: int) -> dict[str, Any]:
    return {"role": "user", "content": f"{index} " + "b" * size}


def test_add_items_splits_by_bytes_under_the_body_limit(server):
    """20 items of 100 KB (2 MB together) in one call: every one stored, in order."""

    async def body(client: AsyncStateroomClient) -> None:
        session = await StateroomSession.create(client, user_id="u-1", session_id="s-1")
        items = [_big(index, 100 * 1024) for index in range(20)]
        await session.add_items(items)
        assert await session.get_items() == items
        stored = [row async for row in client.iter_items("s-1")]
        assert [row.seq for row in stored] == list(range(1, 21))
        assert client.max_body_bytes == 1024 * 1024  # the server's default, never refused

    run(server, body)


def test_an_item_over_the_limit_is_refused_before_any_item_is_written(server):
    async def body(client: AsyncStateroomClient) -> None:
        session = await StateroomSession.create(client, user_id="u-1", session_id="s-1")
        await session.add_items([{"role": "user", "content": "before"}])
        items = [_big(0, 100 * 1024), _big(1, 1024 * 1024), _big(2, 10)]
        with pytest.raises(ItemTooLarge) as refused:
            await session.add_items(items)
        error = refused.value
        assert isinstance(error, PayloadTooLarge)  # what the gate ends a run `failed` on
        assert (error.code, error.status, error.limit) == ("item_too_large", None, 1024 * 1024)
        assert error.size is not None and error.size > 1024 * 1024
        assert "Item 1 of 3" in error.message and str(error.size) in error.message
        assert contents(await session.get_items()) == ["before"]  # nothing of the call

    run(server, body)


def test_a_client_told_a_larger_limit_learns_the_servers_from_the_413(server):
    """The refused append wrote nothing; the rest is split again under the stated limit."""

    async def body(client: AsyncStateroomClient) -> None:
        session = await StateroomSession.create(client, user_id="u-1", session_id="s-1")
        items = [_big(index, 300 * 1024) for index in range(7)]
        await session.add_items(items)
        assert client.max_body_bytes == 1024 * 1024
        assert await session.get_items() == items
        assert [row.seq async for row in client.iter_items("s-1")] == list(range(1, 8))

    async def go() -> None:
        async with AsyncStateroomClient(
            server.url, server.token, max_body_bytes=8 * 1024 * 1024
        ) as client:
            await body(client)

    asyncio.run(go())


def test_an_item_read_again_is_not_digested_again_and_is_still_found(server, monkeypatch):
    """The seqs the gate references a conversation by: each item's digest once per object."""
    from stateroom_client.agents import session as session_module

    digested: list[Any] = []
    original = session_module.item_digest

    def counting(item: Any) -> str:
        digested.append(item)
        return original(item)

    monkeypatch.setattr(session_module, "item_digest", counting)

    async def body(client: AsyncStateroomClient) -> None:
        writer = await StateroomSession.create(client, user_id="u-1", session_id="s-digest")
        hello, hi = {"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi"}
        await writer.add_items([hello, hi, hello])
        reader = StateroomSession(client, "s-digest")
        digested.clear()
        assert await reader.get_items() == [hello, hi, hello]
        assert len(digested) == 3
        assert await reader.get_items() == [hello, hi, hello]
        assert await reader.get_items(limit=2) == [hi, hello]
        assert len(digested) == 3  # read again: nothing new to digest
        assert [reader.seq_of(hello), reader.seq_of(hello, after=1), reader.seq_of(hi)] == [1, 3, 2]
        assert reader.seq_of({"role": "user", "content": "never"}) is None

    run(server, body)


def test_an_item_written_then_read_back_otherwise_is_found_both_ways(server):
    """JSON may read back otherwise than it was written (jsonb gives -0.0 back as 0): the object
    that wrote an item finds its seq by the item as written and as read."""

    async def body(client: AsyncStateroomClient) -> None:
        session = await StateroomSession.create(client, user_id="u-1", session_id="s-zero")
        written = {"role": "user", "content": "score", "score": -0.0}
        await session.add_items([written])
        [read] = await session.get_items()
        assert read == written and repr(read["score"]) != repr(written["score"])  # not -0.0
        assert [session.seq_of(written), session.seq_of(read)] == [1, 1]

    run(server, body)
