"""The demo's agent runtime against a live server: each kind of work, the cap, resuming."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from demo_app import live
from demo_app import runtime as demo
from demo_app.claims import VOUCHER_SCHEMA
from stateroom_client import AsyncStateroomClient, StateroomClient, ValidationError
from tenancy_app.models import RuntimeToken
from tenancy_app.scoping import in_tenant

WITHDRAWN = demo.WITHDRAWN


def with_runtime(server, body: Callable[..., Awaitable[Any]], **kwargs: Any) -> Any:
    async def go() -> Any:
        async with AsyncStateroomClient(server.url, server.token) as client:
            kwargs.setdefault("pace", demo.Pace.instant())
            kwargs.setdefault("rng", random.Random(7))
            return await body(demo.TenantRuntime(client, "acme", **kwargs))

    return asyncio.run(go())


def texts(client: StateroomClient, session_id: str, role: str) -> list[str]:
    out = []
    for item in client.iter_items(session_id):
        if item.role == role and item.item_type == "openai.message":
            content = item.payload["content"]
            out.append(content if isinstance(content, str) else content[0]["text"])
    return out


def test_a_support_chat_is_a_session_with_one_run_per_turn(server, client):
    session_id = with_runtime(server, lambda rt: rt.conversation_once(turns=1))
    runs = list(client.iter_runs(session_id=session_id))
    assert sorted(r.status for r in runs) == ["succeeded", "succeeded"]
    assert {r.active_agent for r in runs} == {"support-assistant"}
    assert all(r.token_used > 0 for r in runs)
    customer = texts(client, session_id, "user")
    assert len(customer) == 2 and customer[-1] == "Thanks, that's all!"
    assert texts(client, session_id, "assistant")[-1] == "You're welcome, have a good day!"
    assert client.get_session(session_id).attached_run_ids == []


def test_a_migration_keeps_one_run_and_one_checkpoint_per_day(server, client):
    task_id = with_runtime(server, lambda rt: rt.migration_once(days=3))
    task = client.get_task(task_id)
    # Nodes are sets in DurableTaskState (seed 000): the store keeps them sorted.
    assert (task.status, task.completed_nodes, task.pending_nodes) == (
        "completed",
        ["plan", "scan", "upgrade-deps"],
        [],
    )
    latest = client.latest_checkpoint(task_id)
    assert (latest.seq, latest.node_id, latest.state["day"]) == (3, "upgrade-deps", 3)
    assert latest.state["completed_nodes"] == ["scan", "plan", "upgrade-deps"]
    assert [client.get_run(f"{task_id}.day{d}").status for d in (1, 2, 3)] == ["succeeded"] * 3
    [effect] = client.list_run_effects(f"{task_id}.day3")
    assert (effect.tool_name, effect.status, effect.idempotency_key) == (
        "push_branch",
        "committed",
        f"{task_id}:push_branch",
    )
    assert task.artifact_refs == [effect.result["url"]]
    assert task.external_effect_records == [effect.effect_id]


def test_a_refund_waits_in_the_inbox_and_finishes_once_approved(server, client, operator):
    async def body(rt: demo.TenantRuntime) -> None:
        outcome, session = await rt.request_refund()
        [approval] = outcome.approvals
        assert (approval.status, approval.tool_name) == ("pending", "issue_refund")
        assert approval.arguments_schema == demo.issue_refund.params_json_schema
        assert approval.risk == demo.refund_risk("issue_refund", approval.arguments)
        args = approval.arguments
        assert approval.reason == (
            f"Refund {args['amount_cents'] / 100:.2f} {args['currency']} on order "
            f"{args['order_id']}: {args['reason']}"
        )
        assert (await rt.client.get_run(outcome.run_id)).status == "waiting_approval"
        operator.decide_approval(approval.approval_id, decision="approve", reason="Verified")
        await rt._follow(outcome, session)
        run = await rt.client.get_run(outcome.run_id)
        assert run.status == "succeeded"
        assert (await rt.client.get_session(session.session_id)).status == "closed"
        [effect] = await rt.client.list_run_effects(outcome.run_id)
        assert effect.status == "committed"
        reply = texts(client, session.session_id, "assistant")[-1]
        assert reply.startswith(f"Done: Refunded {args['amount_cents'] / 100:.2f}")

    with_runtime(server, body)


def test_a_rejected_refund_tells_the_customer_why(server, client, operator):
    async def body(rt: demo.TenantRuntime) -> None:
        outcome, session = await rt.request_refund()
        operator.decide_approval(
            outcome.approvals[0].approval_id, decision="reject", reason="Outside the 30-day window"
        )
        await rt._follow(outcome, session)
        assert (await rt.client.get_run(outcome.run_id)).status == "succeeded"
        assert (await rt.client.list_run_effects(outcome.run_id)).results == []
        assert texts(client, session.session_id, "assistant")[-1] == (
            "I'm sorry, I could not refund this: Outside the 30-day window"
        )

    with_runtime(server, body)


def test_at_the_cap_the_oldest_own_request_is_withdrawn(server, client):
    async def body(rt: demo.TenantRuntime) -> None:
        first = await rt.request_refund()
        second = await rt.request_refund()  # the inbox is full (cap 1): first is withdrawn
        old = await rt.client.get_approval(first[0].approvals[0].approval_id)
        assert (old.status, old.decision_reason) == ("cancelled", WITHDRAWN)
        pending = await rt.client.list_approvals(status="pending")
        assert [a.approval_id for a in pending] == [second[0].approvals[0].approval_id]
        await rt._follow(*first)
        assert (await rt.client.get_run(first[0].run_id)).status == "succeeded"
        assert texts(client, first[1].session_id, "assistant")[-1] == (
            f"I'm sorry, I could not refund this: {WITHDRAWN}"
        )
        # Not ours to withdraw: a full inbox of another runtime's requests means no new one.
        rt.waiting.clear()
        assert await rt.request_refund() is None
        assert len(await rt.client.list_approvals(status="pending")) == 1

    with_runtime(server, body, cap=1)


def test_at_the_cap_a_withdrawn_claim_ends_cancelled_not_failed(server, client):
    """Left alone, the demo withdraws claims at the cap: none may count as a failed run."""

    async def body(rt: demo.TenantRuntime) -> tuple[str, str]:
        claim = await rt.file_claim()
        [question] = claim.approvals
        refund = await rt.request_refund()  # the inbox is full (cap 1): the claim is withdrawn
        pending = await rt.client.list_approvals(status="pending")
        assert [a.approval_id for a in pending] == [refund[0].approvals[0].approval_id]
        await rt._follow_claim(claim)
        return claim.run_id, question.approval_id

    with StateroomClient(server.url, server.token) as graph_client:
        run_id, approval_id = with_runtime(server, body, cap=1, graph_client=graph_client)
    run = client.get_run(run_id)
    assert (run.status, run.error) == ("cancelled", None)
    assert client.get_approval(approval_id).status == "cancelled"
    assert not list(client.iter_runs(status="failed"))


def test_a_new_runtime_process_resumes_runs_left_waiting(server, operator):
    outcome, _ = with_runtime(server, lambda rt: rt.request_refund())
    operator.decide_approval(outcome.approvals[0].approval_id, decision="approve", reason="ok")

    async def restart(rt: demo.TenantRuntime) -> str:
        await rt.resume_waiting()
        await asyncio.gather(*rt.tasks)
        return (await rt.client.get_run(outcome.run_id)).status

    assert with_runtime(server, restart) == "succeeded"


def test_demo_tokens_replace_the_previous_runtimes(tenant_a, tenant_b):
    first = live.runtime_tokens()
    second = live.runtime_tokens()
    assert sorted(second) == ["acme", "globex"]
    assert first["acme"] != second["acme"]
    for tenant in (tenant_a, tenant_b):
        with in_tenant(tenant):
            tokens = RuntimeToken.objects.filter(tenant=tenant, name="demo-runtime")
            assert (tokens.count(), tokens.filter(revoked_at__isnull=True).count()) == (2, 1)
    assert live.TOKENS_ENV == demo.TOKENS_ENV
    assert demo.parse_tokens(f"acme={second['acme']},globex={second['globex']}") == second


def test_demo_tokens_only_for_the_demo_tenants_that_exist(tenant_a):
    assert sorted(live.runtime_tokens()) == ["acme"]


def test_the_runtime_reaches_the_server_runserver_serves():
    assert live.local_url("127.0.0.1:8000") == "http://127.0.0.1:8000"
    assert live.local_url("0.0.0.0:9000") == "http://127.0.0.1:9000"
    assert live.local_url("8000") == "http://127.0.0.1:8000"


def test_left_alone_it_keeps_asking_and_stays_under_the_cap(server, client):
    pace = demo.Pace(
        support_every=(0.5, 1.0),
        payments_every=(0.3, 0.3),
        migration_every=(600, 600),
        between_turns=(0, 0),
        migration_day=(0.5, 0.5),
        withdraw_after=0.0,
    )

    async def body(rt: demo.TenantRuntime) -> None:
        stop = asyncio.Event()
        loop = asyncio.create_task(rt.run_forever(stop))
        for _ in range(240):
            await asyncio.sleep(0.25)
            approvals = [a.status for a in await rt.client.list_approvals(limit=100)]
            assert approvals.count("pending") <= 3
            if approvals.count("cancelled") >= 2:
                break
        stop.set()
        await loop

    with_runtime(server, body, cap=3, pace=pace)
    approvals = list(client.iter_approvals())
    statuses = [a.status for a in approvals]
    assert statuses.count("pending") <= 3
    assert statuses.count("cancelled") >= 2  # requests kept coming after the cap was reached
    assert len(list(client.iter_sessions())) > len(approvals)


def test_a_langgraph_claim_waits_in_the_inbox_and_finishes_once_edited(server, client, operator):
    async def body(rt: demo.TenantRuntime) -> Any:
        outcome = await rt.file_claim()
        [approval] = outcome.approvals
        assert (approval.status, approval.tool_name, approval.run_id) == (
            "pending",
            "issue_voucher",
            f"{outcome.thread_id}.run",
        )
        assert approval.allowed_decisions == ("approve", "edit", "reject", "respond")
        assert approval.arguments_schema == VOUCHER_SCHEMA
        with pytest.raises(ValidationError) as refused:  # an edit the graph could not use
            operator.decide_approval(
                approval.approval_id,
                decision="edit",
                reason="more",
                approved_arguments={**approval.arguments, "voucher_cents": "lots"},
            )
        assert refused.value.details == {
            "approved_arguments.voucher_cents": ["'lots' is not of type 'integer'"]
        }
        assert [a.approval_id for a in client.list_approvals(status="pending")] == [
            approval.approval_id
        ]
        operator.decide_approval(
            approval.approval_id,
            decision="edit",
            reason="Half is fair",
            approved_arguments={**approval.arguments, "voucher_cents": 500},
        )
        await rt._follow_claim(outcome)
        return outcome.thread_id

    with StateroomClient(server.url, server.token) as graph_client:
        thread_id = with_runtime(server, body, graph_client=graph_client)
    run = client.get_run(f"{thread_id}.run")
    assert (run.status, run.active_agent, run.task_id, run.error) == (
        "succeeded",
        "claims-graph",
        thread_id,
        None,
    )
    [effect] = client.list_run_effects(run.run_id)
    assert (effect.tool_name, effect.status) == ("issue_voucher", "committed")
    assert effect.request["arguments"]["args"][1] == 500  # the edited amount
    latest = client.list_graph_checkpoints(thread_id, checkpoint_ns="", limit=1).results[0]
    values = {v["channel"]: v["value"] for v in latest["channel_values"]}
    assert values["voucher_cents"] == 500
    assert values["reply"].startswith("Sorry about the ") and "5.00 EUR" in values["reply"]
