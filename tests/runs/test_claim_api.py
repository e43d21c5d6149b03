"""POST /api/v1/runs/{id}/claim, and the runtime writes a live claim fences (API.md "Runs")."""

from datetime import datetime, timedelta

from django.utils import timezone

from approvals_app.models import ApprovalRequest
from effects_app.models import ExternalEffect
from runs_app.models import RunEvent
from tenancy_app.scoping import in_tenant

from .conftest import make_run, reload
from .test_api import error_of, post

CLAIM = "/api/v1/runs/r-1/claim"


def _rows(tenant) -> tuple:
    with in_tenant(tenant):
        return (
            RunEvent.objects.filter(tenant=tenant).count(),
            ExternalEffect.objects.filter(tenant=tenant).count(),
            ApprovalRequest.objects.filter(tenant=tenant).count(),
        )


def test_claim_returns_the_run_claimed_and_the_same_worker_renews(api_a, tenant_a):
    make_run(tenant_a, "running", run_id="r-1")
    before = timezone.now()
    response = post(api_a, CLAIM, {"worker": "host:1", "expected_version": 2, "lease_seconds": 30})
    assert response.status_code == 200
    body = response.json()
    until = datetime.fromisoformat(body["claim_until"])
    assert (body["run_id"], body["status"], body["version"], body["claimed_by"]) == (
        "r-1",
        "running",
        3,
        "host:1",
    )
    assert before + timedelta(seconds=30) <= until <= timezone.now() + timedelta(seconds=30)
    renewed = post(api_a, CLAIM, {"worker": "host:1", "expected_version": 3})
    assert (renewed.status_code, renewed.json()["version"]) == (200, 4)
    default_lease = datetime.fromisoformat(renewed.json()["claim_until"]) - until
    assert timedelta(seconds=29) < default_lease <= timedelta(seconds=31)  # 60 s from later
    assert api_a.get("/api/v1/runs/r-1").json()["claimed_by"] == "host:1"


def test_claim_refusals_change_nothing(api_a, api_b, tenant_a):
    make_run(tenant_a, "running", run_id="r-1")
    make_run(tenant_a, "succeeded", run_id="done")
    assert post(api_a, CLAIM, {"worker": "w1", "expected_version": 2}).status_code == 200
    before = reload(tenant_a, "r-1")
    status, code, details = error_of(post(api_a, CLAIM, {"worker": "w2", "expected_version": 3}))
    assert (status, code, details["claimed_by"], details["current_version"]) == (
        409,
        "run_claimed",
        "w1",
        3,
    )
    assert error_of(post(api_a, CLAIM, {"worker": "w1", "expected_version": 2}))[:2] == (
        409,
        "version_conflict",
    )
    assert error_of(
        post(api_a, "/api/v1/runs/done/claim", {"worker": "w1", "expected_version": 3})
    )[:2] == (409, "invalid_transition")
    for body, field in [
        ({"expected_version": 3}, "worker"),
        ({"worker": "", "expected_version": 3}, "worker"),
        ({"worker": "w" * 201, "expected_version": 3}, "worker"),
        ({"worker": 7, "expected_version": 3}, "worker"),
        ({"worker": "w1"}, "expected_version"),
        ({"worker": "w1", "expected_version": "3"}, "expected_version"),
        ({"worker": "w1", "expected_version": 3, "lease_seconds": 0}, "lease_seconds"),
        ({"worker": "w1", "expected_version": 3, "lease_seconds": 86401}, "lease_seconds"),
        ({"worker": "w1", "expected_version": 3, "lease_seconds": 1.5}, "lease_seconds"),
    ]:
        status, code, details = error_of(post(api_a, CLAIM, body))
        assert (status, code, list(details)) == (422, "validation_error", [field]), body
    status, code, details = error_of(
        post(api_a, CLAIM, {"worker": "w1", "expected_version": 3, "until": "x"})
    )
    assert (status, code) == (422, "unknown_field")
    # Lookup comes before the body: another tenant's or an unknown run is 404 whatever it holds.
    assert error_of(post(api_b, CLAIM, {"worker": "w9", "expected_version": 3}))[:2] == (
        404,
        "not_found",
    )
    assert error_of(post(api_b, CLAIM, {"worker": 1}))[:2] == (404, "not_found")
    assert error_of(post(api_a, "/api/v1/runs/nope/claim", {}))[:2] == (404, "not_found")
    assert reload(tenant_a, "r-1") == before


def test_while_claimed_runtime_writes_must_name_the_worker(api_a, tenant_a):
    make_run(tenant_a, "running", run_id="r-1")
    effect = post(
        api_a,
        "/api/v1/runs/r-1/effects",
        {"idempotency_key": "k-0", "tool_name": "t", "request": {}},
    ).json()
    assert post(api_a, CLAIM, {"worker": "w1", "expected_version": 2}).status_code == 200
    before, rows = reload(tenant_a, "r-1"), _rows(tenant_a)
    writes = [
        ("/api/v1/runs/r-1/transition", {"expected_version": 3, "token_used": 9}),
        ("/api/v1/runs/r-1/events", {"events": [{"type": "t", "payload": None}]}),
        ("/api/v1/runs/r-1/effects", {"idempotency_key": "k-1", "tool_name": "t", "request": {}}),
        ("/api/v1/runs/r-1/effects", {"idempotency_key": "k-0", "tool_name": "t", "request": {}}),
        (f"/api/v1/effects/{effect['effect_id']}/commit", {"result": {"ok": True}}),
        (f"/api/v1/effects/{effect['effect_id']}/fail", {"error": {"message": "no"}}),
        (
            "/api/v1/runs/r-1/approvals",
            {"expected_version": 3, "tool_name": "t", "arguments": {}, "risk": "low"},
        ),
    ]
    for path, body in writes:
        for worker in (None, "w2"):
            sent = body if worker is None else {**body, "worker": worker}
            status, code, details = error_of(post(api_a, path, sent))
            assert (status, code, details["claimed_by"]) == (409, "run_claimed", "w1"), path
    assert (reload(tenant_a, "r-1"), _rows(tenant_a)) == (before, rows)
    # The claiming worker writes.
    for path, body in writes[:5]:
        response = post(api_a, path, {**body, "worker": "w1"})
        assert response.status_code in (200, 201), (path, response.json())
    assert (
        post(
            api_a,
            "/api/v1/runs/r-1/approvals",
            {
                "expected_version": 4,
                "tool_name": "t",
                "arguments": {},
                "risk": "low",
                "worker": "w1",
            },
        ).status_code
        == 201
    )
    run = api_a.get("/api/v1/runs/r-1").json()
    assert (run["status"], run["claimed_by"], run["claim_until"]) == (
        "waiting_approval",
        None,
        None,
    )
    assert error_of(post(api_a, "/api/v1/runs/r-1/events", {"events": [], "worker": ""}))[:2] == (
        422,
        "validation_error",
    )


def _approval_rows(tenant) -> list[dict]:
    from audit_app.models import AuditEvent

    with in_tenant(tenant):
        return [
            *ApprovalRequest.objects.filter(tenant=tenant).order_by("pk").values(),
            AuditEvent.objects.filter(tenant=tenant).count(),
        ]


def test_while_claimed_the_runtime_cancels_or_voids_an_approval_only_as_the_worker(
    api_a, make_token, tenant_a
):
    """Withdrawing or voiding an approval is a write to its run: another worker's live
    claim fences it (409 run_claimed, nothing written), as for every runtime write."""
    from django.test import Client

    operator = Client(headers={"Authorization": f"Bearer {make_token(tenant_a, role='operator')}"})
    make_run(tenant_a, "running", run_id="r-1")
    ask = {"expected_version": 2, "tool_name": "t", "arguments": {}, "risk": "low"}
    assert (
        post(api_a, "/api/v1/runs/r-1/approvals", {**ask, "approval_id": "a-1"}).status_code == 201
    )
    # A resumer claims the waiting run (version 3 -> 4).
    assert post(api_a, CLAIM, {"worker": "w1", "expected_version": 3}).status_code == 200
    void = {"reason_code": "tool_changed", "reason": "the tool changed"}
    before = (reload(tenant_a, "r-1"), _approval_rows(tenant_a))
    for path, body in (
        ("/api/v1/approvals/a-1/cancel", {"reason": "no longer needed"}),
        ("/api/v1/approvals/a-1/void", void),
    ):
        for worker in (None, "w2"):
            sent = body if worker is None else {**body, "worker": worker}
            status, code, details = error_of(post(api_a, path, sent))
            assert (status, code, details["claimed_by"]) == (409, "run_claimed", "w1"), path
    assert (reload(tenant_a, "r-1"), _approval_rows(tenant_a)) == before
    # The claiming worker withdraws it; the run goes back to running, still its own.
    cancelled = post(api_a, "/api/v1/approvals/a-1/cancel", {"reason": "no", "worker": "w1"})
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    run = reload(tenant_a, "r-1")
    assert (run["status"], run["claimed_by"]) == ("running", "w1")
    # An approved call that has not run: another worker may not void it either.
    asked = post(
        api_a,
        "/api/v1/runs/r-1/approvals",
        {**ask, "expected_version": run["version"], "approval_id": "a-2", "worker": "w1"},
    )
    assert asked.status_code == 201
    decided = post(operator, "/api/v1/approvals/a-2/decision", {"decision": "approve"})
    assert decided.status_code == 200  # a person's decision: no claim holds it back
    version = reload(tenant_a, "r-1")["version"]
    assert post(api_a, CLAIM, {"worker": "w1", "expected_version": version}).status_code == 200
    before = (reload(tenant_a, "r-1"), _approval_rows(tenant_a))
    status, code, _ = error_of(post(api_a, "/api/v1/approvals/a-2/void", {**void, "worker": "w2"}))
    assert (status, code) == (409, "run_claimed")
    assert (reload(tenant_a, "r-1"), _approval_rows(tenant_a)) == before
    voided = post(api_a, "/api/v1/approvals/a-2/void", {**void, "worker": "w1"})
    assert voided.status_code == 200 and voided.json()["status"] == "voided"
    # Once the claim's lease has passed, nobody holds the run: no worker needs naming.
    with in_tenant(tenant_a):
        from runs_app.models import Run

        Run.objects.filter(tenant=tenant_a, run_id="r-1").update(
            claim_until=timezone.now() - timedelta(seconds=1)
        )
    asked = post(
        api_a,
        "/api/v1/runs/r-1/approvals",
        {**ask, "expected_version": reload(tenant_a, "r-1")["version"], "approval_id": "a-3"},
    )
    assert asked.status_code == 201
    assert post(api_a, "/api/v1/approvals/a-3/cancel", {}).status_code == 200


def test_the_schema_documents_the_claim(client, db):
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    claim = schema["paths"]["/api/v1/runs/{run_id}/claim"]["post"]
    assert claim["operationId"] == "runs_claim"
    assert set(claim["responses"]) == {
        "200",
        "400",
        "401",
        "404",
        "409",
        "411",
        "413",
        "422",
        "429",
        "503",
    }
    schemas = schema["components"]["schemas"]

    def body_of(path: str) -> dict:
        ref = schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]
        return schemas[ref["schema"]["$ref"].rsplit("/", 1)[-1]]

    body = body_of("/api/v1/runs/{run_id}/claim")
    assert set(body["properties"]) == {"worker", "expected_version", "lease_seconds"}
    assert set(body["required"]) == {"worker", "expected_version"}
    assert body["properties"]["lease_seconds"]["maximum"] == 86400
    run = claim["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert {"claimed_by", "claim_until"} <= set(schemas[run.rsplit("/", 1)[-1]]["properties"])
    for path in (
        "/api/v1/runs/{run_id}/transition",
        "/api/v1/runs/{run_id}/events",
        "/api/v1/runs/{run_id}/effects",
        "/api/v1/runs/{run_id}/approvals",
        "/api/v1/effects/{effect_id}/commit",
        "/api/v1/effects/{effect_id}/fail",
    ):
        assert body_of(path)["properties"]["worker"]["maxLength"] == 200, path
