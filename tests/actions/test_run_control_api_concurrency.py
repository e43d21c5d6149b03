"""Two operators' scripts cancel and suspend the same run at once, each on its own
connection: exactly one wins, the other is a clean 409, one audit event."""

import pytest
from django.test import Client

from audit_app.models import AuditEvent
from runs_app.models import Run
from tenancy_app.scoping import in_tenant
from tests.actions.test_run_control import make_run
from tests.runs.conftest import in_threads

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_racing_controls_of_one_run_one_wins(make_token, tenant_a):
    run = make_run(tenant_a)
    tokens = [make_token(tenant_a, role="operator", name=f"ops-{i}") for i in range(2)]
    actions = ("cancel", "suspend")

    def control(i, barrier):
        api = Client(headers={"Authorization": f"Bearer {tokens[i]}"})
        barrier.wait()
        response = api.post(
            f"/api/v1/runs/r-1/{actions[i]}",
            {"reason": f"ops {i}", "expected_version": run.version},
            content_type="application/json",
        )
        return response.status_code, response.json()

    results = in_threads(2, control)
    codes = sorted(status for status, _ in results)
    assert codes == [200, 409]
    [(_, refused)] = [(s, body) for s, body in results if s == 409]
    [(_, won)] = [(s, body) for s, body in results if s == 200]
    # A cancel that won leaves a finished run; a suspend that won, a newer version.
    expected = {"cancelled": "invalid_transition", "suspended": "version_conflict"}
    assert refused["error"]["code"] == expected[won["status"]]
    with in_tenant(tenant_a):
        stored = Run.objects.get(run_id="r-1")
        events = list(AuditEvent.objects.filter(target_type="run").values_list("action", flat=True))
    assert (stored.status, stored.version) == (won["status"], run.version + 1)
    assert events == [{"cancelled": "run.cancelled", "suspended": "run.suspended"}[won["status"]]]
