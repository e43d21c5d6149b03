"""Real concurrency on PostgreSQL: threads with their own connections, started together."""

import pytest

from stateroom.errors import Conflict
from tenancy_app.scoping import in_tenant
from tests.infra import wait_for_lock_waiter

from .conftest import in_threads, make_run, reload, run_store

pytestmark = [pytest.mark.django_db(transaction=True)]

WRITERS = 8
ATTEMPTS = 200


def test_racing_cas_writers_lose_no_update(tenant_a):
    make_run(tenant_a, "running", run_id="hot")  # version 2

    def writer(i, barrier):
        store = run_store(tenant_a)
        wins = conflicts = 0
        barrier.wait()
        for _ in range(ATTEMPTS):
            # Read, then write on what was read; READ COMMITTED, no lock taken by the read.
            with in_tenant(tenant_a):
                seen = store.get("hot")
                try:
                    store.compare_and_set(
                        run_id="hot",
                        expected_version=seen.version,
                        changes={"token_used": seen.token_used + 1, "current_node_id": f"w{i}"},
                    )
                    wins += 1
                except Conflict as exc:
                    assert exc.code == "version_conflict"
                    assert exc.details["current_version"] > seen.version
                    conflicts += 1
        return wins, conflicts

    results = in_threads(WRITERS, writer)
    wins = sum(w for w, _ in results)
    assert sum(w + c for w, c in results) == WRITERS * ATTEMPTS
    assert sum(c for _, c in results) > 0  # they really raced
    final = reload(tenant_a, "hot")
    assert final["version"] == 2 + wins
    assert final["token_used"] == wins  # every win added exactly 1: no lost update
    with in_tenant(tenant_a):
        versions = list(run_store(tenant_a).transitions("hot").values_list("version", flat=True))
    assert versions == list(range(1, final["version"] + 1))


def test_two_workers_claiming_the_same_version_one_wins(tenant_a):
    for round_ in range(10):
        run = make_run(tenant_a, "running", run_id=f"contested-{round_}")

        def claimer(i, barrier, run_id=run.run_id, version=run.version):
            store = run_store(tenant_a)
            barrier.wait()
            try:
                with in_tenant(tenant_a):
                    store.claim(run_id=run_id, worker=f"w{i}", expected_version=version)
                return "won"
            except Conflict as exc:
                return exc.code

        outcomes = in_threads(2, claimer)
        assert sorted(outcomes) == ["version_conflict", "won"]
        row = reload(tenant_a, run.run_id)
        assert (row["version"], row["claimed_by"]) == (
            run.version + 1,
            f"w{outcomes.index('won')}",
        )


def test_concurrent_event_appends_stay_gap_free(tenant_a):
    make_run(tenant_a, "running", run_id="chatty")

    def appender(i, barrier):
        store = run_store(tenant_a)
        barrier.wait()
        seqs = []
        for n in range(25):
            with in_tenant(tenant_a):
                events = store.append_events(
                    run_id="chatty", events=[{"type": "t", "payload": {"w": i, "n": n}}] * 2
                )
            seqs += [e.seq for e in events]
        return seqs

    results = in_threads(4, appender)
    assert sorted(s for seqs in results for s in seqs) == list(range(1, 4 * 25 * 2 + 1))
    for seqs in results:
        assert seqs == sorted(seqs)
    assert reload(tenant_a, "chatty")["last_event_seq"] == 200


def test_two_overdue_sweeps_at_once_fail_each_run_once(tenant_a):
    from datetime import timedelta

    from django.utils import timezone

    from audit_app.models import AuditEvent
    from stateroom.actor import Actor

    past = timezone.now() - timedelta(minutes=1)
    for n in range(30):
        make_run(tenant_a, "running", run_id=f"late-{n}", deadline_at=past)

    def sweeper(i, barrier):
        store = run_store(tenant_a, Actor.system("sweep"))
        barrier.wait()
        total = 0
        while True:
            with in_tenant(tenant_a):
                failed = len(store.fail_overdue(limit=5))
            if not failed:
                return total
            total += failed

    counts = in_threads(2, sweeper)
    assert sum(counts) == 30
    with in_tenant(tenant_a):
        events = AuditEvent.objects.filter(tenant=tenant_a, action="run.deadline_exceeded")
        assert sorted(events.values_list("target_id", flat=True)) == sorted(
            f"late-{n}" for n in range(30)
        )
    assert {reload(tenant_a, f"late-{n}")["version"] for n in range(30)} == {3}


def test_a_cas_that_waited_for_another_writer_explains_its_refusal_in_one_message(tenant_a):
    """B's compare-and-set waits on A's uncommitted one for the same version. After A
    commits, B's UPDATE matches nothing; its statement read the row before A committed,
    yet B's refusal names A's version, from the same message (no second query)."""
    import threading

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    run = make_run(tenant_a, "running", run_id="contended")
    a_wrote, release = threading.Event(), threading.Event()
    outcome: list = []

    def a() -> None:
        try:
            with in_tenant(tenant_a):
                run_store(tenant_a).compare_and_set(
                    run_id="contended", expected_version=run.version, changes={"turn_index": 1}
                )
                a_wrote.set()
                release.wait(10)
        finally:
            connection.close()

    def b() -> None:
        try:
            with (
                in_tenant(tenant_a, atomic=False),
                CaptureQueriesContext(connection) as ctx,
            ):
                try:
                    run_store(tenant_a).compare_and_set(
                        run_id="contended", expected_version=run.version, changes={"turn_index": 2}
                    )
                except Conflict as exc:
                    outcome.append(exc)
            outcome.append(len(ctx.captured_queries))
        finally:
            connection.close()

    first = threading.Thread(target=a)
    first.start()
    assert a_wrote.wait(10)
    second = threading.Thread(target=b)
    second.start()
    wait_for_lock_waiter("B never waited on A's row lock")
    release.set()
    first.join(10)
    second.join(10)
    refusal, messages = outcome
    assert (refusal.code, refusal.details["current_version"]) == (
        "version_conflict",
        run.version + 1,
    )
    assert messages == 1
    assert reload(tenant_a, "contended")["turn_index"] == 1
