import pytest

from audit_app.actor import Actor
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
