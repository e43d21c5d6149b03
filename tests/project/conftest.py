import json

import pytest
from django.test import Client

from approvals_app.store import ApprovalStore
from effects_app.store import EffectStore
from lifecycle_app.deletion import DeletionStore
from lifecycle_app.endings import SessionEndings
from lifecycle_app.erasure import ErasureStore
from runs_app.store import RunStateStore
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from tasks_app.langgraph_store import Blob, GraphThreadStore, Value
from tasks_app.store import TaskStateStore
from tenancy_app.scoping import in_tenant


@pytest.fixture
def schema(db) -> dict:
    response = Client().get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    return json.loads(response.content)


@pytest.fixture
def objects_a(tenant_a) -> dict[str, str]:
    """One object of every kind in tenant A, keyed by the path parameter naming it."""
    actor = Actor.system("test")
    with in_tenant(tenant_a):
        session = SessionStore(tenant_a, actor).create(session_id="sess-a", user_id="alice")
        SessionStore(tenant_a, actor).append_items(
            session_id="sess-a", items=[{"role": "user", "item_type": "message", "payload": {}}]
        )
        task = TaskStateStore(tenant_a, actor).create(task_id="task-a", objective="o")
        checkpoint = TaskStateStore(tenant_a, actor).append_checkpoint(
            task_id="task-a", schema_version=1, state={"k": 1}
        )
        # task-a is a LangGraph thread too: its /langgraph paths have rows to protect.
        GraphThreadStore(tenant_a, actor).put(
            thread_id="task-a",
            checkpoint_ns="",
            checkpoint={
                "v": 1,
                "id": "lg-1",
                "ts": "",
                "channel_versions": {"a": 1},
                "versions_seen": {},
            },
            metadata={"run_id": "lg-run"},
            blobs=[Blob(channel="a", version=1, value=Value("json", value="x"))],
        )
        runs = RunStateStore(tenant_a, actor)
        run = runs.create(run_id="run-a", session_id=session.session_id, task_id=task.task_id)
        run = runs.compare_and_set(
            run_id="run-a", expected_version=1, changes={"status": "running"}
        )
        effect, _ = EffectStore(tenant_a, actor).record(
            run_id="run-a", idempotency_key="key-a", tool_name="t", request={"x": 1}
        )
        approval = ApprovalStore(tenant_a, actor).request(
            run_id="run-a", expected_version=run.version, tool_name="t", arguments={}, risk="low"
        )
        SessionStore(tenant_a, actor).create(session_id="sess-ended", user_id="bob")
        SessionEndings(tenant_a, actor).close(session_id="sess-ended")
        deletion = DeletionStore(tenant_a, actor).request(
            session_id="sess-ended", reason="asked", enqueue=False
        )
        erasure = ErasureStore(tenant_a, actor).request(user_id="nobody", reason="asked")
    return {
        "session_id": session.session_id,
        "run_id": run.run_id,
        "task_id": task.task_id,
        "checkpoint_id": checkpoint.checkpoint_id,
        "approval_id": approval.approval_id,
        "effect_id": effect.effect_id,
        "deletion_id": deletion.deletion_id,
        "erasure_id": erasure.erasure_id,
    }
