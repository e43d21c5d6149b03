"""Reads of the approval store: one approval, lists, the history tabs, search, the inbox."""

from __future__ import annotations

from datetime import datetime

from django.contrib.postgres.search import SearchHeadline, SearchQuery
from django.db.models import Q, QuerySet, TextField, Value
from django.db.models.functions import Coalesce, Concat

from sessions_app.models import TERMINAL_SESSION_STATUSES
from stateroom.errors import NotFound, Unprocessable

from ..models import ApprovalRequest, ApprovalStatus
from ..schemas import argument_errors
from ..urgency import order_by_urgency
from .base import ApprovalBase, has_status

# What notifications read of an approval (`for_notices`): who is asked, and what a
# message says of the call (notifications_app.messages) and binds it to (the digest).
NOTICE_FIELDS = (
    "approval_id",
    "tool_name",
    "arguments",
    "call_digest",
    "run_version",
    "risk",
    "summary",
    "key_arguments",
    "allowed_decisions",
    "status",
    "expires_at",
    "decided_by",
    "decided_at",
    "assigned_user_ids",
    "assigned_group_ids",
    "escalate_user_ids",
    "escalate_group_ids",
)


class ApprovalReads(ApprovalBase):
    """What people and runtimes read; every read shows the effective status (`_read`)."""

    def get(self, approval_id: str) -> ApprovalRequest:
        approval = (
            self._read()
            .select_related("run", "replaces", "replaced_by", "route_rule")
            .filter(approval_id=approval_id)
            .first()
        )
        if approval is None:
            raise NotFound("No such approval.", details={"approval_id": approval_id})
        return approval

    def for_notices(self, approval_ids) -> dict[str, ApprovalRequest]:
        """What a notice's fan-out and its messages need of approvals, by public id: one
        query, no joins, only `NOTICE_FIELDS` loaded (reading another field would cost a
        query), each with its effective status (`_read`)."""
        rows = self._read().filter(approval_id__in=list(approval_ids)).only(*NOTICE_FIELDS)
        return {approval.approval_id: approval for approval in rows}

    def list_approvals(
        self, *, status: str | None = None, run_id: str | None = None
    ) -> QuerySet[ApprovalRequest]:
        """Unordered; callers keyset by id. `status` is the effective status (`_read`)."""
        now = self.now()
        approvals = self._read().select_related("run", "replaces", "route_rule")
        if status:
            if status not in ApprovalStatus.values:
                raise Unprocessable(
                    "Unknown approval status.",
                    details={"status": [f"must be one of {', '.join(ApprovalStatus.values)}"]},
                )
            approvals = approvals.filter(has_status(status, now))
        if run_id:
            approvals = approvals.filter(run__run_id=run_id)
        return approvals

    HISTORY_TABS = {
        "pending": (ApprovalStatus.PENDING,),
        "decided": (ApprovalStatus.APPROVED, ApprovalStatus.REJECTED, ApprovalStatus.RESPONDED),
        "expired": (ApprovalStatus.EXPIRED,),
        "cancelled": (ApprovalStatus.CANCELLED,),
        "voided": (ApprovalStatus.VOIDED,),
    }

    def history(
        self,
        *,
        tab: str = "decided",
        risk: str | None = None,
        tool: str | None = None,
        agent: str | None = None,
        decider: str | None = None,
        decision: str | None = None,
        outcome: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> QuerySet[ApprovalRequest]:
        """Approvals of one history tab, filtered; unordered (callers keyset by id).

        Dates bound when the approval got its status: asked (pending), voided
        (voided) or closed (decided, expired, cancelled; an expiry not yet swept
        closed at its `expires_at`). `tool` and `decider` are case-insensitive
        prefixes (an operator types "otto" or "operator" for "Operator.Jane"),
        `agent` exact. Tabs go by the effective status (`_read`).
        """
        if tab not in self.HISTORY_TABS:
            raise Unprocessable(
                "Unknown tab.", details={"tab": [f"one of {', '.join(self.HISTORY_TABS)}"]}
            )
        now = self.now()
        in_tab = Q()
        for status in self.HISTORY_TABS[tab]:
            in_tab |= has_status(status, now)
        approvals = (
            self._read()
            .filter(in_tab)
            .alias(closed_at=Coalesce("decided_at", "expires_at"))
            .select_related("run", "replaces")
            .defer("search")
        )
        if risk:
            approvals = approvals.filter(risk=risk)
        if tool:
            approvals = approvals.filter(tool_name__istartswith=tool)
        if agent:
            approvals = approvals.filter(run__active_agent=agent)
        if decider:
            approvals = approvals.filter(decided_by__istartswith=decider)
        if decision:
            approvals = approvals.filter(decision=decision)
        if outcome:  # approved, rejected or responded, within the decided tab
            approvals = approvals.filter(status=outcome)
        stamp = {"pending": "created_at", "voided": "voided_at"}.get(tab, "closed_at")
        if since is not None:
            approvals = approvals.filter(**{f"{stamp}__gte": since})
        if until is not None:
            approvals = approvals.filter(**{f"{stamp}__lt": until})
        return approvals

    def search(
        self, *, query: str, before_id: int | None = None, limit: int = 20
    ) -> tuple[list[ApprovalRequest], bool]:
        """Approvals whose summary or reasons match `query` (web-search syntax), newest first,
        keyset-paged on id; each with `snippet` (matches between ⟦ and ⟧, unescaped)."""
        if not query.strip():
            return [], False
        tsquery = SearchQuery(query, config="english", search_type="websearch")
        found = self._approvals().filter(search=tsquery)
        if before_id is not None:
            found = found.filter(id__lt=before_id)
        ids = list(found.order_by("-id").values_list("id", flat=True)[: limit + 1])
        more, ids = len(ids) > limit, ids[:limit]
        if not ids:
            return [], False
        text = Concat(
            "summary",
            Value(" · "),
            "reason",
            Value(" · "),
            "decision_reason",
            output_field=TextField(),
        )
        rows = (
            self._read()
            .filter(id__in=ids)
            .select_related("run")
            .defer("search")
            .annotate(
                snippet=SearchHeadline(
                    text,
                    tsquery,
                    config="english",
                    start_sel="\u27e6",
                    stop_sel="\u27e7",
                    max_words=24,
                    min_words=8,
                    max_fragments=2,
                    fragment_delimiter=" … ",
                )
            )
            .order_by("-id")
        )
        return list(rows), more

    def inbox(self) -> QuerySet[ApprovalRequest]:
        """Pending, most urgent first: time left weighted by risk (`approvals_app.urgency`).

        Never one that can no longer happen: past its `expires_at` (swept or
        not), or whose run's session has ended.
        """
        now = self.now()
        pending = (
            self._read()
            .filter(has_status(ApprovalStatus.PENDING, now))
            .exclude(run__session__status__in=TERMINAL_SESSION_STATUSES)
            .select_related("run", "run__session", "replaces")
            .defer("search")
        )
        return order_by_urgency(pending, now)

    def can_still_happen(self, approval: ApprovalRequest) -> bool:
        """Pending and not past `expires_at`, and its run's session (if any) neither ended
        nor being deleted."""
        session = approval.run.session if approval.run.session_id else None
        return (
            approval.status == ApprovalStatus.PENDING
            and not self._is_due(approval)
            and approval.run.content_fenced_at is None
            and (session is None or session.status not in TERMINAL_SESSION_STATUSES)
        )

    @staticmethod
    def asked_argument_errors(approval: ApprovalRequest) -> dict[str, list[str]]:
        """Where the asked arguments break the tool's schema ({}: they fit, or no schema).
        With any, the call cannot run as asked: only an edit that fits, or a rejection."""
        return argument_errors(approval.arguments_schema, approval.arguments, field="arguments")
