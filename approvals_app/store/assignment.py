"""Who an approval asks after it was asked: reassigning, taking, and the rule's schedule.

`reassign` and `take` (an operator) replace the assignees of a pending
approval, audited, and notify the new ones. `run_schedule` (the beat task
`approvals_app.tasks.sweep_approval_schedule`) sends what came due at the
store's clock: the reminder to the assignees, then the escalation (the next
tier joins the assignees). Each is done once: the row is locked with
`skip_locked` and its `reminded_at` / `escalated_at` set in the transaction
that writes the notice's outbox job, so a second beat process, a restart or
a retry finds it done and sends nothing again.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from stateroom.errors import Conflict, Unprocessable
from tenancy_app.models import MemberGroup, Membership

from ..models import ApprovalRequest, ApprovalStatus
from ..notices import NOTICE_ESCALATED, NOTICE_REASSIGNED, NOTICE_REMINDER
from .base import ApprovalBase, has_status
from .validation import clipped

MAX_ASSIGNEES = 50


class ApprovalAssignment(ApprovalBase):
    """reassign, take, run_schedule."""

    def reassign(
        self, *, approval_id: str, user_ids: list[int], group_ids: list[int], reason: str = ""
    ) -> ApprovalRequest:
        """Ask these members and groups instead (422 if one is not of the tenant; 409 once
        it is no longer pending)."""
        user_ids = list(dict.fromkeys(int(u) for u in user_ids))
        group_ids = list(dict.fromkeys(int(g) for g in group_ids))
        self._check_assignees(user_ids, group_ids)
        return self._assign_pending(approval_id, user_ids, group_ids, "approval.reassigned", reason)

    def take(self, *, approval_id: str) -> ApprovalRequest:
        """The acting person (a member of the tenant) takes it: its only assignee."""
        if self.actor.kind != "user":
            raise Conflict("Only a person takes an approval.", code="not_a_person")
        self._check_assignees([int(self.actor.id)], [])
        return self._assign_pending(approval_id, [int(self.actor.id)], [], "approval.taken", "")

    def _assign_pending(
        self, approval_id: str, user_ids: list[int], group_ids: list[int], action: str, reason: str
    ) -> ApprovalRequest:
        """409 `already_decided` unless pending; one past its deadline is expired first
        (recorded, `keep_changes`), as a late decision finds it."""
        expired: Conflict | None = None
        with self.atomic():
            run, approval = self._lock(approval_id)
            if approval.status != ApprovalStatus.PENDING:
                raise self._already_decided(approval)
            if self._is_due(approval):
                self._expire_locked(approval, run)
                expired = self._already_decided(approval)
                expired.keep_changes = True
            else:
                return self._assign(approval, user_ids, group_ids, action, reason)
        raise expired

    def _assign(
        self,
        approval: ApprovalRequest,
        user_ids: list[int],
        group_ids: list[int],
        action: str,
        reason: str,
    ) -> ApprovalRequest:
        before = _assignees(approval)
        approval.assigned_user_ids = user_ids
        approval.assigned_group_ids = group_ids
        approval.save(update_fields=["assigned_user_ids", "assigned_group_ids"])
        self.audit(
            action,
            target_type="approval",
            target_id=approval.approval_id,
            before=before,
            after=_assignees(approval),
            reason=clipped("decision_reason", reason or ""),
        )
        # Each reassignment is its own notice (two in one instant too): a fresh ref.
        self._notice(approval, NOTICE_REASSIGNED, ref=uuid.uuid4().hex)
        return approval

    def _check_assignees(self, user_ids: list[int], group_ids: list[int]) -> None:
        problems: dict[str, list[str]] = {}
        if not user_ids and not group_ids:
            problems["user_ids"] = ["name at least one member or group"]
        if len(user_ids) + len(group_ids) > MAX_ASSIGNEES:
            problems["user_ids"] = [f"at most {MAX_ASSIGNEES} assignees"]
        members = set(
            Membership.objects.filter(tenant=self.tenant, user_id__in=user_ids).values_list(
                "user_id", flat=True
            )
        )
        if strangers := [u for u in user_ids if u not in members]:
            problems["user_ids"] = [f"not members of this tenant: {strangers}"]
        groups = set(
            MemberGroup.objects.filter(tenant=self.tenant, pk__in=group_ids).values_list(
                "pk", flat=True
            )
        )
        if unknown := [g for g in group_ids if g not in groups]:
            problems["group_ids"] = [f"no such groups: {unknown}"]
        if problems:
            raise Unprocessable("These cannot be asked.", details=problems)

    # --- the schedule ------------------------------------------------------
    def run_schedule(self, *, limit: int = 500) -> dict[str, int]:
        """Send the reminders and escalations due at the store's clock; how many of each."""
        now = self.now()
        return {
            "reminded": self._due(now, "remind_at", "reminded_at", self._remind, limit),
            "escalated": self._due(now, "escalate_at", "escalated_at", self._escalate, limit),
        }

    def _due(self, now: datetime, due_field: str, done_field: str, act, limit: int) -> int:
        pending = has_status(ApprovalStatus.PENDING, now)
        due = {f"{due_field}__lte": now, f"{done_field}__isnull": True}
        done = 0
        for pk in list(
            self._approvals()
            .filter(pending, **due)
            .order_by(due_field, "id")[:limit]
            .values_list("pk", flat=True)
        ):
            with self.atomic():
                approval = (
                    self._approvals()
                    .select_for_update(skip_locked=True)
                    .filter(pending, pk=pk, **due)
                    .first()
                )
                if approval is None:  # another sweep has it, or it was decided meanwhile
                    continue
                setattr(approval, done_field, now)
                act(approval, done_field)
                done += 1
        return done

    def _remind(self, approval: ApprovalRequest, done_field: str) -> None:
        approval.save(update_fields=[done_field])
        self.audit(
            "approval.reminded",
            target_type="approval",
            target_id=approval.approval_id,
            after=_assignees(approval),
        )
        self._notice(approval, NOTICE_REMINDER)

    def _escalate(self, approval: ApprovalRequest, done_field: str) -> None:
        before = _assignees(approval)
        approval.assigned_user_ids = list(
            dict.fromkeys([*approval.assigned_user_ids, *approval.escalate_user_ids])
        )
        approval.assigned_group_ids = list(
            dict.fromkeys([*approval.assigned_group_ids, *approval.escalate_group_ids])
        )
        approval.save(update_fields=[done_field, "assigned_user_ids", "assigned_group_ids"])
        self.audit(
            "approval.escalated",
            target_type="approval",
            target_id=approval.approval_id,
            before=before,
            after=_assignees(approval),
        )
        self._notice(approval, NOTICE_ESCALATED)


def _assignees(approval: ApprovalRequest) -> dict[str, Any]:
    return {
        "assigned_user_ids": list(approval.assigned_user_ids),
        "assigned_group_ids": list(approval.assigned_group_ids),
    }
