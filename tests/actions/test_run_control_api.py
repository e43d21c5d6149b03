"""Run control in the API: `POST /api/v1/runs/{id}/cancel|suspend|resume`, for operator and
admin tokens (cancel also for the runtime that created the run), the console's rules."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from actions_app.runs import RunActions
from approvals_app.models import ApprovalRequest
from audit_app.models import AuditEvent, AuditPayload
from runs_app.models import Run, RunTransition
from stateroom.actor import Actor
from stateroom.reasons import MAX_REASON_LENGTH
from tenancy_app.scoping import in_tenant
from tests.actions.test_run_control import make_run
from tests.console.fixtures import make_pending

JSON = "application/json"


def client(make_token, tenant, role="operator") -> Client:
    return Client(headers={"Authorization": f"Bearer {make_token(tenant, role=role)}"})


def post(api: Client, url: str, body) -> tuple[int, dict]:
    response = api.post(url, body, content_type=JSON)
    return response.status_code, response.json()


def state(tenant, run_id="r-1") -> tuple:
    """The run, its history and the audit log: what a refused call must leave as it was."""
    with in_tenant(tenant):
        return (
            Run.objects.filter(run_id=run_id).values().first(),
            RunTransition.objects.count(),
            AuditEvent.objects.filter(target_type__in=["run", "approval"]).count(),
        )


@pytest.mark.parametrize("role", ["operator", "admin"])
def test_an_operator_token_suspends_and_resumes_with_the_consoles_audit(make_token, tenant_a, role):
    run = make_run(tenant_a)
    api = client(make_token, tenant_a, role)
    status, body = post(
        api, "/api/v1/runs/r-1/suspend", {"reason": "customer on hold", "expected_version": 2}
    )
    assert (status, body["status"], body["version"], body["claimed_by"]) == (
        200,
        "suspended",
        run.version + 1,
        None,
    )
    status, body = post(api, "/api/v1/runs/r-1/resume", {"reason": "customer back"})
    assert (status, body["status"], body["version"], body["unclaimed_since"]) == (
        200,
        "running",
        run.version + 2,
        None,
    )
    with in_tenant(tenant_a):
        events = list(
            AuditEvent.objects.order_by("seq").values_list(
                "action", "actor_type", "actor_label", "reason", "before", "after"
            )
        )
        steps = list(
            RunTransition.objects.filter(run__run_id="r-1")
            .order_by("version")
            .values_list("to_status", "changes")
        )[-2:]
    assert [e[:4] for e in events[-2:]] == [
        ("run.suspended", "token", "token:worker", "customer on hold"),
        ("run.resumed", "token", "token:worker", "customer back"),
    ]
    assert events[-1][4:] == (
        {"status": "suspended", "version": 3},
        {"status": "running", "version": 4},
    )
    assert steps == [
        ("suspended", {"status": "suspended", "reason": "customer on hold"}),
        ("running", {"status": "running", "reason": "customer back"}),
    ]


def test_cancel_withdraws_the_pending_approval_in_the_same_call(make_token, tenant_a):
    make_pending(tenant_a, run_id="r-w", approval_id="apr-w")
    status, body = post(
        client(make_token, tenant_a), "/api/v1/runs/r-w/cancel", {"reason": "wrong customer"}
    )
    assert (status, body["status"], body["pending_approval_id"]) == (200, "cancelled", None)
    with in_tenant(tenant_a):
        approval = ApprovalRequest.objects.get(approval_id="apr-w")
    assert (approval.status, approval.decision_reason) == ("cancelled", "wrong customer")


def test_the_runtime_that_created_the_run_may_cancel_it_but_not_suspend_it(make_token, tenant_a):
    own = client(make_token, tenant_a, "runtime")
    other = client(make_token, tenant_a, "runtime")
    status, _ = post(own, "/api/v1/runs", {"run_id": "r-1"})
    assert status == 201
    before = state(tenant_a)
    for api, action in ((other, "cancel"), (own, "suspend"), (own, "resume")):
        status, body = post(api, f"/api/v1/runs/r-1/{action}", {"reason": "stop"})
        assert (status, body["error"]["code"]) == (403, "operator_required"), action
    assert state(tenant_a) == before
    status, body = post(own, "/api/v1/runs/r-1/cancel", {"reason": "the user left"})
    assert (status, body["status"]) == (200, "cancelled")
    with in_tenant(tenant_a):
        event = AuditEvent.objects.get(action="run.cancelled")
        payload = AuditPayload.objects.get(event=event)
        step = RunTransition.objects.filter(run__run_id="r-1").latest("version")
    # A runtime's reason is agent text: in the event's redactable payload, not on the event
    # nor in the run's history.
    assert (event.reason, payload.content) == ("", {"reason": "the user left"})
    assert step.changes == {"status": "cancelled", "reason": ""}


def test_another_tenants_run_is_404_whatever_the_role_or_body(make_token, tenant_a, tenant_b):
    make_run(tenant_a)
    before = state(tenant_a)
    for role in ("runtime", "operator", "admin"):
        api = client(make_token, tenant_b, role)
        for action in ("cancel", "suspend", "resume"):
            for body in ({"reason": "x"}, {"reason": 7}, {}):
                status, answer = post(api, f"/api/v1/runs/r-1/{action}", body)
                assert (status, answer["error"]["code"]) == (404, "not_found"), (role, action)
    assert state(tenant_a) == before


def test_a_lesser_role_is_403_before_the_body_is_read(make_token, tenant_a):
    make_run(tenant_a)
    before = state(tenant_a)
    api = client(make_token, tenant_a, "runtime")
    for action in ("cancel", "suspend", "resume"):
        status, body = post(api, f"/api/v1/runs/r-1/{action}", {"reason": 7})
        assert (status, body["error"]["code"]) == (403, "operator_required")
    assert state(tenant_a) == before


@pytest.mark.parametrize(
    ("status_before", "action", "expected"),
    [
        ("running", "resume", {"from": "running", "to": "running", "current_version": 2}),
        ("created", "suspend", {"from": "created", "to": "suspended", "current_version": 1}),
        ("suspended", "suspend", {"from": "suspended", "to": "suspended", "current_version": 3}),
    ],
)
def test_a_control_that_does_not_apply_is_409(
    make_token, tenant_a, status_before, action, expected
):
    make_run(tenant_a, status=status_before)
    before = state(tenant_a)
    status, body = post(client(make_token, tenant_a), f"/api/v1/runs/r-1/{action}", {"reason": "x"})
    assert (status, body["error"]["code"], body["error"]["details"]) == (
        409,
        "invalid_transition",
        expected,
    )
    assert state(tenant_a) == before


def test_a_finished_run_and_a_stale_version_are_409(make_token, tenant_a):
    run = make_run(tenant_a)
    api = client(make_token, tenant_a)
    before = state(tenant_a)
    status, body = post(api, "/api/v1/runs/r-1/cancel", {"reason": "x", "expected_version": 1})
    assert (status, body["error"]["code"], body["error"]["details"]) == (
        409,
        "version_conflict",
        {"current_version": run.version, "expected_version": 1, "status": "running"},
    )
    assert state(tenant_a) == before
    assert post(api, "/api/v1/runs/r-1/cancel", {"reason": "stop"})[0] == 200
    status, body = post(api, "/api/v1/runs/r-1/cancel", {"reason": "again"})
    assert (status, body["error"]["code"]) == (409, "invalid_transition")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "reason"),
        ({"reason": ""}, "reason"),
        ({"reason": 5}, "reason"),
        ({"reason": "x" * (MAX_REASON_LENGTH + 1)}, "reason"),
        ({"reason": "ok", "expected_version": 0}, "expected_version"),
        ({"reason": "ok", "expected_version": "2"}, "expected_version"),
    ],
)
def test_a_bad_reason_or_version_is_422_and_changes_nothing(make_token, tenant_a, body, field):
    make_run(tenant_a)
    before = state(tenant_a)
    status, answer = post(client(make_token, tenant_a), "/api/v1/runs/r-1/cancel", body)
    assert (status, answer["error"]["code"], list(answer["error"]["details"])) == (
        422,
        "validation_error",
        [field],
    )
    assert state(tenant_a) == before


def test_the_reason_limit_is_the_one_rule(make_token, tenant_a):
    """The longest reason the rule takes passes the API too (stateroom.reasons)."""
    make_run(tenant_a)
    reason = "y" * MAX_REASON_LENGTH
    status, body = post(
        client(make_token, tenant_a), "/api/v1/runs/r-1/suspend", {"reason": reason}
    )
    assert (status, body["status"]) == (200, "suspended")


def test_unclaimed_since_in_the_api_and_its_filter(api_a, tenant_a):
    """A run resumed 10 minutes ago (by the store's clock then) that nobody claimed."""
    make_run(tenant_a, status="suspended")
    make_run(tenant_a, run_id="r-held")
    past = timezone.now() - timedelta(minutes=10)
    with in_tenant(tenant_a):
        resumed = RunActions(tenant_a, Actor.system("test"), clock=lambda: past).resume(
            run_id="r-1", reason="fixed"
        )
        RunActions(tenant_a, Actor.system("test")).runs.claim(
            run_id="r-held", worker="w1", expected_version=2
        )
    body = api_a.get("/api/v1/runs/r-1").json()
    assert body["unclaimed_since"] == resumed.updated_at.isoformat().replace("+00:00", "Z")
    assert api_a.get("/api/v1/runs/r-held").json()["unclaimed_since"] is None
    listed = api_a.get("/api/v1/runs?unclaimed=true").json()
    assert [r["run_id"] for r in listed["results"]] == ["r-1"]
    assert [r["run_id"] for r in api_a.get("/api/v1/runs").json()["results"]] == ["r-held", "r-1"]
    assert api_a.get("/api/v1/runs?unclaimed=maybe").status_code == 422
