"""POST /api/v1/runs/{id}/step: claim, events and transition as one request, one transaction."""

from approvals_app.models import ApprovalRequest
from runs_app.models import RunEvent
from tenancy_app.scoping import in_tenant

from ..runs.conftest import audit_actions, make_run, reload
from ..runs.test_api import error_of, post

STEP = "/api/v1/runs/r-1/step"


def _events(tenant, run_id: str) -> list[tuple]:
    with in_tenant(tenant):
        return list(
            RunEvent.objects.filter(tenant=tenant, run__run_id=run_id)
            .order_by("seq")
            .values_list("seq", "type", "payload")
        )


def test_a_step_claims_appends_and_transitions_like_the_three_calls(api_a, tenant_a):
    make_run(tenant_a, "created", run_id="r-1")
    make_run(tenant_a, "created", run_id="r-2")
    # The three calls a runtime made before, on r-2 ...
    assert (
        post(api_a, "/api/v1/runs/r-2/claim", {"worker": "w1", "expected_version": 1}).status_code
        == 200
    )
    assert (
        post(
            api_a,
            "/api/v1/runs/r-2/events",
            {"events": [{"type": "agent.started", "payload": {"agent": "a"}}], "worker": "w1"},
        ).status_code
        == 201
    )
    separate = post(
        api_a,
        "/api/v1/runs/r-2/transition",
        {"expected_version": 2, "status": "running", "turn_index": 1, "worker": "w1"},
    ).json()
    # ... and the same as one step on r-1.
    response = post(
        api_a,
        STEP,
        {
            "expected_version": 1,
            "worker": "w1",
            "claim": {"lease_seconds": 60},
            "events": [{"type": "agent.started", "payload": {"agent": "a"}}],
            "transition": {"status": "running", "turn_index": 1},
        },
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["events"] == {"first_seq": 1, "last_seq": 1}
    run = body["run"]
    assert (run["status"], run["version"], run["claimed_by"], run["turn_index"]) == (
        "running",
        3,
        "w1",
        1,
    )
    ignored = {"run_id", "created_at", "updated_at", "claim_until", "events_url"}
    assert {k: v for k, v in run.items() if k not in ignored} == {
        k: v for k, v in separate.items() if k not in ignored
    }
    assert _events(tenant_a, "r-1") == [(1, "agent.started", {"agent": "a"})]
    audit = audit_actions(tenant_a)
    assert [a for a, target, _ in audit if target == "r-1"] == [
        a for a, target, _ in audit if target == "r-2"
    ]
    assert api_a.get("/api/v1/runs/r-1").json()["version"] == 3


def test_a_refused_transition_rolls_back_the_claim_and_the_events(api_a, tenant_a):
    make_run(tenant_a, "running", run_id="r-1")
    before, audit = reload(tenant_a, "r-1"), audit_actions(tenant_a)
    status, code, _details = error_of(
        post(
            api_a,
            STEP,
            {
                "expected_version": 2,
                "worker": "w1",
                "claim": {},
                "events": [{"type": "agent.started", "payload": None}],
                "transition": {"status": "created"},  # running -> created is not allowed
            },
        )
    )
    assert (status, code) == (409, "invalid_transition")
    assert reload(tenant_a, "r-1") == before  # not claimed, version unchanged
    assert _events(tenant_a, "r-1") == []
    assert audit_actions(tenant_a) == audit


def test_a_refused_claim_writes_nothing_and_says_why(api_a, tenant_a):
    make_run(tenant_a, "running", run_id="r-1")
    claimed = post(api_a, "/api/v1/runs/r-1/claim", {"worker": "w1", "expected_version": 2})
    assert claimed.status_code == 200
    before = reload(tenant_a, "r-1")
    status, code, details = error_of(
        post(
            api_a,
            STEP,
            {
                "expected_version": 3,
                "worker": "w2",
                "claim": {},
                "events": [{"type": "x", "payload": None}],
                "transition": {"turn_index": 4},
            },
        )
    )
    assert (status, code, details["claimed_by"]) == (409, "run_claimed", "w1")
    status, code, details = error_of(
        post(api_a, STEP, {"expected_version": 2, "worker": "w1", "transition": {"turn_index": 4}})
    )
    assert (status, code, details["current_version"]) == (409, "version_conflict", 3)
    assert reload(tenant_a, "r-1") == before
    assert _events(tenant_a, "r-1") == []


def test_a_step_that_ends_the_run_withdraws_its_pending_approval(api_a, tenant_a):
    make_run(tenant_a, "running", run_id="r-1")
    asked = post(
        api_a,
        "/api/v1/runs/r-1/approvals",
        {"expected_version": 2, "tool_name": "t", "arguments": {}, "risk": "low"},
    )
    assert asked.status_code == 201, asked.content
    version = api_a.get("/api/v1/runs/r-1").json()["version"]
    response = post(
        api_a,
        STEP,
        {
            "expected_version": version,
            "events": [{"type": "agent.ended", "payload": {"status": "failed"}}],
            "transition": {"status": "failed", "error": {"code": "boom"}},
        },
    )
    assert response.status_code == 200, response.content
    assert response.json()["run"]["status"] == "failed"
    with in_tenant(tenant_a):
        assert ApprovalRequest.objects.get(tenant=tenant_a).status == "cancelled"


def test_bad_steps_are_422_and_another_tenants_run_is_404(api_a, api_b, tenant_a):
    make_run(tenant_a, "running", run_id="r-1")
    before = reload(tenant_a, "r-1")
    for body, code, field in [
        ({"expected_version": 2}, "validation_error", "transition"),
        (
            {"expected_version": 2, "events": [{"type": "x", "payload": 1}]},
            "validation_error",
            "transition",
        ),
        ({"expected_version": 2, "claim": {}}, "validation_error", "worker"),
        ({"worker": "w1", "claim": {}}, "validation_error", "expected_version"),
        (
            {"expected_version": 2, "transition": {"status": "nope"}},
            "validation_error",
            "transition.status",
        ),
        ({"expected_version": 2, "transition": {"expected_version": 2}}, "unknown_field", None),
        ({"expected_version": 2, "transition": {}, "events": []}, "validation_error", "events"),
        ({"expected_version": 2, "transition": {}, "then": 1}, "unknown_field", None),
        (
            {"expected_version": 2, "worker": "w", "claim": {"lease_seconds": 0}},
            "validation_error",
            "claim.lease_seconds",
        ),
    ]:
        status, got, details = error_of(post(api_a, STEP, body))
        assert (status, got) == (422, code), body
        if field is not None:
            assert list(details) == [field], body
    # Another tenant's run, or an unknown one, is 404 whatever the body holds.
    good = {"expected_version": 2, "worker": "w9", "claim": {}, "transition": {"turn_index": 1}}
    assert error_of(post(api_b, STEP, good))[:2] == (404, "not_found")
    assert error_of(post(api_b, STEP, {"claim": 1}))[:2] == (404, "not_found")
    assert error_of(post(api_a, "/api/v1/runs/nope/step", good))[:2] == (404, "not_found")
    assert reload(tenant_a, "r-1") == before
