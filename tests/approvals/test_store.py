import hashlib
import json
from datetime import timedelta

import pytest

from approvals_app.models import ApprovalRequest
from approvals_app.store import call_digest
from audit_app.models import AuditEvent
from stateroom.actor import Actor
from stateroom.errors import Conflict, Forbidden, NotFound, Unprocessable
from tenancy_app.models import RuntimeToken
from tenancy_app.scoping import in_tenant

from ..runs.conftest import make_run, reload, run_store
from .conftest import ARGS, approval_store, make_approval, reload_approval


def token_actor(tenant, make_token, name: str) -> Actor:
    make_token(tenant, name=name)
    with in_tenant(tenant):
        token = RuntimeToken.objects.get(tenant=tenant, name=name)
    return Actor("token", str(token.pk), f"token:{name}")


def audit(tenant, action: str) -> list[AuditEvent]:
    with in_tenant(tenant):
        return list(AuditEvent.objects.filter(tenant=tenant, action=action).order_by("seq"))


def approval_count(tenant) -> int:
    with in_tenant(tenant):
        return ApprovalRequest.objects.filter(tenant=tenant).count()


# --- request ----------------------------------------------------------------------
def test_request_moves_the_run_to_waiting_approval_in_the_same_transaction(tenant_a, make_token):
    actor = token_actor(tenant_a, make_token, "runtime-1")
    approval = make_approval(
        tenant_a, risk="high", reason="refund over limit", actor=actor, approval_id="apr-1"
    )
    run = reload(tenant_a, "run-1")
    canonical = json.dumps(["send_refund", ARGS], sort_keys=True, separators=(",", ":"))
    assert (run["status"], run["pending_approval_id"], run["version"]) == (
        "waiting_approval",
        "apr-1",
        3,
    )
    assert (approval.status, approval.run_version, approval.risk, approval.risk_rank) == (
        "pending",
        3,
        "high",
        3,
    )
    assert approval.call_digest == hashlib.sha256(canonical.encode()).hexdigest()
    assert approval.requested_by_token_id == int(actor.id)
    [event] = audit(tenant_a, "approval.requested")
    # The agent's reason is its text: kept in the event's detached payload, not the log.
    assert (event.actor_type, event.target_id, event.reason) == ("token", "apr-1", "")
    with in_tenant(tenant_a):
        assert event.payload.content == {"reason": "refund over limit"}
    assert event.after == {
        "run_id": "run-1",
        "tool_name": "send_refund",
        "risk": "high",
        "call_digest": approval.call_digest,
        "run_version": 3,
        "allowed_decisions": ["approve", "reject"],
    }
    with in_tenant(tenant_a):
        last = run_store(tenant_a).transitions("run-1").last()
    assert (last.from_status, last.to_status, last.changes) == (
        "running",
        "waiting_approval",
        {"status": "waiting_approval", "pending_approval_id": "apr-1"},
    )


def test_digest_is_independent_of_key_order():
    assert call_digest("t", {"a": 1, "b": [1, {"y": 2, "x": 1}]}) == call_digest(
        "t", {"b": [1, {"x": 1, "y": 2}], "a": 1}
    )
    assert call_digest("t", {"a": 1}) != call_digest("u", {"a": 1})
    assert call_digest("t", {"a": 1}) != call_digest("t", {"a": "1"})


@pytest.mark.parametrize(
    ("status", "kw", "error", "code"),
    [
        ("running", {"risk": "extreme"}, Unprocessable, "validation_error"),
        ("running", {"arguments": ["x"]}, Unprocessable, "validation_error"),
        ("running", {"tool_name": ""}, Unprocessable, "validation_error"),
        ("running", {"approval_id": "bad id"}, Unprocessable, "validation_error"),
        ("running", {"expected_version": 1}, Conflict, "version_conflict"),
        ("created", {}, Conflict, "invalid_transition"),
        ("succeeded", {}, Conflict, "invalid_transition"),
        ("running", {"run_id": "missing"}, NotFound, "not_found"),
    ],
)
def test_refused_request_changes_neither_run_nor_approvals(tenant_a, status, kw, error, code):
    run = make_run(tenant_a, status, run_id="run-1")
    before = reload(tenant_a, "run-1")
    args = {
        "run_id": "run-1",
        "expected_version": run.version,
        "tool_name": "send_refund",
        "arguments": ARGS,
        "risk": "low",
        **kw,
    }
    with in_tenant(tenant_a), pytest.raises(error) as exc:
        approval_store(tenant_a).request(**args)
    assert exc.value.code == code
    assert reload(tenant_a, "run-1") == before
    assert approval_count(tenant_a) == 0
    assert audit(tenant_a, "approval.requested") == []


def test_unknown_risk_lists_the_choices(tenant_a):
    run = make_run(tenant_a, "running", run_id="run-1")
    with in_tenant(tenant_a), pytest.raises(Unprocessable) as exc:
        approval_store(tenant_a).request(
            run_id="run-1", expected_version=run.version, tool_name="t", arguments={}, risk="x"
        )
    assert exc.value.details == {"risk": ["must be one of low, medium, high, critical"]}


def test_expires_at_must_be_in_the_future(tenant_a, clock):
    run = make_run(tenant_a, "running", run_id="run-1")
    with in_tenant(tenant_a), pytest.raises(Unprocessable) as exc:
        approval_store(tenant_a, clock=clock).request(
            run_id="run-1",
            expected_version=run.version,
            tool_name="t",
            arguments={},
            risk="low",
            expires_at=clock.current,
        )
    assert exc.value.details == {"expires_at": ["must be a time in the future, with a time zone"]}


def test_a_run_waits_on_one_approval_at_a_time(tenant_a):
    make_approval(tenant_a, approval_id="apr-1")
    before = reload(tenant_a, "run-1")
    with in_tenant(tenant_a), pytest.raises(Conflict) as exc:
        approval_store(tenant_a).request(
            run_id="run-1", expected_version=3, tool_name="t", arguments={}, risk="low"
        )
    assert exc.value.code == "approval_pending"
    assert exc.value.details == {"pending_approval_id": "apr-1"}
    assert reload(tenant_a, "run-1") == before
    assert approval_count(tenant_a) == 1


def test_approval_ids_are_unique_per_tenant(tenant_a, tenant_b):
    make_approval(tenant_a, approval_id="apr-1")
    make_approval(tenant_b, approval_id="apr-1")  # another tenant may use the same id
    run = make_run(tenant_a, "running", run_id="run-2")
    with in_tenant(tenant_a), pytest.raises(Conflict) as exc:
        approval_store(tenant_a).request(
            run_id="run-2",
            expected_version=run.version,
            tool_name="t",
            arguments={},
            risk="low",
            approval_id="apr-1",
        )
    assert exc.value.code == "approval_exists"
    assert reload(tenant_a, "run-2")["status"] == "running"


# --- decide -----------------------------------------------------------------------
def test_approve_decides_once_and_moves_the_run_back_to_running(tenant_a, operator_a, admin_a):
    make_approval(tenant_a, approval_id="apr-1")
    with in_tenant(tenant_a):
        approval = approval_store(tenant_a, Actor.for_user(operator_a)).decide(
            approval_id="apr-1", decision="approve", reason="looks right"
        )
    decided = reload_approval(tenant_a, "apr-1")
    run = reload(tenant_a, "run-1")
    assert (approval.status, approval.decided_by, approval.decision_reason) == (
        "approved",
        "otto",
        "looks right",
    )
    assert (decided["status"], decided["decided_by_id"], decided["approved_arguments"]) == (
        "approved",
        f"user:{operator_a.pk}",
        None,
    )
    assert (run["status"], run["pending_approval_id"], run["version"]) == ("running", "", 4)
    [event] = audit(tenant_a, "approval.approved")
    assert (event.actor_label, event.target_id, event.reason, event.before, event.after) == (
        "otto",
        "apr-1",
        "",  # the reason is told to the model: content, in the detached payload
        {"status": "pending"},
        {"status": "approved", "decision": "approve", "run_status": "running"},
    )
    with in_tenant(tenant_a):
        assert event.payload.content == {"reason": "looks right"}
    with in_tenant(tenant_a), pytest.raises(Conflict) as again:
        approval_store(tenant_a, Actor.for_user(admin_a)).decide(
            approval_id="apr-1", decision="reject", reason="no"
        )
    assert again.value.code == "already_decided"
    assert again.value.details == {
        "status": "approved",
        "decided_by": "otto",
        "decided_at": decided["decided_at"].isoformat(),
    }
    assert reload_approval(tenant_a, "apr-1") == decided
    assert reload(tenant_a, "run-1") == run
    assert len(audit(tenant_a, "approval.rejected")) == 0


def test_reject_needs_a_reason_and_returns_it_to_the_runtime(tenant_a, operator_a):
    make_approval(tenant_a, approval_id="apr-1")
    pending = reload_approval(tenant_a, "apr-1")
    store = approval_store(tenant_a, Actor.for_user(operator_a))
    with in_tenant(tenant_a):
        with pytest.raises(Unprocessable) as missing:
            store.decide(approval_id="apr-1", decision="reject", reason="  ")
        assert reload_approval(tenant_a, "apr-1") == pending
        approval = store.decide(approval_id="apr-1", decision="reject", reason="wrong account")
    assert missing.value.details == {"reason": ["required"]}
    assert (approval.status, approval.decision_reason) == ("rejected", "wrong account")
    assert reload(tenant_a, "run-1")["status"] == "running"
    [event] = audit(tenant_a, "approval.rejected")
    with in_tenant(tenant_a):
        assert (event.reason, event.payload.content) == ("", {"reason": "wrong account"})


@pytest.mark.parametrize(
    ("risk", "needs_reason"),
    [("low", False), ("medium", False), ("high", True), ("critical", True)],
)
def test_approving_high_and_critical_needs_a_reason(tenant_a, operator_a, risk, needs_reason):
    make_approval(tenant_a, approval_id="apr-1", risk=risk)
    with in_tenant(tenant_a):
        store = approval_store(tenant_a, Actor.for_user(operator_a))
        if needs_reason:
            with pytest.raises(Unprocessable):
                store.decide(approval_id="apr-1", decision="approve")
            assert reload_approval(tenant_a, "apr-1")["status"] == "pending"
        approval = store.decide(approval_id="apr-1", decision="approve", reason="ok")
    assert approval.status == "approved"


def test_approval_may_edit_the_arguments_and_the_audit_shows_the_diff(tenant_a, operator_a):
    make_approval(tenant_a, approval_id="apr-1", allowed_decisions=["edit", "approve", "reject"])
    edited = {"to": "ops@example.com", "amount": 1000, "note": "capped"}
    with in_tenant(tenant_a):
        store = approval_store(tenant_a, Actor.for_user(operator_a))
        assert store.get("apr-1").allowed_decisions == ["approve", "edit", "reject"]
        for decision, arguments in (("reject", edited), ("approve", edited), ("edit", ["x"])):
            with pytest.raises(Unprocessable) as refused:
                store.decide(
                    approval_id="apr-1", decision=decision, reason="x", approved_arguments=arguments
                )
            assert "approved_arguments" in refused.value.details
        with pytest.raises(Unprocessable) as no_arguments:
            store.decide(approval_id="apr-1", decision="edit")
        assert no_arguments.value.details == {
            "approved_arguments": ["required with edit: the arguments to run (an object)"]
        }
        approval = store.decide(approval_id="apr-1", decision="edit", approved_arguments=edited)
    assert (approval.decision, approval.status) == ("edit", "approved")
    assert (approval.arguments, approval.approved_arguments) == (ARGS, edited)
    [event] = audit(tenant_a, "approval.approved")
    # Argument values are content: the diff is in the detached payload, a digest in the event.
    assert "approved_arguments_diff" not in event.after
    assert event.after["approved_arguments_digest"] == call_digest("send_refund", edited)
    with in_tenant(tenant_a):
        assert event.payload.content["approved_arguments_diff"] == {
            "added": {"note": "capped"},
            "removed": ["tags"],
            "changed": {"amount": {"old": 1200, "new": 1000}},
        }


def test_unknown_decision_is_422(tenant_a, operator_a):
    make_approval(tenant_a, approval_id="apr-1")
    with in_tenant(tenant_a), pytest.raises(Unprocessable) as exc:
        approval_store(tenant_a, Actor.for_user(operator_a)).decide(
            approval_id="apr-1", decision="maybe", reason="x"
        )
    assert exc.value.details == {"decision": ["must be one of approve, edit, reject, respond"]}


def test_only_the_decisions_the_runtime_declared_are_taken(tenant_a, operator_a):
    make_approval(tenant_a, approval_id="apr-1", allowed_decisions=["approve", "respond"])
    with in_tenant(tenant_a):
        store = approval_store(tenant_a, Actor.for_user(operator_a))
        for decision, extra in (
            ("reject", {}),
            ("edit", {"approved_arguments": {"amount": 1}}),
        ):
            with pytest.raises(Unprocessable) as refused:
                store.decide(approval_id="apr-1", decision=decision, reason="no", **extra)
            assert refused.value.code == "decision_not_allowed"
            assert refused.value.details["allowed_decisions"] == ["approve", "respond"]
        assert store.get("apr-1").status == "pending"
        with pytest.raises(Unprocessable) as empty:
            store.decide(approval_id="apr-1", decision="respond", response="  ")
        assert empty.value.details == {
            "response": ["required with respond: the text the model gets"]
        }
        answered = store.decide(
            approval_id="apr-1", decision="respond", response="Refunds over 1000 go to finance."
        )
    assert (answered.status, answered.decision, answered.response) == (
        "responded",
        "respond",
        "Refunds over 1000 go to finance.",
    )
    with in_tenant(tenant_a):
        assert run_store(tenant_a).get("run-1").status == "running"
    # Answered instead of run is its own outcome: not an approval, not a rejection.
    assert audit(tenant_a, "approval.rejected") == []
    [event] = audit(tenant_a, "approval.responded")
    assert event.after == {"status": "responded", "decision": "respond", "run_status": "running"}
    assert "Refunds over" not in str(event.after)


def test_allowed_decisions_must_be_a_known_non_empty_set(tenant_a):
    for bad in ([], ["approve", "maybe"], "approve"):
        with pytest.raises(Unprocessable) as refused:
            make_approval(tenant_a, run_id=f"run-{len(str(bad))}", allowed_decisions=bad)
        assert refused.value.details == {
            "allowed_decisions": ["a non-empty subset of approve, edit, reject, respond"]
        }


def test_decision_is_bound_to_the_call_and_the_run_version(tenant_a, operator_a):
    approval = make_approval(tenant_a, approval_id="apr-1")
    store = approval_store(tenant_a, Actor.for_user(operator_a))
    digest = store.digest(approval)
    assert digest == approval.call_digest
    with in_tenant(tenant_a):
        with pytest.raises(Conflict) as wrong_digest:
            store.decide(approval_id="apr-1", decision="approve", expected_digest="0" * 64)
        # The runtime moved the run on while the operator looked at the page.
        run_store(tenant_a).compare_and_set(
            run_id="run-1", expected_version=3, changes={"token_used": 50}
        )
        with pytest.raises(Conflict) as moved:
            store.decide(
                approval_id="apr-1",
                decision="approve",
                expected_digest=digest,
                expected_run_version=3,
            )
        assert reload_approval(tenant_a, "apr-1")["status"] == "pending"
        approval = store.decide(
            approval_id="apr-1", decision="approve", expected_digest=digest, expected_run_version=4
        )
    assert wrong_digest.value.code == "call_changed"
    assert wrong_digest.value.details == {"call_digest": {"expected": "0" * 64, "current": digest}}
    assert moved.value.details == {"run_version": {"expected": 3, "current": 4}}
    assert approval.status == "approved"


def test_four_eyes_needs_two_different_people_for_critical(
    tenant_a, operator_a, admin_a, make_user
):
    tenant_a.four_eyes_critical = True
    tenant_a.save()
    make_approval(tenant_a, approval_id="apr-1", risk="critical")
    first = approval_store(tenant_a, Actor.for_user(operator_a))
    with in_tenant(tenant_a):
        pending = first.decide(approval_id="apr-1", decision="approve", reason="ok by me")
        assert (pending.status, pending.first_approved_by) == ("pending", "otto")
        assert reload(tenant_a, "run-1")["status"] == "waiting_approval"
        snapshot = reload_approval(tenant_a, "apr-1")
        with pytest.raises(Conflict) as twice:
            first.decide(approval_id="apr-1", decision="approve", reason="really")
        assert reload_approval(tenant_a, "apr-1") == snapshot
        final = approval_store(tenant_a, Actor.for_user(admin_a)).decide(
            approval_id="apr-1", decision="approve", reason="second pair of eyes"
        )
    assert twice.value.code == "second_approver_required"
    assert twice.value.details["first_approved_by"] == "otto"
    assert (final.status, final.decided_by, final.first_approved_by) == (
        "approved",
        "ada",
        "otto",
    )
    assert reload(tenant_a, "run-1")["status"] == "running"
    [first_event] = audit(tenant_a, "approval.first_approval")
    [final_event] = audit(tenant_a, "approval.approved")
    assert (first_event.actor_label, first_event.after) == (
        "otto",
        {"status": "pending", "first_approved_by": "otto"},
    )
    assert final_event.after == {
        "status": "approved",
        "decision": "approve",
        "run_status": "running",
        "first_approved_by": "otto",
    }


def test_four_eyes_one_rejection_is_enough_and_other_risks_need_one_approval(tenant_a, operator_a):
    tenant_a.four_eyes_critical = True
    tenant_a.save()
    make_approval(tenant_a, run_id="run-1", approval_id="apr-1", risk="critical")
    make_approval(tenant_a, run_id="run-2", approval_id="apr-2", risk="high")
    store = approval_store(tenant_a, Actor.for_user(operator_a))
    with in_tenant(tenant_a):
        store.decide(approval_id="apr-1", decision="approve", reason="first")
        rejected = store.decide(approval_id="apr-1", decision="reject", reason="on second thought")
        high = store.decide(approval_id="apr-2", decision="approve", reason="fine")
    assert (rejected.status, high.status) == ("rejected", "approved")


def test_without_four_eyes_critical_needs_one_approval(tenant_a, operator_a):
    make_approval(tenant_a, approval_id="apr-1", risk="critical")
    with in_tenant(tenant_a):
        approval = approval_store(tenant_a, Actor.for_user(operator_a)).decide(
            approval_id="apr-1", decision="approve", reason="ok"
        )
    assert (approval.status, approval.first_approved_by) == ("approved", "")


def test_other_tenants_approval_is_404(tenant_a, tenant_b, admin_b):
    make_approval(tenant_a, approval_id="apr-1")
    with in_tenant(tenant_b):
        store = approval_store(tenant_b, Actor.for_user(admin_b))
        for call in (
            lambda: store.get("apr-1"),
            lambda: store.decide(approval_id="apr-1", decision="approve", reason="x"),
            lambda: store.cancel(approval_id="apr-1"),
            lambda: store.expire(approval_id="apr-1"),
        ):
            with pytest.raises(NotFound):
                call()
    assert reload_approval(tenant_a, "apr-1")["status"] == "pending"


# --- cancel, expire -------------------------------------------------------------------
def test_runtime_that_asked_may_cancel_and_the_run_resumes(tenant_a, make_token):
    asker = token_actor(tenant_a, make_token, "asker")
    other = token_actor(tenant_a, make_token, "other")
    make_approval(tenant_a, approval_id="apr-1", actor=asker)
    with in_tenant(tenant_a):
        with pytest.raises(Forbidden) as forbidden:
            approval_store(tenant_a, other).cancel(approval_id="apr-1")
        assert reload_approval(tenant_a, "apr-1")["status"] == "pending"
        approval = approval_store(tenant_a, asker).cancel(approval_id="apr-1", reason="not needed")
        with pytest.raises(Conflict) as again:
            approval_store(tenant_a, asker).cancel(approval_id="apr-1")
    assert forbidden.value.code == "not_requester"
    assert (approval.status, approval.decision_reason, approval.decided_by) == (
        "cancelled",
        "not needed",
        "token:asker",
    )
    assert again.value.code == "already_decided"
    run = reload(tenant_a, "run-1")
    assert (run["status"], run["pending_approval_id"]) == ("running", "")
    [event] = audit(tenant_a, "approval.cancelled")
    assert (event.actor_type, event.reason, event.after) == (
        "token",
        "",  # a runtime token's reason goes to the detached payload
        {"status": "cancelled", "run_status": "running"},
    )
    with in_tenant(tenant_a):
        assert event.payload.content == {"reason": "not needed"}


def test_expire_suspends_the_waiting_run(tenant_a, operator_a):
    make_approval(tenant_a, approval_id="apr-1")
    with in_tenant(tenant_a):
        approval = approval_store(tenant_a, Actor.system("sweep")).expire(approval_id="apr-1")
        with pytest.raises(Conflict) as again:
            approval_store(tenant_a, Actor.system("sweep")).expire(approval_id="apr-1")
        with pytest.raises(Conflict) as late:
            approval_store(tenant_a, Actor.for_user(operator_a)).decide(
                approval_id="apr-1", decision="approve"
            )
    assert approval.status == "expired"
    assert (again.value.code, late.value.code) == ("already_decided", "already_decided")
    assert late.value.details["status"] == "expired"
    run = reload(tenant_a, "run-1")
    assert (run["status"], run["pending_approval_id"], run["version"]) == ("suspended", "", 4)
    [event] = audit(tenant_a, "approval.expired")
    assert (event.actor_type, event.actor_label, event.after["run_status"]) == (
        "system",
        "sweep",
        "suspended",
    )


def test_expire_overdue_expires_only_due_pending_approvals(tenant_a, tenant_b, clock):
    soon = clock.current + timedelta(minutes=1)
    make_approval(tenant_a, run_id="r1", approval_id="due-1", expires_at=soon, clock=clock)
    make_approval(
        tenant_a,
        run_id="r2",
        approval_id="due-2",
        expires_at=soon + timedelta(seconds=1),
        clock=clock,
    )
    make_approval(tenant_a, run_id="r3", approval_id="due-3", expires_at=soon, clock=clock)
    make_approval(
        tenant_a,
        run_id="r4",
        approval_id="later",
        expires_at=soon + timedelta(hours=1),
        clock=clock,
    )
    make_approval(tenant_a, run_id="r5", approval_id="never")
    make_approval(tenant_b, run_id="r1", approval_id="due-b", expires_at=soon, clock=clock)
    with in_tenant(tenant_a):
        approval_store(tenant_a).decide(approval_id="due-3", decision="approve")
    clock.advance(120)
    with in_tenant(tenant_a):
        sweeper = approval_store(tenant_a, Actor.system("sweep"), clock=clock)
        assert sweeper.expire_overdue(limit=1) == 1
        assert sweeper.expire_overdue(limit=10) == 1
        assert sweeper.expire_overdue() == 0
    statuses = {
        a: reload_approval(tenant_a, a)["status"]
        for a in ("due-1", "due-2", "due-3", "later", "never")
    }
    assert statuses == {
        "due-1": "expired",
        "due-2": "expired",
        "due-3": "approved",
        "later": "pending",
        "never": "pending",
    }
    assert [reload(tenant_a, r)["status"] for r in ("r1", "r2", "r3", "r4")] == [
        "suspended",
        "suspended",
        "running",
        "waiting_approval",
    ]
    assert reload_approval(tenant_b, "due-b")["status"] == "pending"
    assert [e.target_id for e in audit(tenant_a, "approval.expired")] == ["due-1", "due-2"]


def test_decision_after_expires_at_keeps_the_expiry_when_caught(tenant_a, operator_a, clock):
    make_approval(
        tenant_a, approval_id="apr-1", expires_at=clock.current + timedelta(seconds=30), clock=clock
    )
    clock.advance(31)
    with in_tenant(tenant_a):
        with pytest.raises(Conflict) as exc:
            approval_store(tenant_a, Actor.for_user(operator_a), clock=clock).decide(
                approval_id="apr-1", decision="approve"
            )
    assert exc.value.code == "approval_expired"
    assert exc.value.keep_changes is True  # the API commits the expiry the refusal found
    assert reload_approval(tenant_a, "apr-1")["status"] == "expired"
    assert reload(tenant_a, "run-1")["status"] == "suspended"
    assert len(audit(tenant_a, "approval.expired")) == 1
    assert audit(tenant_a, "approval.approved") == []


# --- reads ---------------------------------------------------------------------------
def test_inbox_is_most_urgent_first(tenant_a, clock):
    soon, later = clock.current + timedelta(minutes=5), clock.current + timedelta(hours=5)
    make_approval(tenant_a, run_id="r1", approval_id="low", risk="low")
    make_approval(tenant_a, run_id="r2", approval_id="crit-none", risk="critical")
    make_approval(
        tenant_a, run_id="r3", approval_id="crit-later", risk="critical", expires_at=later
    )
    make_approval(tenant_a, run_id="r4", approval_id="crit-soon", risk="critical", expires_at=soon)
    make_approval(tenant_a, run_id="r5", approval_id="high", risk="high")
    make_approval(tenant_a, run_id="r6", approval_id="decided", risk="critical")
    with in_tenant(tenant_a):
        approval_store(tenant_a).decide(approval_id="decided", decision="reject", reason="no")
        inbox = [a.approval_id for a in approval_store(tenant_a).inbox()]
        pending = approval_store(tenant_a).list_approvals(status="pending").count()
        for_run = list(approval_store(tenant_a).list_approvals(run_id="r6"))
        with pytest.raises(Unprocessable):
            approval_store(tenant_a).list_approvals(status="bogus")
    assert inbox == ["crit-soon", "crit-later", "crit-none", "high", "low"]
    assert pending == 5
    assert [a.approval_id for a in for_run] == ["decided"]
