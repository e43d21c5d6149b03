"""No page changes state on GET, confirmation pages of actions included."""

from audit_app.models import AuditEvent
from effects_app.models import ExternalEffect
from lifecycle_app.models import Deletion
from runs_app.models import Run
from sessions_app.models import Session, SessionItem
from tasks_app.models import Task, TaskCheckpoint
from tenancy_app.scoping import in_tenant
from tests.conftest import login


def snapshot(tenant) -> dict:
    with in_tenant(tenant):
        return {
            "audit": list(AuditEvent.objects.filter(tenant=tenant).values_list("seq", "hash")),
            "sessions": list(
                Session.objects.filter(tenant=tenant).values_list(
                    "session_id",
                    "status",
                    "revision",
                    "legal_hold",
                    "lease_until",
                    "last_active_at",
                )
            ),
            "items": SessionItem.objects.filter(tenant=tenant).count(),
            "runs": list(
                Run.objects.filter(tenant=tenant).values_list("run_id", "status", "version")
            ),
            "effects": list(
                ExternalEffect.objects.filter(tenant=tenant).values_list("effect_id", "status")
            ),
            "tasks": list(Task.objects.filter(tenant=tenant).values_list("task_id", "version")),
            "checkpoints": TaskCheckpoint.objects.filter(tenant=tenant).count(),
            "deletions": Deletion.objects.filter(tenant=tenant).count(),
        }


def test_every_data_page_leaves_state_unchanged_on_get(world, tenant_a, admin_a):
    before = snapshot(tenant_a)
    client = login(admin_a)
    s, r, t = world.session_id, world.run_id, world.task_id
    a, b = world.checkpoint_ids
    pages = [
        "sessions/",
        f"sessions/{s}/",
        f"sessions/{s}/items?before_seq=2",
        f"sessions/{s}/close",
        f"sessions/{s}/expire",
        f"sessions/{s}/hold?on=1",
        f"sessions/{s}/delete",
        "sessions/bulk?action=close",
        "sessions/bulk?action=expire",
        f"sessions/{s}/export.jsonl",
        f"sessions/{s}/export.md",
        "runs/",
        f"runs/{r}/",
        f"effects/{world.unknown_effect_id}/settle",
        "tasks/",
        f"tasks/{t}/",
        f"tasks/{t}/checkpoints/{a}/",
        f"tasks/{t}/diff?a={a}&b={b}",
    ]
    for page in pages:
        response = client.get(f"/t/acme/{page}")
        assert response.status_code in (200, 302), page
        if response.streaming:
            b"".join(response.streaming_content)
    assert snapshot(tenant_a) == before
