"""The changes of people and the system: cancel, suspend, resume, the deadline sweep."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from outbox_app.relay import enqueue
from stateroom.errors import Conflict, NotFound
from stateroom.reasons import check_reason
from tenancy_app.models import RuntimeToken

from ..models import TERMINAL_RUN_STATUSES, Run, RunStatus
from ..webhooks import NOTIFY_RUN_CONTROL
from .base import RunStoreBase
from .sql import Transition
from .state import NO_CLAIM, NON_TERMINAL_STATUSES


class RunControl(RunStoreBase):
    def cancel(self, *, run_id: str, reason: str, expected_version: int | None = None) -> Run:
        """A person stops a run, whatever its claim (audited `run.cancelled`).

        With `expected_version` (the version the person saw) it is a
        compare-and-set: a run that moved since is 409 `version_conflict` and
        nothing changes. The runtime that created the run hears of it by
        webhook. `RunActions.cancel` also withdraws the run's pending approval.
        """
        return self._by_person(
            run_id=run_id,
            action="run.cancelled",
            to_status=RunStatus.CANCELLED,
            allowed=NON_TERMINAL_STATUSES,
            reason=reason,
            expected_version=expected_version,
        )

    def suspend(self, *, run_id: str, reason: str, expected_version: int | None = None) -> Run:
        """A person pauses a running (or waiting) run: `suspended`, audited `run.suspended`.

        The runtime learns it by webhook and at its next write (409, the run
        is suspended at a newer version): it stops at its next checkpoint.
        `RunActions.suspend` withdraws the approval a waiting run asked for.
        """
        return self._by_person(
            run_id=run_id,
            action="run.suspended",
            to_status=RunStatus.SUSPENDED,
            allowed=(RunStatus.RUNNING, RunStatus.WAITING_APPROVAL),
            reason=reason,
            expected_version=expected_version,
        )

    def resume(self, *, run_id: str, reason: str, expected_version: int | None = None) -> Run:
        """A person hands a suspended run back to its runtime: `running`, audited `run.resumed`.

        The resume contract (README "Run control"): the runtime that created
        the run gets a `run.resumed` webhook with the run; it claims the run
        at that version (`POST /runs/{id}/claim`) and continues from
        `last_checkpoint_id`, asking the effect ledger before repeating any
        effect. Until a worker claims it the inspector says nobody has.
        """
        return self._by_person(
            run_id=run_id,
            action="run.resumed",
            to_status=RunStatus.RUNNING,
            allowed=(RunStatus.SUSPENDED,),
            reason=reason,
            expected_version=expected_version,
        )

    def _by_person(
        self,
        *,
        run_id: str,
        action: str,
        to_status: str,
        allowed: Iterable[str],
        reason: str,
        expected_version: int | None,
    ) -> Run:
        """One compare-and-set by a person (or the system), audited, the runtime told."""
        check_reason(reason)
        now = self.now()
        allowed = tuple(allowed)
        # A person takes the run from whichever worker held it: cancelled or
        # suspended it is held by nobody, resumed it goes to the next claimant.
        sets: dict[str, Any] = {"status": to_status, "updated_at": now, **NO_CLAIM}
        if to_status in TERMINAL_RUN_STATUSES or to_status == RunStatus.SUSPENDED:
            sets["pending_approval_id"] = ""  # a paused or ended run waits on nothing
        conditions = [self._status_condition(allowed)]
        if expected_version is not None:
            conditions.append(('"version" = %s', [expected_version]))
        with self.atomic():
            run = self._update_returning(
                where={"run_id": run_id},
                sets=sets,
                conditions=conditions,
                transition=Transition(
                    {"status": to_status, "reason": self._step_reason(reason)}, None, now
                ),
            )
            if run is None:
                raise self._why_person_refused(run_id, to_status, allowed, expected_version)
            self.audit(
                action,
                target_type="run",
                target_id=run.run_id,
                before={"status": run.previous_status, "version": run.version - 1},
                after={"status": run.status, "version": run.version},
                reason=reason,
            )
            self._notify(run, action)
        return run

    def _step_reason(self, reason: str) -> str:
        """The reason a control step keeps (the run's timeline says why): a person's or an
        operator token's own words. A runtime's is agent text, which the status history
        must not keep past a content deletion: the audit event's detached payload has it."""
        return "" if self.actor.writes_content else reason

    def _why_person_refused(
        self, run_id: str, to_status: str, allowed: tuple[str, ...], expected_version: int | None
    ) -> Exception:
        current = self._runs().filter(run_id=run_id).first()
        if current is None:
            return NotFound("No such run.", details={"run_id": run_id})
        if current.is_terminal:
            return self._terminal(current, to_status)
        if expected_version is not None and current.version != expected_version:
            return Conflict(
                "The run changed since you read it.",
                code="version_conflict",
                details={
                    "current_version": current.version,
                    "expected_version": expected_version,
                    "status": current.status,
                },
            )
        return Conflict(
            f"A run cannot go from {current.status} to {to_status} here.",
            code="invalid_transition",
            details={"from": current.status, "to": to_status, "current_version": current.version},
        )

    def _notify(self, run: Run, action: str) -> None:
        """Tell the runtime that created the run (if its token has a webhook), through the
        outbox: the job is written in this transaction and published after the commit."""
        if run.created_by_token_id is None:
            return
        has_webhook = (
            RuntimeToken.objects.filter(
                pk=run.created_by_token_id, tenant=self.tenant, revoked_at__isnull=True
            )
            .exclude(webhook_url="")
            .exists()
        )
        if has_webhook:
            enqueue(
                tenant=self.tenant,
                task=NOTIFY_RUN_CONTROL,
                args=[self.tenant.pk, run.run_id, run.version, action],
            )

    def fail_overdue(self, *, limit: int = 500) -> list[Run]:
        """Sweep: non-terminal runs past `deadline_at` -> `failed` (`deadline_exceeded`).

        Bounded to `limit` runs; returns the runs it failed. Rows another
        transaction holds are skipped (`skip_locked`, the next sweep gets them)
        and each update re-checks status and deadline, so two sweeps at once
        fail each run exactly once. Each is audited `run.deadline_exceeded`
        with the store's (system) actor. `RunActions.fail_overdue` also
        withdraws the failed runs' pending approvals.
        """
        now = self.now()
        failed: list[Run] = []
        with self.atomic():
            overdue = list(
                self._runs()
                .select_for_update(skip_locked=True)
                .filter(status__in=NON_TERMINAL_STATUSES, deadline_at__lt=now)
                .order_by("deadline_at", "id")[:limit]
            )
            for candidate in overdue:
                error = {
                    "code": "deadline_exceeded",
                    "message": "The run passed its deadline.",
                    "deadline_at": candidate.deadline_at.isoformat(),
                }
                run = self._update_returning(
                    where={"id": candidate.pk},
                    sets={
                        "status": RunStatus.FAILED,
                        "error": error,
                        "pending_approval_id": "",
                        "updated_at": now,
                        **NO_CLAIM,
                    },
                    conditions=[
                        self._status_condition(NON_TERMINAL_STATUSES),
                        ('"deadline_at" < %s', [self._db_value("deadline_at", now)]),
                    ],
                    transition=Transition({"status": RunStatus.FAILED, "error": error}, None, now),
                )
                if run is None:
                    continue
                self.audit(
                    "run.deadline_exceeded",
                    target_type="run",
                    target_id=run.run_id,
                    before={"status": run.previous_status, "version": run.version - 1},
                    after={"status": run.status, "version": run.version, "error": error},
                )
                failed.append(run)
        return failed
