"""Fixtures of the sessions tests: an injectable clock, stores, DB snapshots, JSON posts."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from audit_app.models import AuditEvent
from runs_app.models import Run
from sessions_app.models import ItemAppend, Session, SessionAttachment, SessionItem
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant

T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


class Clock:
    """A clock tests move by hand; stores take it as `clock=`."""

    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now

    def at(self, seconds: float) -> datetime:
        """Set the clock to T0 + seconds (seed 004 counts time in integer ticks)."""
        self.now = T0 + timedelta(seconds=seconds)
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def store_for(tenant: Tenant, *, clock=timezone.now, actor: Actor | None = None) -> SessionStore:
    return SessionStore(tenant, actor or Actor.system("test"), clock=clock)


def admin_actor(user) -> Actor:
    return Actor.for_user(user)


def make_session(tenant: Tenant, session_id: str = "s-a", **kw) -> Session:
    """A session created through the store (real clock unless `clock=` is given)."""
    clock = kw.pop("clock", timezone.now)
    kw.setdefault("user_id", "alice")
    with in_tenant(tenant):
        return store_for(tenant, clock=clock).create(session_id=session_id, **kw)


def make_run(tenant: Tenant, run_id: str, session: Session | None = None) -> Run:
    """A row in runs_app (setup only: the attach checks read this table), or the existing
    one moved into `session`."""
    now = timezone.now()
    with in_tenant(tenant):
        run, _ = Run.objects.update_or_create(
            tenant=tenant,
            run_id=run_id,
            defaults={"session": session},
            create_defaults={"session": session, "created_at": now, "updated_at": now},
        )
        return run


# The run ids these tests attach and append with. A session names only runs
# that exist in its tenant (an unknown run id is 404), so they exist, in no
# session, in tenant A; tests that need one in a session move it with make_run.
STANDARD_RUNS = (
    "run-0",
    "run-1",
    "run-2",
    "run-3",
    "run-9",
    "run-x",
    "run-other",
    "run-mine",
    "run-free",
    "run-new",
    "run-a",
    "run-b",
)


@pytest.fixture(autouse=True)
def _standard_runs(request):
    if "tenant_a" not in request.fixturenames:
        return
    tenant = request.getfixturevalue("tenant_a")
    now = timezone.now()
    with in_tenant(tenant):
        Run.objects.bulk_create(
            [
                Run(tenant=tenant, run_id=run_id, created_at=now, updated_at=now)
                for run_id in STANDARD_RUNS
            ],
            ignore_conflicts=True,
        )


def item(text: str = "hi", role: str = "user", item_type: str = "message") -> dict:
    return {"role": role, "item_type": item_type, "payload": {"text": text}}


def snapshot(tenant: Tenant) -> dict:
    """Everything the sessions domain (and the audit log) holds for a tenant."""
    with in_tenant(tenant):
        return {
            "sessions": list(Session.objects.order_by("id").values()),
            "attachments": list(SessionAttachment.objects.order_by("id").values()),
            "items": list(SessionItem.objects.order_by("id").values()),
            "appends": list(ItemAppend.objects.order_by("id").values()),
            # Refused attempts leave security records (access.denied), not domain changes.
            "audit": list(
                AuditEvent.objects.exclude(action="access.denied")
                .order_by("seq")
                .values_list("seq", "action")
            ),
        }


def audit_events(tenant: Tenant, action: str | None = None) -> list[AuditEvent]:
    with in_tenant(tenant):
        events = AuditEvent.objects.filter(tenant=tenant, target_type="session")
        if action:
            events = events.filter(action=action)
        return list(events.order_by("seq"))


def post(client, path: str, body=None, **kw):
    """POST a JSON body (a dict), or raw text as-is (for malformed bodies)."""
    data = body if isinstance(body, str | bytes) else json.dumps(body or {})
    return client.post(path, data, content_type="application/json", **kw)
