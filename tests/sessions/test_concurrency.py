"""Real concurrency on PostgreSQL: threads, each with its own connection and tenant transaction."""

import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from audit_app.models import AuditEvent
from audit_app.services import verify_chain
from sessions_app.models import ItemAppend, Session, SessionAttachment, SessionItem
from stateroom.errors import Conflict, NotFound, StateroomError
from tenancy_app.scoping import in_tenant

from .conftest import Clock, item, make_session, store_for

pytestmark = [pytest.mark.django_db(transaction=True)]


def run_together(count: int, work) -> list:
    """Run `work(i)` in `count` threads started together; each result or exception, by i."""
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def target(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = work(i)
        except Exception as exc:
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    return results


def test_concurrent_appenders_get_gap_free_commit_ordered_seqs(tenant_a):
    make_session(tenant_a, "s-a")
    writers, calls, batch = 4, 50, 10

    def append(writer: int) -> list:
        store = store_for(tenant_a)
        results = []
        for call in range(calls):
            with in_tenant(tenant_a):
                results.append(
                    store.append_items(
                        session_id="s-a",
                        items=[item(f"{writer}:{call}:{k}") for k in range(batch)],
                    )
                )
        return results

    results = run_together(writers, append)
    assert not [r for r in results if isinstance(r, Exception)], results
    with in_tenant(tenant_a):
        rows = list(SessionItem.objects.order_by("seq").values_list("seq", "id", "payload"))
        last_seq = Session.objects.get().last_seq
    total = writers * calls * batch
    assert [seq for seq, _, _ in rows] == list(range(1, total + 1))
    assert last_seq == total
    # Rows were inserted in seq order: the session row lock serialized the writers.
    assert [pk for _, pk, _ in rows] == sorted(pk for _, pk, _ in rows)
    by_seq = {seq: payload["text"] for seq, _, payload in rows}
    for writer, writer_results in enumerate(results):
        firsts = [r.first_seq for r in writer_results]
        assert firsts == sorted(firsts)
        for call, result in enumerate(writer_results):
            assert (result.last_seq - result.first_seq + 1, result.created) == (batch, True)
            texts = [by_seq[seq] for seq in range(result.first_seq, result.last_seq + 1)]
            assert texts == [f"{writer}:{call}:{k}" for k in range(batch)]


def test_concurrent_retries_of_one_key_append_once(tenant_a):
    make_session(tenant_a, "s-a")
    make_session(tenant_a, "s-other")
    items = [item("a"), item("b"), item("c")]

    def append(i: int):
        store = store_for(tenant_a)
        with in_tenant(tenant_a):
            if i % 4 == 3:
                # Unrelated traffic on the same session interleaves with the retries.
                return store.append_items(session_id="s-a", items=[item(f"x{i}")])
            return store.append_items(session_id="s-a", items=items, idempotency_key="turn-7")

    results = run_together(8, append)
    keyed = [r for i, r in enumerate(results) if i % 4 != 3]
    assert not [r for r in results if isinstance(r, Exception)], results
    assert Counter(r.created for r in keyed) == {True: 1, False: 5}
    assert len({(r.first_seq, r.last_seq) for r in keyed}) == 1
    first = keyed[0].first_seq
    with in_tenant(tenant_a):
        texts = dict(
            SessionItem.objects.filter(session__session_id="s-a").values_list("seq", "payload")
        )
        appends = list(ItemAppend.objects.values_list("idempotency_key", "first_seq", "last_seq"))
    assert sorted(texts) == list(range(1, 6))
    assert [texts[first + k]["text"] for k in range(3)] == ["a", "b", "c"]
    assert appends == [("turn-7", first, first + 2)]


def test_concurrent_attaches_with_one_revision_exactly_one_wins(tenant_a):
    tenant_a.allow_concurrent_runs = True  # so only the revision decides
    tenant_a.save(update_fields=["allow_concurrent_runs"])
    make_session(tenant_a, "s-a")

    def attach(i: int):
        with in_tenant(tenant_a):
            return store_for(tenant_a).attach(
                session_id="s-a", user_id="alice", run_id=f"run-{i}", expected_revision=0
            )

    results = run_together(4, attach)
    winners = [r for r in results if isinstance(r, Session)]
    losers = [r for r in results if isinstance(r, Conflict)]
    assert (len(winners), len(losers)) == (1, 3)
    assert {(e.code, e.details["current_revision"]) for e in losers} == {("revision_conflict", 1)}
    with in_tenant(tenant_a):
        assert Session.objects.get().revision == 1
        assert list(SessionAttachment.objects.values_list("run_id", flat=True)) == [
            winners[0].open_attachments[0].run_id
        ]


def test_concurrent_closes_close_and_audit_once(tenant_a):
    make_session(tenant_a, "s-a")

    def close(i: int):
        with in_tenant(tenant_a):
            return store_for(tenant_a).close(session_id="s-a", reason=f"closer {i}")

    results = run_together(4, close)
    errors = [r for r in results if isinstance(r, StateroomError)]
    assert len([r for r in results if isinstance(r, Session)]) == 1
    assert {e.code for e in errors} == {"session_terminal"} and len(errors) == 3
    with in_tenant(tenant_a):
        assert AuditEvent.objects.filter(action="session.closed").count() == 1


def test_two_sweeps_at_once_expire_and_audit_each_session_once(tenant_a):
    past = Clock(timezone.now() - timedelta(hours=3))
    with in_tenant(tenant_a):
        store = store_for(tenant_a, clock=past)
        for n in range(40):
            store.create(session_id=f"s-{n}", user_id="alice", lease_seconds=60)

    def sweep(i: int) -> int:
        with in_tenant(tenant_a):
            return len(store_for(tenant_a).expire_overdue(limit=500))

    results = run_together(2, sweep)
    assert sum(results) == 40, results
    with in_tenant(tenant_a):
        assert set(Session.objects.values_list("status", flat=True)) == {"expired"}
        expired = Counter(
            AuditEvent.objects.filter(action="session.expired").values_list("target_id", flat=True)
        )
        assert verify_chain(tenant_a) is None
    assert expired == {f"s-{n}": 1 for n in range(40)}


def test_rls_stops_the_raw_seq_claim_for_another_tenant(tenant_a, tenant_b):
    """The append hot path is raw SQL: PostgreSQL's policy still confines it to the tenant."""
    make_session(tenant_a, "s-a")
    wrong = store_for(tenant_a)  # the code believes it serves tenant A...
    with in_tenant(tenant_b), pytest.raises(NotFound):  # ...the transaction is tenant B's
        wrong.append_items(session_id="s-a", items=[item()])
    with in_tenant(tenant_a):
        assert (Session.objects.get().last_seq, SessionItem.objects.count()) == (0, 0)
