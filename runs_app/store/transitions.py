"""The runtime's writes: compare-and-set on the version, and claims (leases)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from stateroom.errors import Unprocessable
from stateroom.ids import MAX_WORKER_LENGTH
from stateroom.leases import DEFAULT_CLAIM_LEASE_SECONDS, MAX_CLAIM_LEASE_SECONDS

from ..models import TERMINAL_RUN_STATUSES, Run, RunStatus
from .base import RunStoreBase
from .sql import Transition
from .state import NO_CLAIM, NON_TERMINAL_STATUSES, NOT_FENCED, UNCLAIMED_STATUSES, allowed_from
from .validation import check_trace_id, clean_changes


def _cas_sets(values: dict[str, Any], now: datetime, trace_id: str | None) -> dict[str, Any]:
    """What a compare-and-set writes besides `values`: the time, a dropped claim (a run that
    waits or ended is held by nobody), no old error on a run that succeeds without one, the
    trace id (kept only while the run has none: `KEEP_FIRST`)."""
    target = values.get("status")
    sets: dict[str, Any] = {**values, "updated_at": now}
    if trace_id is not None:
        sets["trace_id"] = trace_id
    if target in UNCLAIMED_STATUSES:
        sets.update(NO_CLAIM)
    if target == RunStatus.SUCCEEDED and "error" not in values:
        sets["error"] = None
    return sets


class RunTransitions(RunStoreBase):
    def compare_and_set(
        self,
        *,
        run_id: str,
        expected_version: int,
        changes: dict[str, Any],
        worker: str | None = None,
        as_runtime: bool = True,
        trace_id: str | None = None,
    ) -> Run:
        """Apply `changes` if the run is still at `expected_version`; version + 1.

        Refusals (nothing written): 404 unknown run (or unknown
        `last_checkpoint_id`: every id in a body names an object of this
        tenant); 409 `content_deleted` for a fenced run; 409 `invalid_transition`
        for a terminal run or a status the state machine does not allow from
        the current one; 409 `version_conflict` (details.current_version) for a
        stale version; 409 `run_claimed` when another worker's claim is live
        (a runtime write, `as_runtime`, must name the claiming `worker`).
        `as_runtime=False` is a change by a person or the system (a decision,
        an expiry) that no claim holds back: only the version protects it.
        A run that ends here waits on no approval any more (`pending_approval_id`
        cleared); `RunActions.compare_and_set` also withdraws the approval.
        A run that moves to `waiting_approval`, `suspended` or an end is held
        by nobody (its claim dropped); one that succeeds without an `error`
        in `changes` carries none (a recovered run's old error goes).
        `trace_id` (the W3C trace id of the runtime's call) is kept only by a run
        that has none yet: a run links the trace of its start.
        """
        values = self._checked_changes(changes)
        check_trace_id(trace_id)
        now = self.now()
        target = values.get("status")
        conditions: list[tuple[str, list[Any]]] = [
            ('"version" = %s', [expected_version]),
            self._status_condition(allowed_from(target) if target else NON_TERMINAL_STATUSES),
            NOT_FENCED,
        ]
        if as_runtime:
            conditions.append(self._claim_condition(worker, now))
        # One statement: it changes the run and records its transition, or
        # writes nothing and reads why (no second query, no savepoint).
        run, seen = self._update_explained(
            run_id=run_id,
            sets=_cas_sets(values, now, trace_id),
            conditions=conditions,
            transition=Transition(values, worker, now),
        )
        if run is None:
            raise self._why_refused(
                run_id=run_id,
                expected_version=expected_version,
                target=target,
                worker=worker if as_runtime else None,
                claims=as_runtime,
                now=now,
                seen=seen,
                explained=True,
            )
        return run

    def _checked_changes(self, changes: dict[str, Any]) -> dict[str, Any]:
        """The changes of a compare-and-set, checked (422, 404 unknown checkpoint); a run
        that ends waits on nothing."""
        values = clean_changes(changes)
        if values.get("status") in TERMINAL_RUN_STATUSES:
            values["pending_approval_id"] = ""  # a finished run waits on nothing
        if values.get("last_checkpoint_id"):
            with self.reading():
                self._require_checkpoint(values["last_checkpoint_id"])
        return values

    def claim(
        self,
        *,
        run_id: str,
        worker: str,
        expected_version: int,
        lease_seconds: int = DEFAULT_CLAIM_LEASE_SECONDS,
    ) -> Run:
        """Make `worker` the run's only writer until the lease ends; version + 1.

        Two workers claiming the same version: one wins, the other gets 409
        `version_conflict`. A live claim of another worker is 409 `run_claimed`.
        The same worker may renew its claim. A worker whose claim expired and
        was taken is superseded: its version is stale and the claim is not its.
        """
        if not isinstance(worker, str) or not worker or len(worker) > MAX_WORKER_LENGTH:
            raise Unprocessable(
                "A worker name is required.",
                details={"worker": [f"1-{MAX_WORKER_LENGTH} characters"]},
            )
        if (
            isinstance(lease_seconds, bool)
            or not isinstance(lease_seconds, int)
            or not 1 <= lease_seconds <= MAX_CLAIM_LEASE_SECONDS
        ):
            raise Unprocessable(
                "lease_seconds out of range.",
                details={"lease_seconds": [f"from 1 to {MAX_CLAIM_LEASE_SECONDS}"]},
            )
        now = self.now()
        claim_until = now + timedelta(seconds=lease_seconds)
        with self.atomic():
            run = self._update_returning(
                where={"run_id": run_id},
                sets={"claimed_by": worker, "claim_until": claim_until, "updated_at": now},
                conditions=[
                    ('"version" = %s', [expected_version]),
                    self._status_condition(NON_TERMINAL_STATUSES),
                    NOT_FENCED,
                    self._claim_condition(worker, now),
                ],
                transition=Transition(
                    {"claimed_by": worker, "claim_until": claim_until}, worker, now
                ),
            )
            if run is None:
                raise self._why_refused(
                    run_id=run_id,
                    expected_version=expected_version,
                    target=None,
                    worker=worker,
                    claims=True,
                    now=now,
                )
        return run
