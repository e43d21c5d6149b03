"""Factories for lifecycle tests: sessions with content of every data class.

Content rows are built with the ORM (bulk, fast, exact counts); lifecycle
changes under test go through the stores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from audit_app.models import AuditEvent
from effects_app.models import EffectStatus, ExternalEffect
from runs_app.models import Run, RunEvent, RunStatus
from sessions_app.models import Session, SessionAttachment, SessionItem
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from tasks_app.models import Task, TaskCheckpoint
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant

ADMIN = Actor("user", "1", "ada")


@dataclass
class Built:
    session: Session
    runs: list[Run] = field(default_factory=list)
    tasks: list[Task] = field(default_factory=list)

    @property
    def session_id(self) -> str:
        return self.session.session_id


def build_session(
    tenant: Tenant,
    session_id: str,
    *,
    items: int = 3,
    runs: int = 1,
    events: int = 2,
    checkpoints: int = 2,
    effects: int = 1,
    end: str | None = "close",
    ended_at: datetime | None = None,
    run_status: str = RunStatus.SUCCEEDED,
    task: Task | None = None,
    attach_only: bool = False,
) -> Built:
    """A session with `items` items and `runs` runs, each with `events` events,
    one task with `checkpoints` checkpoints, and `effects` effect records.

    Call inside `in_tenant(tenant)`. `end` is "close", "expire" or None (active).
    `attach_only`: the runs are linked by attachment only (Run.session empty).
    """
    ended_at = ended_at or timezone.now()
    start = ended_at - timedelta(hours=1)
    store = SessionStore(tenant, ADMIN, clock=lambda: start)
    session = store.create(session_id=session_id, user_id="u1")
    SessionItem.objects.bulk_create(
        SessionItem(
            tenant=tenant,
            session=session,
            seq=n,
            role="user",
            item_type="message",
            payload={"text": f"secret {n}"},
            created_at=start,
        )
        for n in range(1, items + 1)
    )
    built = Built(session=session)
    for r in range(runs):
        if task is None:
            run_task = Task.objects.create(
                tenant=tenant,
                task_id=f"{session_id}-task{r}",
                objective="book a flight",
                created_at=start,
                updated_at=start,
            )
        else:
            run_task = task
        built.tasks.append(run_task)
        run = Run.objects.create(
            tenant=tenant,
            run_id=f"{session_id}-run{r}",
            session=None if attach_only else session,
            task=run_task,
            status=run_status,
            created_at=start,
            updated_at=start,
        )
        if attach_only:
            SessionAttachment.objects.create(
                tenant=tenant,
                session=session,
                run_id=run.run_id,
                attached_at=start,
                detached_at=start,
            )
        built.runs.append(run)
        RunEvent.objects.bulk_create(
            RunEvent(
                tenant=tenant,
                run=run,
                seq=n,
                type="tool_output",
                payload={"out": f"secret {n}"},
                created_at=start,
            )
            for n in range(1, events + 1)
        )
        base = TaskCheckpoint.objects.filter(tenant=tenant, task=run_task).count()
        TaskCheckpoint.objects.bulk_create(
            TaskCheckpoint(
                tenant=tenant,
                task=run_task,
                checkpoint_id=f"{run.run_id}-cp{n}",
                seq=base + n,
                schema_version=1,
                state={"memo": f"secret {n}"},
                size_bytes=20,
                created_at=start,
            )
            for n in range(1, checkpoints + 1)
        )
        ExternalEffect.objects.bulk_create(
            ExternalEffect(
                tenant=tenant,
                effect_id=f"{run.run_id}-eff{n}",
                run=run,
                idempotency_key=f"{run.run_id}-key{n}",
                tool_name="charge_card",
                request={"card": "4242", "amount": n},
                request_digest=f"digest{n}",
                status=EffectStatus.COMMITTED,
                result={"charge": f"ch_{n}"},
                created_at=start,
                updated_at=start,
            )
            for n in range(1, effects + 1)
        )
    if end == "close":
        SessionStore(tenant, ADMIN, clock=lambda: ended_at).close(
            session_id=session_id, reason="done"
        )
    elif end == "expire":
        SessionStore(tenant, ADMIN, clock=lambda: ended_at).expire(
            session_id=session_id, reason="done"
        )
    built.session = Session.objects.get(tenant=tenant, pk=session.pk)
    return built


@pytest.fixture
def make_session():
    def make(tenant: Tenant, session_id: str, **kw) -> Built:
        with in_tenant(tenant):
            return build_session(tenant, session_id, **kw)

    return make


def audit_actions(tenant: Tenant, target_id: str | None = None) -> list[str]:
    with in_tenant(tenant):
        events = AuditEvent.objects.filter(tenant=tenant).order_by("seq")
        if target_id is not None:
            events = events.filter(target_id=target_id)
        return list(events.values_list("action", flat=True))


def database_url() -> str:
    """The URL of the database this test process uses (the test database), for subprocesses."""
    from django.db import connection

    from stateroom.database import url_of

    return url_of(connection.settings_dict)


def subprocess_env(**extra: str) -> dict[str, str]:
    """Environment for a subprocess that must see exactly this test's (committed) data."""
    import os

    env = dict(os.environ)
    env.pop("STATEROOM_TEST_DB_SUFFIX", None)
    env.pop("DATABASE_OWNER_URL", None)  # the subprocess is the app, on the test database
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "stateroom.test_settings",
            "DATABASE_URL": database_url(),
            "DB_CONN_MAX_AGE": "0",
            **extra,
        }
    )
    return env
