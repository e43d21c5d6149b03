import pytest
from django.utils import timezone

from approvals_app.models import ApprovalRequest
from effects_app.models import ExternalEffect
from runs_app.models import Run
from stateroom.actor import Actor
from tasks_app.store import TaskStateStore
from tenancy_app.scoping import in_tenant


def iso(value) -> str:
    """How the API writes a timestamp (DRF: ISO 8601, UTC as Z)."""
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


@pytest.fixture
def task_store():
    """`task_store(tenant)` → a TaskStateStore acting as a runtime of that tenant."""

    def make(tenant, actor: Actor | None = None) -> TaskStateStore:
        return TaskStateStore(tenant, actor or Actor.system("runtime"))

    return make


@pytest.fixture
def make_task(task_store):
    def make(tenant, task_id: str = "T-7", objective: str = "Migrate the repo", **kw):
        with in_tenant(tenant):
            return task_store(tenant).create(task_id=task_id, objective=objective, **kw)

    return make


@pytest.fixture(autouse=True)
def _referenced_objects(request):
    """The approval `apr_1` and the effect `eff_1` these tests put in a task's state exist in
    tenant A: ids in a body name objects of the tenant (404 otherwise)."""
    if "tenant_a" not in request.fixturenames:
        return
    tenant = request.getfixturevalue("tenant_a")
    now = timezone.now()
    with in_tenant(tenant):
        run = Run.objects.create(tenant=tenant, run_id="run-ref", created_at=now, updated_at=now)
        ApprovalRequest.objects.create(
            tenant=tenant,
            approval_id="apr_1",
            run=run,
            tool_name="t",
            call_digest="d",
            run_version=1,
            risk="low",
            risk_rank=1,
            status="approved",
            created_at=now,
        )
        ExternalEffect.objects.create(
            tenant=tenant,
            effect_id="eff_1",
            run=run,
            idempotency_key="key-ref",
            tool_name="t",
            request_digest="d",
            created_at=now,
            updated_at=now,
        )
