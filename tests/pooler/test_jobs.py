"""Every background job and the export through PgBouncer in transaction mode.

The pooler has one server connection for a worker of two processes, so
every job's transactions share it with the other's. Each scheduled job, a
deletion, an erasure and a job left in the outbox run to completion, with
the results the same jobs give on a direct connection (tests/lifecycle).
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest
from django.conf import settings

from approvals_app.models import ApprovalRequest
from lifecycle_app.deletion import DELETE_TASK, DeletionStore
from lifecycle_app.erasure import ErasureStore
from outbox_app.models import OutboxMessage
from runs_app.models import Run
from sessions_app.models import Session, SessionItem
from sessions_app.store import SessionStore
from stateroom.celery import app as celery_app
from tenancy_app.scoping import in_tenant
from tests.conftest import require_infrastructure
from tests.infra import ROOT, pgbouncer, pooled_url, subprocess_env
from tests.lifecycle.conftest import ADMIN, build_session
from tests.lifecycle.test_retention import days_ago, set_policy
from tests.lifecycle.test_sweeps import overdue_approval, overdue_run, overdue_session
from tests.lifecycle.test_worker import (
    BROKER_URL,
    celery_worker_process,
    producing_to,
    redis_reachable,
    wait_for,
    worker_ran,
)

SCHEDULED = sorted({entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()})


def seed(tenant) -> dict[str, str]:
    """One piece of work for each job, committed before the worker starts."""
    overdue_session(tenant, "overdue")
    overdue_run(tenant, "late-run")
    overdue_approval(tenant, "apr-late")
    with in_tenant(tenant):
        build_session(tenant, "old", ended_at=days_ago(31))
        build_session(tenant, "doomed", items=25, events=10, checkpoints=3, effects=2)
        build_session(tenant, "left-waiting", items=4)
        sessions = SessionStore(tenant, ADMIN)
        sessions.create(session_id="to-erase", user_id="person-9")
        sessions.append_items(
            session_id="to-erase",
            items=[{"role": "user", "item_type": "message", "payload": {"text": "hi"}}],
        )
    set_policy(tenant, session_items_days=30)
    with in_tenant(tenant):
        # A job whose publication failed (the broker was down): the relay must send it.
        waiting = DeletionStore(tenant, ADMIN).request(
            session_id="left-waiting", reason="asked", enqueue=False
        )
        OutboxMessage.objects.create(
            tenant=tenant,
            task=DELETE_TASK,
            args=[tenant.pk, waiting.deletion_id],
            created_at=days_ago(0),
        )
    return {"waiting": waiting.deletion_id}


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_every_job_runs_to_completion_through_a_transaction_pooler(tenant_a):
    require_infrastructure(redis_reachable(BROKER_URL), f"needs Redis at {BROKER_URL}")
    made = seed(tenant_a)
    queue = f"pooler-{uuid.uuid4().hex[:12]}"
    with pgbouncer(pool_size=1) as port:
        env = {"DATABASE_URL": pooled_url(port), "DB_POOLER": "transaction"}
        with (
            producing_to(BROKER_URL, queue),
            celery_worker_process(queue, pool="prefork", concurrency=2, beat=True, **env) as worker,
        ):
            for task in SCHEDULED:
                celery_app.send_task(task, queue=queue)
            with in_tenant(tenant_a):
                doomed = DeletionStore(tenant_a, ADMIN).request(
                    session_id="doomed", reason="user asked"
                )
                erasure = ErasureStore(tenant_a, ADMIN).request(
                    user_id="person-9", reason="GDPR Art. 17"
                )

            def finished():
                with in_tenant(tenant_a):
                    deletions = DeletionStore(tenant_a, ADMIN)
                    state = {
                        "overdue": Session.objects.get(session_id="overdue").status,
                        "late-run": Run.objects.get(run_id="late-run").status,
                        "apr-late": ApprovalRequest.objects.get(approval_id="apr-late").status,
                        "doomed": deletions.get(doomed.deletion_id).status,
                        "waiting": deletions.get(made["waiting"]).status,
                        "erasure": ErasureStore(tenant_a, ADMIN).state(
                            ErasureStore(tenant_a, ADMIN).get(erasure.erasure_id)
                        )["status"],
                        "old items": SessionItem.objects.filter(session__session_id="old").count(),
                    }
                done = {
                    "overdue": "expired",
                    "late-run": "failed",
                    "apr-late": "expired",
                    "doomed": "done",
                    "waiting": "done",
                    "erasure": "done",
                    "old items": 0,
                }
                ran = all(worker_ran(worker.log, task) for task in SCHEDULED)
                return state if state == done and ran else None

            wait_for(finished, worker.log, timeout=120)
            log = worker.log.read_text()
    assert "does not exist" not in log and "ERROR" not in log, log[-4000:]
    with in_tenant(tenant_a):
        assert OutboxMessage.objects.filter(sent_at__isnull=True).count() == 0
        assert SessionItem.objects.filter(session__session_id="doomed").count() == 0
        assert SessionItem.objects.filter(session__session_id="to-erase").count() == 0


def export(env: dict[str, str], fmt: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tests.pooler.export_transcript", "acme", "long", fmt],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.django_db(transaction=True)
def test_a_transcript_export_through_the_pooler_is_the_direct_one(tenant_a):
    """Items are read a chunk per transaction (500): three chunks, each maybe on another server."""
    with in_tenant(tenant_a):
        build_session(tenant_a, "long", items=1201, events=3, effects=2)
    direct = {fmt: export(subprocess_env(), fmt) for fmt in ("jsonl", "md")}
    with pgbouncer(pool_size=1) as port:
        env = subprocess_env(DATABASE_URL=pooled_url(port), DB_POOLER="transaction")
        pooled = {fmt: export(env, fmt) for fmt in ("jsonl", "md")}
    assert pooled == direct
    rows = [json.loads(line) for line in direct["jsonl"].splitlines()]
    assert [row["seq"] for row in rows if row["type"] == "item"] == list(range(1, 1202))
