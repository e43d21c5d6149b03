"""The content of approvals (`CONTENT`), and what the lifecycle orchestrator asks of it:
the approvals of runs, the pending ones for its reconciler, and their redaction."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from stateroom.content import RUN, Batch, ContentClass, content_class, redact_in_key_order

from ..models import ApprovalRequest, ApprovalStatus
from .base import ApprovalBase

APPROVAL_PAYLOADS = "approval_payloads"
CONTENT: tuple[ContentClass, ...] = (
    ContentClass(
        name=APPROVAL_PAYLOADS,
        label="Approval arguments, summaries, reasons and responses",
        table=ApprovalRequest._meta.db_table,
        fields=(
            "arguments",
            "approved_arguments",
            "usual_arguments",
            "display",
            "argument_order",
            "key_arguments",
            "summary",
            "reason",
            "decision_reason",
            "first_approval_reason",
            "response",
            "void_reason",
            "void_details",
            "outcome_error",
        ),
        container=RUN,
        removal="fields cleared",
        retention="run_events_days",
        kept=(
            "Each approval's id, tool name, risk, call digest, run version, allowed "
            "decisions, status, decision, who decided and when: the record that a person "
            "decided this exact call."
        ),
    ),
)


class ApprovalContent(ApprovalBase):
    """The content this store declares, and its removal."""

    CONTENT = CONTENT

    def approval_ids_of_runs(self, run_pks: Iterable[int]) -> list[str]:
        return list(
            self._approvals()
            .filter(run__in=list(run_pks))
            .order_by("pk")
            .values_list("approval_id", flat=True)
        )

    def pending(self, *, limit: int) -> list[ApprovalRequest]:
        """Pending approvals, oldest first, with their runs (for the lifecycle's reconciler)."""
        return list(
            self._approvals()
            .filter(status=ApprovalStatus.PENDING)
            .select_related("run", "run__session")
            .order_by("id")[:limit]
        )

    def _content_rows(self, name: str, runs: Iterable[int]) -> QuerySet[ApprovalRequest]:
        content_class(CONTENT, name)
        return self._approvals().filter(run__in=list(runs), redacted_at__isnull=True)

    def content_left(self, name: str, containers: Iterable[int]) -> int:
        return self._content_rows(name, containers).count()

    def redact_content(
        self, name: str, container: int, *, after: Any, limit: int, now: datetime
    ) -> Batch:
        """Clear the content of up to `limit` approvals of one run (in the caller's transaction)."""
        return redact_in_key_order(
            self._content_rows(name, [container]),
            "pk",
            after=after,
            limit=limit,
            remove=lambda qs: qs.update(
                arguments={},
                approved_arguments=None,
                usual_arguments=None,
                display=None,
                argument_order=[],
                key_arguments=[],
                summary="",
                reason="",
                decision_reason="",
                first_approval_reason="",
                response="",
                void_reason="",
                void_details=None,
                outcome_error=None,
                redacted_at=now,
            ),
        )
