"""The transactional outbox: a committed change always has its job, whatever the broker did."""

from __future__ import annotations

import re
import time
import uuid

import pytest

from audit_app.models import AuditEvent
from lifecycle_app.deletion import DeletionStore
from outbox_app import relay
from outbox_app.models import OutboxMessage
from tenancy_app.scoping import in_tenant
from tests.infra import celery_worker, free_port, producing_to, redis_server
from tests.lifecycle.conftest import ADMIN, build_session


def request_deletion(tenant, session_id: str = "doomed"):
    with in_tenant(tenant):
        build_session(tenant, session_id, items=5, events=2, checkpoints=1, effects=1)
    with in_tenant(tenant):
        return DeletionStore(tenant, ADMIN).request(session_id=session_id, reason="asked")


def runs_of(log, task: str) -> int:
    return sum(
        1
        for line in log.read_text().splitlines()
        if re.search(rf"Task {re.escape(task)}\[outbox-[0-9-]+\] succeeded in ", line)
    )


def wait_for(condition, log, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.2)
    pytest.fail("timed out; worker log:\n" + log.read_text()[-4000:])


@pytest.mark.django_db(transaction=True)
def test_enqueue_needs_the_transaction_of_the_change(tenant_a):
    with in_tenant(tenant_a, atomic=False), pytest.raises(RuntimeError):
        relay.enqueue(tenant=tenant_a, task=relay.__name__, args=[])


def test_a_rolled_back_change_leaves_no_job(tenant_a):
    with in_tenant(tenant_a):
        build_session(tenant_a, "s1")
    with pytest.raises(ZeroDivisionError), in_tenant(tenant_a):
        DeletionStore(tenant_a, ADMIN).request(session_id="s1", reason="r")
        assert OutboxMessage.objects.count() == 1
        1 / 0  # noqa: B018
    with in_tenant(tenant_a):
        assert OutboxMessage.objects.count() == 0


def test_eager_mode_runs_the_job_after_the_commit_and_marks_it_sent(
    tenant_a, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        deletion = request_deletion(tenant_a)
    assert len(callbacks) == 1
    with in_tenant(tenant_a):
        assert DeletionStore(tenant_a, ADMIN).get(deletion.deletion_id).status == "done"
        [row] = OutboxMessage.objects.all()
    assert (row.task, row.args) == (
        "lifecycle_app.tasks.delete_session_content",
        [tenant_a.pk, deletion.deletion_id],
    )
    assert row.sent_at is not None
    assert relay.waiting(tenant_a) == []


@pytest.mark.django_db(transaction=True)
def test_broker_down_the_change_commits_and_its_job_waits(tenant_a):
    closed = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    with producing_to(closed, "nowhere"):
        started = time.monotonic()
        deletion = request_deletion(tenant_a)
        assert time.monotonic() - started < 10  # the failed publish does not hang the change
        assert relay.relay_all() == 0
    [row] = relay.waiting(tenant_a)
    assert row.args == [tenant_a.pk, deletion.deletion_id]
    assert row.attempts == 2  # once after the commit, once by the relay
    assert "OperationalError" in row.last_error or "Connection" in row.last_error
    with in_tenant(tenant_a):
        assert DeletionStore(tenant_a, ADMIN).get(deletion.deletion_id).status == "queued"


@pytest.mark.django_db(transaction=True)
def test_a_job_not_wanted_right_away_is_left_to_the_relay(tenant_a):
    """`right_away=False` (an approval's notices): the committing thread does not publish it;
    the relay does, and a broker outage then leaves it waiting, as any job."""
    closed = f"redis://127.0.0.1:{free_port()}/0"
    with producing_to(closed, "nowhere"):
        with in_tenant(tenant_a):
            relay.enqueue(
                tenant=tenant_a,
                task="approvals_app.tasks.approval_notice",
                args=[1],
                right_away=False,
            )
        [row] = relay.waiting(tenant_a)
        assert row.attempts == 0  # nobody tried to publish it at the commit
        assert relay.relay_all() == 0
    [row] = relay.waiting(tenant_a)
    assert row.attempts == 1  # the relay did, and it waits for the broker


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_redis_stopped_then_started_the_job_runs_exactly_once(tenant_a):
    """Stop Redis, change state, start Redis: the relay publishes the job, a worker runs it once.

    The Redis here is the test's own, on a port of its own; the machine's
    shared Redis is never touched.
    """
    queue = f"outbox-{uuid.uuid4().hex[:12]}"
    with redis_server() as (port, _server):
        broker = f"redis://127.0.0.1:{port}/0"
    # Redis is stopped now (the port is closed).
    with producing_to(broker, queue):
        deletion = request_deletion(tenant_a)
        assert [m.args for m in relay.waiting(tenant_a)] == [[tenant_a.pk, deletion.deletion_id]]
        with redis_server(port), celery_worker(broker, queue) as log:
            assert relay.relay_all() == 1
            assert relay.relay_all() == 0  # sent: a second pass publishes nothing

            def done():
                with in_tenant(tenant_a):
                    job = DeletionStore(tenant_a, ADMIN).get(deletion.deletion_id)
                return job if job.status == "done" else None

            job = wait_for(done, log)
            task = "lifecycle_app.tasks.delete_session_content"
            wait_for(lambda: runs_of(log, task) == 1, log)
            time.sleep(1)  # a duplicate delivery would show up in this time
            assert runs_of(log, task) == 1
    assert job.counts["session_items"] == 5
    with in_tenant(tenant_a):
        assert (
            AuditEvent.objects.filter(tenant=tenant_a, action="session.content_deleted").count()
            == 1
        )
    assert relay.waiting(tenant_a) == []


@pytest.mark.django_db(transaction=True)
def test_with_the_broker_down_the_api_keeps_serving_and_the_job_waits(tenant_a, make_token):
    """A decision through the API while Redis refuses: 200 at once, its webhook job kept."""
    from django.test import Client

    from stateroom.actor import Actor
    from tenancy_app.store import TenancyStore
    from tests.approvals.conftest import make_approval

    with in_tenant(tenant_a):
        token, _ = TenancyStore(tenant_a, Actor.system("test")).create_token(
            name="hooked", webhook_url="https://hooks.example/stateroom"
        )
    make_approval(tenant_a, approval_id="apr-1", actor=Actor("token", str(token.pk), "t"))
    operator = Client(headers={"Authorization": f"Bearer {make_token(tenant_a, role='operator')}"})
    closed = f"redis://127.0.0.1:{free_port()}/0"
    with producing_to(closed, "nowhere"):
        started = time.monotonic()
        response = operator.post(
            "/api/v1/approvals/apr-1/decision",
            {"decision": "approve"},
            content_type="application/json",
        )
        elapsed = time.monotonic() - started
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "approved"
    assert elapsed < 10
    [job] = relay.waiting(tenant_a)
    assert (job.task, job.args) == (
        "approvals_app.webhooks.notify_decision",
        [tenant_a.pk, "apr-1"],
    )
    assert job.attempts == 1
