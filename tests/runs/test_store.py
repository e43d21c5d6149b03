from datetime import timedelta
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runs_app.models import RUN_TRANSITIONS, TERMINAL_RUN_STATUSES, RunStatus
from runs_app.store import MAX_COUNTER
from stateroom.actor import Actor
from stateroom.errors import Conflict, NotFound, Unprocessable
from stateroom.ids import PUBLIC_ID_RULE
from tenancy_app.scoping import in_tenant

from .conftest import (
    PATHS,
    audit_actions,
    make_checkpoint,
    make_run,
    make_session,
    make_task,
    reload,
    run_store,
)

STATUSES = list(RunStatus.values)


def allowed(current: str, target: str) -> bool:
    return current not in TERMINAL_RUN_STATUSES and (
        current == target or target in RUN_TRANSITIONS[current]
    )


# --- create -------------------------------------------------------------------
def test_create_starts_in_created_at_version_1_with_history(tenant_a):
    make_session(tenant_a)
    make_task(tenant_a)
    run = make_run(
        tenant_a, run_id="r-1", session_id="sess-1", task_id="task-1", active_agent="planner"
    )
    assert (run.run_id, run.status, run.version, run.active_agent) == (
        "r-1",
        "created",
        1,
        "planner",
    )
    with in_tenant(tenant_a):
        run = run_store(tenant_a).get("r-1")
        history = list(
            run_store(tenant_a)
            .transitions("r-1")
            .values_list("version", "from_status", "to_status", "changes")
        )
    assert (run.session.session_id, run.task.task_id) == ("sess-1", "task-1")
    assert history == [(1, "", "created", {"status": "created", "active_agent": "planner"})]
    assert audit_actions(tenant_a) == []  # runtime writes are not audited


def test_create_generates_an_id(tenant_a):
    run = make_run(tenant_a)
    assert run.run_id.startswith("run_") and len(run.run_id) == 24


def test_new_run_in_a_session_inherits_no_transient_state_of_the_previous_run(tenant_a):
    make_session(tenant_a)
    make_checkpoint(tenant_a, "cp-3")
    first = make_run(tenant_a, "running", run_id="r-1", session_id="sess-1")
    with in_tenant(tenant_a):
        store = run_store(tenant_a)
        store.compare_and_set(
            run_id="r-1",
            expected_version=first.version,
            changes={
                "current_node_id": "apply_patch",
                "token_used": 900,
                "cost_used": "1.25",
                "model": "gpt-5-mini",
                "turn_index": 4,
                "pending_approval_id": "apr-x",
                "last_checkpoint_id": "cp-3",
                "error": {"code": "tool_timeout"},
            },
            trace_id="4bf92f3577b34da6a3ce929d0e0e4736",
        )
        store.start_node(run_id="r-1", node_id="apply_patch")
        store.append_events(run_id="r-1", events=[{"type": "tool", "payload": {}}])
        second = store.create(run_id="r-2", session_id="sess-1")
        assert list(store.node_executions("r-2")) == []
        assert store.get_events(run_id="r-2") == []
    row = reload(tenant_a, "r-2")
    assert {k: row[k] for k in row if k not in {"id", "created_at", "updated_at"}} == {
        "tenant_id": tenant_a.pk,
        "run_id": "r-2",
        "session_id": second.session_id,
        "task_id": None,
        "status": "created",
        "previous_status": "",
        "turn_index": 0,
        "active_agent": "",
        "current_node_id": "",
        "deadline_at": None,
        "token_used": 0,
        "cost_used": Decimal("0"),
        "model": "",
        "trace_id": None,
        "pending_approval_id": "",
        "last_checkpoint_id": "",
        "error": None,
        "version": 1,
        "claimed_by": "",
        "claim_until": None,
        "last_event_seq": 0,
        "created_by_token_id": None,  # made by the test's system actor, not a runtime token
        "content_fenced_at": None,
    }


def test_create_refuses_duplicate_id_and_bad_references(tenant_a, tenant_b):
    make_run(tenant_a, run_id="r-1")
    make_session(tenant_b, "sess-b")
    make_task(tenant_b, "task-b")
    with in_tenant(tenant_a):
        store = run_store(tenant_a)
        with pytest.raises(Conflict) as dup:
            store.create(run_id="r-1")
        with pytest.raises(NotFound) as no_session:
            store.create(run_id="r-2", session_id="sess-b")  # another tenant's
        with pytest.raises(NotFound) as no_task:
            store.create(run_id="r-2", task_id="task-b")
        with pytest.raises(Unprocessable) as bad_id:
            store.create(run_id="bad id/")
        assert list(store.list_runs().values_list("run_id", flat=True)) == ["r-1"]
    assert dup.value.code == "run_exists"
    assert no_session.value.details == {"session_id": "sess-b"}
    assert no_task.value.details == {"task_id": "task-b"}
    assert bad_id.value.details == {"run_id": [PUBLIC_ID_RULE]}


def test_same_run_id_in_two_tenants_are_two_runs(tenant_a, tenant_b):
    make_run(tenant_a, run_id="shared")
    make_run(tenant_b, "running", run_id="shared")
    assert reload(tenant_a, "shared")["status"] == "created"
    assert reload(tenant_b, "shared")["status"] == "running"
    with in_tenant(tenant_a), pytest.raises(NotFound):
        run_store(tenant_a).get("only-b")


# --- compare-and-set -------------------------------------------------------------
def test_cas_applies_changes_bumps_version_and_records_transition(tenant_a, run_a):
    with in_tenant(tenant_a):
        store = run_store(tenant_a, Actor.system("worker-host"))
        run = store.compare_and_set(
            run_id="run-a",
            expected_version=1,
            changes={"status": "running", "turn_index": 1, "token_used": 10, "cost_used": 0.5},
        )
        history = list(store.transitions("run-a").values("version", "from_status", "to_status"))
        last = store.transitions("run-a").last()
    assert (run.status, run.version, run.turn_index, run.token_used, run.cost_used) == (
        "running",
        2,
        1,
        10,
        Decimal("0.500000"),
    )
    assert history == [
        {"version": 1, "from_status": "", "to_status": "created"},
        {"version": 2, "from_status": "created", "to_status": "running"},
    ]
    assert last.changes == {
        "status": "running",
        "turn_index": 1,
        "token_used": 10,
        "cost_used": "0.5",
    }
    assert last.actor_label == "worker-host"


def test_cas_without_status_keeps_status_and_still_bumps_version(tenant_a):
    make_run(tenant_a, "waiting_approval", run_id="r-1")
    with in_tenant(tenant_a):
        run = run_store(tenant_a).compare_and_set(
            run_id="r-1", expected_version=3, changes={"current_node_id": "n1"}
        )
    assert (run.status, run.version, run.current_node_id) == ("waiting_approval", 4, "n1")


def test_cas_with_stale_version_is_409_with_current_version_and_changes_nothing(tenant_a):
    make_run(tenant_a, "running", run_id="r-1")
    before = reload(tenant_a, "r-1")
    with in_tenant(tenant_a), pytest.raises(Conflict) as exc:
        run_store(tenant_a).compare_and_set(
            run_id="r-1", expected_version=1, changes={"status": "succeeded"}
        )
    assert exc.value.code == "version_conflict"
    assert exc.value.details == {"current_version": 2, "expected_version": 1, "status": "running"}
    assert reload(tenant_a, "r-1") == before


def test_cas_on_unknown_or_other_tenants_run_is_404(tenant_a, tenant_b):
    make_run(tenant_b, run_id="r-b")
    with in_tenant(tenant_a):
        store = run_store(tenant_a)
        for run_id in ("missing", "r-b"):
            with pytest.raises(NotFound):
                store.compare_and_set(run_id=run_id, expected_version=1, changes={})
    assert reload(tenant_b, "r-b")["version"] == 1


@pytest.mark.parametrize(
    ("changes", "details"),
    [
        ({"status": "bogus"}, {"status": [f"must be one of {', '.join(STATUSES)}"]}),
        ({"version": 9}, {"version": ["not a field a run transition may change"]}),
        ({"claimed_by": "me"}, {"claimed_by": ["not a field a run transition may change"]}),
        ({"token_used": -1}, {"token_used": [f"must be from 0 to {MAX_COUNTER}"]}),
        ({"token_used": "7"}, {"token_used": ["must be an integer"]}),
        ({"turn_index": True}, {"turn_index": ["must be an integer"]}),
        ({"cost_used": "abc"}, {"cost_used": ["must be a decimal number"]}),
        ({"cost_used": "1e13"}, {"cost_used": ["must be from 0 to less than 10^12"]}),
        ({"error": "boom"}, {"error": ["must be an object or null"]}),
        ({"current_node_id": "x" * 201}, {"current_node_id": ["at most 200 characters"]}),
        ({"last_checkpoint_id": 5}, {"last_checkpoint_id": ["must be a string"]}),
    ],
)
def test_cas_with_invalid_changes_is_422_and_changes_nothing(tenant_a, run_a, changes, details):
    before = reload(tenant_a, "run-a")
    with in_tenant(tenant_a), pytest.raises(Unprocessable) as exc:
        run_store(tenant_a).compare_and_set(run_id="run-a", expected_version=1, changes=changes)
    assert exc.value.details == details
    assert reload(tenant_a, "run-a") == before


def test_every_pair_of_statuses_follows_the_state_machine(tenant_a):
    """Exhaustive: from each status, each target is applied iff RUN_TRANSITIONS allows it."""
    for current in STATUSES:
        for target in STATUSES:
            run = make_run(tenant_a, current, run_id=f"{current}-to-{target}")
            before = reload(tenant_a, run.run_id)
            with in_tenant(tenant_a):
                store = run_store(tenant_a)
                if allowed(current, target):
                    moved = store.compare_and_set(
                        run_id=run.run_id,
                        expected_version=run.version,
                        changes={"status": target},
                    )
                    assert (moved.status, moved.version) == (target, run.version + 1)
                    continue
                with pytest.raises(Conflict) as exc:
                    store.compare_and_set(
                        run_id=run.run_id,
                        expected_version=run.version,
                        changes={"status": target},
                    )
            assert exc.value.code == "invalid_transition", (current, target)
            assert exc.value.details == {
                "from": current,
                "to": target,
                "current_version": run.version,
            }
            assert reload(tenant_a, run.run_id) == before


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(targets=st.lists(st.sampled_from(STATUSES), max_size=8))
def test_random_transition_sequences_match_the_state_machine_model(tenant_a, targets):
    with in_tenant(tenant_a):
        store = run_store(tenant_a)
        run = store.create()
        status, version = "created", 1
        for target in targets:
            before = reload(tenant_a, run.run_id)
            if allowed(status, target):
                run = store.compare_and_set(
                    run_id=run.run_id, expected_version=version, changes={"status": target}
                )
                status, version = target, version + 1
            else:
                with pytest.raises(Conflict) as exc:
                    store.compare_and_set(
                        run_id=run.run_id, expected_version=version, changes={"status": target}
                    )
                assert exc.value.code == "invalid_transition"
                assert reload(tenant_a, run.run_id) == before
            assert (run.status, run.version) == (status, version)
        assert store.transitions(run.run_id).count() == version


@pytest.mark.parametrize("status", sorted(TERMINAL_RUN_STATUSES))
def test_terminal_run_refuses_every_write(tenant_a, status):
    run = make_run(tenant_a, status, run_id="done")
    before = reload(tenant_a, "done")
    with in_tenant(tenant_a):
        store = run_store(tenant_a)
        refusals = []
        for call in (
            lambda: store.compare_and_set(run_id="done", expected_version=run.version, changes={}),
            lambda: store.compare_and_set(
                run_id="done", expected_version=run.version, changes={"token_used": 5}
            ),
            lambda: store.compare_and_set(
                run_id="done", expected_version=1, changes={"status": "running"}
            ),
            lambda: store.claim(run_id="done", worker="w1", expected_version=run.version),
            lambda: store.cancel(run_id="done", reason="stop"),
            lambda: store.append_events(run_id="done", events=[{"type": "x", "payload": 1}]),
            lambda: store.start_node(run_id="done", node_id="n1"),
        ):
            with pytest.raises(Conflict) as exc:
                call()
            refusals.append(exc.value.code)
    assert refusals == ["invalid_transition"] * 5 + ["run_terminal"] * 2
    assert reload(tenant_a, "done") == before


def test_transition_to_terminal_clears_pending_approval_id(tenant_a):
    make_run(tenant_a, "running", run_id="r-1")
    with in_tenant(tenant_a):
        store = run_store(tenant_a)
        store.compare_and_set(
            run_id="r-1", expected_version=2, changes={"pending_approval_id": "apr-1"}
        )
        run = store.compare_and_set(
            run_id="r-1", expected_version=3, changes={"status": "succeeded"}
        )
    assert (run.status, run.pending_approval_id) == ("succeeded", "")


# --- claims -----------------------------------------------------------------------
def test_claim_gives_one_worker_the_run_until_the_lease_ends(tenant_a, clock):
    make_run(tenant_a, "running", run_id="r-1")
    with in_tenant(tenant_a):
        store = run_store(tenant_a, clock=clock)
        claimed = store.claim(run_id="r-1", worker="w1", expected_version=2, lease_seconds=60)
        assert (claimed.version, claimed.claimed_by) == (3, "w1")
        assert claimed.claim_until == clock.current + timedelta(seconds=60)
        before = reload(tenant_a, "r-1")
        with pytest.raises(Conflict) as other:
            store.compare_and_set(
                run_id="r-1", expected_version=3, changes={"token_used": 1}, worker="w2"
            )
        with pytest.raises(Conflict) as other_claim:
            store.claim(run_id="r-1", worker="w2", expected_version=3)
        assert reload(tenant_a, "r-1") == before
        mine = store.compare_and_set(
            run_id="r-1", expected_version=3, changes={"token_used": 1}, worker="w1"
        )
        assert mine.version == 4
        renewed = store.claim(run_id="r-1", worker="w1", expected_version=4, lease_seconds=30)
        assert renewed.claim_until == clock.current + timedelta(seconds=30)
        last = store.transitions("r-1").last()
    assert other.value.code == "run_claimed"
    assert other.value.details == {
        "claimed_by": "w1",
        "claim_until": claimed.claim_until.isoformat(),
        "current_version": 3,
    }
    assert other_claim.value.code == "run_claimed"
    assert (last.version, last.changes["claimed_by"], last.actor_label) == (5, "w1", "test (w1)")


def test_superseded_worker_cannot_write(tenant_a, clock):
    make_run(tenant_a, "running", run_id="r-1")
    with in_tenant(tenant_a):
        store = run_store(tenant_a, clock=clock)
        store.claim(run_id="r-1", worker="w1", expected_version=2, lease_seconds=60)
        clock.advance(61)  # w1 stalls past its lease; w2 takes over
        taken = store.claim(run_id="r-1", worker="w2", expected_version=3, lease_seconds=60)
        before = reload(tenant_a, "r-1")
        with pytest.raises(Conflict) as stale:
            store.compare_and_set(
                run_id="r-1", expected_version=3, changes={"status": "succeeded"}, worker="w1"
            )
        with pytest.raises(Conflict) as reread:
            store.compare_and_set(
                run_id="r-1",
                expected_version=taken.version,
                changes={"status": "succeeded"},
                worker="w1",
            )
        assert reload(tenant_a, "r-1") == before
    assert stale.value.code == "version_conflict"
    assert reread.value.code == "run_claimed"
    assert reread.value.details["claimed_by"] == "w2"


def test_expired_claim_lets_another_worker_write(tenant_a, clock):
    make_run(tenant_a, "running", run_id="r-1")
    with in_tenant(tenant_a):
        store = run_store(tenant_a, clock=clock)
        store.claim(run_id="r-1", worker="w1", expected_version=2, lease_seconds=10)
        clock.advance(10)
        run = store.compare_and_set(
            run_id="r-1", expected_version=3, changes={"status": "suspended"}, worker="w2"
        )
    assert (run.status, run.version) == ("suspended", 4)


def test_claim_validates_its_arguments(tenant_a, run_a):
    with in_tenant(tenant_a):
        store = run_store(tenant_a)
        with pytest.raises(Unprocessable):
            store.claim(run_id="run-a", worker="", expected_version=1)
        with pytest.raises(Unprocessable):
            store.claim(run_id="run-a", worker="w", expected_version=1, lease_seconds=0)
        with pytest.raises(NotFound):
            store.claim(run_id="nope", worker="w", expected_version=1)
    assert reload(tenant_a, "run-a")["version"] == 1


# --- events and nodes ---------------------------------------------------------------
def test_events_are_numbered_gap_free_per_run(tenant_a, run_a):
    make_run(tenant_a, run_id="other")
    with in_tenant(tenant_a):
        store = run_store(tenant_a)
        first = store.append_events(
            run_id="run-a",
            events=[{"type": "model", "payload": {"n": 1}}, {"type": "tool", "node_id": "n1"}],
        )
        store.append_events(run_id="other", events=[{"type": "model", "payload": None}])
        second = store.append_events(run_id="run-a", events=[{"type": "done", "payload": [1]}])
        assert [e.seq for e in first + second] == [1, 2, 3]
        events = store.get_events(run_id="run-a")
        page = store.get_events(run_id="run-a", after=1, limit=1)
        assert [e.seq for e in store.get_events(run_id="other")] == [1]
    assert [(e.seq, e.type, e.node_id, e.payload) for e in events] == [
        (1, "model", "", {"n": 1}),
        (2, "tool", "n1", None),
        (3, "done", "", [1]),
    ]
    assert [e.seq for e in page] == [2]
    row = reload(tenant_a, "run-a")
    assert (row["last_event_seq"], row["version"]) == (3, 1)  # events are not a CAS


@pytest.mark.parametrize(
    "events",
    [[], "x", [{"payload": 1}], [{"type": ""}], [{"type": "x" * 65}], ["x"], [{"type": 1}]],
)
def test_invalid_events_are_refused_without_numbering(tenant_a, run_a, events):
    with in_tenant(tenant_a), pytest.raises(Unprocessable):
        run_store(tenant_a).append_events(run_id="run-a", events=events)
    assert reload(tenant_a, "run-a")["last_event_seq"] == 0


def test_node_executions_count_attempts(tenant_a):
    make_run(tenant_a, "running", run_id="r-1")
    with in_tenant(tenant_a):
        store = run_store(tenant_a)
        first = store.start_node(run_id="r-1", node_id="fetch")
        second = store.start_node(run_id="r-1", node_id="fetch")  # after a crash
        store.finish_node(run_id="r-1", node_id="fetch", status="succeeded")
        other = store.start_node(run_id="r-1", node_id="write")
        store.finish_node(run_id="r-1", node_id="write", status="failed", error={"code": "x"})
        with pytest.raises(Conflict) as twice:
            store.finish_node(run_id="r-1", node_id="write", status="succeeded")
        with pytest.raises(Conflict):
            store.finish_node(run_id="r-1", node_id="never", status="succeeded")
        with pytest.raises(Unprocessable):
            store.finish_node(run_id="r-1", node_id="write", status="started")
        rows = list(
            store.node_executions("r-1").values_list("node_id", "attempt", "status", "error")
        )
    assert (first.attempt, second.attempt, other.attempt) == (1, 2, 1)
    assert twice.value.code == "node_not_started"
    assert rows == [
        ("fetch", 1, "failed", {"code": "superseded", "message": "A new attempt started."}),
        ("fetch", 2, "succeeded", None),
        ("write", 1, "failed", {"code": "x"}),
    ]


# --- people and the system -------------------------------------------------------------
def test_cancel_is_audited_and_final(tenant_a, admin_a):
    make_run(tenant_a, "running", run_id="r-1")
    with in_tenant(tenant_a):
        run = run_store(tenant_a, Actor.for_user(admin_a)).cancel(run_id="r-1", reason="runaway")
        with pytest.raises(Conflict) as again:
            run_store(tenant_a).cancel(run_id="r-1", reason="again")
        with pytest.raises(NotFound):
            run_store(tenant_a).cancel(run_id="missing", reason="x")
        from audit_app.models import AuditEvent

        event = AuditEvent.objects.get(tenant=tenant_a, action="run.cancelled")
    assert (run.status, run.version) == ("cancelled", 3)
    assert again.value.code == "invalid_transition"
    assert (event.actor_type, event.actor_label, event.target_id, event.reason) == (
        "user",
        "ada",
        "r-1",
        "runaway",
    )
    assert (event.before, event.after) == (
        {"status": "running", "version": 2},
        {"status": "cancelled", "version": 3},
    )


def test_fail_overdue_fails_only_overdue_live_runs_and_audits_each(tenant_a, tenant_b, clock):
    past = clock.current - timedelta(minutes=5)
    future = clock.current + timedelta(minutes=5)
    make_run(tenant_a, "running", run_id="late-1", deadline_at=past - timedelta(minutes=1))
    make_run(tenant_a, "waiting_approval", run_id="late-2", deadline_at=past)
    make_run(tenant_a, "created", run_id="late-3", deadline_at=past + timedelta(seconds=1))
    make_run(tenant_a, "running", run_id="on-time", deadline_at=future)
    make_run(tenant_a, "running", run_id="no-deadline")
    make_run(tenant_a, "succeeded", run_id="done", deadline_at=past)
    make_run(tenant_b, "running", run_id="late-b", deadline_at=past)
    with in_tenant(tenant_a):
        store = run_store(tenant_a, Actor.system("sweep"), clock=clock)
        assert [run.run_id for run in store.fail_overdue(limit=2)] == ["late-1", "late-2"]
        assert [run.run_id for run in store.fail_overdue(limit=2)] == ["late-3"]
        assert store.fail_overdue() == []
    statuses = {r: reload(tenant_a, r)["status"] for r in ("late-1", "late-2", "late-3")}
    assert statuses == {"late-1": "failed", "late-2": "failed", "late-3": "failed"}
    assert reload(tenant_a, "late-1")["error"] == {
        "code": "deadline_exceeded",
        "message": "The run passed its deadline.",
        "deadline_at": (past - timedelta(minutes=1)).isoformat(),
    }
    assert reload(tenant_a, "on-time")["status"] == "running"
    assert reload(tenant_a, "no-deadline")["status"] == "running"
    assert reload(tenant_a, "done")["status"] == "succeeded"
    assert reload(tenant_b, "late-b")["status"] == "running"
    assert audit_actions(tenant_a) == [
        ("run.deadline_exceeded", "late-1", "system"),
        ("run.deadline_exceeded", "late-2", "system"),
        ("run.deadline_exceeded", "late-3", "system"),
    ]


def test_lists_filter_and_validate(tenant_a, tenant_b):
    make_session(tenant_a)
    make_run(tenant_a, "running", run_id="r-1", session_id="sess-1")
    make_run(tenant_a, run_id="r-2")
    make_run(tenant_b, "running", run_id="r-b")
    with in_tenant(tenant_a):
        store = run_store(tenant_a)
        assert sorted(store.list_runs().values_list("run_id", flat=True)) == ["r-1", "r-2"]
        assert list(store.list_runs(status="running").values_list("run_id", flat=True)) == ["r-1"]
        assert list(store.list_runs(session_id="sess-1").values_list("run_id", flat=True)) == [
            "r-1"
        ]
        with pytest.raises(Unprocessable):
            store.list_runs(status="bogus")


def test_paths_fixture_reaches_every_status(tenant_a):
    assert set(PATHS) == set(STATUSES)
