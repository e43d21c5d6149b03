"""A run's claim and the effect ledger, with real concurrent connections on PostgreSQL.

The ledger tests the claim on the run row it reads FOR SHARE, in the write's
transaction: a claim taken while a write is open waits for it (so the new
worker sees the effect), and a write made while a claim is being taken waits
for the claim and is then refused. Without the lock the claim would not wait
and the first test fails; the second would record for a superseded worker.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from effects_app.models import ExternalEffect
from effects_app.store import EffectStore
from runs_app.store import RunStateStore
from stateroom.actor import Actor
from stateroom.errors import StateroomError
from tenancy_app.scoping import in_tenant

pytestmark = [pytest.mark.django_db(transaction=True)]

LEASE = 60


class Step(threading.Thread):
    """Runs `work()` in a tenant transaction on its own connection; holds the transaction
    open after `work` until `release` is set, then commits."""

    def __init__(self, tenant, work) -> None:
        super().__init__()
        self.tenant, self.work = tenant, work
        self.pid: int | None = None
        self.started_work = threading.Event()
        self.worked = threading.Event()
        self.release = threading.Event()
        self.result = self.error = None

    def run(self) -> None:
        try:
            with in_tenant(self.tenant):
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_backend_pid()")
                    self.pid = cursor.fetchone()[0]
                self.started_work.set()
                try:
                    self.result = self.work()
                finally:
                    self.worked.set()
                self.release.wait(30)
        except StateroomError as exc:
            self.error = exc
        finally:
            self.worked.set()
            connection.close()


def _waits_on_a_lock(pid: int) -> bool:
    """True once the backend `pid` waits on a row lock (bounded: 15 s of polling)."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid])
            row = cursor.fetchone()
        if row and row[0] == "Lock":
            return True
        time.sleep(0.01)  # polling for the other backend's state, not a clock
    return False


@pytest.fixture
def claimed_run(tenant_a):
    """R-101 running and claimed by w1, whose lease has passed by the `later` clock."""
    with in_tenant(tenant_a):
        runs = RunStateStore(tenant_a, Actor.system("runtime"))
        run = runs.create(run_id="R-101")
        run = runs.compare_and_set(
            run_id="R-101", expected_version=1, changes={"status": "running"}
        )
        run = runs.claim(run_id="R-101", worker="w1", expected_version=2, lease_seconds=LEASE)
    return run


def _later():
    return timezone.now() + timedelta(seconds=LEASE + 1)


def _record(tenant, worker: str, key: str = "k-1"):
    return lambda: EffectStore(tenant, Actor.system(worker)).record(
        run_id="R-101", idempotency_key=key, tool_name="t", request={}, worker=worker
    )


def _take_over(tenant, version: int):
    return lambda: RunStateStore(tenant, Actor.system("w2"), clock=_later).claim(
        run_id="R-101", worker="w2", expected_version=version, lease_seconds=LEASE
    )


def _effects(tenant) -> list[str]:
    with in_tenant(tenant):
        return list(ExternalEffect.objects.values_list("idempotency_key", flat=True))


def test_a_claim_taken_while_an_effect_is_recorded_waits_for_it(tenant_a, claimed_run):
    writer = Step(tenant_a, _record(tenant_a, "w1"))
    writer.start()
    assert writer.worked.wait(30) and writer.error is None  # recorded, not committed yet
    claimer = Step(tenant_a, _take_over(tenant_a, claimed_run.version))
    claimer.start()
    assert claimer.started_work.wait(30)
    assert _waits_on_a_lock(claimer.pid)  # the claim waits for the open write
    assert not claimer.worked.is_set()
    writer.release.set()
    writer.join(30)
    assert claimer.worked.wait(30)
    claimer.release.set()
    claimer.join(30)
    assert claimer.error is None and claimer.result.claimed_by == "w2"
    assert _effects(tenant_a) == ["k-1"]  # w2 finds what w1 recorded before it took over


def test_an_effect_recorded_while_a_claim_is_taken_waits_and_is_refused(tenant_a, claimed_run):
    claimer = Step(tenant_a, _take_over(tenant_a, claimed_run.version))
    claimer.start()
    assert claimer.worked.wait(30) and claimer.error is None  # claimed, not committed yet
    writer = Step(tenant_a, _record(tenant_a, "w1"))
    writer.start()
    assert writer.started_work.wait(30)
    assert _waits_on_a_lock(writer.pid)
    claimer.release.set()
    claimer.join(30)
    writer.release.set()
    writer.join(30)
    assert (writer.error.code, writer.error.details["claimed_by"]) == ("run_claimed", "w2")
    assert _effects(tenant_a) == []


def test_a_commit_made_while_a_claim_is_taken_waits_and_is_refused(tenant_a, claimed_run):
    with in_tenant(tenant_a):
        effect, _ = _record(tenant_a, "w1")()
    claimer = Step(tenant_a, _take_over(tenant_a, claimed_run.version))
    claimer.start()
    assert claimer.worked.wait(30) and claimer.error is None
    committer = Step(
        tenant_a,
        lambda: EffectStore(tenant_a, Actor.system("w1")).commit(
            effect_id=effect.effect_id, result={"ok": True}, worker="w1"
        ),
    )
    committer.start()
    assert committer.started_work.wait(30)
    assert _waits_on_a_lock(committer.pid)
    claimer.release.set()
    claimer.join(30)
    committer.release.set()
    committer.join(30)
    assert committer.error.code == "run_claimed"
    with in_tenant(tenant_a):
        assert ExternalEffect.objects.get(effect_id=effect.effect_id).status == "started"
