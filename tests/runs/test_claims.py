"""A run's claim fences every runtime write; people's changes pass it and drop it."""

from datetime import timedelta

import pytest

from actions_app.runs import RunActions
from approvals_app.store import ApprovalStore
from stateroom.actor import Actor
from stateroom.errors import Conflict
from tenancy_app.scoping import in_tenant

from .conftest import make_run, reload, run_store


def _claimed(tenant, clock, run_id: str = "r-1", worker: str = "w1", lease: int = 60):
    make_run(tenant, "running", run_id=run_id)
    with in_tenant(tenant):
        return run_store(tenant, clock=clock).claim(
            run_id=run_id, worker=worker, expected_version=2, lease_seconds=lease
        )


def _refused(write) -> Conflict:
    with pytest.raises(Conflict) as refused:
        write()
    return refused.value


def test_a_live_claim_refuses_writes_without_its_worker(tenant_a, clock):
    claimed = _claimed(tenant_a, clock)
    before = reload(tenant_a, "r-1")
    with in_tenant(tenant_a):
        store = run_store(tenant_a, clock=clock)
        refusals = [
            _refused(
                lambda worker=worker: store.compare_and_set(
                    run_id="r-1", expected_version=3, changes={"token_used": 5}, worker=worker
                )
            )
            for worker in (None, "w2")
        ] + [
            _refused(
                lambda worker=worker: store.append_events(
                    run_id="r-1", events=[{"type": "t", "payload": 1}], worker=worker
                )
            )
            for worker in (None, "w2")
        ]
    assert [r.code for r in refusals] == ["run_claimed"] * 4
    assert {r.details["claimed_by"] for r in refusals} == {"w1"}
    assert refusals[0].details == {
        "claimed_by": "w1",
        "claim_until": claimed.claim_until.isoformat(),
        "current_version": 3,
    }
    assert reload(tenant_a, "r-1") == before  # nothing written, no event numbered
    with in_tenant(tenant_a):
        store = run_store(tenant_a, clock=clock)
        events = store.append_events(
            run_id="r-1", events=[{"type": "t", "payload": 1}], worker="w1"
        )
        run = store.compare_and_set(
            run_id="r-1", expected_version=3, changes={"token_used": 5}, worker="w1"
        )
    assert ([e.seq for e in events], run.version, run.token_used) == ([1], 4, 5)


def test_once_the_lease_passes_anyone_may_write_again(tenant_a, clock):
    _claimed(tenant_a, clock, lease=10)
    clock.advance(10)
    with in_tenant(tenant_a):
        store = run_store(tenant_a, clock=clock)
        store.append_events(run_id="r-1", events=[{"type": "t", "payload": None}])
        run = store.compare_and_set(run_id="r-1", expected_version=3, changes={"token_used": 1})
    assert run.version == 4


@pytest.mark.parametrize("status", ["waiting_approval", "suspended", "succeeded", "failed"])
def test_a_run_that_waits_or_ends_is_held_by_nobody(tenant_a, clock, status):
    _claimed(tenant_a, clock)
    with in_tenant(tenant_a):
        run = run_store(tenant_a, clock=clock).compare_and_set(
            run_id="r-1", expected_version=3, changes={"status": status}, worker="w1"
        )
    assert (run.status, run.claimed_by, run.claim_until) == (status, "", None)
    if status in ("waiting_approval", "suspended"):  # whoever continues it claims it afresh
        with in_tenant(tenant_a):
            other = run_store(tenant_a, clock=clock).claim(
                run_id="r-1", worker="w2", expected_version=4
            )
        assert other.claimed_by == "w2"


@pytest.mark.parametrize("action", ["cancel", "suspend"])
def test_people_act_whatever_the_claim_and_take_the_run_from_its_worker(
    tenant_a, clock, admin_a, action
):
    _claimed(tenant_a, clock)
    with in_tenant(tenant_a):
        actions = RunActions(tenant_a, Actor.for_user(admin_a), clock=clock)
        run = actions.control(action=action, run_id="r-1", reason="stop", expected_version=3)
        assert (run.claimed_by, run.claim_until) == ("", None)
        if action == "suspend":
            resumed = actions.resume(run_id="r-1", reason="go on", expected_version=4)
            assert (resumed.status, resumed.claimed_by) == ("running", "")


def test_an_approval_request_needs_the_worker_and_a_decision_does_not(tenant_a, clock, operator_a):
    _claimed(tenant_a, clock)
    with in_tenant(tenant_a):
        approvals = ApprovalStore(tenant_a, Actor.system("runtime"), clock=clock)
        ask = dict(run_id="r-1", expected_version=3, tool_name="refund", arguments={}, risk="low")
        refused = _refused(lambda: approvals.request(**ask, approval_id="a-1"))
        assert refused.code == "run_claimed"
        assert ApprovalStore(tenant_a, Actor.system("t")).list_approvals().count() == 0
        approval = approvals.request(**ask, approval_id="a-1", worker="w1")
        assert reload(tenant_a, "r-1")["claimed_by"] == ""  # waiting: held by nobody
        # A worker claims the waiting run; the operator's decision is no runtime write.
        run_store(tenant_a, clock=clock).claim(run_id="r-1", worker="w2", expected_version=4)
        ApprovalStore(tenant_a, Actor.for_user(operator_a), clock=clock).decide(
            approval_id=approval.approval_id, decision="approve", reason="fine"
        )
    row = reload(tenant_a, "r-1")
    assert (row["status"], row["version"], row["claimed_by"]) == ("running", 6, "w2")


def test_success_clears_the_error_unless_one_is_given(tenant_a):
    make_run(tenant_a, "running", run_id="r-1")
    make_run(tenant_a, "running", run_id="r-2")
    with in_tenant(tenant_a):
        store = run_store(tenant_a)
        unknown = {"code": "effect_outcome_unknown", "message": "settle it"}
        store.compare_and_set(
            run_id="r-1", expected_version=2, changes={"status": "suspended", "error": unknown}
        )
        store.compare_and_set(run_id="r-1", expected_version=3, changes={"status": "running"})
        assert reload(tenant_a, "r-1")["error"] == unknown  # still being recovered
        done = store.compare_and_set(
            run_id="r-1", expected_version=4, changes={"status": "succeeded"}
        )
        kept = store.compare_and_set(
            run_id="r-2",
            expected_version=2,
            changes={"status": "succeeded", "error": {"code": "warning"}},
        )
        history = store.transitions("r-1").last()
    assert (done.status, done.error, reload(tenant_a, "r-1")["error"]) == ("succeeded", None, None)
    assert kept.error == {"code": "warning"}
    assert history.changes == {"status": "succeeded", "pending_approval_id": ""}


def test_claims_and_renewals_keep_their_lease(tenant_a, clock):
    claimed = _claimed(tenant_a, clock, lease=30)
    clock.advance(20)
    with in_tenant(tenant_a):
        renewed = run_store(tenant_a, clock=clock).claim(
            run_id="r-1", worker="w1", expected_version=claimed.version, lease_seconds=30
        )
    assert renewed.claim_until == clock.current + timedelta(seconds=30)
    assert renewed.version == claimed.version + 1
