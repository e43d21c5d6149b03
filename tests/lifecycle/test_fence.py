"""Late writes after a deletion is requested: every content-bearing write is 409 content_deleted.

From the moment an admin asks to delete a session's content (the job need
not have run), a stale worker can write nothing into the session, its runs,
their tasks, approvals and effects, through any endpoint; nothing changes.
`content_deleted` comes before every other 409 of the write (`run_claimed`,
`session_terminal`, `version_conflict`).
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from approvals_app.models import ApprovalRequest
from audit_app.models import AuditEvent
from effects_app.models import ExternalEffect
from effects_app.store import EffectStore
from lifecycle_app.models import Deletion
from runs_app.models import NodeExecution, Run, RunEvent
from runs_app.store import RunStateStore
from sessions_app.models import Session, SessionItem
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from stateroom.errors import Conflict
from tasks_app.models import Task, TaskCheckpoint
from tasks_app.store import TaskStateStore
from tenancy_app.scoping import in_tenant

JSON = "application/json"
RUNTIME = Actor.system("runtime")


@pytest.fixture
def fenced(tenant_a, make_token, django_capture_on_commit_callbacks):
    """Session s1 with a running run r1 (task t1), an open effect; closed, deletion requested.

    The deletion job is enqueued on commit and not run: the fence holds before it.
    """
    with in_tenant(tenant_a):
        sessions = SessionStore(tenant_a, RUNTIME)
        sessions.create(session_id="s1", user_id="u1")
        TaskStateStore(tenant_a, RUNTIME).create(task_id="t1", objective="o")
        TaskStateStore(tenant_a, RUNTIME).create(task_id="t-other", objective="o")
        runs = RunStateStore(tenant_a, RUNTIME)
        runs.create(run_id="r1", session_id="s1", task_id="t1")
        sessions.attach(session_id="s1", run_id="r1", user_id="u1", expected_revision=0)
        runs.compare_and_set(run_id="r1", expected_version=1, changes={"status": "running"})
        effect, _ = EffectStore(tenant_a, RUNTIME).record(
            run_id="r1", idempotency_key="k1", tool_name="refund", request={"n": 1}
        )
    runtime = Client(headers={"Authorization": f"Bearer {make_token(tenant_a)}"})
    admin = Client(headers={"Authorization": f"Bearer {make_token(tenant_a, role='admin')}"})
    assert runtime.post("/api/v1/sessions/s1/close", "{}", JSON).status_code == 200
    with django_capture_on_commit_callbacks(execute=False) as enqueued:
        response = admin.post("/api/v1/sessions/s1/deletions", json.dumps({"reason": "x"}), JSON)
    assert response.status_code == 202, response.content
    assert (response.json()["status"], len(enqueued)) == ("queued", 1)
    return runtime, effect.effect_id


def everything(tenant) -> dict:
    with in_tenant(tenant):
        return {
            model.__name__: sorted(map(repr, model.objects.filter(tenant=tenant).values()))
            for model in (
                Session,
                SessionItem,
                Run,
                RunEvent,
                NodeExecution,
                Task,
                TaskCheckpoint,
                ApprovalRequest,
                ExternalEffect,
                AuditEvent,
                Deletion,
            )
        }


def late_writes(effect_id: str) -> list[tuple[str, str, dict]]:
    return [
        (
            "post",
            "/api/v1/sessions/s1/items",
            {"items": [{"role": "user", "item_type": "m", "payload": {}}]},
        ),
        ("post", "/api/v1/runs/r1/events", {"events": [{"type": "tool", "payload": {"x": 1}}]}),
        ("post", "/api/v1/runs/r1/transition", {"expected_version": 2, "error": {"m": "late"}}),
        ("post", "/api/v1/runs/r1/transition", {"expected_version": 2, "status": "succeeded"}),
        (
            "post",
            "/api/v1/runs/r1/approvals",
            {"expected_version": 2, "tool_name": "t", "arguments": {}, "risk": "low"},
        ),
        (
            "post",
            "/api/v1/runs/r1/effects",
            {"idempotency_key": "k2", "tool_name": "t", "request": {}},
        ),
        (
            "post",
            "/api/v1/runs/r1/effects",
            {"idempotency_key": "k1", "tool_name": "refund", "request": {"n": 1}},
        ),
        ("post", f"/api/v1/effects/{effect_id}/commit", {"result": {"ok": True}}),
        ("post", f"/api/v1/effects/{effect_id}/fail", {"error": {"message": "late"}}),
        ("put", "/api/v1/tasks/t1/state", {"expected_version": 1, "completed_nodes": ["a"]}),
        ("post", "/api/v1/tasks/t1/checkpoints", {"schema_version": 1, "state": {"x": 1}}),
        (
            "post",
            "/api/v1/tasks/t1/langgraph/checkpoints",
            {
                "checkpoint": {
                    "v": 1,
                    "id": "g9",
                    "ts": "2026-01-01T00:00:00+00:00",
                    "channel_versions": {},
                    "versions_seen": {},
                },
                "blobs": [{"channel": "c", "version": 1, "type": "json", "value": "late"}],
            },
        ),
        (
            "post",
            "/api/v1/tasks/t1/langgraph/writes",
            {
                "checkpoint_id": "g9",
                "graph_task_id": "n1",
                "writes": [{"idx": 0, "channel": "c", "type": "json", "value": "late"}],
            },
        ),
        ("post", "/api/v1/tasks/t1/langgraph/copy", {"target_thread_id": "t-other"}),
        ("post", "/api/v1/runs", {"session_id": "s1"}),
        ("post", "/api/v1/runs", {"task_id": "t1"}),
    ]


def test_every_late_write_is_409_content_deleted_and_changes_nothing(fenced, tenant_a):
    runtime, effect_id = fenced
    before = everything(tenant_a)
    for method, path, body in late_writes(effect_id):
        response = getattr(runtime, method)(path, json.dumps(body), JSON)
        assert response.status_code == 409, (path, body, response.content)
        assert response.json()["error"]["code"] == "content_deleted", (path, response.content)
    assert everything(tenant_a) == before


def test_the_fence_comes_before_every_other_conflict(fenced, tenant_a):
    """A worker still holding a claim, a stale version, a closed session: content_deleted wins."""
    with in_tenant(tenant_a):
        runs = RunStateStore(tenant_a, RUNTIME)
        run = runs.get("r1")
        live_claim = timezone.now() + timedelta(hours=1)
        Run.objects.filter(pk=run.pk).update(claimed_by="worker-a", claim_until=live_claim)
        claimed_write = lambda: runs.compare_and_set(  # noqa: E731
            run_id="r1", expected_version=run.version, changes={}, worker="worker-b"
        )
        for call in (
            claimed_write,
            lambda: runs.compare_and_set(run_id="r1", expected_version=99, changes={}),
            lambda: runs.claim(run_id="r1", worker="worker-b", expected_version=run.version),
            lambda: runs.start_node(run_id="r1", node_id="n1"),
            lambda: SessionStore(tenant_a, RUNTIME).append_items(
                session_id="s1", items=[{"role": "user", "item_type": "m", "payload": {}}]
            ),
        ):
            with pytest.raises(Conflict) as refused:
                call()
            assert refused.value.code == "content_deleted"
        # Without the fence, the same write would meet the other worker's claim.
        Run.objects.filter(pk=run.pk).update(content_fenced_at=None)
        with pytest.raises(Conflict) as claimed:
            claimed_write()
        assert claimed.value.code == "run_claimed"


def test_people_and_reads_are_not_fenced(fenced, tenant_a, admin_a):
    """An operator may still cancel the run; everything stays readable (as tombstones)."""
    runtime, _ = fenced
    assert runtime.get("/api/v1/runs/r1").status_code == 200
    assert runtime.get("/api/v1/sessions/s1/items").json() == {"results": [], "next": None}
    with in_tenant(tenant_a):
        cancelled = RunStateStore(tenant_a, Actor.for_user(admin_a)).cancel(
            run_id="r1", reason="cleanup"
        )
    assert cancelled.status == "cancelled"
