"""People decide: `decide`, exactly once, bound to the call they were shown; four-eyes."""

from __future__ import annotations

from typing import Any

from runs_app.models import Run, RunStatus
from stateroom.errors import Conflict, Unprocessable
from tenancy_app.models import Tenant

from ..models import ApprovalRequest, ApprovalStatus, Decision, Risk
from ..schemas import argument_errors
from .base import ApprovalBase, arguments_diff, call_digest
from .reads import ApprovalReads
from .validation import REASON_REQUIRED_RISKS, RUNS_THE_CALL, check_decision, clipped

# The status each decision ends in: only approve and edit run the call.
DECIDED_STATUS = {
    Decision.APPROVE: ApprovalStatus.APPROVED,
    Decision.EDIT: ApprovalStatus.APPROVED,
    Decision.REJECT: ApprovalStatus.REJECTED,
    Decision.RESPOND: ApprovalStatus.RESPONDED,
}


class ApprovalDecisions(ApprovalBase):
    """`decide`: check, lock, bind, then record a decision (or a first approval)."""

    def decide(
        self,
        *,
        approval_id: str,
        decision: str,
        reason: str = "",
        approved_arguments: dict[str, Any] | None = None,
        response: str | None = None,
        expected_digest: str | None = None,
        expected_run_version: int | None = None,
    ) -> ApprovalRequest:
        """Decide exactly once; the run goes back to `running`.

        approve and edit (with `approved_arguments`) end `approved` (the call
        runs; its runtime reports how it went, `report_outcome`); reject ends
        `rejected`; respond (with `response`, the tool result the model gets)
        ends `responded`: the call does not run. `decision` records which.

        Refusals, in this order (nothing written): 404; 422 bad decision,
        arguments or response; 409 `already_decided` (details decided_by,
        decided_at, status); 422 `decision_not_allowed` when the runtime did
        not declare it can honour this decision; with the tool's schema, 422
        when an edit's arguments do not fit it (details name each failing path,
        `approved_arguments.amount_cents`) and 422 `arguments_invalid` for a
        plain approve of asked arguments that do not (`arguments.<path>`):
        those can only be edited to fit, or rejected; 409 `approval_expired` when
        `expires_at` has passed (this one records the expiry, `keep_changes`);
        409 `call_changed` when `expected_digest` or `expected_run_version` no
        longer match; 422 a reason is required (reject; any decision on high
        or critical risk); 409 `second_approver_required` when four-eyes
        applies and the first approver approves again.

        Four-eyes (tenant.four_eyes_critical, risk critical): the first approval
        only records `first_approved_by` (audited `approval.first_approval`)
        and the approval stays pending; a second, different person decides.
        One rejection is enough.
        """
        check_decision(decision, reason, approved_arguments, response)
        expired: Conflict | None = None
        with self.atomic():
            run, approval = self._lock(approval_id)
            self._check_decidable(approval, run, decision, approved_arguments)
            if self._is_due(approval):
                expired = self._expire_late(approval, run)
            else:
                self._check_binding(approval, run, expected_digest, expected_run_version)
                _check_reason(approval, decision, reason)
                if decision in RUNS_THE_CALL and self._needs_second_approver(approval):
                    return self._first_approval(approval, reason, approved_arguments)
                self._decide_locked(
                    approval, run, decision, reason, approved_arguments, response or ""
                )
        if expired is not None:
            raise expired
        return approval

    def _check_decidable(
        self,
        approval: ApprovalRequest,
        run: Run,
        decision: str,
        approved_arguments: dict[str, Any] | None,
    ) -> None:
        """Pending, its session live, the decision one the runtime honours and fitting the schema."""
        if approval.status != ApprovalStatus.PENDING:
            raise self._already_decided(approval)
        self._refuse_if_over(run)
        if decision not in approval.allowed_decisions:
            raise Unprocessable(
                f"The runtime cannot honour '{decision}' for this call.",
                code="decision_not_allowed",
                details={
                    "decision": [f"must be one of {', '.join(approval.allowed_decisions)}"],
                    "allowed_decisions": approval.allowed_decisions,
                },
            )
        _check_fits_schema(approval, decision, approved_arguments)

    def _expire_late(self, approval: ApprovalRequest, run: Run) -> Conflict:
        """A decision past `expires_at`: the expiry is recorded, the decision refused."""
        self._expire_locked(approval, run)
        expired = Conflict(
            "The approval expired before the decision.",
            code="approval_expired",
            details={
                "status": approval.status,
                "expires_at": approval.expires_at.isoformat(),
            },
        )
        expired.keep_changes = True
        return expired

    def _check_binding(
        self,
        approval: ApprovalRequest,
        run: Run,
        expected_digest: str | None,
        expected_run_version: int | None,
    ) -> None:
        changed: dict[str, Any] = {}
        current_digest = self.digest(approval)
        # The stored digest is the call as it was asked; an approval asked before RFC 8785
        # digests stored the older spelling's, which a runtime may still hold.
        if expected_digest is not None and expected_digest not in (
            current_digest,
            approval.call_digest,
        ):
            changed["call_digest"] = {"expected": expected_digest, "current": current_digest}
        if expected_run_version is not None and expected_run_version != run.version:
            changed["run_version"] = {"expected": expected_run_version, "current": run.version}
        if changed:
            raise Conflict(
                "The call or the run changed since it was shown; look again.",
                code="call_changed",
                details=changed,
            )

    def _needs_second_approver(self, approval: ApprovalRequest) -> bool:
        if approval.risk != Risk.CRITICAL:
            return False
        four_eyes = (
            Tenant.objects.filter(pk=self.tenant.pk)
            .values_list("four_eyes_critical", flat=True)
            .first()
        )
        if not four_eyes:
            return False
        if not approval.first_approved_by_id:
            return True
        if approval.first_approved_by_id == self._actor_key():
            raise Conflict(
                "Critical calls need a second, different approver.",
                code="second_approver_required",
                details={
                    "first_approved_by": approval.first_approved_by,
                    "first_approved_at": approval.first_approved_at.isoformat(),
                },
            )
        return False

    def _first_approval(
        self,
        approval: ApprovalRequest,
        reason: str,
        approved_arguments: dict[str, Any] | None,
    ) -> ApprovalRequest:
        approval.first_approved_by = clipped("first_approved_by", self.actor.label)
        approval.first_approved_by_id = clipped("first_approved_by_id", self._actor_key())
        approval.first_approved_at = self.now()
        approval.first_approval_reason = reason or ""
        approval.save(
            update_fields=[
                "first_approved_by",
                "first_approved_by_id",
                "first_approved_at",
                "first_approval_reason",
            ]
        )
        after: dict[str, Any] = {"status": approval.status, "first_approved_by": self.actor.label}
        self.audit(
            "approval.first_approval",
            target_type="approval",
            target_id=approval.approval_id,
            before={"status": ApprovalStatus.PENDING},
            after=after,
            # What the model hears is content: the reason goes with the session's content.
            content=_decision_content(approval.arguments, approved_arguments, reason, ""),
        )
        return approval

    def _decide_locked(
        self,
        approval: ApprovalRequest,
        run: Run,
        decision: str,
        reason: str,
        approved_arguments: dict[str, Any] | None,
        response: str,
    ) -> None:
        status = DECIDED_STATUS[Decision(decision)]
        approval.approved_arguments = approved_arguments
        approval.decision = decision
        approval.response = response
        self._close(approval, status, reason, extra_fields=("decision", "response"))
        self._release_run(run, approval, to_status=RunStatus.RUNNING)
        after: dict[str, Any] = {"status": status, "decision": decision, "run_status": run.status}
        if approval.first_approved_by:
            after["first_approved_by"] = approval.first_approved_by
        if approved_arguments is not None:
            after["approved_arguments_digest"] = call_digest(approval.tool_name, approved_arguments)
        self.audit(
            f"approval.{status}",
            target_type="approval",
            target_id=approval.approval_id,
            before={"status": ApprovalStatus.PENDING},
            after=after,
            # What the model hears is content: the reason goes with the session's content.
            content=_decision_content(approval.arguments, approved_arguments, reason, response),
        )
        self._notify(approval)


def _decision_content(
    arguments: dict[str, Any],
    approved_arguments: dict[str, Any] | None,
    reason: str,
    response: str,
) -> dict[str, Any]:
    """What a decision's audit event shows that the model hears or that holds argument values:
    the reason (the model is told it), the response, what an edit changed. Content: a
    detached payload, deleted with the session's content; the event keeps who decided what."""
    content: dict[str, Any] = {"reason": reason, "response": response}
    if approved_arguments is not None:
        content["approved_arguments_diff"] = arguments_diff(arguments, approved_arguments)
    return content


def _check_fits_schema(
    approval: ApprovalRequest, decision: str, approved_arguments: dict[str, Any] | None
) -> None:
    """A call that runs must fit the tool's schema: the edited arguments, or the asked ones."""
    if approval.arguments_schema is None:
        return
    if decision == Decision.EDIT:
        errors = argument_errors(
            approval.arguments_schema, approved_arguments, field="approved_arguments"
        )
        if errors:
            raise Unprocessable(
                "The edited arguments do not fit the tool's schema.", details=errors
            )
    elif decision == Decision.APPROVE:
        errors = ApprovalReads.asked_argument_errors(approval)
        if errors:
            raise Unprocessable(
                "The arguments asked do not fit the tool's schema: edit them to fit, or reject.",
                code="arguments_invalid",
                details={
                    "decision": ["approve as asked is not possible: edit or reject"],
                    **errors,
                },
            )


def _check_reason(approval: ApprovalRequest, decision: str, reason: str) -> None:
    """A reason is required to reject, and to decide high or critical risk."""
    if not (reason or "").strip() and (
        decision == Decision.REJECT or approval.risk in REASON_REQUIRED_RISKS
    ):
        raise Unprocessable(
            "A reason is required to reject, and to decide high or critical risk.",
            details={"reason": ["required"]},
        )
