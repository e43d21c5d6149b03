"""One resumer at a time (issue 18): the gate claims the run, and a process that finds it
claimed elsewhere stops cleanly. Real processes against the live server."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

from stateroom_client import AsyncStateroomClient
from stateroom_client.agents import ApprovalGate, GateOutcome, StateroomSession
from tenancy_app.scoping import in_tenant
from tests.runtime.conftest import ROOT

from .payments import REFUND_LOG, build_agent, refunds_made, risk
from .test_gate import CALL, _lease_passes, _resume, _start, crashed_worker
from .worker import CLAIMED_EXIT

ROUNDS = 4


def _start_with_sessions(server, run_ids: list[str]) -> None:
    """Each run asks for its refund (order A-<n>) in a session of its own, and waits."""

    async def go() -> None:
        async with AsyncStateroomClient(server.url, server.token) as client:
            gate = ApprovalGate(client, build_agent(), risk_policy=risk)
            for n, run_id in enumerate(run_ids):
                session = await StateroomSession.create(
                    client, user_id="customer-1", session_id=f"chat-{run_id}"
                )
                outcome = await gate.run(
                    f"Refund 1200 cents on order A-{n}", run_id=run_id, session=session, wait=False
                )
                assert outcome.status == "waiting_approval"

    asyncio.run(go())


def _race(server, refund_log: str, run_ids: list[str]) -> list[dict]:
    args = ["race", *(a for run_id in run_ids for a in ("--run-id", run_id))]
    command = [sys.executable, "-m", "tests.runtime.agents.worker", *args]
    done = subprocess.run(
        [*command, "--url", server.url, "--token", server.token],
        cwd=ROOT,
        env={**os.environ, REFUND_LOG: refund_log},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_three_resumers_of_one_approved_run_one_proceeds_twenty_times(
    server, client, operator, refund_log
):
    run_ids = [f"race-{n}" for n in range(ROUNDS)]
    _start_with_sessions(server, run_ids)
    for run_id in run_ids:
        operator.decide_approval(f"{run_id}:{CALL}", decision="approve", reason="ok")

    results = _race(server, refund_log, run_ids)

    assert len(results) == 3 * ROUNDS
    refunds = refunds_made(refund_log)
    for n, run_id in enumerate(run_ids):
        mine = [r for r in results if r["run_id"] == run_id]
        assert sorted(r["exit"] for r in mine) == [0, CLAIMED_EXIT, CLAIMED_EXIT], mine
        [winner] = [json.loads(r["stdout"].splitlines()[-1]) for r in mine if r["exit"] == 0]
        assert (winner["status"], winner["error"], winner["executed"]) == (
            "succeeded",
            None,
            [CALL],
        )
        for loser in (r for r in mine if r["exit"] == CLAIMED_EXIT):
            lines = loser["stdout"].splitlines()
            outcome = json.loads(lines[-1])
            # It names the winner; or nobody, when it was scheduled only after the winner had
            # ended the run (an ended run has no claim: the gate's `_lost`). Never itself.
            holder = outcome["claimed_by"]
            assert holder in (winner["worker"], None), (holder, winner["worker"])
            assert lines[0] == f"claimed by another worker: {holder}"
            assert (outcome["status"], outcome["executed"]) == ("claimed", [])
        assert refunds.count(f"A-{n} 1200") == 1  # the tool ran once
        run = client.get_run(run_id)
        assert (run.status, run.error, run.claimed_by) == ("succeeded", None, "")
        assert client.get_task(f"{run_id}.task").status == "completed"
        items = list(client.iter_items(f"chat-{run_id}"))
        outputs = [i for i in items if i.item_type == "openai.function_call_output"]
        assert len(outputs) == 1
        assert [i.role for i in items] == ["user", "assistant", "tool", "assistant"]
        [effect] = client.list_run_effects(run_id)
        assert effect.status == "committed"
    assert len(refunds) == ROUNDS


def test_a_resumer_that_finds_the_run_claimed_writes_nothing(server, client, operator, refund_log):
    _start(server, "held-1")
    operator.decide_approval(f"held-1:{CALL}", decision="approve", reason="ok")
    run = client.get_run("held-1")
    other = client.claim_run("held-1", worker="elsewhere", expected_version=run.version)
    events = [e.seq for e in client.iter_events("held-1")]

    outcome = _resume(server, "held-1")

    assert isinstance(outcome, GateOutcome)
    assert (outcome.status, outcome.claimed_elsewhere, outcome.claimed_by) == (
        "claimed",
        True,
        "elsewhere",
    )
    assert (outcome.executed, outcome.error) == ([], None)
    assert outcome.claim_until == other.claim_until is not None  # until when it is held
    assert client.get_run("held-1") == other
    assert [e.seq for e in client.iter_events("held-1")] == events
    assert client.get_task("held-1.task").status == "active"
    assert client.list_run_effects("held-1").results == []
    assert refunds_made(refund_log) == []


class WinnerFirst(AsyncStateroomClient):
    """A resumer that loses the race: another worker resumes the run to its end just
    before this one's first claim."""

    def __init__(self, base_url: str, token: str) -> None:
        super().__init__(base_url, token)
        self.token = token

    async def claim_run(self, run_id: str, **kwargs):
        if not getattr(self, "raced", False):
            self.raced = True
            async with AsyncStateroomClient(self.root, self.token) as other:
                winner = ApprovalGate(other, build_agent(), risk_policy=risk)
                self.winner = await winner.resume(run_id)
        return await super().claim_run(run_id, **kwargs)


def test_a_resumer_that_loses_the_race_reports_it_lost_not_succeeded(
    server, client, operator, refund_log
):
    _start(server, "lost-1")
    operator.decide_approval(f"lost-1:{CALL}", decision="approve", reason="ok")

    async def go() -> tuple[GateOutcome, GateOutcome]:
        async with WinnerFirst(server.url, server.token) as aclient:
            loser = await ApprovalGate(aclient, build_agent(), risk_policy=risk).resume("lost-1")
            return aclient.winner, loser

    winner, loser = asyncio.run(go())
    assert (winner.status, winner.executed) == ("succeeded", [CALL])
    assert (loser.status, loser.claimed_elsewhere, loser.executed) == ("claimed", True, [])
    assert (loser.final_output, loser.error, loser.claim_until) == (None, None, None)
    assert refunds_made(refund_log) == ["A-1 1200"]
    assert client.get_run("lost-1").status == "succeeded"


def test_killed_in_the_tool_settled_and_resumed_the_run_succeeds_without_error(
    worker, server, client, operator, refund_log, admin_a
):
    from effects_app.store import EffectStore
    from stateroom.actor import Actor

    _start(server, "pay-k")
    operator.decide_approval(f"pay-k:{CALL}", decision="approve", reason="ok")
    code, _ = worker("resume", "--run-id", "pay-k", "--crash-in-tool")
    assert code == -9  # killed after recording the refund, before making it
    [effect] = client.list_run_effects("pay-k")
    assert effect.status == "started"
    crashed_worker(client, "pay-k")

    _lease_passes(server, "pay-k")  # the dead process's claim runs out
    halted = _resume(server, "pay-k")
    assert (halted.status, halted.error["code"]) == ("suspended", "effect_outcome_unknown")
    assert client.get_run("pay-k").claimed_by == ""  # a suspended run is held by nobody

    with in_tenant(server.tenant):  # the person checks the bank: it did not happen
        EffectStore(server.tenant, Actor.for_user(admin_a)).settle(
            effect_id=effect.effect_id, outcome="committed", reason="The bank shows the refund."
        )
    done = _resume(server, "pay-k")
    assert (done.status, done.error, done.replayed, done.executed) == (
        "succeeded",
        None,
        [CALL],
        [],
    )
    run = client.get_run("pay-k")
    assert (run.status, run.error) == ("succeeded", None)
    assert client.get_task("pay-k.task").status == "completed"
    assert refunds_made(refund_log) == []  # never blindly retried


def test_the_gate_renews_its_claim_while_a_tool_works(server, client, operator, refund_log):
    """With a 3 s lease the claim is renewed every second while the tool blocks on it."""
    _start(server, "slow-1")
    operator.decide_approval(f"slow-1:{CALL}", decision="approve", reason="ok")
    seen: list[str] = []

    class Watching(AsyncStateroomClient):
        async def record_effect(self, run_id: str, **kwargs):
            first = (await self.get_run(run_id)).claim_until
            for _ in range(100):  # wait (bounded) until the renewer has moved the lease
                await asyncio.sleep(0.1)
                now = await self.get_run(run_id)
                if now.claim_until != first:
                    seen.append(now.claimed_by)
                    break
            return await super().record_effect(run_id, **kwargs)

    async def go() -> GateOutcome:
        async with Watching(server.url, server.token) as watching:
            gate = ApprovalGate(watching, build_agent(), risk_policy=risk, lease_seconds=3)
            outcome = await gate.resume("slow-1")
            assert seen == [gate.worker]
            return outcome

    assert asyncio.run(go()).status == "succeeded"
    assert refunds_made(refund_log) == ["A-1 1200"]


def _in_a_thread(work, *args) -> None:
    """Database work from inside the event loop: on a thread of its own, its connection closed."""
    from django.db import connection

    try:
        work(*args)
    finally:
        connection.close()


def test_a_gate_that_loses_its_claim_mid_run_stops_without_failing_anything(
    server, client, operator, refund_log
):
    _start(server, "lost-1")
    operator.decide_approval(f"lost-1:{CALL}", decision="approve", reason="ok")

    class Superseded(AsyncStateroomClient):
        async def record_effect(self, run_id: str, **kwargs):
            recorded = await super().record_effect(run_id, **kwargs)
            # This worker stalls past its lease and another one takes the run over.
            await asyncio.to_thread(_in_a_thread, _lease_passes, server, run_id)
            run = await self.get_run(run_id)
            await self.claim_run(run_id, worker="thief", expected_version=run.version)
            return recorded

    async def go() -> GateOutcome:
        async with Superseded(server.url, server.token) as superseded:
            return await ApprovalGate(superseded, build_agent(), risk_policy=risk).resume("lost-1")

    outcome = asyncio.run(go())
    assert (outcome.status, outcome.claimed_by) == ("claimed", "thief")
    run = client.get_run("lost-1")
    assert (run.status, run.claimed_by, run.error) == ("running", "thief", None)
    assert client.get_task("lost-1.task").status == "active"
    [effect] = client.list_run_effects("lost-1")
    assert effect.status == "started"  # its commit was refused: the new worker finds it unknown
    assert [e.type for e in client.iter_events("lost-1")][-1] == "approval.decided"
    assert refunds_made(refund_log) == ["A-1 1200"]
