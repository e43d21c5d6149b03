"""A running run that no worker holds is visible: `unclaimed_since`, from the store's clock
and the tenant's `unclaimed_run_warning_seconds` (2 minutes unless set)."""

from datetime import timedelta

import pytest

from actions_app.runs import RunActions
from audit_app.models import AuditEvent
from runs_app.store import RunStateStore
from stateroom.actor import Actor
from stateroom.errors import Unprocessable
from tenancy_app.scoping import in_tenant
from tenancy_app.store import TenancyStore
from tests.runs.conftest import Clock, make_run

PERSON = Actor("user", "7", "otto")


def stores(tenant, clock: Clock) -> tuple[RunStateStore, RunActions]:
    return RunStateStore(tenant, Actor.system("runtime"), clock=clock), RunActions(
        tenant, PERSON, clock=clock
    )


def seen(tenant, store: RunStateStore, run_id: str):
    """What the store says of the run: its read (Python) and the list's filter (SQL)."""
    with in_tenant(tenant):
        one = store.get(run_id).unclaimed_since
        listed = {r.run_id: r.unclaimed_since for r in store.list_runs()}[run_id]
        flagged = list(store.list_runs(unclaimed=True).values_list("run_id", flat=True))
    assert listed == one  # the SQL and the Python say the same
    assert flagged == ([run_id] if one else [])
    return one


def test_a_resumed_run_nobody_claims_waits_for_a_worker_after_two_minutes(tenant_a):
    clock = Clock()
    runs, people = stores(tenant_a, clock)
    make_run(tenant_a, "suspended", run_id="r-1")
    with in_tenant(tenant_a):
        resumed = people.resume(run_id="r-1", reason="fixed the API key")
    assert resumed.unclaimed_since is None  # just changed
    clock.advance(119)
    assert seen(tenant_a, runs, "r-1") is None
    clock.advance(1)
    assert seen(tenant_a, runs, "r-1") == resumed.updated_at
    clock.advance(14 * 60)  # still nobody: it keeps saying since when
    assert seen(tenant_a, runs, "r-1") == resumed.updated_at


def test_a_live_claim_clears_it_and_a_lapsed_claim_counts_from_its_end(tenant_a):
    clock = Clock()
    runs, _ = stores(tenant_a, clock)
    run = make_run(tenant_a, "running", run_id="r-1")
    clock.advance(600)
    assert seen(tenant_a, runs, "r-1") == run.updated_at  # running, never claimed
    with in_tenant(tenant_a):
        claimed = runs.claim(run_id="r-1", worker="w1", expected_version=run.version)
    assert claimed.unclaimed_since is None
    clock.advance(59)
    assert seen(tenant_a, runs, "r-1") is None  # the 60 s lease is live
    clock.advance(1 + 119)
    assert seen(tenant_a, runs, "r-1") is None  # lapsed 119 s ago
    clock.advance(1)
    assert seen(tenant_a, runs, "r-1") == claimed.claim_until
    with in_tenant(tenant_a):  # the same worker comes back: held again
        runs.claim(run_id="r-1", worker="w1", expected_version=claimed.version)
    assert seen(tenant_a, runs, "r-1") is None


@pytest.mark.parametrize("status", ["created", "waiting_approval", "suspended", "cancelled"])
def test_only_running_runs_wait_for_a_worker(tenant_a, status):
    clock = Clock()
    runs, _ = stores(tenant_a, clock)
    make_run(tenant_a, status, run_id="r-1")
    clock.advance(3600)
    assert seen(tenant_a, runs, "r-1") is None


def test_the_wait_is_the_tenants_setting_and_changing_it_is_audited(tenant_a, tenant_b):
    make_run(tenant_a, "running", run_id="r-1")
    make_run(tenant_b, "running", run_id="r-1")
    clock = Clock()  # from after both runs' last change
    with in_tenant(tenant_a):
        TenancyStore(tenant_a, PERSON).set_unclaimed_run_warning(seconds=600)
        for bad in (0, 86401, True, "60"):
            with pytest.raises(Unprocessable) as refused:
                TenancyStore(tenant_a, PERSON).set_unclaimed_run_warning(seconds=bad)
            assert list(refused.value.details) == ["unclaimed_run_warning_seconds"]
        event = AuditEvent.objects.filter(action="tenant.settings_changed").get()
    assert (event.before, event.after) == (
        {"unclaimed_run_warning_seconds": 120},
        {"unclaimed_run_warning_seconds": 600},
    )
    tenant_a.refresh_from_db()
    assert tenant_a.unclaimed_run_warning_seconds == 600
    runs, _ = stores(tenant_a, clock)
    clock.advance(599)
    assert seen(tenant_a, runs, "r-1") is None
    clock.advance(1)
    assert seen(tenant_a, runs, "r-1") is not None
    # The other tenant keeps its own default.
    assert seen(tenant_b, RunStateStore(tenant_b, PERSON, clock=clock), "r-1") is not None
    tenant_b.refresh_from_db()
    assert tenant_b.unclaimed_run_warning_seconds == 120


def test_a_persons_reason_is_in_the_runs_history(tenant_a):
    make_run(tenant_a, "running", run_id="r-1")
    runtime = Actor("token", "1", "token:worker", role="runtime")
    with in_tenant(tenant_a):
        RunActions(tenant_a, PERSON).suspend(run_id="r-1", reason="customer on hold")
        RunActions(tenant_a, PERSON).resume(run_id="r-1", reason="customer back")
        # A runtime's reason is agent text: the audit event's payload keeps it, not the history.
        RunActions(tenant_a, runtime).cancel(run_id="r-1", reason="agent gave up")
        store = RunStateStore(tenant_a, PERSON)
        steps = [(t.to_status, t.changes, t.actor_label) for t in store.transitions("r-1")]
        last = store.last_control(store.get("r-1"))
    assert steps[-3:] == [
        ("suspended", {"status": "suspended", "reason": "customer on hold"}, "otto"),
        ("running", {"status": "running", "reason": "customer back"}, "otto"),
        ("cancelled", {"status": "cancelled", "reason": ""}, "token:worker"),
    ]
    assert (last.to_status, last.version) == ("cancelled", 5)


def test_a_run_with_no_control_has_no_last_control(tenant_a):
    make_run(tenant_a, "running", run_id="r-1")
    with in_tenant(tenant_a):
        store = RunStateStore(tenant_a, PERSON)
        assert store.last_control(store.get("r-1")) is None


def test_the_filter_finds_only_waiting_runs_among_many(tenant_a):
    clock = Clock()
    runs, _ = stores(tenant_a, clock)
    for n in range(3):
        make_run(tenant_a, "running", run_id=f"old-{n}")
    make_run(tenant_a, "suspended", run_id="paused")
    clock.advance(300)
    with in_tenant(tenant_a):
        fresh = runs.create(run_id="fresh")
        runs.compare_and_set(run_id="fresh", expected_version=1, changes={"status": "running"})
        flagged = sorted(runs.list_runs(unclaimed=True).values_list("run_id", flat=True))
        statuses = sorted(
            runs.list_runs(unclaimed=True, status="running").values_list("run_id", flat=True)
        )
    assert fresh.run_id == "fresh"
    assert flagged == statuses == ["old-0", "old-1", "old-2"]


def test_the_default_is_two_minutes(tenant_a):
    assert tenant_a.unclaimed_run_warning_seconds == 120
    assert RunStateStore(tenant_a, PERSON).grace() == timedelta(minutes=2)
