"""ApprovalGate end to end: an SDK agent with a `needs_approval` tool against the live server.

The runtime runs in separate processes (`tests.runtime.agents.worker`), so a resume
has nothing but what Stateroom stored: the checkpoint, the approvals and the
effect ledger. The refund tool writes a line to a file each time it really
runs, which is how these tests count executions across processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from datetime import timedelta

import pytest
from agents import Agent, RunConfig, Runner, function_tool
from django.utils import timezone

from approvals_app.store import ApprovalStore
from audit_app.models import AuditEvent
from effects_app.store import EffectStore
from runs_app.models import Run
from stateroom.actor import Actor
from stateroom_client import AsyncStateroomClient, NotFound, StateroomClient, ValidationError
from stateroom_client.agents import (
    ApprovalGate,
    GateOutcome,
    Reply,
    ScriptModel,
    StateroomSession,
    ToolCall,
    idempotent_tool,
)
from tenancy_app.scoping import in_tenant
from tests.conftest import login

from .payments import build_agent, issue_refund, issue_refund_log, refunds_made, risk

CALL = "scripted-u1-s0-0"  # the scripted model's first tool call in a conversation
REFUND = "Refund 1200 cents on order A-1"
DONE = "Outcome: Refunded 1200 cents on order A-1."
NO_TRACE = RunConfig(tracing_disabled=True)


def test_approved_call_resumes_in_a_fresh_process_and_the_tool_runs_once(
    worker, server, client, operator, refund_log
):
    code, started = worker("start", REFUND, "--run-id", "pay-1", "--session-id", "chat-1")
    approval_id = f"pay-1:{CALL}"
    assert (code, started["status"], started["approvals"]) == (0, "waiting_approval", [approval_id])

    approval = client.get_approval(approval_id)
    assert (approval.status, approval.tool_name, approval.risk, approval.run_id) == (
        "pending",
        "issue_refund",
        "high",
        "pay-1",
    )
    assert approval.arguments == {"order_id": "A-1", "amount_cents": 1200}
    assert approval.reason == (
        'payments wants to call issue_refund with {"order_id": "A-1", "amount_cents": 1200}'
    )
    run = client.get_run("pay-1")
    assert (run.status, run.pending_approval_id, run.session_id, run.task_id) == (
        "waiting_approval",
        approval_id,
        "chat-1",
        "pay-1.task",
    )
    assert run.active_agent == "payments"
    checkpoint = client.latest_checkpoint("pay-1.task")
    assert run.last_checkpoint_id == checkpoint.checkpoint_id
    assert checkpoint.node_id == "awaiting_decisions"
    assert checkpoint.state["kind"] == "openai-agents.run_state"
    assert checkpoint.state["session"] == {"session_id": "chat-1", "user_id": "customer-1"}
    assert checkpoint.state["calls"] == [
        {
            "call_id": CALL,
            "tool_name": "issue_refund",
            "arguments": {"order_id": "A-1", "amount_cents": 1200},
            "risk": "high",
            "approval_id": approval_id,
        }
    ]
    assert refunds_made(refund_log) == []  # nothing happens before the decision

    operator.decide_approval(approval_id, decision="approve", reason="Customer is eligible")
    code, resumed = worker("resume", "--run-id", "pay-1")
    assert code == 0
    assert (resumed["status"], resumed["final_output"], resumed["error"]) == (
        "succeeded",
        DONE,
        None,
    )
    assert (resumed["executed"], resumed["replayed"]) == ([CALL], [])
    assert refunds_made(refund_log) == ["A-1 1200"]

    [effect] = client.list_run_effects("pay-1")
    assert (effect.idempotency_key, effect.status, effect.tool_name) == (
        f"pay-1:{CALL}",
        "committed",
        "issue_refund",
    )
    assert effect.result == {"output": "Refunded 1200 cents on order A-1."}
    assert effect.request == {"arguments": {"order_id": "A-1", "amount_cents": 1200}}
    run = client.get_run("pay-1")
    assert (run.status, run.error, run.token_used, run.turn_index) == ("succeeded", None, 80, 2)
    assert client.get_task("pay-1.task").status == "completed"
    session = client.get_session("chat-1")
    assert (session.status, session.attached_run_ids) == ("active", [])
    items = list(client.iter_items("chat-1"))
    assert [(i.role, i.item_type, i.run_id) for i in items] == [
        ("user", "openai.message", "pay-1"),
        ("assistant", "openai.function_call", "pay-1"),
        ("tool", "openai.function_call_output", "pay-1"),
        ("assistant", "openai.message", "pay-1"),
    ]
    assert items[2].payload["output"] == "Refunded 1200 cents on order A-1."
    assert [e.type for e in client.iter_events("pay-1")] == [
        "agent.started",
        "agent.interrupted",
        "approval.requested",
        "approval.decided",
        "agent.final_output",
    ]

    # A finished run resumed again does nothing.
    again = _resume(server, "pay-1")
    assert (again.status, again.final_output) == ("succeeded", DONE)
    assert (again.executed, again.replayed) == ([], [])
    assert refunds_made(refund_log) == ["A-1 1200"]


def test_killed_after_commit_the_resumed_run_does_not_refund_again(
    worker, server, client, operator, refund_log
):
    _start(server, "pay-2")
    operator.decide_approval(f"pay-2:{CALL}", decision="approve", reason="ok")

    code, crashed = worker("resume", "--run-id", "pay-2", "--crash-after-commit")
    assert (code, crashed) == (-9, None)  # SIGKILL right after the effect was committed
    assert refunds_made(refund_log) == ["A-1 1200"]
    [effect] = client.list_run_effects("pay-2")
    assert effect.status == "committed"
    run = client.get_run("pay-2")
    assert (run.status, run.error) == ("running", None)  # the run state never got updated
    assert run.claimed_by == crashed_worker(client, "pay-2")

    # The dead process's claim holds the run until its lease ends: a resumer stops.
    held = _resume(server, "pay-2")
    assert (held.status, held.claimed_elsewhere, held.claimed_by) == (
        "claimed",
        True,
        run.claimed_by,
    )
    assert client.get_run("pay-2") == run  # nothing written
    _lease_passes(server, "pay-2")
    resumed = _resume(server, "pay-2")  # here, another process than the one killed
    assert (resumed.status, resumed.final_output) == ("succeeded", DONE)
    assert (resumed.executed, resumed.replayed) == ([], [CALL])
    assert refunds_made(refund_log) == ["A-1 1200"]  # still once
    assert [e.effect_id for e in client.list_run_effects("pay-2")] == [effect.effect_id]


def test_ten_megabytes_of_history_pause_and_resume_in_a_new_process(
    worker, server, client, operator, refund_log
):
    """The checkpoint references the conversation by session seq instead of copying it."""
    client.create_session(session_id="chat-big", user_id="customer-1")
    chunk = 512 * 1024
    for index in range(20):  # 10 MB, one item per request: each under the 1 MiB body limit
        text = f"old message {index} " + "h" * chunk
        if index % 2 == 0:
            payload = {"role": "user", "content": text}
        else:  # as the SDK stores an assistant's answer
            payload = {
                "id": f"msg-old-{index}",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        client.append_items(
            "chat-big",
            [{"role": payload["role"], "item_type": "openai.message", "payload": payload}],
        )
    # An answer given as plain text: the SDK reads it back reshaped, so it is copied.
    plain = {"role": "assistant", "content": "Anything else?"}
    client.append_items(
        "chat-big", [{"role": "assistant", "item_type": "openai.message", "payload": plain}]
    )
    code, started = worker("start", REFUND, "--run-id", "pay-big", "--session-id", "chat-big")
    assert (code, started["status"]) == (0, "waiting_approval")

    checkpoint = client.latest_checkpoint("pay-big.task")
    assert checkpoint.schema_version == 2
    assert len(json.dumps(checkpoint.state)) < 64 * 1024
    assert checkpoint.state["run_state"]["original_input"] == []
    conversation = checkpoint.state["conversation"]
    reshaped = {"role": "assistant", "status": "completed"} | {
        "content": [{"type": "output_text", "text": "Anything else?"}]
    }
    assert (conversation["session_id"], conversation["pieces"], conversation["items"]) == (
        "chat-big",
        [[1, 20], {"item": reshaped}, [22, 22]],  # 20 old items, the reshaped one, the request
        22,
    )

    operator.decide_approval(
        f"pay-big:{CALL.replace('u1', 'u11')}", decision="approve", reason="ok"
    )
    code, resumed = worker("resume", "--run-id", "pay-big")
    assert (code, resumed["status"], resumed["error"]) == (0, "succeeded", None)
    assert resumed["final_output"] == DONE
    assert refunds_made(refund_log) == ["A-1 1200"]
    assert client.get_run("pay-big").status == "succeeded"


@pytest.mark.parametrize("decided", [True, False], ids=["approved", "pending"])
def test_a_resume_after_the_tools_schema_changed_does_not_run_it_on_the_old_approval(
    server, client, operator, refund_log, decided
):
    _start(server, "pay-drift")
    old_id = f"pay-drift:{CALL}"
    if decided:
        operator.decide_approval(old_id, decision="approve", reason="ok")

    @idempotent_tool(needs_approval=True, name_override="issue_refund")
    def issue_refund_v2(order_id: str, amount_cents: int, currency: str) -> str:
        """Refund part of an order to the customer's card.

        Args:
            order_id: The order to refund.
            amount_cents: How much to refund, in cents.
            currency: ISO currency code.
        """
        raise AssertionError("must not run on the old approval")

    agent = build_agent()
    agent.tools = [issue_refund_v2]

    async def resume() -> GateOutcome:
        async with AsyncStateroomClient(server.url, server.token) as aclient:
            return await ApprovalGate(aclient, agent, risk_policy=risk).resume(
                "pay-drift", wait=False
            )

    outcome = asyncio.run(resume())
    assert outcome.status == "waiting_approval"
    assert refunds_made(refund_log) == [] and client.list_run_effects("pay-drift").results == []
    [again] = outcome.approvals
    assert again.approval_id != old_id and again.status == "pending"
    assert again.raw["summary"] == f"The tool changed since this was asked ({old_id})"
    assert '"currency"' in again.reason and "is now" in again.reason
    assert client.get_run("pay-drift").pending_approval_id == again.approval_id
    events = {e.type: e.payload for e in client.iter_events("pay-drift")}
    assert list(events["agent.drift"]) == ["tools"]
    schema = events["agent.drift"]["tools"]["issue_refund"]
    assert (
        "currency" in schema["new"]["properties"] and "currency" not in schema["old"]["properties"]
    )
    assert events["approval.voided"]["approval_id"] == old_id
    assert events["approval.voided"]["reason"] == "tool_changed"
    assert events["approval.voided"]["status"] == ("approved" if decided else "pending")
    # The server says what happened: the old approval is voided, with the schema diff, and
    # the new one, pending, names it.
    voided = client.get_approval(old_id)
    assert (voided.status, voided.void_reason_code, voided.voided_by) == (
        "voided",
        "tool_changed",
        "token:worker",
    )
    assert voided.void_details == {"tool": "issue_refund", **schema}
    assert (voided.decision, voided.decided_by) == (
        ("approve", "token:ops") if decided else ("", "")
    )
    assert again.replaces_approval_id == old_id
    assert client.get_approval(again.approval_id).replaces_approval_id == old_id
    assert [a.approval_id for a in client.list_approvals(status="voided").results] == [old_id]


def test_the_gate_sends_the_tools_schema_and_an_edit_the_sdk_would_refuse_is_refused(
    server, client, operator, refund_log
):
    """Before: `{"amount_cents": "lots", "foo": 1}` was approved, the SDK refused the call,
    the model was told to retry and the run read succeeded with no refund."""
    _start(server, "pay-schema")
    approval_id = f"pay-schema:{CALL}"
    asked = client.get_approval(approval_id)
    assert asked.arguments_schema == issue_refund.params_json_schema
    with pytest.raises(ValidationError) as refused:
        operator.decide_approval(
            approval_id,
            decision="edit",
            reason="more",
            approved_arguments={"amount_cents": "lots", "foo": 1},
        )
    assert refused.value.details == {
        "approved_arguments.amount_cents": ["'lots' is not of type 'integer'"],
        "approved_arguments.foo": ["not an argument of this tool"],
        "approved_arguments.order_id": ["required"],
    }
    assert operator.get_approval(approval_id).status == "pending"
    edited = {"order_id": "A-1", "amount_cents": 600}
    operator.decide_approval(approval_id, decision="edit", reason="half", approved_arguments=edited)
    outcome = _resume(server, "pay-schema")
    assert (outcome.status, outcome.error, outcome.executed) == ("succeeded", None, [CALL])
    assert refunds_made(refund_log) == ["A-1 600"]
    [effect] = client.list_run_effects("pay-schema")
    assert (effect.status, effect.request) == ("committed", {"arguments": edited})


def test_after_an_incompatible_tool_change_the_call_runs_only_edited_to_the_new_schema(
    server, client, operator, refund_log
):
    """Before: the re-ask kept the old arguments and offered plain approve; the SDK refused
    them, the model was told to retry and the run ended succeeded with no effect."""
    _start(server, "pay-drift-2")

    @idempotent_tool(needs_approval=True, name_override="issue_refund")
    def issue_refund_v2(order_id: str, amount_cents: int, currency: str) -> str:
        """Refund part of an order to the customer's card.

        Args:
            order_id: The order to refund.
            amount_cents: How much to refund, in cents.
            currency: ISO currency code.
        """
        return issue_refund_log(order_id, f"{amount_cents} {currency}")

    agent = build_agent()
    agent.tools = [issue_refund_v2]

    async def resume(wait: bool) -> GateOutcome:
        async with AsyncStateroomClient(server.url, server.token) as aclient:
            return await ApprovalGate(aclient, agent, risk_policy=risk).resume(
                "pay-drift-2", wait=wait
            )

    [again] = asyncio.run(resume(False)).approvals
    assert again.arguments == {"order_id": "A-1", "amount_cents": 1200}
    assert again.arguments_schema == issue_refund_v2.params_json_schema
    # The old arguments cannot run on the new tool: approving them as asked is refused.
    with pytest.raises(ValidationError) as refused:
        operator.decide_approval(again.approval_id, decision="approve", reason="ok")
    assert (refused.value.code, refused.value.details["arguments.currency"]) == (
        "arguments_invalid",
        ["required"],
    )
    fits = {"order_id": "A-1", "amount_cents": 1200, "currency": "EUR"}
    operator.decide_approval(
        again.approval_id, decision="edit", reason="EUR", approved_arguments=fits
    )
    outcome = asyncio.run(resume(True))
    assert (outcome.status, outcome.error, outcome.executed) == ("succeeded", None, [CALL])
    assert refunds_made(refund_log) == ["A-1 1200 EUR"]
    [effect] = client.list_run_effects("pay-drift-2")
    assert (effect.status, effect.request) == ("committed", {"arguments": fits})


def crashed_worker(client, run_id: str) -> str:
    """The worker name a killed process claimed the run with (it printed nothing)."""
    claimed_by = client.get_run(run_id).claimed_by
    assert claimed_by and claimed_by.split(":")[1].isdigit()
    return claimed_by


def _lease_passes(server, run_id: str) -> None:
    """The claim's lease ends (as if its time had passed): the test moves the lease, not time."""
    with in_tenant(server.tenant):
        Run.objects.filter(tenant=server.tenant, run_id=run_id).update(
            claim_until=timezone.now() - timedelta(seconds=1)
        )


def _gate(server, **kwargs) -> tuple[AsyncStateroomClient, ApprovalGate]:
    client = AsyncStateroomClient(server.url, server.token)
    return client, ApprovalGate(client, build_agent(), risk_policy=risk, **kwargs)


def _start(server, run_id: str, **kwargs) -> GateOutcome:
    async def go() -> GateOutcome:
        client, gate = _gate(server, **kwargs)
        async with client:
            return await gate.run(REFUND, run_id=run_id, wait=False)

    return asyncio.run(go())


def _resume(server, run_id: str, **kwargs) -> GateOutcome:
    async def go() -> GateOutcome:
        client, gate = _gate(server, **kwargs)
        async with client:
            return await gate.resume(run_id)

    return asyncio.run(go())


def test_rejection_reaches_the_model_and_the_run_ends_with_the_reason(
    server, client, operator, refund_log
):
    assert _start(server, "pay-3").status == "waiting_approval"
    reason = "Refunds over 10 EUR need a manager."
    operator.decide_approval(f"pay-3:{CALL}", decision="reject", reason=reason)

    outcome = _resume(server, "pay-3")
    assert (outcome.status, outcome.final_output, outcome.executed) == (
        "succeeded",
        f"Outcome: {reason}",
        [],
    )
    assert refunds_made(refund_log) == []
    assert client.list_run_effects("pay-3").results == []
    approval = client.get_approval(f"pay-3:{CALL}")
    assert (approval.status, approval.decision_reason) == ("rejected", reason)
    assert client.get_run("pay-3").status == "succeeded"


def test_rejection_can_stop_the_run_with_the_reason_as_its_error(
    server, client, operator, refund_log
):
    _start(server, "pay-4", on_rejection="stop")
    operator.decide_approval(f"pay-4:{CALL}", decision="reject", reason="Fraud suspected")

    outcome = _resume(server, "pay-4", on_rejection="stop")
    error = {
        "code": "approval_rejected",
        "message": "Fraud suspected",
        "approval_id": f"pay-4:{CALL}",
        "tool_name": "issue_refund",
        "decided_by": "token:ops",
    }
    assert (outcome.status, outcome.error) == ("failed", error)
    run = client.get_run("pay-4")
    assert (run.status, run.error) == ("failed", error)
    assert client.get_task("pay-4.task").status == "failed"
    assert refunds_made(refund_log) == []


def test_expired_approval_ends_the_run_cleanly(server, client, refund_log):
    outcome = _start(server, "pay-5", approval_ttl=timedelta(seconds=1))
    approval = outcome.approvals[0]
    assert approval.expires_at is not None
    later = approval.expires_at + timedelta(seconds=1)  # the sweep's clock, past the deadline
    with in_tenant(server.tenant):
        sweep = ApprovalStore(server.tenant, Actor.system("sweep"), clock=lambda: later)
        assert sweep.expire_overdue() == 1
    assert client.get_run("pay-5").status == "suspended"

    ended = _resume(server, "pay-5")
    error = {
        "code": "approval_expired",
        "message": f"Approval pay-5:{CALL} for issue_refund expired.",
        "approval_id": f"pay-5:{CALL}",
        "tool_name": "issue_refund",
        "decided_by": "sweep",
    }
    assert (ended.status, ended.error) == ("failed", error)
    assert client.get_run("pay-5").error == error
    assert client.get_approval(f"pay-5:{CALL}").status == "expired"
    assert refunds_made(refund_log) == []


def test_a_waiting_gate_sees_the_expiry_at_expires_at_without_a_sweep(server, client, refund_log):
    """No beat, no sweep: the gate's long-poll answers expired at expires_at, the run ends
    failed, and ending it records the expiry (once), not a cancellation."""

    async def go() -> GateOutcome:
        async_client, gate = _gate(server, approval_ttl=timedelta(seconds=1.5))
        async with async_client:
            return await gate.run(REFUND, run_id="pay-9", wait=True, decision_timeout=20)

    started = time.monotonic()
    outcome = asyncio.run(go())
    assert time.monotonic() - started < 10  # far from the 20 s it would wait if still pending
    error = {
        "code": "approval_expired",
        "message": f"Approval pay-9:{CALL} for issue_refund expired.",
        "approval_id": f"pay-9:{CALL}",
        "tool_name": "issue_refund",
        "decided_by": "",
    }
    assert (outcome.status, outcome.error) == ("failed", error)
    assert client.get_run("pay-9").status == "failed"
    approval = client.get_approval(f"pay-9:{CALL}")
    assert approval.status == "expired"
    assert approval.decided_at == approval.expires_at
    with in_tenant(server.tenant):
        actions = list(
            AuditEvent.objects.filter(tenant=server.tenant, target_id=f"pay-9:{CALL}")
            .order_by("seq")
            .values_list("action", flat=True)
        )
        assert ApprovalStore(server.tenant, Actor.system("sweep")).expire_overdue() == 0
    assert actions == ["approval.requested", "approval.expired"]
    assert refunds_made(refund_log) == []


def test_an_effect_of_unknown_outcome_suspends_the_run_until_settled(
    server, client, operator, refund_log, admin_a
):
    _start(server, "pay-6")
    operator.decide_approval(f"pay-6:{CALL}", decision="approve", reason="ok")
    # An earlier attempt recorded the refund and died before committing it.
    effect = client.record_effect(
        "pay-6",
        idempotency_key=f"pay-6:{CALL}",
        tool_name="issue_refund",
        request={"arguments": {"order_id": "A-1", "amount_cents": 1200}},
    )

    halted = _resume(server, "pay-6")
    assert (halted.status, halted.error["code"], halted.error["effect_id"]) == (
        "suspended",
        "effect_outcome_unknown",
        effect.effect_id,
    )
    assert client.get_run("pay-6").error["code"] == "effect_outcome_unknown"
    assert refunds_made(refund_log) == []  # not blindly retried

    with in_tenant(server.tenant):
        EffectStore(server.tenant, Actor.for_user(admin_a)).settle(
            effect_id=effect.effect_id, outcome="committed", reason="The bank shows the refund."
        )
    done = _resume(server, "pay-6")
    assert (done.status, done.replayed, done.executed) == ("succeeded", [CALL], [])
    assert done.final_output == (
        f"Outcome: issue_refund already completed (effect {effect.effect_id})."
    )
    assert refunds_made(refund_log) == []


def test_the_gate_waits_for_a_decision_made_while_it_long_polls(server, client, refund_log):
    def decide() -> None:
        with StateroomClient(server.url, server.operator_token) as operator:
            for _ in range(200):
                with contextlib.suppress(NotFound):  # not created yet
                    if client.get_run("pay-7").status == "waiting_approval":
                        break
                time.sleep(0.1)
            time.sleep(0.5)
            operator.decide_approval(f"pay-7:{CALL}", decision="approve", reason="go")

    async def run() -> GateOutcome:
        aclient, gate = _gate(server)
        async with aclient:
            return await gate.run(REFUND, run_id="pay-7", decision_timeout=20)

    decider = threading.Thread(target=decide)
    decider.start()
    outcome = run_in_loop(run)
    decider.join()
    assert (outcome.status, outcome.final_output, outcome.executed) == ("succeeded", DONE, [CALL])
    assert refunds_made(refund_log) == ["A-1 1200"]


def run_in_loop(factory):
    return asyncio.run(factory())


def test_two_calls_in_one_turn_are_asked_one_after_the_other(server, client, operator, refund_log):
    agent = Agent(
        name="payments",
        model=ScriptModel(
            [
                [
                    ToolCall("issue_refund", {"order_id": "A-1", "amount_cents": 1200}),
                    ToolCall("issue_refund", {"order_id": "B-2", "amount_cents": 300}),
                ],
                Reply(lambda view: " | ".join(view.outputs)),
            ]
        ),
        tools=[issue_refund],
    )
    first, second = "pay-8:scripted-u1-s0-0", "pay-8:scripted-u1-s0-1"

    async def step(resume: bool) -> GateOutcome:
        async with AsyncStateroomClient(server.url, server.token) as aclient:
            gate = ApprovalGate(aclient, agent, risk_policy=risk)
            if resume:
                return await gate.resume("pay-8", wait=False)
            return await gate.run("Refund both orders", run_id="pay-8", wait=False)

    started = asyncio.run(step(resume=False))
    assert [(a.approval_id, a.status) for a in started.approvals] == [(first, "pending")]
    # A run waits on one approval at a time: the second is asked once the first is decided.
    assert [a.approval_id for a in client.list_approvals(run_id="pay-8")] == [first]

    operator.decide_approval(first, decision="approve", reason="ok")
    waiting = asyncio.run(step(resume=True))
    assert [(a.approval_id, a.status) for a in waiting.approvals] == [
        (first, "approved"),
        (second, "pending"),
    ]
    assert (second, "low") in [(a.approval_id, a.risk) for a in client.list_approvals()]
    assert refunds_made(refund_log) == []  # nothing runs until every call is decided

    operator.decide_approval(second, decision="reject", reason="Already refunded")
    done = asyncio.run(step(resume=True))
    assert (done.status, done.final_output) == (
        "succeeded",
        "Refunded 1200 cents on order A-1. | Already refunded",
    )
    assert done.executed == ["scripted-u1-s0-0"]
    assert refunds_made(refund_log) == ["A-1 1200"]


def test_an_edit_is_refused_when_the_gate_did_not_declare_it(server, client, operator, refund_log):
    """A gate built to honour approve/reject only: the server refuses an edit it could not run."""
    _start(server, "pay-9", allowed_decisions=("approve", "reject"))
    approval_id = f"pay-9:{CALL}"
    assert operator.get_approval(approval_id).allowed_decisions == ("approve", "reject")
    with pytest.raises(ValidationError) as refused:
        operator.decide_approval(
            approval_id,
            decision="edit",
            reason="Half is fair",
            approved_arguments={"order_id": "A-1", "amount_cents": 600},
        )
    assert refused.value.code == "decision_not_allowed"
    assert operator.get_approval(approval_id).status == "pending"
    assert refunds_made(refund_log) == []


def test_the_gate_declares_every_decision_it_honours(server, client):
    _start(server, "pay-11")
    assert client.get_approval(f"pay-11:{CALL}").allowed_decisions == (
        "approve",
        "edit",
        "reject",
        "respond",
    )
    with pytest.raises(ValueError):
        _gate(server, allowed_decisions=("approve", "ignore"))


def _recording_agent(views: list) -> Agent:
    """The payments agent, whose model keeps every conversation it is sent."""

    def script(view):
        views.append(view.items)
        return [
            ToolCall("issue_refund", {"order_id": "A-1", "amount_cents": 1200}),
            Reply(lambda v: f"Outcome: {v.last_output}"),
        ]

    return Agent(name="payments", model=ScriptModel(script), tools=[issue_refund])


def test_an_edited_call_runs_once_with_the_approved_arguments_and_the_model_sees_it(
    worker, server, client, operator, refund_log, support_a
):
    code, started = worker("start", REFUND, "--run-id", "pay-12", "--session-id", "chat-12")
    assert (code, started["status"]) == (0, "waiting_approval")
    approval_id = f"pay-12:{CALL}"
    edited = {"order_id": "A-1", "amount_cents": 600}
    operator.decide_approval(
        approval_id, decision="edit", reason="Half is fair", approved_arguments=edited
    )

    views: list = []

    async def resume() -> GateOutcome:
        async with AsyncStateroomClient(server.url, server.token) as aclient:
            gate = ApprovalGate(aclient, _recording_agent(views), risk_policy=risk)
            return await gate.resume("pay-12")

    outcome = asyncio.run(resume())  # another process than the one that asked
    assert (outcome.status, outcome.final_output, outcome.executed) == (
        "succeeded",
        "Outcome: Refunded 600 cents on order A-1.",
        [CALL],
    )
    assert refunds_made(refund_log) == ["A-1 600"]  # once, with the approved arguments
    # The model's next turn saw the edited call and its result, not the asked call.
    *_, last = views
    call = next(i for i in last if i.get("type") == "function_call")
    output = next(i for i in last if i.get("type") == "function_call_output")
    assert (call["call_id"], json.loads(call["arguments"])) == (CALL, edited)
    assert (output["call_id"], output["output"]) == (CALL, "Refunded 600 cents on order A-1.")

    [effect] = client.list_run_effects("pay-12")
    assert (effect.status, effect.request) == ("committed", {"arguments": edited})
    decided = [e.payload for e in client.iter_events("pay-12") if e.type == "approval.decided"]
    assert decided == [
        {
            "approval_id": approval_id,
            "call_id": CALL,
            "status": "approved",
            "decision": "edit",
            "decided_by": "token:ops",
            "reason": "Half is fair",
            "asked": {
                "tool_name": "issue_refund",
                "arguments": {"order_id": "A-1", "amount_cents": 1200},
            },
            "approved": {"tool_name": "issue_refund", "arguments": edited},
        }
    ]

    # The console shows asked vs approved: on the approval page and in the run inspector.
    console = login(support_a)
    changed = '<span class="mono">amount_cents</span> <del>1200</del> → <ins>600</ins>'
    slug = server.tenant.slug
    approval_page = console.get(f"/t/{slug}/approvals/{approval_id}/").content.decode()
    assert 'data-decision="edit"' in approval_page and changed in approval_page
    run_page = console.get(f"/t/{slug}/runs/pay-12/").content.decode()
    edited_block = run_page[run_page.index('data-testid="approval-edited"') :]
    assert changed in edited_block.split("</div>")[0]
    assert (
        '<span class="nt">"asked"</span>' in run_page
    )  # the approval.decided event, asked and approved

    # Resumed again after the end, or replayed after a crash: never a second refund.
    again = _resume(server, "pay-12")
    assert (again.status, again.executed) == ("succeeded", [])
    assert refunds_made(refund_log) == ["A-1 600"]


def test_after_an_edit_the_session_holds_the_call_that_ran_and_later_turns_see_it(
    server, client, operator, refund_log
):
    """The stored call is the approved one; the asked one is kept on the `sdk.edit` tombstone."""
    approval_id = f"pay-15:{CALL}"
    edited = {"order_id": "A-1", "amount_cents": 600}
    asked = {"order_id": "A-1", "amount_cents": 1200}
    seen: list = []

    async def scenario() -> GateOutcome:
        async with AsyncStateroomClient(server.url, server.token) as aclient:
            session = await StateroomSession.create(aclient, user_id="u-1", session_id="chat-15")
            gate = ApprovalGate(aclient, build_agent(), risk_policy=risk)
            waiting = await gate.run(REFUND, run_id="pay-15", session=session, wait=False)
            assert waiting.status == "waiting_approval"
            operator.decide_approval(
                approval_id, decision="edit", reason="Half is fair", approved_arguments=edited
            )
            done = await ApprovalGate(aclient, build_agent(), risk_policy=risk).resume("pay-15")
            # The next turn, a plain Runner.run on the same conversation.
            chat = Agent(name="chat", model=ScriptModel(lambda v: seen.append(v.items) or []))
            await Runner.run(chat, "Thanks!", session=session, run_config=NO_TRACE)
            # Recording it again (a resume after a crash) finds it recorded: nothing written.
            again = await session.replace_call(
                CALL, edited, note={}, run_id="pay-15", worker=None, idempotency_key="edit:again"
            )
            assert again is None
            return done

    outcome = asyncio.run(scenario())
    assert (outcome.status, outcome.final_output) == (
        "succeeded",
        "Outcome: Refunded 600 cents on order A-1.",
    )
    [history] = seen
    calls = [i for i in history if i.get("type") == "function_call"]
    assert [(c["call_id"], json.loads(c["arguments"])) for c in calls] == [(CALL, edited)]
    outputs = [i["output"] for i in history if i.get("type") == "function_call_output"]
    assert outputs == ["Refunded 600 cents on order A-1."]

    stored = list(client.iter_items("chat-15"))
    [tombstone] = [row for row in stored if row.item_type == "sdk.edit"]
    [original] = [row for row in stored if row.seq == tombstone.payload["seq"]]
    assert json.loads(original.payload["arguments"]) == asked  # append-only: still there
    assert tombstone.payload == {
        "seq": original.seq,
        "call_id": CALL,
        "asked_arguments": asked,
        "approved_arguments": edited,
        "approval_id": approval_id,
        "decided_by": "token:ops",
        "reason": "Half is fair",
    }
    assert tombstone.run_id == "pay-15"
    # Resumed again after the end: nothing more is written.
    assert _resume(server, "pay-15").status == "succeeded"
    assert len(list(client.iter_items("chat-15"))) == len(stored)


def test_an_edit_survives_a_crash_after_the_commit(worker, server, client, operator, refund_log):
    _start(server, "pay-13")
    edited = {"order_id": "A-1", "amount_cents": 700}
    operator.decide_approval(
        f"pay-13:{CALL}", decision="edit", reason="Less", approved_arguments=edited
    )
    code, crashed = worker("resume", "--run-id", "pay-13", "--crash-after-commit")
    assert (code, crashed) == (-9, None)
    assert _resume(server, "pay-13").status == "claimed"  # until the dead worker's lease ends
    _lease_passes(server, "pay-13")
    resumed = _resume(server, "pay-13")
    assert (resumed.status, resumed.executed, resumed.replayed) == ("succeeded", [], [CALL])
    assert resumed.final_output == "Outcome: Refunded 700 cents on order A-1."
    assert refunds_made(refund_log) == ["A-1 700"]
    [effect] = client.list_run_effects("pay-13")
    assert effect.request == {"arguments": edited}


def test_a_response_is_the_tools_result_and_the_tool_does_not_run(
    server, client, operator, refund_log
):
    _start(server, "pay-14", on_rejection="stop")  # a response is an answer, not a rejection
    answer = "Refund queued for manual review; tell the customer 3-5 days."
    operator.decide_approval(
        f"pay-14:{CALL}", decision="respond", reason="Manual path", response=answer
    )
    outcome = _resume(server, "pay-14", on_rejection="stop")
    assert (outcome.status, outcome.final_output, outcome.executed) == (
        "succeeded",
        f"Outcome: {answer}",
        [],
    )
    assert refunds_made(refund_log) == []
    assert client.list_run_effects("pay-14").results == []
    [decided] = [e.payload for e in client.iter_events("pay-14") if e.type == "approval.decided"]
    assert (decided["decision"], decided["status"], decided["response"]) == (
        "respond",
        "responded",
        answer,
    )
    assert "approved" not in decided
    assert client.get_approval(f"pay-14:{CALL}").outcome == ""  # nothing ran: no outcome


def test_an_edit_the_tool_cannot_take_is_refused_before_anything_runs(
    server, client, operator, refund_log
):
    """The gate sends the tool's schema, so the edit the SDK would refuse never reaches it.

    (Before the schema, the SDK told the model to retry and the run read
    succeeded; a tool that fails after approval is the next test.)
    """
    _start(server, "pay-30")
    approval_id = f"pay-30:{CALL}"
    with pytest.raises(ValidationError) as refused:
        operator.decide_approval(
            approval_id,
            decision="edit",
            reason="Make it lots",
            approved_arguments={"amount_cents": "lots", "foo": 1},
        )
    assert refused.value.status == 422
    assert client.get_approval(approval_id).status == "pending"
    assert refunds_made(refund_log) == []


def test_an_approved_call_whose_tool_raises_fails_the_run_and_the_approval_says_so(
    server, client, operator, refund_log
):
    @idempotent_tool(needs_approval=True, name_override="issue_refund")
    def refund_down(order_id: str, amount_cents: int) -> str:
        """Refund part of an order (the card network is down)."""
        raise RuntimeError(f"card network down for {order_id}")

    def agent() -> Agent:
        return Agent(
            name="payments",
            model=ScriptModel(
                lambda view: [
                    ToolCall("issue_refund", {"order_id": "A-1", "amount_cents": 1200}),
                    Reply(lambda v: f"Outcome: {v.last_output}"),
                ]
            ),
            tools=[refund_down],
        )

    async def scenario() -> tuple[GateOutcome, GateOutcome]:
        async with AsyncStateroomClient(server.url, server.token) as aclient:
            started = await ApprovalGate(aclient, agent(), risk_policy=risk).run(
                REFUND, run_id="pay-31", wait=False
            )
            operator.decide_approval(f"pay-31:{CALL}", decision="approve", reason="Eligible")
            resumed = await ApprovalGate(aclient, agent(), risk_policy=risk).resume("pay-31")
            return started, resumed

    started, outcome = asyncio.run(scenario())
    assert started.status == "waiting_approval"
    assert (outcome.status, outcome.error["code"]) == ("failed", "tool_failed")
    assert outcome.error["message"] == (
        "The approved call of issue_refund failed: card network down for A-1"
    )
    # The model got the SDK's error string and answered with it: the run is failed all the same.
    assert outcome.final_output.startswith("Outcome: An error occurred while running the tool")
    assert client.get_run("pay-31").status == "failed"
    approval = client.get_approval(f"pay-31:{CALL}")
    assert (approval.status, approval.outcome, approval.outcome_error) == (
        "approved",
        "failed",
        {"message": "card network down for A-1", "type": "RuntimeError"},
    )
    [effect] = client.list_run_effects("pay-31")
    assert (effect.status, effect.error["message"]) == ("failed", "card network down for A-1")


def test_an_approved_call_that_ran_is_reported_succeeded(server, client, operator, refund_log):
    _start(server, "pay-32")
    operator.decide_approval(f"pay-32:{CALL}", decision="approve", reason="Eligible")
    assert _resume(server, "pay-32").status == "succeeded"
    approval = client.get_approval(f"pay-32:{CALL}")
    assert (approval.outcome, approval.outcome_error) == ("succeeded", None)


def test_the_session_forgets_the_gates_run_when_the_run_ends(server, client, operator, refund_log):
    """Items a later plain Runner.run adds are not recorded under the finished run."""

    async def scenario() -> tuple[list[str | None], list[str | None]]:
        async with AsyncStateroomClient(server.url, server.token) as aclient:
            session = await StateroomSession.create(aclient, user_id="u-1", session_id="chat-9")
            gate = ApprovalGate(aclient, build_agent(), risk_policy=risk)
            waiting = await gate.run(REFUND, run_id="pay-9", session=session, wait=False)
            after_pause = session.run_id
            operator.decide_approval(f"pay-9:{CALL}", decision="approve", reason="ok")
            done = await gate.resume("pay-9")
            assert (waiting.status, done.status) == ("waiting_approval", "succeeded")
            chat = Agent(name="chat", model=ScriptModel([Reply("You're welcome.")]))
            succeeded = await ApprovalGate(aclient, chat).run(
                "Thanks!", run_id="chat-10", session=session
            )
            assert succeeded.status == "succeeded"
            after_end = session.run_id
            await Runner.run(chat, "Bye!", session=session, run_config=NO_TRACE)
            items = [i async for i in aclient.iter_items("chat-9")]
            return [after_pause, after_end], [i.run_id for i in items]

    run_ids, item_runs = asyncio.run(scenario())
    assert run_ids == [None, None]
    assert item_runs == ["pay-9"] * 4 + ["chat-10"] * 2 + ["", ""]  # "": no run


def test_a_turn_with_two_600_kb_tool_outputs_is_stored_whole_and_the_run_succeeds(server, client):
    """Each output is under the 1 MiB body limit, both together are not: the session's
    appends split by bytes, so the turn is stored whole instead of failing the run."""

    @function_tool
    def dump_log(part: str) -> str:
        """Dump one part of the log.

        Args:
            part: Which part.
        """
        return part * (600 * 1024)

    agent = Agent(
        name="reports",
        model=ScriptModel(
            [
                [ToolCall("dump_log", {"part": "a"}), ToolCall("dump_log", {"part": "b"})],
                Reply("Sent."),
            ]
        ),
        tools=[dump_log],
    )

    async def scenario() -> GateOutcome:
        async with AsyncStateroomClient(server.url, server.token) as aclient:
            session = await StateroomSession.create(aclient, user_id="u-1", session_id="logs")
            return await ApprovalGate(aclient, agent).run(
                "Dump the log", run_id="log-1", session=session
            )

    outcome = asyncio.run(scenario())
    assert (outcome.status, outcome.final_output) == ("succeeded", "Sent.")
    stored = list(client.iter_items("logs"))
    assert [row.item_type for row in stored] == [
        "openai.message",
        "openai.function_call",
        "openai.function_call",
        "openai.function_call_output",
        "openai.function_call_output",
        "openai.message",
    ]
    assert [len(row.payload["output"]) for row in stored[3:5]] == [600 * 1024] * 2
    assert {row.run_id for row in stored} == {"log-1"}


def test_a_tool_output_over_the_size_limit_ends_the_run_failed_with_the_reason(
    server, client, refund_log
):
    """Never left `running`: the run fails with `payload_too_large`; the effect is not redone."""
    calls: list[str] = []

    @idempotent_tool
    def export_report(order_id: str) -> str:
        """Export the order's full report.

        Args:
            order_id: The order.
        """
        calls.append(order_id)
        return "x" * (1536 * 1024)  # 1.5 MB: over the default 1 MiB body limit

    @function_tool
    def dump_log(order_id: str) -> str:
        """Dump the order's log.

        Args:
            order_id: The order.
        """
        return "y" * (1536 * 1024)

    def agent(tool_name: str) -> Agent:
        return Agent(
            name="reports",
            model=ScriptModel([ToolCall(tool_name, {"order_id": "A-1"}), Reply("Sent.")]),
            tools=[export_report, dump_log],
        )

    async def scenario(tool_name: str, run_id: str) -> tuple[GateOutcome, GateOutcome]:
        async with AsyncStateroomClient(server.url, server.token) as aclient:
            session = await StateroomSession.create(aclient, user_id="u-1", session_id=run_id)
            gate = ApprovalGate(aclient, agent(tool_name))
            first = await gate.run("Send me the report", run_id=run_id, session=session)
            again = await gate.resume(run_id)
            return first, again

    for tool_name, run_id in (("export_report", "rep-1"), ("dump_log", "rep-2")):
        first, again = asyncio.run(scenario(tool_name, run_id))
        assert first.status == again.status == "failed"
        assert first.error["code"] == "payload_too_large"
        assert first.error["limit_bytes"] == 1024 * 1024
        run = client.get_run(run_id)
        assert (run.status, run.error["code"]) == ("failed", "payload_too_large")
        assert client.get_task(f"{run_id}.task").status == "failed"
        assert client.get_session(run_id).attached_run_ids == []
        assert [e.type for e in client.iter_events(run_id)][-1] == "agent.ended"

    assert calls == ["A-1"]  # the ledgered tool ran once, resume or not
    [effect] = client.list_run_effects("rep-1")
    assert effect.status == "committed"
    assert effect.result == {"output_too_large": {"limit_bytes": 1024 * 1024}}
