"""Real concurrency on PostgreSQL: a void racing a decision, and a void racing an effect."""

import pytest

from actions_app.approvals import ApprovalActions
from effects_app.store import EffectStore
from stateroom.actor import Actor
from stateroom.errors import Conflict
from tenancy_app.models import RuntimeToken
from tenancy_app.scoping import in_tenant

from ..runs.conftest import in_threads, reload
from .conftest import ARGS, approval_store, make_approval, reload_approval
from .test_concurrency import actions

pytestmark = [pytest.mark.django_db(transaction=True)]


def asker(tenant, make_token) -> Actor:
    make_token(tenant, name="asker")
    with in_tenant(tenant):
        token = RuntimeToken.objects.get(tenant=tenant, name="asker")
    return Actor("token", str(token.pk), "token:asker")


def void(tenant, actor, approval_id):
    with in_tenant(tenant):
        return ApprovalActions(tenant, actor).void(
            approval_id=approval_id, reason_code="tool_changed", reason="the tool changed"
        )


def test_a_void_racing_a_rejection_exactly_one_wins(tenant_a, operator_a, make_token):
    runtime = asker(tenant_a, make_token)
    winners = []
    for round_ in range(6):
        approval_id = f"apr-{round_}"
        make_approval(tenant_a, run_id=f"run-{round_}", approval_id=approval_id, actor=runtime)

        def act(i, barrier, approval_id=approval_id):
            barrier.wait()
            try:
                if i == 0:
                    void(tenant_a, runtime, approval_id)
                else:
                    with in_tenant(tenant_a):
                        approval_store(tenant_a, Actor.for_user(operator_a)).decide(
                            approval_id=approval_id, decision="reject", reason="no"
                        )
                return "won"
            except Conflict as exc:
                return exc

        outcomes = in_threads(2, act)
        assert sorted(o == "won" for o in outcomes) == [False, True]
        winner = outcomes.index("won")
        loser = outcomes[1 - winner]
        assert (loser.code, loser.details["status"]) == (
            "already_decided",
            ("voided", "rejected")[winner],
        )
        assert reload_approval(tenant_a, approval_id)["status"] == ("voided", "rejected")[winner]
        run = reload(tenant_a, f"run-{round_}")
        assert (run["status"], run["pending_approval_id"], run["version"]) == ("running", "", 4)
        winners.append(winner)
    voided = actions(tenant_a, "approval.voided")
    rejected = actions(tenant_a, "approval.rejected")
    assert (len(voided), len(rejected)) == (winners.count(0), winners.count(1))


def test_a_void_racing_an_approval_ends_voided_either_way(tenant_a, operator_a, make_token):
    """An approval of a call that has not run can be voided too: whichever commits first,
    the approval ends voided, and each of the two changes is audited once."""
    runtime = asker(tenant_a, make_token)
    for round_ in range(6):
        approval_id = f"apr-{round_}"
        make_approval(tenant_a, run_id=f"run-{round_}", approval_id=approval_id, actor=runtime)

        def act(i, barrier, approval_id=approval_id):
            barrier.wait()
            try:
                if i == 0:
                    void(tenant_a, runtime, approval_id)
                else:
                    with in_tenant(tenant_a):
                        approval_store(tenant_a, Actor.for_user(operator_a)).decide(
                            approval_id=approval_id, decision="approve", reason="ok"
                        )
                return "done"
            except Conflict as exc:
                return exc.code

        outcomes = in_threads(2, act)
        row = reload_approval(tenant_a, approval_id)
        assert row["status"] == "voided"
        # The decision either came first (and the void followed) or found it voided.
        assert outcomes in (["done", "done"], ["done", "already_decided"])
        assert row["decision"] == ("approve" if outcomes[1] == "done" else "")
        assert reload(tenant_a, f"run-{round_}")["status"] == "running"
    assert len(actions(tenant_a, "approval.voided")) == 6


def test_a_void_racing_an_effect_under_the_approval_exactly_one_wins(
    tenant_a, operator_a, make_token
):
    runtime = asker(tenant_a, make_token)
    winners = []
    for round_ in range(6):
        approval_id, run_id = f"apr-{round_}", f"run-{round_}"
        make_approval(tenant_a, run_id=run_id, approval_id=approval_id, actor=runtime)
        with in_tenant(tenant_a):
            approval_store(tenant_a, Actor.for_user(operator_a)).decide(
                approval_id=approval_id, decision="approve", reason="ok"
            )

        def act(i, barrier, approval_id=approval_id, run_id=run_id):
            barrier.wait()
            try:
                if i == 0:
                    void(tenant_a, runtime, approval_id)
                else:
                    with in_tenant(tenant_a):
                        EffectStore(tenant_a, runtime).record(
                            run_id=run_id,
                            idempotency_key=f"{run_id}:call",
                            tool_name="send_refund",
                            request={"arguments": ARGS},
                            approval_id=approval_id,
                        )
                return "won"
            except Conflict as exc:
                return exc

        outcomes = in_threads(2, act)
        assert sorted(o == "won" for o in outcomes) == [False, True]
        winner = outcomes.index("won")
        loser = outcomes[1 - winner]
        assert loser.code == ("approval_voided", "effect_recorded")[winner]
        with in_tenant(tenant_a):
            recorded = EffectStore(tenant_a, runtime).find(f"{run_id}:call")
        assert (reload_approval(tenant_a, approval_id)["status"], recorded is not None) == (
            ("voided", False),
            ("approved", True),
        )[winner]
        winners.append(winner)
    assert len(actions(tenant_a, "approval.voided")) == winners.count(0)
