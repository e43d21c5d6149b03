"""Data for the console's data pages, built through the stores as runtimes would."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from approvals_app.store import ApprovalStore
from effects_app.store import EffectStore
from runs_app.store import RunStateStore
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from tasks_app.store import TaskStateStore
from tenancy_app.scoping import in_tenant
from tests.console.browser import (  # noqa: F401  (fixtures of the browser tests beside each page)
    _playwright,
    browser,
    console_login,
    new_page,
    page,
    refund_log,
    server,
    worker,
)

RUNTIME = Actor.system("test-runtime")


def request_queries() -> int:
    """What any console request costs before its view: Django session, user, membership,
    and the tenant transaction: a SAVEPOINT pair inside the test's transaction, and
    setting and clearing `app.tenant_id` (nested in the test's transaction, which has no
    tenant: the connection knows, so nothing is read back)."""
    return 7


def csrf_client(user) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def message_texts(response) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


@dataclass
class World:
    session_id: str
    run_id: str
    task_id: str
    approval_id: str
    committed_effect_id: str
    unknown_effect_id: str
    checkpoint_ids: list[str]


def add_items(tenant, session_id: str, count: int, *, run_id: str = "", start: int = 1) -> None:
    """Append `count` items in batches of up to 1,000 (one store call each)."""
    with in_tenant(tenant):
        store = SessionStore(tenant, RUNTIME)
        done = 0
        while done < count:
            batch = min(1000, count - done)
            store.append_items(
                session_id=session_id,
                run_id=run_id,
                items=[
                    {
                        "role": "user" if (start + done + i) % 2 else "assistant",
                        "item_type": "message",
                        "payload": {"text": f"message {start + done + i}"},
                    }
                    for i in range(batch)
                ],
            )
            done += batch


@pytest.fixture
def make_session(tenant_a):
    def make(session_id: str, *, items: int = 0, user_id: str = "u-1", tenant=None):
        tenant = tenant or tenant_a
        with in_tenant(tenant):
            SessionStore(tenant, RUNTIME).create(session_id=session_id, user_id=user_id)
        if items:
            add_items(tenant, session_id, items)
        return session_id

    return make


def build_world(tenant, *, prefix: str = "") -> World:
    """A session with a run that asked for an approval, recorded effects and checkpointed a task."""
    sid, rid, tid = f"{prefix}sess-1", f"{prefix}run-1", f"{prefix}task-1"
    with in_tenant(tenant):
        sessions = SessionStore(tenant, RUNTIME)
        runs = RunStateStore(tenant, RUNTIME)
        tasks = TaskStateStore(tenant, RUNTIME)
        effects = EffectStore(tenant, RUNTIME)
        sessions.create(session_id=sid, user_id="u-1", metadata={"channel": "web"})
        tasks.create(task_id=tid, objective="Refund order 42", constraints=["no more than $50"])
        runs.create(run_id=rid, session_id=sid, task_id=tid, active_agent="triage")
        sessions.attach(session_id=sid, run_id=rid, user_id="u-1", expected_revision=0)
        run = runs.compare_and_set(run_id=rid, expected_version=1, changes={"status": "running"})
    add_items(tenant, sid, 3, run_id=rid)
    with in_tenant(tenant):
        approval = ApprovalStore(tenant, RUNTIME).request(
            run_id=rid,
            expected_version=run.version,
            tool_name="refund",
            arguments={"order": 42, "amount": 30},
            risk="high",
            reason="money leaves",
        )
        committed, _ = effects.record(
            run_id=rid,
            idempotency_key=f"{prefix}k-mail",
            tool_name="send_mail",
            request={"to": "a"},
        )
        effects.commit(effect_id=committed.effect_id, result={"id": "m-1"})
        unknown, _ = effects.record(
            run_id=rid, idempotency_key=f"{prefix}k-refund", tool_name="refund", request={"n": 42}
        )
        effects.mark_unknown(effect_id=unknown.effect_id, reason="worker crashed")
        checkpoints = [
            tasks.append_checkpoint(task_id=tid, schema_version=1, state={"step": 1, "done": []}),
            tasks.append_checkpoint(
                task_id=tid, schema_version=1, state={"step": 2, "done": ["lookup"]}, node_id="n2"
            ),
        ]
    return World(
        session_id=sid,
        run_id=rid,
        task_id=tid,
        approval_id=approval.approval_id,
        committed_effect_id=committed.effect_id,
        unknown_effect_id=unknown.effect_id,
        checkpoint_ids=[c.checkpoint_id for c in checkpoints],
    )


@pytest.fixture
def world(tenant_a) -> World:
    return build_world(tenant_a)


def populate_session(tenant, session_id: str, runs: int, *, items_per_run: int = 1) -> None:
    """`runs` runs, one after the other: attach, run, an approval, an effect, items, finish, detach.

    Each kind of timeline entry then appears `runs` times (transitions 3 times).
    """
    with in_tenant(tenant):
        sessions = SessionStore(tenant, RUNTIME)
        revision = sessions.get(session_id).revision
    for n in range(runs):
        run_id = f"{session_id}-run-{n}"
        with in_tenant(tenant):
            run_store = RunStateStore(tenant, RUNTIME)
            run_store.create(run_id=run_id, session_id=session_id)
            sessions.attach(
                session_id=session_id, run_id=run_id, user_id="u-1", expected_revision=revision
            )
            run = run_store.compare_and_set(
                run_id=run_id, expected_version=1, changes={"status": "running"}
            )
            ApprovalStore(tenant, RUNTIME).request(
                run_id=run_id,
                expected_version=run.version,
                tool_name="lookup",
                arguments={"n": n},
                risk="low",
            )
            EffectStore(tenant, RUNTIME).record(
                run_id=run_id, idempotency_key=f"{run_id}-k", tool_name="lookup", request={"n": n}
            )
        add_items(tenant, session_id, items_per_run, run_id=run_id)
        with in_tenant(tenant):
            sessions.detach(
                session_id=session_id, run_id=run_id, user_id="u-1", expected_revision=revision + 1
            )
        revision += 2


HOME_OWN_QUERIES = 4


def layout_queries(client, tenant) -> int:
    """Queries any console page makes before its own: what the tenant home page costs.

    Session, user, membership, the tenant transaction (SAVEPOINT pair in tests,
    plus the RLS set_config on PostgreSQL) and the layout (nav badge, tenant
    switcher). Pinning `layout + own` keeps each page's own queries exact
    while the shared layout evolves.
    """
    with CaptureQueriesContext(connection) as queries:
        assert client.get(f"/t/{tenant.slug}/").status_code == 200
    # The home page's own counts (sessions, runs and tasks by status; unknown
    # effects); tests/console/home/test_home.py pins the home page itself.
    return len(queries) - HOME_OWN_QUERIES


def pytest_collection_modifyitems(items):
    """A test that drives Chromium (the `browser` fixture, through `page` or `new_page`) is marked `browser`."""
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
