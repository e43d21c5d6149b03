"""How an approval ends other than by a decision: the runtime cancels or voids it (and
reports how an approved call went), time runs out (`expire`, the sweep), its run ends."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from runs_app.models import Run, RunStatus
from stateroom.errors import Conflict, ContentDeleted

from ..models import ApprovalRequest, ApprovalStatus
from .base import ApprovalBase, overdue
from .validation import VOIDABLE, check_outcome, check_void, clipped


class ApprovalEndings(ApprovalBase):
    """cancel, void, report_outcome, expire, expire_overdue, withdraw_for_run."""

    def cancel(
        self, *, approval_id: str, reason: str = "", worker: str | None = None
    ) -> ApprovalRequest:
        """The runtime that asked withdraws its request; the run goes back to `running`.

        Another runtime token of the tenant gets 403; while another worker's
        claim on the run is live, a runtime that does not name it (`worker`)
        409 `run_claimed`; a decided approval 409 `already_decided`; so does
        one past its `expires_at`, whose expiry this records (`keep_changes`),
        as a late decision does.
        """
        expired: Conflict | None = None
        with self.atomic():
            run, approval = self._lock_as_requester(approval_id, worker, "cancel")
            if approval.status != ApprovalStatus.PENDING:
                raise self._already_decided(approval)
            if self._is_due(approval):
                self._expire_locked(approval, run)
                expired = self._already_decided(approval)
                expired.keep_changes = True
            else:
                self._close(approval, ApprovalStatus.CANCELLED, reason)
                self._release_run(run, approval, to_status=RunStatus.RUNNING)
                self.audit(
                    "approval.cancelled",
                    target_type="approval",
                    target_id=approval.approval_id,
                    before={"status": ApprovalStatus.PENDING},
                    after={"status": approval.status, "run_status": run.status},
                    reason=reason,
                )
                self._tell_people(approval)
        if expired is not None:
            raise expired
        return approval

    def void(
        self,
        *,
        approval_id: str,
        reason_code: str,
        reason: str,
        details: dict[str, Any] | None = None,
        refuse: Callable[[ApprovalRequest], None] | None = None,
        worker: str | None = None,
    ) -> ApprovalRequest:
        """The runtime that asked can no longer honour this approval: it ends `voided`.

        Allowed on a `pending` approval (the run stops waiting and goes back to
        `running`, as for a cancellation: the runtime is about to ask again)
        and on an `approved` one whose call has not run. This store cannot see
        the effect ledger: `refuse(approval)`, called under the run's and the
        approval's row locks, is how the layer above (`actions_app`) refuses
        one whose call ran or may have run. The decision fields stay as they
        were (an approved approval still says who approved it); `voided_by`,
        `voided_at`, `void_code`, `void_reason` and `void_details` say who
        voided it, when and why. Audited `approval.voided` (the runtime's
        reason and details in the detached, redactable payload); the
        requesting runtime's webhook hears of it.

        Refusals, in this order (nothing written): 422 bad reason_code, reason
        or details; 403 `not_requester` (another runtime token); 409
        `run_claimed` (another worker's claim on the run is live and `worker`
        does not name it); 409 `already_decided` for rejected, expired,
        cancelled or voided (and for
        a pending one past `expires_at`, whose expiry this records,
        `keep_changes`); 409 `content_deleted`; whatever `refuse` raises.
        """
        check_void(reason_code, reason, details)
        expired: Conflict | None = None
        with self.atomic():
            run, approval = self._lock_as_requester(approval_id, worker, "void")
            if approval.status not in VOIDABLE:
                raise self._already_decided(approval)
            if approval.status == ApprovalStatus.PENDING and self._is_due(approval):
                self._expire_locked(approval, run)
                expired = self._already_decided(approval)
                expired.keep_changes = True
            else:
                self._void_locked(approval, run, reason_code, reason, details, refuse)
        if expired is not None:
            raise expired
        return approval

    def _void_locked(
        self,
        approval: ApprovalRequest,
        run: Run,
        reason_code: str,
        reason: str,
        details: dict[str, Any] | None,
        refuse: Callable[[ApprovalRequest], None] | None,
    ) -> None:
        """Void a locked approval (nothing written if the run's content is fenced or `refuse`
        raises), release its run, audit it and tell the runtime."""
        if run.content_fenced_at is not None:
            raise ContentDeleted("run", run_id=run.run_id)
        if refuse is not None:
            refuse(approval)
        before = approval.status
        approval.status = ApprovalStatus.VOIDED
        approval.voided_by = clipped("voided_by", self.actor.label)
        approval.voided_at = self.now()
        approval.void_code = reason_code
        approval.void_reason = reason
        approval.void_details = details
        approval.save(
            update_fields=[
                "status",
                "voided_by",
                "voided_at",
                "void_code",
                "void_reason",
                "void_details",
            ]
        )
        self._count_end(approval)
        self._release_run(run, approval, to_status=RunStatus.RUNNING)
        self.audit(
            "approval.voided",
            target_type="approval",
            target_id=approval.approval_id,
            before={"status": before},
            after={
                "status": approval.status,
                "void_code": reason_code,
                "run_status": run.status,
            },
            # The runtime's words and its evidence (a tool's schemas) are its content.
            content={"reason": reason, "details": details},
        )
        self._notify(approval)

    def report_outcome(
        self,
        *,
        approval_id: str,
        outcome: str,
        error: dict[str, Any] | None = None,
        worker: str | None = None,
    ) -> ApprovalRequest:
        """The runtime that ran an approved call says how it went: `succeeded`, or `failed`
        with the tool's `error` (`{message, type?}`), which the approval's page shows.

        Once per approval: the same report again changes nothing (a retry after a lost
        answer); another one is 409 `outcome_reported`. Audited `approval.tool_<outcome>`
        (the error in the detached, redactable payload). The run is the runtime's to end:
        it ends it `failed` on a failed call (the gate does).

        Refusals, in this order (nothing written): 422 bad outcome or error; 404; 403
        `not_requester` (another runtime token); 409 `run_claimed`; 409 `not_approved`
        (details.status) unless it is approved; 409 `outcome_reported` (details.outcome).
        """
        check_outcome(outcome, error)
        with self.atomic():
            run, approval = self._lock_as_requester(approval_id, worker, "report")
            if approval.status != ApprovalStatus.APPROVED:
                raise Conflict(
                    f"Only an approved call runs; this approval is {approval.status}.",
                    code="not_approved",
                    details={"status": approval.status},
                )
            if approval.outcome:
                if approval.outcome == outcome and approval.outcome_error == error:
                    return approval  # the same report again: nothing to change
                raise Conflict(
                    f"The runtime already reported that the call {approval.outcome}.",
                    code="outcome_reported",
                    details={"outcome": approval.outcome},
                )
            approval.outcome, approval.outcome_error = outcome, error
            approval.outcome_at = self.now()
            approval.save(update_fields=["outcome", "outcome_error", "outcome_at"])
            self.audit(
                f"approval.tool_{outcome}",
                target_type="approval",
                target_id=approval.approval_id,
                before={"status": approval.status},
                after={"status": approval.status, "outcome": outcome, "run_id": run.run_id},
                # The tool's error may quote the call's arguments: content.
                content={"error": error} if error is not None else None,
            )
        return approval

    def expire(self, *, approval_id: str) -> ApprovalRequest:
        """Expire a pending approval now (409 `already_decided` if it is not pending).

        The run waiting on it is `suspended` (checkpointed, resumable: the
        runtime sees the expiry and asks again or gives up) and its
        `pending_approval_id` cleared. Audited `approval.expired` with the
        store's actor (the system, for the sweep); the requesting runtime's
        webhook hears of it.
        """
        with self.atomic():
            run, approval = self._lock(approval_id)
            if approval.status != ApprovalStatus.PENDING:
                raise self._already_decided(approval)
            self._expire_locked(approval, run)
        return approval

    def expire_overdue(self, *, limit: int = 500) -> int:
        """Sweep: make durable the expiry of approvals past `expires_at`, as `expire` does.

        They already read as expired (`_read`); the sweep records it (audited
        once), suspends their runs and tells the runtimes. Bounded to `limit`.
        Each expiry locks its run and approval with `skip_locked` and re-checks
        `pending` and the deadline under the lock, so two sweeps at once (or a
        sweep racing a decision) expire each approval at most once and never
        wait on each other.
        """
        now = self.now()
        due = list(
            self.unswept(now=now).order_by("expires_at", "id").values_list("pk", "run_id")[:limit]
        )
        expired = 0
        for approval_pk, run_pk in due:
            with self.atomic():
                run = (
                    Run.objects.select_for_update(skip_locked=True)
                    .filter(tenant=self.tenant, pk=run_pk)
                    .first()
                )
                approval = (
                    self.unswept(now=now)
                    .select_for_update(skip_locked=True)
                    .filter(pk=approval_pk)
                    .first()
                    if run is not None
                    else None
                )
                if approval is None:
                    continue
                self._expire_locked(approval, run)
                expired += 1
        return expired

    def unswept(self, *, now: datetime) -> QuerySet[ApprovalRequest]:
        """Approvals past `expires_at` at `now` whose expiry is not recorded yet (the sweep's)."""
        return self._approvals().filter(overdue(now))

    def withdraw_for_run(self, *, run: Run, reason: str) -> int:
        """A run that ended waits on nothing: cancel its pending approval (audited).

        Called by `actions_app.runs.RunActions` in the transaction that ends
        the run, which holds the run's row lock (lock order: run, then approval).
        The requesting runtime's webhook hears of it, as of a decision.
        """
        withdrawn = 0
        for approval in (
            self._approvals().select_for_update().filter(run=run, status=ApprovalStatus.PENDING)
        ):
            if self._is_due(approval):
                # It already reads expired: it stays so (recorded now), not cancelled.
                self._expire_locked(approval, run)
                withdrawn += 1
                continue
            self._close(approval, ApprovalStatus.CANCELLED, reason)
            self.audit(
                "approval.cancelled",
                target_type="approval",
                target_id=approval.approval_id,
                before={"status": ApprovalStatus.PENDING},
                after={"status": approval.status, "run_status": run.status},
                reason=reason,
            )
            self._notify(approval)
            withdrawn += 1
        return withdrawn
