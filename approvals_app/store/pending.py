"""The runtime's hot list: pending approvals, one statement, rows straight to the API's dicts."""

from __future__ import annotations

import json
from typing import Any

from runs_app.models import Run
from stateroom.sql import hot_cursor

from ..models import ApprovalRequest, ApprovalStatus, RoutingRule
from .base import ApprovalBase

_APPROVALS = ApprovalRequest._meta.db_table
_RUNS = Run._meta.db_table
_RULES = RoutingRule._meta.db_table
_PENDING_COLUMNS = (
    "a.id, a.approval_id, r.run_id, a.tool_name, a.arguments, a.risk, a.reason, a.summary,"
    " a.key_arguments, a.usual_arguments, a.display, a.allowed_decisions, a.arguments_schema,"
    " a.call_digest, a.run_version,"
    " a.first_approved_by, a.first_approval_reason, a.expires_at, a.created_at,"
    f" (SELECT p.approval_id FROM {_APPROVALS} p"
    " WHERE p.tenant_id = a.tenant_id AND p.id = a.replaces_id),"
    " a.assigned_user_ids, a.assigned_group_ids,"
    f" (SELECT g.name FROM {_RULES} g WHERE g.tenant_id = a.tenant_id AND g.id = a.route_rule_id)"
)


_PENDING = ApprovalStatus.PENDING.value
_raw_decode = json.JSONDecoder().raw_decode


def _loads(text: str) -> Any:
    """`json.loads` of a jsonb column's text (PostgreSQL writes it with no surrounding
    whitespace), without its Python wrappers: 50 of them a page."""
    try:
        value, end = _raw_decode(text)
    except ValueError:
        end = -1
    if end != len(text):  # never for jsonb: json.loads says what is wrong
        return json.loads(text)
    return value


# The columns `_PENDING_COLUMNS` selects, in its order.
_PENDING_NAMES = (
    "id",
    "approval_id",
    "run_id",
    "tool_name",
    "arguments",
    "risk",
    "reason",
    "summary",
    "key_arguments",
    "usual_arguments",
    "display",
    "allowed_decisions",
    "arguments_schema",
    "call_digest",
    "run_version",
    "first_approved_by",
    "first_approval_reason",
    "expires_at",
    "created_at",
    "replaces_approval_id",
    "assigned_user_ids",
    "assigned_group_ids",
    "route_rule",
)
# What `approvals_app.api.ApprovalSerializer` renders, in its order: a pending approval has
# no value yet for those its row does not select (None).
_SERIALIZED = (
    "approval_id",
    "run_id",
    "status",
    "tool_name",
    "arguments",
    "risk",
    "reason",
    "summary",
    "key_arguments",
    "usual_arguments",
    "display",
    "allowed_decisions",
    "arguments_schema",
    "call_digest",
    "run_version",
    "decided_by",
    "decided_at",
    "decision_reason",
    "decision",
    "approved_arguments",
    "response",
    "first_approved_by",
    "first_approval_reason",
    "expires_at",
    "created_at",
    "voided_by",
    "voided_at",
    "void_reason_code",
    "void_reason",
    "void_details",
    "replaces_approval_id",
    "outcome",
    "outcome_error",
    "outcome_at",
    "assignees",
    "route_rule",
)
# jsonb columns that may be NULL.
_NULLABLE_JSON = ("usual_arguments", "display", "arguments_schema")


def _pending_out(row: tuple) -> dict[str, Any]:
    """A pending approval's row as `approvals_app.api.ApprovalSerializer` renders it."""
    values = dict(zip(_PENDING_NAMES, row, strict=True))
    values["status"] = _PENDING
    values["arguments"] = _loads(values["arguments"])
    for name in _NULLABLE_JSON:
        if values[name] is not None:
            values[name] = _loads(values[name])
    values["first_approved_by"] = values["first_approved_by"] or None
    values["first_approval_reason"] = values["first_approval_reason"] or None
    values["assignees"] = {
        "user_ids": values["assigned_user_ids"],
        "group_ids": values["assigned_group_ids"],
    }
    get = values.get
    return {key: get(key) for key in _SERIALIZED}


class ApprovalPending(ApprovalBase):
    """`pending_page`: what a runtime polls."""

    def pending_page(
        self, *, limit: int = 50, cursor: int | None = None
    ) -> tuple[list[dict[str, Any]], int | None]:
        """The newest approvals that are pending at the store's clock, as the API shows them.

        The runtime's hot list (`GET /approvals?status=pending`): one statement,
        rows straight to the API's dicts (no model, no serializer), keyset-paged
        on the id (`cursor`: the last id of the previous page). Returns the page
        and the cursor of the next one (None: no more). An approval past its
        `expires_at` is not pending, swept or not.
        """
        bound = " AND id < %s" if cursor is not None else ""
        # The page first, then its runs: a run is looked up for each row shown, not for
        # each pending row of the tenant (the cost would grow with the backlog).
        sql = (
            f"SELECT {_PENDING_COLUMNS} FROM (SELECT * FROM {_APPROVALS}"
            " WHERE tenant_id = %s AND status = %s"
            f" AND (expires_at IS NULL OR expires_at > %s){bound}"
            f" ORDER BY id DESC LIMIT %s) a JOIN {_RUNS} r ON r.tenant_id = a.tenant_id"
            " AND r.id = a.run_id ORDER BY a.id DESC"
        )
        params: list[Any] = [self.tenant.pk, ApprovalStatus.PENDING.value, self.now()]
        params += [*([cursor] if cursor is not None else []), limit + 1]
        with hot_cursor(alone=True) as cursor_:
            cursor_.execute(sql, params)
            rows = cursor_.fetchall()
        more = len(rows) > limit
        rows = rows[:limit]
        page = [_pending_out(row) for row in rows]
        return page, (rows[-1][0] if more else None)
