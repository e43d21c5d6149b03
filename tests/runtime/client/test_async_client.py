"""The async client has the same methods as the sync one: each of them against a live server."""

from __future__ import annotations

import asyncio
import inspect
from concurrent.futures import ThreadPoolExecutor

import pytest

from stateroom_client import (
    AlreadyDecided,
    AppendResult,
    AsyncStateroomClient,
    NotFound,
    ServerError,
    StateroomClient,
    VersionConflict,
)

ITEM = {"role": "user", "item_type": "message", "payload": {"text": "hi"}}


def test_async_and_sync_clients_offer_the_same_methods():
    def public(cls):
        return {
            name: inspect.signature(fn).parameters.keys()
            for name, fn in vars(cls).items()
            if callable(fn) and not name.startswith("_")
        }

    sync, aio = public(StateroomClient), public(AsyncStateroomClient)
    assert sorted(set(sync) ^ set(aio)) == []
    assert {n: list(p) for n, p in sync.items()} == {n: list(p) for n, p in aio.items()}


def test_every_async_method_against_the_live_server(server):
    async def scenario() -> None:
        async with (
            AsyncStateroomClient(server.url, server.token) as sr,
            AsyncStateroomClient(server.url, server.operator_token) as ops,
            AsyncStateroomClient(server.url, server.other_token) as other,
        ):
            assert (await sr.me()).tenant == "acme"
            session = await sr.create_session(user_id="u-1", session_id="s-1")
            assert session.revision == 0
            assert (await sr.get_session("s-1")).user_id == "u-1"
            assert [s.session_id for s in await sr.list_sessions(user_id="u-1")] == ["s-1"]
            assert [s.session_id async for s in sr.iter_sessions(page_size=1)] == ["s-1"]
            with pytest.raises(NotFound):
                await other.get_session("s-1")

            task = await sr.create_task(task_id="t-1", objective="refunds")
            assert (await sr.get_task("t-1")).version == task.version == 1
            saved = await sr.save_task_state("t-1", expected_version=1, pending_nodes=["refund"])
            assert (saved.version, saved.pending_nodes) == (2, ["refund"])
            ref = await sr.append_checkpoint("t-1", state={"step": 1}, node_id="start")
            assert (await sr.latest_checkpoint("t-1")).checkpoint_id == ref.checkpoint_id
            assert (await sr.get_checkpoint("t-1", ref.checkpoint_id)).state == {"step": 1}

            run = await sr.create_run(run_id="r-1", session_id="s-1", task_id="t-1")
            attached = await sr.attach_session(
                "s-1", run_id="r-1", user_id="u-1", expected_revision=0
            )
            assert attached.attached_run_ids == ["r-1"]
            assert (await sr.heartbeat_session("s-1")).status == "active"
            appended = await sr.append_items("s-1", [ITEM, ITEM], run_id="r-1")
            assert appended == AppendResult(1, 2, True)
            assert [i.run_id for i in await sr.get_items("s-1")] == ["r-1", "r-1"]
            assert [i.seq async for i in sr.iter_items("s-1", page_size=1)] == [1, 2]

            running = await sr.transition_run("r-1", expected_version=run.version, status="running")
            with pytest.raises(VersionConflict):
                await sr.transition_run("r-1", expected_version=run.version, status="running")
            assert (await sr.get_run("r-1")).status == "running"
            assert [r.run_id for r in await sr.list_runs(status="running")] == ["r-1"]
            assert [r.run_id async for r in sr.iter_runs(session_id="s-1")] == ["r-1"]
            events = await sr.append_events("r-1", [{"type": "tick", "payload": {}}])
            assert (events.first_seq, events.last_seq) == (1, 1)
            assert [e.type for e in await sr.get_events("r-1")] == ["tick"]
            assert [e.seq async for e in sr.iter_events("r-1")] == [1]

            approval = await sr.request_approval(
                "r-1",
                expected_version=running.version,
                tool_name="refund",
                arguments={"amount": 5},
                risk="low",
            )
            pending = await sr.get_approval(approval.approval_id, wait=1)
            assert pending.status == "pending"
            assert [a.approval_id for a in await sr.list_approvals(status="pending")] == [
                approval.approval_id
            ]
            decided = await ops.decide_approval(
                approval.approval_id, decision="reject", reason="too risky"
            )
            assert (decided.status, decided.decision_reason) == ("rejected", "too risky")
            waited = await sr.wait_for_decision(approval.approval_id, timeout=5)
            assert waited.status == "rejected"
            with pytest.raises(AlreadyDecided):
                await ops.decide_approval(approval.approval_id, decision="approve", reason="ok")
            assert [a.status async for a in sr.iter_approvals(run_id="r-1")] == ["rejected"]
            run = await sr.get_run("r-1")
            second = await sr.request_approval(
                "r-1",
                expected_version=run.version,
                tool_name="email",
                arguments={},
                risk="low",
            )
            assert (await sr.cancel_approval(second.approval_id)).status == "cancelled"

            effect = await sr.record_effect(
                "r-1", idempotency_key="r-1:c1", tool_name="refund", request={"amount": 5}
            )
            assert effect.created is True
            assert (await sr.commit_effect(effect.effect_id, result={"ok": 1})).status == (
                "committed"
            )
            failing = await sr.record_effect(
                "r-1", idempotency_key="r-1:c2", tool_name="email", request={}
            )
            assert (await sr.fail_effect(failing.effect_id, error={"message": "x"})).status == (
                "failed"
            )
            assert (await sr.find_effect("r-1:c1")).effect_id == effect.effect_id
            assert [e.idempotency_key for e in await sr.list_effects(idempotency_key="r-1:c2")] == [
                "r-1:c2"
            ]
            assert len(await sr.list_run_effects("r-1")) == 2
            assert sorted([e.status async for e in sr.iter_run_effects("r-1")]) == [
                "committed",
                "failed",
            ]

            detached = await sr.detach_session(
                "s-1", run_id="r-1", user_id="u-1", expected_revision=attached.revision
            )
            assert detached.attached_run_ids == []
            assert (await sr.close_session("s-1", reason="bye")).status == "closed"

            other_run = await sr.create_run(run_id="r-2")
            await sr.transition_run("r-2", expected_version=other_run.version, status="running")
            assert (await ops.suspend_run("r-2", reason="hold")).status == "suspended"
            assert (await ops.resume_run("r-2", reason="go", expected_version=3)).status == (
                "running"
            )
            assert (await sr.cancel_run("r-2", reason="done with it")).status == "cancelled"
            assert [r.run_id for r in await sr.list_runs(unclaimed=True)] == []
            assert [r.run_id async for r in sr.iter_runs(unclaimed=True)] == []

    asyncio.run(scenario())


def test_async_retries_follow_the_same_rule(server, proxy):
    async def scenario() -> None:
        async with (
            AsyncStateroomClient(proxy.url, server.token, backoff=0.01) as flaky,
            AsyncStateroomClient(server.url, server.token) as direct,
        ):
            await direct.create_session(user_id="u-1", session_id="s-1")
            proxy.fail(1, 502, method="POST", path="/items", forward=True)
            replayed = await flaky.append_items("s-1", [ITEM], idempotency_key="k")
            assert replayed == AppendResult(1, 1, False)
            proxy.fail(1, 502, method="POST", path="/close", forward=True)
            with pytest.raises(ServerError):
                await flaky.close_session("s-1")
            assert (await direct.get_session("s-1")).status == "closed"

    asyncio.run(scenario())
    assert proxy.requests("POST", "/items") == [502, 200]
    assert proxy.requests("POST", "/close") == [502]


def test_one_async_client_serves_every_event_loop_it_is_used_from(server):
    """asyncio.run() after asyncio.run(), and loops in other threads at the same time.

    httpx's pooled connections belong to the loop that opened them; reusing
    one from a later loop fails with "Event loop is closed".
    """
    client = AsyncStateroomClient(server.url, server.token)
    asyncio.run(client.create_session(user_id="u-1", session_id="s-1"))
    for n in range(3):  # each asyncio.run is a new loop; the previous one is closed
        asyncio.run(client.append_items("s-1", [ITEM], idempotency_key=f"k-{n}"))

    def in_a_thread(n: int) -> int:
        loop = asyncio.new_event_loop()
        try:
            result = loop.run_until_complete(
                client.append_items("s-1", [ITEM], idempotency_key=f"thread-{n}")
            )
            return result.first_seq
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())  # as asyncio.run does
            loop.close()

    with ThreadPoolExecutor(max_workers=3) as pool:
        seqs = sorted(pool.map(in_a_thread, range(6)))
    assert seqs == [4, 5, 6, 7, 8, 9]

    async def read_and_close() -> list[int]:
        items = await client.get_items("s-1")
        await client.close()
        return [i.seq for i in items]

    assert asyncio.run(read_and_close()) == list(range(1, 10))
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(client.get_session("s-1"))
