"""People's run control: cancel, suspend, resume through the run store's compare-and-set,
audited, the approval a waiting run asked for withdrawn, the runtime told by webhook."""

import json

import pytest

from actions_app.runs import RunActions
from approvals_app.models import ApprovalRequest
from audit_app.models import AuditEvent
from runs_app.models import Run, RunTransition
from runs_app.store import RunStateStore
from runs_app.tasks import notify_run_control
from stateroom.actor import Actor
from stateroom.errors import Conflict
from tenancy_app.scoping import in_tenant
from tenancy_app.webhooks import delivery_id
from tests.approvals.test_webhooks import Receiver, verify_signature, webhook_token
from tests.console.fixtures import make_pending

PERSON = Actor("user", "7", "otto")


def actions(tenant) -> RunActions:
    return RunActions(tenant, PERSON)


def make_run(tenant, run_id="r-1", status="running", actor=None):
    with in_tenant(tenant):
        store = RunStateStore(tenant, actor or Actor.system("runtime"))
        run = store.create(run_id=run_id)
        if status != "created":
            run = store.compare_and_set(
                run_id=run_id, expected_version=1, changes={"status": "running"}
            )
        if status == "suspended":
            run = store.compare_and_set(
                run_id=run_id, expected_version=run.version, changes={"status": "suspended"}
            )
    return run


def audit_actions(tenant) -> list[tuple[str, str, str]]:
    with in_tenant(tenant):
        return list(AuditEvent.objects.order_by("seq").values_list("action", "target_id", "reason"))


def test_suspend_then_resume_are_audited_compare_and_sets(tenant_a):
    run = make_run(tenant_a)
    with in_tenant(tenant_a):
        suspended = actions(tenant_a).suspend(
            run_id="r-1", reason="customer complained", expected_version=run.version
        )
        resumed = actions(tenant_a).resume(
            run_id="r-1", reason="sorted out", expected_version=suspended.version
        )
        history = list(
            RunTransition.objects.filter(run__run_id="r-1")
            .order_by("version")
            .values_list("version", "from_status", "to_status", "actor_label")
        )
    assert (suspended.status, suspended.version) == ("suspended", run.version + 1)
    assert (resumed.status, resumed.version) == ("running", run.version + 2)
    assert history[-2:] == [
        (3, "running", "suspended", "otto"),
        (4, "suspended", "running", "otto"),
    ]
    assert audit_actions(tenant_a) == [
        ("run.suspended", "r-1", "customer complained"),
        ("run.resumed", "r-1", "sorted out"),
    ]


def test_a_stale_version_changes_nothing(tenant_a):
    run = make_run(tenant_a)
    with in_tenant(tenant_a), pytest.raises(Conflict) as refused:
        actions(tenant_a).cancel(run_id="r-1", reason="x", expected_version=run.version - 1)
    assert refused.value.code == "version_conflict"
    assert refused.value.details["current_version"] == run.version
    with in_tenant(tenant_a):
        assert Run.objects.get(run_id="r-1").status == "running"
    assert audit_actions(tenant_a) == []


@pytest.mark.parametrize(
    ("status", "action"),
    [("created", "suspend"), ("running", "resume"), ("suspended", "suspend")],
)
def test_controls_that_do_not_apply_are_invalid_transitions(tenant_a, status, action):
    make_run(tenant_a, status=status)
    with in_tenant(tenant_a), pytest.raises(Conflict) as refused:
        actions(tenant_a).control(action=action, run_id="r-1", reason="x")
    assert refused.value.code == "invalid_transition"
    assert audit_actions(tenant_a) == []


def test_cancel_of_a_finished_run_is_refused(tenant_a):
    make_run(tenant_a)
    with in_tenant(tenant_a):
        actions(tenant_a).cancel(run_id="r-1", reason="stop")
        with pytest.raises(Conflict) as refused:
            actions(tenant_a).cancel(run_id="r-1", reason="again")
    assert refused.value.code == "invalid_transition"


def test_suspending_a_waiting_run_withdraws_its_approval(tenant_a):
    approval = make_pending(tenant_a, run_id="r-w", approval_id="apr-w")
    with in_tenant(tenant_a):
        run = actions(tenant_a).suspend(run_id="r-w", reason="hold on")
        approval = ApprovalRequest.objects.get(approval_id="apr-w")
    assert (run.status, run.pending_approval_id) == ("suspended", "")
    assert (approval.status, approval.decision_reason) == ("cancelled", "hold on")
    assert [a for a, _, _ in audit_actions(tenant_a)][-2:] == [
        "run.suspended",
        "approval.cancelled",
    ]


def test_the_runtime_that_created_the_run_is_told_by_a_signed_webhook(
    tenant_a, django_capture_on_commit_callbacks, settings
):
    settings.STATEROOM_WEBHOOK_ALLOW = ["127.0.0.1/32"]  # the receiver is local here
    with Receiver([200]) as receiver:
        token, runtime = webhook_token(tenant_a, receiver.url)
        run = make_run(tenant_a, actor=runtime)
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            with in_tenant(tenant_a):
                actions(tenant_a).suspend(
                    run_id="r-1", reason="pause", expected_version=run.version
                )
    assert len(callbacks) == 1  # the outbox publishes after the commit
    [(headers, body)] = receiver.requests
    assert headers["X-Stateroom-Event"] == "run.suspended"
    assert headers["webhook-id"] == delivery_id(
        tenant_a.pk, "run", "r-1", run.version + 1, "run.suspended"
    )
    assert verify_signature(token.webhook_secret, headers, body)
    payload = json.loads(body)
    assert payload["event"] == "run.suspended"
    assert payload["version"] == run.version + 1
    assert (payload["run"]["run_id"], payload["run"]["status"]) == ("r-1", "suspended")


def test_no_webhook_for_a_run_no_token_created(tenant_a, django_capture_on_commit_callbacks):
    make_run(tenant_a)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        with in_tenant(tenant_a):
            actions(tenant_a).cancel(run_id="r-1", reason="stop")
    assert callbacks == []
    assert notify_run_control(tenant_a.pk, "r-1", 3, "run.cancelled") == "no-webhook"
