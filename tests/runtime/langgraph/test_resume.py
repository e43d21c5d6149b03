"""A LangGraph graph whose interrupt is an approval, resumed by new processes, killed and resumed.

The runtime runs in separate processes (`tests.runtime.langgraph.worker`): a resume
has nothing but what Stateroom stored (the thread's checkpoints and pending
writes, the approval, the effect ledger). The refund writes a line to a file
each time it really runs, which is how these tests count executions.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from runs_app.models import Run
from tenancy_app.scoping import in_tenant

from .refunds import refunds_made


def _lease_passes(server, run_id: str) -> None:
    """The claim's lease ends (the test moves the lease, not time)."""
    with in_tenant(server.tenant):
        Run.objects.filter(tenant=server.tenant, run_id=run_id).update(
            claim_until=timezone.now() - timedelta(seconds=1)
        )


def test_edited_refund_runs_once_in_a_new_process_and_a_kill_after_commit_does_not_repeat_it(
    worker, server, client, operator, refund_log
):
    code, started = worker(
        "start", "--run-id", "refund-1", "--thread-id", "order-A-1", "--order", "A-1"
    )
    assert (code, started["status"], started["error"]) == (0, "waiting_approval", None)
    (approval_id,) = started["approvals"]

    pending = client.list_approvals(status="pending").results
    assert [a.approval_id for a in pending] == [approval_id]
    approval = pending[0]
    assert (approval.run_id, approval.tool_name, approval.risk) == (
        "refund-1",
        "issue_refund",
        "high",
    )
    assert approval.arguments == {"order_id": "A-1", "amount_cents": 1200}
    assert approval.allowed_decisions == ("approve", "edit", "reject", "respond")
    assert approval.reason == "Refund 1200 cents on order A-1?"
    run = client.get_run("refund-1")
    assert (run.status, run.pending_approval_id, run.task_id) == (
        "waiting_approval",
        approval_id,
        "order-A-1",
    )
    interrupted = client.list_graph_checkpoints("order-A-1", checkpoint_ns="", limit=1).results[0]
    assert [w["channel"] for w in interrupted["pending_writes"]] == ["__interrupt__"]
    assert refunds_made(refund_log) == []  # nothing happens before the decision

    operator.decide_approval(
        approval_id,
        decision="edit",
        reason="Partial refund agreed with the customer",
        approved_arguments={"order_id": "A-1", "amount_cents": 800},
    )
    code, crashed = worker("resume", "--run-id", "refund-1", "--crash-after-commit")
    assert (code, crashed) == (-9, None)  # SIGKILL right after the refund's effect was committed
    assert refunds_made(refund_log) == ["A-1 800"]  # ran once, with the edited amount
    (effect,) = client.list_run_effects("refund-1").results
    assert (effect.status, effect.tool_name) == ("committed", "issue_refund")
    assert effect.request == {"arguments": {"args": ["A-1", 800], "kwargs": {}}}
    assert client.get_run("refund-1").status == "running"  # the kill left it mid-graph

    # The killed process's claim holds the run until its lease ends.
    code, held = worker("resume", "--run-id", "refund-1")
    assert (code, held["status"], held["executed"]) == (0, "claimed", [])
    _lease_passes(server, "refund-1")
    code, resumed = worker("resume", "--run-id", "refund-1")
    assert code == 0
    assert (resumed["status"], resumed["error"]) == ("succeeded", None)
    assert resumed["values"] == {
        "order_id": "A-1",
        "amount_cents": 800,
        "decision": "approved",
        "outcome": "Refunded 800 cents on order A-1.",
    }
    assert (resumed["executed"], resumed["replayed"]) == ([], [effect.idempotency_key])
    assert refunds_made(refund_log) == ["A-1 800"]  # not repeated
    run = client.get_run("refund-1")
    assert (run.status, run.error, run.pending_approval_id) == ("succeeded", None, "")
    assert len(client.list_run_effects("refund-1").results) == 1
