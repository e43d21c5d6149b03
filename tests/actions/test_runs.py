"""RunActions: a run that ends withdraws its pending approval, in the transaction that ends it."""

import pytest
from django.db import transaction

from actions_app.runs import RunActions
from actions_app.tasks import sweep_overdue_runs
from approvals_app.models import ApprovalRequest
from audit_app.models import AuditEvent
from runs_app.models import Run
from stateroom.actor import Actor
from stateroom.errors import Conflict
from tenancy_app.scoping import in_tenant

from ..approvals.conftest import approval_store, make_approval, reload_approval
from ..runs.conftest import in_threads, reload


def audit(tenant, action: str) -> list[tuple[str, str, str]]:
    with in_tenant(tenant):
        return list(
            AuditEvent.objects.filter(tenant=tenant, action=action)
            .order_by("seq")
            .values_list("target_id", "actor_label", "reason")
        )


@pytest.mark.parametrize("how", ["cancel", "cas_failed", "deadline"])
def test_a_run_that_ends_withdraws_its_pending_approval(tenant_a, admin_a, clock, how):
    make_approval(tenant_a, approval_id="apr-1", clock=clock)
    with in_tenant(tenant_a):
        if how == "cancel":
            RunActions(tenant_a, Actor.for_user(admin_a)).cancel(run_id="run-1", reason="stop")
        elif how == "cas_failed":
            RunActions(tenant_a, Actor.system("test")).compare_and_set(
                run_id="run-1", expected_version=3, changes={"status": "failed"}
            )
        else:
            Run.objects.filter(run_id="run-1").update(deadline_at=clock.current)
            clock.advance(1)
            assert RunActions(tenant_a, Actor.system("sweep"), clock=clock).fail_overdue() == 1
    approval = reload_approval(tenant_a, "apr-1")
    run = reload(tenant_a, "run-1")
    assert approval["status"] == "cancelled"
    assert run["pending_approval_id"] == ""
    assert (
        run["status"] == {"cancel": "cancelled", "cas_failed": "failed", "deadline": "failed"}[how]
    )
    expected = {
        "cancel": (admin_a.username, "stop"),
        "cas_failed": ("test", "run failed"),
        "deadline": ("sweep", "run passed its deadline"),
    }[how]
    assert audit(tenant_a, "approval.cancelled") == [("apr-1", *expected)]
    assert (approval["decided_by"], approval["decision_reason"]) == expected


def test_the_run_and_its_approval_change_in_one_transaction(tenant_a, admin_a):
    make_approval(tenant_a, approval_id="apr-1")
    run_before, approval_before = reload(tenant_a, "run-1"), reload_approval(tenant_a, "apr-1")

    class Abandoned(Exception):
        pass

    with pytest.raises(Abandoned), in_tenant(tenant_a):
        RunActions(tenant_a, Actor.for_user(admin_a)).cancel(run_id="run-1", reason="stop")
        assert ApprovalRequest.objects.get(approval_id="apr-1").status == "cancelled"
        raise Abandoned  # the caller's transaction rolls back: both changes go

    assert reload(tenant_a, "run-1") == run_before
    assert reload_approval(tenant_a, "apr-1") == approval_before
    assert audit(tenant_a, "run.cancelled") == audit(tenant_a, "approval.cancelled") == []


def test_a_refused_transition_writes_nothing_and_keeps_the_transaction_usable(tenant_a):
    make_approval(tenant_a, approval_id="apr-1")
    run_before, approval_before = reload(tenant_a, "run-1"), reload_approval(tenant_a, "apr-1")
    with in_tenant(tenant_a):
        actions = RunActions(tenant_a, Actor.system("test"))
        with pytest.raises(Conflict) as exc:
            actions.compare_and_set(
                run_id="run-1", expected_version=2, changes={"status": "failed"}
            )
        assert (exc.value.code, exc.value.details["current_version"]) == ("version_conflict", 3)
        # No savepoint, and still no broken transaction: the next statement runs.
        assert transaction.get_connection().needs_rollback is False
        assert actions.runs.get("run-1").status == "waiting_approval"
    assert reload(tenant_a, "run-1") == run_before
    assert reload_approval(tenant_a, "apr-1") == approval_before


def test_a_transition_that_does_not_end_the_run_leaves_the_approval(tenant_a):
    make_approval(tenant_a, approval_id="apr-1")
    with in_tenant(tenant_a):
        run = RunActions(tenant_a, Actor.system("test")).compare_and_set(
            run_id="run-1", expected_version=3, changes={"turn_index": 4}
        )
    assert (run.status, run.version, run.pending_approval_id) == ("waiting_approval", 4, "apr-1")
    assert reload_approval(tenant_a, "apr-1")["status"] == "pending"
    assert audit(tenant_a, "approval.cancelled") == []


def test_api_transition_to_an_end_withdraws_the_approval(tenant_a, api_a, api_b):
    make_approval(tenant_a, approval_id="apr-1")
    url = "/api/v1/runs/run-1/transition"
    body = {"expected_version": 3, "status": "cancelled"}

    other = api_b.post(url, body, content_type="application/json")
    assert (other.status_code, other.json()["error"]["code"]) == (404, "not_found")
    assert reload_approval(tenant_a, "apr-1")["status"] == "pending"

    response = api_a.post(url, body, content_type="application/json")
    assert response.status_code == 200
    assert {k: response.json()[k] for k in ("status", "version", "pending_approval_id")} == {
        "status": "cancelled",
        "version": 4,
        "pending_approval_id": None,
    }
    assert reload_approval(tenant_a, "apr-1")["status"] == "cancelled"
    # The runtime token's reason is in the event's detached payload, not on the event.
    assert audit(tenant_a, "approval.cancelled") == [("apr-1", "token:worker", "")]

    stale = api_a.post(url, body, content_type="application/json")
    assert (stale.status_code, stale.json()["error"]["code"]) == (409, "invalid_transition")
    assert len(audit(tenant_a, "approval.cancelled")) == 1


def test_deadline_sweep_withdraws_the_approvals_of_the_runs_it_fails(tenant_a):
    make_approval(tenant_a, approval_id="apr-1")
    with in_tenant(tenant_a):
        Run.objects.filter(run_id="run-1").update(deadline_at="2000-01-01T00:00:00Z")
    assert sweep_overdue_runs.delay().get() == {"done": {"acme": 1}, "errors": {}, "total": 1}
    assert reload(tenant_a, "run-1")["status"] == "failed"
    assert reload_approval(tenant_a, "apr-1")["status"] == "cancelled"
    assert audit(tenant_a, "approval.cancelled") == [("apr-1", "sweep", "run passed its deadline")]


@pytest.mark.django_db(transaction=True)
def test_cancel_racing_a_decision_never_leaves_a_pending_approval_on_an_ended_run(
    tenant_a, admin_a, operator_a
):
    for round_ in range(6):
        run_id, approval_id = f"run-{round_}", f"apr-{round_}"
        make_approval(tenant_a, run_id=run_id, approval_id=approval_id)

        def work(i, barrier, run_id=run_id, approval_id=approval_id):
            barrier.wait()
            try:
                with in_tenant(tenant_a):
                    if i == 0:
                        RunActions(tenant_a, Actor.for_user(admin_a)).cancel(
                            run_id=run_id, reason="stop"
                        )
                    else:
                        approval_store(tenant_a, Actor.for_user(operator_a)).decide(
                            approval_id=approval_id, decision="approve"
                        )
                return "done"
            except Conflict as exc:
                return exc.code

        cancelled, decided = in_threads(2, work)
        assert cancelled == "done"  # a cancel stops the run whatever its version
        run, approval = reload(tenant_a, run_id), reload_approval(tenant_a, approval_id)
        assert (run["status"], run["pending_approval_id"]) == ("cancelled", "")
        if decided == "done":  # the decision came first: approved, then the run was cancelled
            assert approval["status"] == "approved"
            assert (run["version"], run["previous_status"]) == (5, "running")
        else:  # the cancel came first and withdrew the approval: the decision is refused
            assert decided == "already_decided"
            assert approval["status"] == "cancelled"
            assert (run["version"], run["previous_status"]) == (4, "waiting_approval")
    with in_tenant(tenant_a):
        pending = ApprovalRequest.objects.filter(tenant=tenant_a, status="pending").count()
        events = AuditEvent.objects.filter(tenant=tenant_a, action__startswith="approval.")
        per_approval = {}
        for target, action in events.order_by("seq").values_list("target_id", "action"):
            per_approval.setdefault(target, []).append(action)
    assert pending == 0
    # Each approval asked, then exactly one ending: approved or withdrawn, never both.
    assert all(
        actions[0] == "approval.requested"
        and len(actions) == 2
        and actions[1] in {"approval.approved", "approval.cancelled"}
        for actions in per_approval.values()
    )
    assert len(per_approval) == 6
