"""ApprovalActions.void: the runtime that asked voids an approval it can no longer honour."""

from datetime import timedelta

import pytest

from actions_app.approvals import ApprovalActions
from audit_app.models import AuditEvent
from effects_app.store import EffectStore
from stateroom.actor import Actor
from stateroom.errors import Conflict, Forbidden, NotFound, Unprocessable
from tenancy_app.models import RuntimeToken
from tenancy_app.scoping import in_tenant

from ..approvals.conftest import ARGS, approval_store, make_approval, reload_approval
from ..runs.conftest import reload

DIFF = {
    "tool": "send_refund",
    "old": {"type": "object", "properties": {"amount": {"type": "integer"}}},
    "new": {"type": "object", "properties": {"amount": {"type": "number"}}},
}


def token_actor(tenant, make_token, name: str) -> Actor:
    make_token(tenant, name=name)
    with in_tenant(tenant):
        token = RuntimeToken.objects.get(tenant=tenant, name=name)
    return Actor("token", str(token.pk), f"token:{name}")


def audit(tenant, action: str) -> list[AuditEvent]:
    with in_tenant(tenant):
        return list(AuditEvent.objects.filter(tenant=tenant, action=action).order_by("seq"))


def void(tenant, actor, approval_id="apr-1", **kw):
    kw.setdefault("reason_code", "tool_changed")
    kw.setdefault("reason", "the tool changed since this was asked")
    kw.setdefault("details", DIFF)
    with in_tenant(tenant):
        return ApprovalActions(tenant, actor).void(approval_id=approval_id, **kw)


def decide(tenant, user, decision="approve", approval_id="apr-1"):
    with in_tenant(tenant):
        return approval_store(tenant, Actor.for_user(user)).decide(
            approval_id=approval_id, decision=decision, reason="ok"
        )


def test_void_of_a_pending_approval_sends_the_run_back_to_running(tenant_a, make_token):
    asker = token_actor(tenant_a, make_token, "asker")
    make_approval(tenant_a, approval_id="apr-1", actor=asker)
    approval = void(tenant_a, asker)
    assert (approval.status, approval.voided_by, approval.void_code) == (
        "voided",
        "token:asker",
        "tool_changed",
    )
    row = reload_approval(tenant_a, "apr-1")
    assert (row["status"], row["void_reason"], row["void_details"]) == (
        "voided",
        "the tool changed since this was asked",
        DIFF,
    )
    # Nobody decided it: the decision fields stay empty.
    assert (row["decided_by"], row["decided_at"], row["decision"]) == ("", None, "")
    run = reload(tenant_a, "run-1")
    assert (run["status"], run["pending_approval_id"], run["version"]) == ("running", "", 4)
    [event] = audit(tenant_a, "approval.voided")
    assert (event.actor_type, event.actor_label, event.reason, event.before, event.after) == (
        "token",
        "token:asker",
        "",
        {"status": "pending"},
        {"status": "voided", "void_code": "tool_changed", "run_status": "running"},
    )
    with in_tenant(tenant_a):
        # The runtime's words and its evidence are content: the detached payload.
        assert event.payload.content == {
            "reason": "the tool changed since this was asked",
            "details": DIFF,
        }


def test_void_of_an_approved_approval_keeps_who_approved_it(tenant_a, make_token, operator_a):
    asker = token_actor(tenant_a, make_token, "asker")
    make_approval(tenant_a, approval_id="apr-1", actor=asker)
    decide(tenant_a, operator_a)
    run_before = reload(tenant_a, "run-1")
    void(tenant_a, asker)
    row = reload_approval(tenant_a, "apr-1")
    assert (row["status"], row["decision"], row["decided_by"], row["voided_by"]) == (
        "voided",
        "approve",
        operator_a.username,
        "token:asker",
    )
    assert row["voided_at"] is not None
    # The run no longer waited on it: untouched.
    assert reload(tenant_a, "run-1") == run_before
    [event] = audit(tenant_a, "approval.voided")
    assert event.before == {"status": "approved"}
    assert event.after["run_status"] == "running"


@pytest.mark.parametrize("status", ["committed", "started", "failed", "unknown"])
def test_void_is_refused_once_an_effect_is_recorded_under_the_approval(
    tenant_a, make_token, operator_a, status
):
    asker = token_actor(tenant_a, make_token, "asker")
    make_approval(tenant_a, approval_id="apr-1", actor=asker)
    decide(tenant_a, operator_a)
    with in_tenant(tenant_a):
        effects = EffectStore(tenant_a, asker)
        effect, _ = effects.record(
            run_id="run-1",
            idempotency_key="run-1:call-1",
            tool_name="send_refund",
            request={"arguments": ARGS},
            approval_id="apr-1",
        )
        if status == "committed":
            effects.commit(effect_id=effect.effect_id, result={"output": "done"})
        elif status == "failed":
            effects.fail(effect_id=effect.effect_id, error={"message": "declined"})
        elif status == "unknown":
            effects.mark_unknown(effect_id=effect.effect_id)
    before = reload_approval(tenant_a, "apr-1")
    with pytest.raises(Conflict) as refused:
        void(tenant_a, asker)
    assert (refused.value.code, refused.value.details) == (
        "effect_recorded",
        {"effect_id": effect.effect_id, "effect_status": status, "status": "approved"},
    )
    assert reload_approval(tenant_a, "apr-1") == before
    assert audit(tenant_a, "approval.voided") == []


def test_no_effect_is_recorded_under_a_voided_approval(tenant_a, make_token):
    asker = token_actor(tenant_a, make_token, "asker")
    make_approval(tenant_a, approval_id="apr-1", actor=asker)
    void(tenant_a, asker)
    with in_tenant(tenant_a), pytest.raises(Conflict) as refused:
        EffectStore(tenant_a, asker).record(
            run_id="run-1",
            idempotency_key="run-1:call-1",
            tool_name="send_refund",
            request={"arguments": ARGS},
            approval_id="apr-1",
        )
    assert (refused.value.code, refused.value.details) == (
        "approval_voided",
        {"approval_id": "apr-1", "void_code": "tool_changed"},
    )
    with in_tenant(tenant_a):
        assert EffectStore(tenant_a, asker).find("run-1:call-1") is None


@pytest.mark.parametrize("decision", ["reject", "respond"])
def test_a_rejected_approval_cannot_be_voided(tenant_a, make_token, operator_a, decision):
    asker = token_actor(tenant_a, make_token, "asker")
    make_approval(
        tenant_a, approval_id="apr-1", actor=asker, allowed_decisions=["approve", decision]
    )
    with in_tenant(tenant_a):
        approval_store(tenant_a, Actor.for_user(operator_a)).decide(
            approval_id="apr-1", decision=decision, reason="no", response="not now"
        ) if decision == "respond" else decide(tenant_a, operator_a, "reject")
    before = reload_approval(tenant_a, "apr-1")
    with pytest.raises(Conflict) as refused:
        void(tenant_a, asker)
    status = "responded" if decision == "respond" else "rejected"
    assert (refused.value.code, refused.value.details["status"]) == ("already_decided", status)
    assert reload_approval(tenant_a, "apr-1") == before


def test_cancelled_and_voided_approvals_cannot_be_voided(tenant_a, make_token):
    asker = token_actor(tenant_a, make_token, "asker")
    make_approval(tenant_a, approval_id="apr-1", actor=asker)
    with in_tenant(tenant_a):
        approval_store(tenant_a, asker).cancel(approval_id="apr-1", reason="gone")
    with pytest.raises(Conflict) as cancelled:
        void(tenant_a, asker)
    assert cancelled.value.details["status"] == "cancelled"
    make_approval(tenant_a, run_id="run-2", approval_id="apr-2", actor=asker)
    void(tenant_a, asker, "apr-2")
    with pytest.raises(Conflict) as voided:
        void(tenant_a, asker, "apr-2")
    assert (
        voided.value.code,
        voided.value.details["status"],
        voided.value.details["decided_by"],
    ) == (
        "already_decided",
        "voided",
        "token:asker",
    )
    assert len(audit(tenant_a, "approval.voided")) == 1


def test_a_pending_approval_past_its_expiry_expires_instead(tenant_a, make_token, clock):
    asker = token_actor(tenant_a, make_token, "asker")
    make_approval(
        tenant_a,
        approval_id="apr-1",
        actor=asker,
        clock=clock,
        expires_at=clock.current + timedelta(minutes=5),
    )
    clock.advance(301)
    with in_tenant(tenant_a), pytest.raises(Conflict) as refused:
        ApprovalActions(tenant_a, asker, clock=clock).void(
            approval_id="apr-1", reason_code="tool_changed", reason="changed"
        )
    assert (refused.value.code, refused.value.details["status"]) == ("already_decided", "expired")
    assert reload_approval(tenant_a, "apr-1")["status"] == "expired"
    assert audit(tenant_a, "approval.voided") == []
    assert len(audit(tenant_a, "approval.expired")) == 1


def test_only_the_runtime_that_asked_may_void(tenant_a, make_token):
    asker = token_actor(tenant_a, make_token, "asker")
    other = token_actor(tenant_a, make_token, "other")
    make_approval(tenant_a, approval_id="apr-1", actor=asker)
    before = reload_approval(tenant_a, "apr-1")
    with pytest.raises(Forbidden) as refused:
        void(tenant_a, other)
    assert refused.value.code == "not_requester"
    assert reload_approval(tenant_a, "apr-1") == before


def test_another_tenants_approval_is_not_found(tenant_a, tenant_b, make_token):
    asker = token_actor(tenant_a, make_token, "asker")
    make_approval(tenant_a, approval_id="apr-1", actor=asker)
    with pytest.raises(NotFound):
        void(tenant_b, token_actor(tenant_b, make_token, "b"))
    assert reload_approval(tenant_a, "apr-1")["status"] == "pending"


@pytest.mark.parametrize(
    ("field", "kw"),
    [
        ("reason_code", {"reason_code": "bored"}),
        ("reason", {"reason": "  "}),
        ("reason", {"reason": "x" * 2001}),
        ("details", {"details": ["not", "an", "object"]}),
        ("details", {"details": {"blob": "x" * 70_000}}),
        ("details", {"details": {"bad": float("nan")}}),
    ],
)
def test_an_invalid_void_writes_nothing(tenant_a, make_token, field, kw):
    asker = token_actor(tenant_a, make_token, "asker")
    make_approval(tenant_a, approval_id="apr-1", actor=asker)
    before = reload_approval(tenant_a, "apr-1")
    with pytest.raises(Unprocessable) as refused:
        void(tenant_a, asker, **kw)
    assert list(refused.value.details) == [field]
    assert reload_approval(tenant_a, "apr-1") == before


def test_the_call_is_asked_again_naming_the_voided_approval(tenant_a, make_token):
    asker = token_actor(tenant_a, make_token, "asker")
    make_approval(tenant_a, approval_id="apr-1", actor=asker)
    void(tenant_a, asker)
    run = reload(tenant_a, "run-1")

    def ask(approval_id, replaces, **kw):
        with in_tenant(tenant_a):
            return approval_store(tenant_a, asker).request(
                run_id="run-1",
                expected_version=kw.pop("version", run["version"]),
                tool_name="send_refund",
                arguments=ARGS,
                risk="medium",
                approval_id=approval_id,
                replaces_approval_id=replaces,
            )

    again = ask("apr-2", "apr-1")
    assert (again.replaces.approval_id, again.replaces_public_id) == ("apr-1", "apr-1")
    [requested] = [e for e in audit(tenant_a, "approval.requested") if e.target_id == "apr-2"]
    assert requested.after["replaces"] == "apr-1"
    # Voided once, asked again once; only a voided approval of the same run.
    with in_tenant(tenant_a):
        approval_store(tenant_a, asker).cancel(approval_id="apr-2", reason="gone")
    run = reload(tenant_a, "run-1")
    make_approval(tenant_a, run_id="run-9", approval_id="apr-9", actor=asker)
    void(tenant_a, asker, "apr-9")
    for replaces, problem in (
        ("apr-1", "was already asked again as apr-2"),
        ("apr-2", "is cancelled: only a voided approval is asked again"),
        ("apr-9", "no such approval of this run"),
        ("nope", "no such approval of this run"),
    ):
        with pytest.raises(Unprocessable) as refused:
            ask("apr-3", replaces)
        assert refused.value.details == {"replaces_approval_id": [problem]}
    assert reload(tenant_a, "run-1") == run
