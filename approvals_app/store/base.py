"""What the parts of the approval store share: the digest of a call, the effective status,
the row locks (run first, then approval), closing an approval and releasing its run."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

import rfc8785
from django.db import transaction
from django.db.models import BooleanField, ExpressionWrapper, Q, QuerySet
from django.db.models.query import ModelIterable

from outbox_app.relay import enqueue
from runs_app.claims import claimed_elsewhere
from runs_app.models import Run, RunStatus
from runs_app.store import RunStateStore
from sessions_app.models import TERMINAL_SESSION_STATUSES
from stateroom import metrics
from stateroom.canonical import canonical_json, digest
from stateroom.errors import Conflict, ContentDeleted, Forbidden, NotFound
from stateroom.store import BaseStore
from tenancy_app.models import RuntimeToken

from ..models import ApprovalRequest, ApprovalStatus
from ..notices import APPROVAL_NOTICE_TASK, NOTICE_ENDED, NOTICE_EXPIRED
from ..webhook_payloads import NOTIFY_DECISION_TASK
from .validation import clipped

logger = logging.getLogger(__name__)


def call_digest(tool_name: str, arguments: dict[str, Any]) -> str:
    """sha256 hex of the RFC 8785 canonical JSON of `[tool_name, arguments]` (stateroom.canonical)."""
    return digest([tool_name, arguments])


def arguments_diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Top-level difference between the asked and the approved arguments."""
    return {
        "added": {k: after[k] for k in sorted(after.keys() - before.keys())},
        "removed": sorted(before.keys() - after.keys()),
        "changed": {
            k: {"old": before[k], "new": after[k]}
            for k in sorted(before.keys() & after.keys())
            if not _same_json(before[k], after[k])
        },
    }


def _same_json(one: Any, other: Any) -> bool:
    try:
        return canonical_json(one) == canonical_json(other)
    except rfc8785.CanonicalizationError:  # a number stored before the gate refused it
        return one == other


def overdue(now: datetime) -> Q:
    """Pending in the table, but past `expires_at`: expired, whether or not swept yet."""
    return Q(status=ApprovalStatus.PENDING, expires_at__lte=now)


def has_status(status: str, now: datetime) -> Q:
    """Approvals whose effective status at `now` is `status` (what `_read` rows show)."""
    if status == ApprovalStatus.PENDING:
        return Q(status=status) & ~overdue(now)
    if status == ApprovalStatus.EXPIRED:
        return Q(status=status) | overdue(now)
    return Q(status=status)


class _EffectiveIterable(ModelIterable):
    """Rows as they read at the store's clock: an overdue approval (`is_overdue`, annotated
    in the same query) is `expired`, decided at its `expires_at`, as the sweep will record."""

    def __iter__(self):
        for approval in super().__iter__():
            if approval.__dict__.pop("is_overdue", False):
                approval.status = ApprovalStatus.EXPIRED
                approval.decided_at = approval.expires_at
            yield approval


class ApprovalBase(BaseStore):
    """The rows, their locks and the writes every ending shares."""

    def _approvals(self) -> QuerySet[ApprovalRequest]:
        """The stored rows, as written (what locks and state changes work on)."""
        return ApprovalRequest.objects.filter(tenant=self.tenant)

    def _read(self) -> QuerySet[ApprovalRequest]:
        """The rows as they read now: each with its effective status (`_EffectiveIterable`).

        Reading writes nothing: making an expiry durable (and audited) is the
        sweep's, or that of the first write that meets it.
        """
        approvals = self._approvals().annotate(
            is_overdue=ExpressionWrapper(overdue(self.now()), output_field=BooleanField())
        )
        # What `.values()` does to change the rows a queryset yields; clones keep it.
        approvals._iterable_class = _EffectiveIterable
        return approvals

    def get_run(self, run_id: str) -> Run:
        """The run an approval is asked for (404 if unknown): approvals build on runs."""
        return RunStateStore(self.tenant, self.actor, clock=self.now).get(run_id)

    def digest(self, approval: ApprovalRequest) -> str:
        """What a console embeds to bind a decision to the call it showed.

        The digest of the arguments as stored. Arguments stored before the JSON
        gate refused numbers beyond ±(2**53 - 1) (jsonb kept `1e16` as the integer
        10000000000000000) have no RFC 8785 form: the digest taken when the call
        was asked stands for them (it is the one the runtime holds), and it is
        logged, so that such a row never makes a page or a decision fail.
        """
        try:
            return call_digest(approval.tool_name, approval.arguments)
        except rfc8785.CanonicalizationError as exc:
            logger.warning(
                "Approval %s: its stored arguments have no RFC 8785 form (%s); "
                "its call_digest as asked stands for them.",
                approval.approval_id,
                exc,
            )
            return approval.call_digest

    def _lock_as_requester(
        self, approval_id: str, worker: str | None, verb: str
    ) -> tuple[Run, ApprovalRequest]:
        """`_lock`, for what only the runtime that asked may do (cancel, void, report):
        403 `not_requester` for another runtime token, 409 `run_claimed` for another worker."""
        run, approval = self._lock(approval_id)
        if (
            self.actor.kind == "token"
            and approval.requested_by_token_id is not None
            and self.actor.id != str(approval.requested_by_token_id)
        ):
            raise Forbidden(f"Only the runtime that asked may {verb}.", code="not_requester")
        self._refuse_if_claimed_elsewhere(run, worker)
        return run, approval

    def _lock(self, approval_id: str) -> tuple[Run, ApprovalRequest]:
        """Lock the run, then the approval (the one lock order of this module).

        The approval as stored: a pending one past its deadline is for the
        caller to expire (`_is_due`), audited once."""
        head = self._approvals().filter(approval_id=approval_id).only("pk", "run_id").first()
        if head is None:
            raise NotFound("No such approval.", details={"approval_id": approval_id})
        run = (
            Run.objects.select_for_update(of=("self",))
            .select_related("session")
            .get(tenant=self.tenant, pk=head.run_id)
        )
        approval = self._approvals().select_for_update().get(pk=head.pk)
        approval.run = run
        return run, approval

    def _refuse_if_claimed_elsewhere(self, run: Run, worker: str | None) -> None:
        """A runtime's write to a run another worker holds (its claim live) is fenced: 409
        `run_claimed`, as for the run's own writes. People and the system are not held back."""
        if self.actor.kind != "token":
            return
        conflict = claimed_elsewhere(
            claimed_by=run.claimed_by,
            claim_until=run.claim_until,
            worker=worker,
            now=self.now(),
            version=run.version,
        )
        if conflict is not None:
            raise conflict

    @staticmethod
    def _refuse_if_over(run: Run) -> None:
        """A decision needs a live session: one that ended (or is being deleted) takes none."""
        if run.content_fenced_at is not None:
            raise ContentDeleted("run", run_id=run.run_id)
        session = run.session if run.session_id else None
        if session is not None and session.status in TERMINAL_SESSION_STATUSES:
            raise Conflict(
                f"The run's session is {session.status}; this approval can no longer happen.",
                code="session_ended",
                details={"session_id": session.session_id, "session_status": session.status},
            )

    def _is_due(self, approval: ApprovalRequest) -> bool:
        return approval.expires_at is not None and approval.expires_at <= self.now()

    def _actor_key(self) -> str:
        return f"{self.actor.kind}:{self.actor.id}"

    @staticmethod
    def _already_decided(approval: ApprovalRequest) -> Conflict:
        # A voided approval was last closed by the runtime that voided it.
        voided = approval.status == ApprovalStatus.VOIDED
        by = approval.voided_by if voided else approval.decided_by
        at = approval.voided_at if voided else approval.decided_at
        return Conflict(
            f"The approval is already {approval.status}.",
            code="already_decided",
            details={
                "status": approval.status,
                "decided_by": by,
                "decided_at": at.isoformat() if at else None,
            },
        )

    def _expire_locked(self, approval: ApprovalRequest, run: Run) -> None:
        # Past its deadline, it expired then (as reads showed it), not when this records it.
        at = self.now()
        if approval.expires_at is not None:
            at = min(at, approval.expires_at)
        self._close(approval, ApprovalStatus.EXPIRED, "", at=at)
        self._release_run(run, approval, to_status=RunStatus.SUSPENDED)
        self.audit(
            "approval.expired",
            target_type="approval",
            target_id=approval.approval_id,
            before={"status": ApprovalStatus.PENDING},
            after={
                "status": approval.status,
                "expires_at": approval.expires_at,
                "run_status": run.status,
            },
        )
        self._notify(approval)

    def _close(
        self,
        approval: ApprovalRequest,
        status: str,
        reason: str,
        *,
        extra_fields: tuple[str, ...] = (),
        at: datetime | None = None,
    ) -> None:
        approval.status = status
        approval.decided_by = clipped("decided_by", self.actor.label)
        approval.decided_by_id = clipped("decided_by_id", self._actor_key())
        approval.decided_at = at or self.now()
        approval.decision_reason = reason or ""
        approval.save(
            update_fields=[
                "status",
                "decided_by",
                "decided_by_id",
                "decided_at",
                "decision_reason",
                "approved_arguments",
                *extra_fields,
            ]
        )
        self._count_end(approval)

    def _count_end(self, approval: ApprovalRequest) -> None:
        """The end is counted (stateroom.metrics) once it commits, never if it rolls back."""
        ended = {
            "outcome": str(approval.status),
            "risk": str(approval.risk),
            "tenant_slug": self.tenant.slug,
            "created_at": approval.created_at,
            "decided_at": approval.decided_at,
        }
        transaction.on_commit(lambda: metrics.approval_ended(**ended), robust=True)

    def _release_run(self, run: Run, approval: ApprovalRequest, *, to_status: str) -> None:
        """The run stops waiting on this approval (a CAS on the locked run's version).

        Only a run still pointing at this approval is touched; one in
        `waiting_approval` moves to `to_status`, any other keeps its status.
        """
        if run.is_terminal or run.pending_approval_id != approval.approval_id:
            return
        changes: dict[str, Any] = {"pending_approval_id": ""}
        if run.status == RunStatus.WAITING_APPROVAL:
            changes["status"] = to_status
        # A decision, an expiry, a withdrawal: no worker's claim holds them back.
        moved = RunStateStore(self.tenant, self.actor, clock=self.now).compare_and_set(
            run_id=run.run_id, expected_version=run.version, changes=changes, as_runtime=False
        )
        for field in ("status", "pending_approval_id", "version", "updated_at"):
            setattr(run, field, getattr(moved, field))

    def _notice(self, approval: ApprovalRequest, kind: str, ref: str = "") -> None:
        """A notice to the people the approval asks (approvals_app.notices), in this transaction."""
        enqueue(
            tenant=self.tenant,
            task=APPROVAL_NOTICE_TASK,
            args=[self.tenant.pk, approval.approval_id, kind, ref],
            # The relay publishes it (within 5 s): the runtime's request does not wait on
            # the broker for a person's notice.
            right_away=False,
        )

    def _tell_people(self, approval: ApprovalRequest) -> None:
        """It ended: the people it asked hear how (and its admins, expired undecided)."""
        if approval.status == ApprovalStatus.EXPIRED and approval.notify_admins_on_expiry:
            self._notice(approval, NOTICE_EXPIRED)
        elif approval.assigned_user_ids or approval.assigned_group_ids:
            self._notice(approval, NOTICE_ENDED)

    def _notify(self, approval: ApprovalRequest) -> None:
        """Tell the people asked and the requesting runtime's webhook, in this transaction."""
        self._tell_people(approval)
        if approval.requested_by_token_id is None:
            return
        has_webhook = (
            RuntimeToken.objects.filter(
                pk=approval.requested_by_token_id, tenant=self.tenant, revoked_at__isnull=True
            )
            .exclude(webhook_url="")
            .exists()
        )
        if not has_webhook:
            return
        enqueue(
            tenant=self.tenant,
            task=NOTIFY_DECISION_TASK,
            args=[self.tenant.pk, approval.approval_id],
        )
