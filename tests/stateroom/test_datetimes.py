"""One datetime binding: every store writes timestamptz from aware UTC datetimes.

What a hot statement returns is what the ORM reads back afterwards, to the
microsecond, in every store.
"""

from datetime import UTC, datetime, timedelta

from effects_app.store import EffectStore
from runs_app.models import Run
from runs_app.store import RunStateStore
from sessions_app.models import Session, SessionItem
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from stateroom.canonical import canonical_json
from tasks_app.models import Task, TaskCheckpoint
from tasks_app.store import TaskStateStore
from tenancy_app.scoping import in_tenant

MOMENT = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)


def test_hot_writes_store_the_clock_exactly_as_the_orm_reads_it(tenant_a):
    actor = Actor.system("clock")

    def clock() -> datetime:
        return MOMENT

    with in_tenant(tenant_a):
        sessions = SessionStore(tenant_a, actor, clock=clock)
        sessions.create(session_id="s", user_id="u")
        sessions.append_items(
            session_id="s", items=[{"role": "user", "item_type": "message", "payload": {}}]
        )
        tasks = TaskStateStore(tenant_a, actor, clock=clock)
        tasks.create(task_id="t", objective="o")
        checkpoint = tasks.append_checkpoint(task_id="t", schema_version=1, state={"a": 1})
        runs = RunStateStore(tenant_a, actor, clock=clock)
        runs.create(run_id="r", session_id="s", task_id="t")
        moved = runs.compare_and_set(run_id="r", expected_version=1, changes={"status": "running"})
        effect, _ = EffectStore(tenant_a, actor, clock=clock).record(
            run_id="r", idempotency_key="k", tool_name="tool", request={"n": 1}
        )
        item = sessions.get_items(session_id="s")[0]

        assert item.created_at == SessionItem.objects.get().created_at == MOMENT
        assert Session.objects.get().last_active_at == MOMENT
        stored = TaskCheckpoint.objects.get()
        assert checkpoint.created_at == stored.created_at == MOMENT
        assert Task.objects.get().updated_at == MOMENT
        # The size reported is the size of the state as stored (its canonical JSON).
        assert checkpoint.size_bytes == stored.size_bytes == len(canonical_json(stored.state))
        assert moved.updated_at == Run.objects.get().updated_at == MOMENT
        assert effect.created_at == effect.updated_at == MOMENT
        assert all(
            value.utcoffset() == timedelta(0)
            for value in (item.created_at, checkpoint.created_at, moved.updated_at)
        )
