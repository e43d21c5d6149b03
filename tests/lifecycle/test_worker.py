"""Out-of-process tests: a real Celery worker on Redis, and a deletion killed with SIGKILL.

Both need PostgreSQL (the other process reads what this one committed) and
run with `transaction=True`. The worker test also needs Redis
(CELERY_BROKER_URL, default redis://127.0.0.1:6379/15); without it the test
skips locally and fails in CI.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings
from kombu import pools as kombu_pools

from audit_app.models import AuditEvent
from lifecycle_app.content import CLASS_NAMES
from lifecycle_app.deletion import DeletionStore
from lifecycle_app.tasks import sweep_expired_sessions
from runs_app.models import RunEvent
from sessions_app.models import Session, SessionItem
from stateroom.celery import app as celery_app
from tenancy_app.scoping import in_tenant
from tests.conftest import require_infrastructure

from .conftest import ADMIN, build_session, subprocess_env
from .test_sweeps import overdue_session

ROOT = Path(settings.BASE_DIR)


def content(**nonzero: int) -> dict[str, int]:
    return {**dict.fromkeys(CLASS_NAMES, 0), **nonzero}


BROKER_URL = os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/15")
WAIT_SECONDS = 60


def redis_reachable(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except (redis.RedisError, OSError):
        return False


def _reset_producer() -> None:
    """Drop the app's cached broker pool and routing, so a conf change takes effect.

    Celery's pool is kombu's global pool for the broker URL: closing it without
    clearing kombu's registry left a closed pool for the next send to the same
    URL ("Acquire on closed pool").
    """
    celery_app._pool = None
    celery_app.__dict__.pop("amqp", None)
    kombu_pools.reset()


@contextmanager
def producing_to(broker_url: str, queue: str) -> Iterator[None]:
    """Turn eager mode off: `.delay()` in this process goes to `queue` on the real broker."""
    keys = ("task_always_eager", "broker_url", "task_default_queue")
    saved = {key: celery_app.conf[key] for key in keys}
    _reset_producer()
    celery_app.conf.update(task_always_eager=False, broker_url=broker_url, task_default_queue=queue)
    try:
        yield
    finally:
        _reset_producer()
        celery_app.conf.update(saved)


@dataclass
class Worker:
    process: subprocess.Popen
    log: Path


@contextmanager
def celery_worker_process(
    queue: str, *, pool: str = "solo", concurrency: int = 1, beat: bool = False, **env: str
) -> Iterator[Worker]:
    """`celery -A stateroom worker` in a subprocess, on this test's database and its own queue.

    It leads a process group of its own (its pool's children with it), so a test can
    kill the whole worker at once. With `beat`, it runs the beat schedule too (`-B`).
    """
    log = Path(tempfile.mkstemp(prefix="lifecycle-worker-", suffix=".log")[1])
    schedule = Path(tempfile.mkdtemp(prefix="lifecycle-beat-")) / "schedule"
    env = subprocess_env(
        CELERY_TASK_ALWAYS_EAGER="0",
        CELERY_BROKER_URL=BROKER_URL,
        CELERY_TASK_DEFAULT_QUEUE=queue,  # what it (and its beat) enqueues stays in this test
        **env,
    )
    command = [
        str(Path(sys.executable).with_name("celery")),
        "-A",
        "stateroom",
        "worker",
        "-Q",
        queue,
        "-n",
        f"{queue}-{uuid.uuid4().hex[:6]}@%h",
        "-P",
        pool,
        "-c",
        str(concurrency),
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "-l",
        "INFO",
    ]
    if beat:
        command += ["-B", "-s", str(schedule)]
    with log.open("w") as out:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield Worker(process, log)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)  # warm shutdown
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        log.unlink(missing_ok=True)
        shutil.rmtree(schedule.parent, ignore_errors=True)


def worker_ran(log: Path, task_name: str) -> bool:
    return any(
        f"Task {task_name}[" in line and " succeeded in " in line
        for line in log.read_text().splitlines()
    )


def wait_for(condition, log: Path | None = None, timeout: float = WAIT_SECONDS):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    worker_log = log.read_text()[-4000:] if log else ""
    pytest.fail(f"timed out after {timeout}s; worker log:\n{worker_log}")


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_real_worker_runs_a_sweep_and_a_deletion(tenant_a):
    require_infrastructure(
        redis_reachable(BROKER_URL), f"needs Redis at {BROKER_URL} (set CELERY_BROKER_URL)"
    )
    overdue_session(tenant_a, "overdue")
    with in_tenant(tenant_a):
        build_session(tenant_a, "doomed", items=25, events=10, checkpoints=3, effects=2)
    queue = f"lifecycle-{uuid.uuid4().hex[:12]}"

    with producing_to(BROKER_URL, queue), celery_worker_process(queue) as worker:
        log = worker.log
        sweep_expired_sessions.delay(tenant_id=tenant_a.pk)
        with in_tenant(tenant_a):
            # Enqueued by the store on commit of this block, to the real broker.
            deletion = DeletionStore(tenant_a, ADMIN).request(
                session_id="doomed", reason="user asked"
            )

        def finished():
            with in_tenant(tenant_a):
                expired = Session.objects.get(tenant=tenant_a, session_id="overdue").status
                job = DeletionStore(tenant_a, ADMIN).get(deletion.deletion_id)
                return (expired, job) if expired == "expired" and job.status == "done" else None

        _, job = wait_for(finished, log)
        # Both ran in the worker process, not eagerly in this one.
        wait_for(
            lambda: (
                worker_ran(log, "lifecycle_app.tasks.sweep_expired_sessions")
                and worker_ran(log, "lifecycle_app.tasks.delete_session_content")
            ),
            log,
        )

    assert job.counts == content(
        session_items=25,
        session_metadata=1,
        run_event_payloads=10,
        checkpoint_bodies=3,
        task_descriptions=1,
        effect_payloads=2,
    )
    with in_tenant(tenant_a):
        assert SessionItem.objects.filter(tenant=tenant_a).count() == 0
        expired_by = AuditEvent.objects.get(
            tenant=tenant_a, action="session.expired", target_id="overdue"
        )
        deleted_by = AuditEvent.objects.get(tenant=tenant_a, action="session.content_deleted")
    assert (expired_by.actor_type, expired_by.actor_label) == ("system", "sweep")
    assert (deleted_by.actor_type, deleted_by.actor_label) == ("system", "deletion")
    assert deleted_by.after["counts"] == job.counts


@pytest.mark.django_db(transaction=True)
def test_deletion_killed_with_sigkill_resumes_with_exact_counts(tenant_a):
    with in_tenant(tenant_a):
        build_session(tenant_a, "s1", items=7, events=4, checkpoints=2, effects=1)
        deletion = DeletionStore(tenant_a, ADMIN).request(
            session_id="s1", reason="asked", enqueue=False
        )

    crashed = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.lifecycle.crash_deletion",
            str(tenant_a.pk),
            deletion.deletion_id,
            "2",
            "3",
        ],
        cwd=ROOT,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-3000:]

    with in_tenant(tenant_a):
        half = DeletionStore(tenant_a, ADMIN).get(deletion.deletion_id)
        left = SessionItem.objects.filter(tenant=tenant_a).count()
    # Two batches committed; the third died before its commit and left nothing.
    assert (half.status, half.counts["session_items"], left) == ("running", 4, 3)

    with in_tenant(tenant_a, atomic=False):
        done = DeletionStore(tenant_a, ADMIN).run(deletion_id=deletion.deletion_id, batch_size=2)
    assert done.status == "done"
    assert (
        done.counts
        == done.planned
        == content(
            session_items=7,
            session_metadata=1,
            run_event_payloads=4,
            checkpoint_bodies=2,
            task_descriptions=1,
            effect_payloads=1,
        )
    )
    with in_tenant(tenant_a):
        assert SessionItem.objects.filter(tenant=tenant_a).count() == 0
        assert RunEvent.objects.filter(tenant=tenant_a, payload__isnull=False).count() == 0


def forget_queue(queue: str) -> None:
    """Drop what the killed worker left in Redis for this test's queue (its unacknowledged
    message would otherwise be restored to a queue nobody reads, after the visibility timeout)."""
    import redis

    client = redis.Redis.from_url(BROKER_URL)
    client.delete(queue)
    for tag, message in client.hgetall("unacked").items():
        if queue.encode() in message:
            client.hdel("unacked", tag)
            client.zrem("unacked_index", tag)


STALL_SECONDS = 3  # the heartbeat bound in this test (120 s by default)


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_the_whole_worker_killed_mid_deletion_and_a_new_one_finishes_it_within_the_bound(
    tenant_a, settings
):
    """`kill -9` of the worker's whole process group during a 40,000-item deletion.

    The job is not left "running 4000/40000": once its heartbeat is older than the bound it
    reads as queued, the beat's reaper re-enqueues it, and a new worker finishes it; the
    counts add up to the plan and nothing of the session's content is left.
    """
    require_infrastructure(
        redis_reachable(BROKER_URL), f"needs Redis at {BROKER_URL} (set CELERY_BROKER_URL)"
    )
    settings.STATEROOM_JOB_STALL_SECONDS = STALL_SECONDS  # what this process shows
    with in_tenant(tenant_a):
        build_session(tenant_a, "big", items=40_000, events=200, checkpoints=20, effects=10)
    queue = f"lifecycle-kill-{uuid.uuid4().hex[:10]}"
    bounds = {
        "STATEROOM_JOB_STALL_SECONDS": str(STALL_SECONDS),
        "STATEROOM_JOB_REAP_INTERVAL": "1",
        "STATEROOM_DELETION_BATCH_SIZE": "100",
    }

    def job():
        with in_tenant(tenant_a):
            return DeletionStore(tenant_a, ADMIN).get(deletion.deletion_id)

    def shown(deletion) -> dict:
        with in_tenant(tenant_a):
            return DeletionStore(tenant_a, ADMIN).progress(deletion)

    try:
        with producing_to(BROKER_URL, queue):
            with celery_worker_process(queue, pool="prefork", **bounds) as first:
                with in_tenant(tenant_a):
                    deletion = DeletionStore(tenant_a, ADMIN).request(
                        session_id="big", reason="user asked"
                    )
                planned = sum(deletion.planned.values())
                # Kill it once it has done a tenth, in the middle of its work.
                wait_for(lambda: sum(job().counts.values()) >= planned // 10, first.log, timeout=90)
                os.killpg(first.process.pid, signal.SIGKILL)
                first.process.wait(timeout=10)
                killed_at = time.monotonic()
            half = job()
            assert half.status == "running" and 0 < sum(half.counts.values()) < planned
            # No live worker holds it: within the bound it stops reading as running.
            state = wait_for(
                lambda: (s := shown(job()))["status"] == "queued" and s, timeout=STALL_SECONDS + 5
            )
            assert (state["stalled"], state["held_by"]) == (True, None)

            with celery_worker_process(queue, pool="prefork", beat=True, **bounds) as second:
                done = wait_for(lambda: (j := job()).status == "done" and j, second.log)
                finished_in = time.monotonic() - killed_at
                assert worker_ran(second.log, "lifecycle_app.tasks.reap_stalled_jobs")
    finally:
        forget_queue(queue)

    # Picked up after the bound (plus the reaper's interval and a worker's start), then
    # finished: well within a minute, not the broker's visibility timeout (10 minutes).
    assert finished_in < 60, finished_in
    assert done.requeues >= 1
    assert done.counts == done.planned
    assert done.counts == content(
        session_items=40_000,
        session_metadata=1,
        run_event_payloads=200,
        checkpoint_bodies=20,
        task_descriptions=1,
        effect_payloads=10,
    )
    with in_tenant(tenant_a):
        assert SessionItem.objects.filter(tenant=tenant_a).count() == 0
        assert RunEvent.objects.filter(tenant=tenant_a, payload__isnull=False).count() == 0
        assert Session.objects.get(session_id="big").content_deleted_at is not None
        deleted = AuditEvent.objects.get(tenant=tenant_a, action="session.content_deleted")
    assert deleted.after["counts"] == done.counts
