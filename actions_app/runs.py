"""Ending a run: the run store ends it, the approval store withdraws its pending approval.

Runs do not know approvals; approvals build on runs. Whatever ends a run
(the runtime's compare-and-set to a terminal status, a person's cancel, the
deadline sweep) comes through `RunActions`, so the approval it was waiting
on is cancelled (audited `approval.cancelled`) in the transaction that ends
the run, while that transaction holds the run's row lock: the lock order is
the run, then the approval, as everywhere in the approvals store.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from approvals_app.store import ApprovalStore
from runs_app.models import Run, RunEvent
from runs_app.store import RunStateStore
from stateroom.actor import Actor
from stateroom.errors import StateroomError
from tenancy_app.models import Tenant


class RunActions:
    """The run operations that may end a run, for one tenant and one actor (like a store)."""

    def __init__(
        self, tenant: Tenant, actor: Actor, *, clock: Callable[[], datetime] = timezone.now
    ) -> None:
        self.runs = RunStateStore(tenant, actor, clock=clock)
        self.approvals = ApprovalStore(tenant, actor, clock=clock)

    def compare_and_set(
        self,
        *,
        run_id: str,
        expected_version: int,
        changes: dict[str, Any],
        worker: str | None = None,
        trace_id: str | None = None,
    ) -> Run:
        """`RunStateStore.compare_and_set`; a run it ends withdraws its pending approval.

        A refusal writes nothing and leaves the caller's transaction usable, as
        the store's own refusals do: it is raised after the (savepoint-free)
        transaction block, so the hot path pays no savepoint.
        """
        refusal: StateroomError | None = None
        with transaction.atomic(savepoint=False):
            try:
                run = self.runs.compare_and_set(
                    run_id=run_id,
                    expected_version=expected_version,
                    changes=changes,
                    worker=worker,
                    trace_id=trace_id,
                )
            except StateroomError as exc:  # raised after the store wrote nothing
                refusal = exc
            else:
                if run.is_terminal:
                    self.approvals.withdraw_for_run(run=run, reason=f"run {run.status}")
        if refusal is not None:
            raise refusal
        return run

    def step(
        self,
        *,
        run_id: str,
        expected_version: int,
        worker: str | None = None,
        claim_lease: int | None = None,
        events: list[dict[str, Any]] | None = None,
        changes: dict[str, Any] | None = None,
    ) -> tuple[Run, list[RunEvent]]:
        """A runtime's usual calls in a row, as one transaction: claim, events, compare-and-set.

        Each part is the store call the separate endpoint makes, with its rules
        and audit: `claim` (at `expected_version`, when `claim_lease` is given),
        `append_events` (events do not move the version), then
        `compare_and_set` (at the version the claim left, when `changes` is
        given; a run it ends withdraws its pending approval). Events come before
        the transition: they tell what the step did, and a run that has ended
        takes none. Any refusal rolls every part back (nothing half-written)
        and is raised as the separate call would raise it.
        """
        if claim_lease is None and changes is None:
            raise ValueError("a step claims the run, transitions it, or both")
        appended: list[RunEvent] = []
        with transaction.atomic():
            version = expected_version
            run: Run | None = None
            if claim_lease is not None:
                run = self.runs.claim(
                    run_id=run_id,
                    worker=worker or "",
                    expected_version=expected_version,
                    lease_seconds=claim_lease,
                )
                version = run.version
            if events:
                appended = self.runs.append_events(run_id=run_id, events=events, worker=worker)
            if changes is not None:
                run = self.compare_and_set(
                    run_id=run_id, expected_version=version, changes=changes, worker=worker
                )
        assert run is not None  # claimed, transitioned, or both (checked above)
        return run, appended

    def cancel(self, *, run_id: str, reason: str, expected_version: int | None = None) -> Run:
        """`RunStateStore.cancel` (audited `run.cancelled`), and the pending approval withdrawn."""
        with transaction.atomic():
            run = self.runs.cancel(run_id=run_id, reason=reason, expected_version=expected_version)
            self.approvals.withdraw_for_run(run=run, reason=reason or "run cancelled")
        return run

    def suspend(self, *, run_id: str, reason: str, expected_version: int | None = None) -> Run:
        """`RunStateStore.suspend`; a run that waited on an approval no longer does.

        A suspended run waits for a person, not for a decision: its pending
        approval is withdrawn (audited `approval.cancelled`) in the same
        transaction, so the inbox never offers a call whose run is paused.
        """
        with transaction.atomic():
            run = self.runs.suspend(run_id=run_id, reason=reason, expected_version=expected_version)
            self.approvals.withdraw_for_run(run=run, reason=reason or "run suspended")
        return run

    def resume(self, *, run_id: str, reason: str, expected_version: int | None = None) -> Run:
        """`RunStateStore.resume`: the run goes back to its runtime (README "Run control")."""
        return self.runs.resume(run_id=run_id, reason=reason, expected_version=expected_version)

    CONTROLS = ("cancel", "suspend", "resume")

    def control(
        self, *, action: str, run_id: str, reason: str, expected_version: int | None = None
    ) -> Run:
        """One of `CONTROLS` by name (the console's forms post the name)."""
        if action not in self.CONTROLS:
            raise ValueError(action)
        method = getattr(self, action)
        return method(run_id=run_id, reason=reason, expected_version=expected_version)

    def fail_overdue(self, *, limit: int = 500) -> int:
        """`RunStateStore.fail_overdue`; each failed run's pending approval withdrawn. How many."""
        with transaction.atomic():
            failed = self.runs.fail_overdue(limit=limit)
            for run in failed:
                self.approvals.withdraw_for_run(run=run, reason="run passed its deadline")
        return len(failed)
