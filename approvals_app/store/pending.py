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
# The page's columns: first those the API shows as they are (`_DIRECT`, in this
# order), then those it shows converted (`_pending_out`), last the keyset's id.
_PENDING_COLUMNS = (
    "a.approval_id, r.run_id, a.tool_name, a.risk, a.reason, a.summary, a.key_arguments,"
    " a.allowed_decisions, a.call_digest, a.run_version, a.expires_at, a.created_at,"
    f" (SELECT p.approval_id FROM {_APPROVALS} p"
    " WHERE p.tenant_id = a.tenant_id AND p.id = a.replaces_id),"
    f" (SELECT g.name FROM {_RULES} g WHERE g.tenant_id = a.tenant_id AND g.id = a.route_rule_id),"
    " a.arguments, a.usual_arguments, a.display, a.arguments_schema,"
    " a.first_approved_by, a.first_approval_reason, a.assigned_user_ids, a.assigned_group_ids,"
    " a.id"
)
_DIRECT = (
    "approval_id",
    "run_id",
    "tool_name",
    "risk",
    "reason",
    "summary",
    "key_arguments",
    "allowed_decisions",
    "call_digest",
    "run_version",
    "expires_at",
    "created_at",
    "replaces_approval_id",
    "route_rule",
)
_CONVERTED = slice(len(_DIRECT), -1)


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
# A pending approval as the API shows it before its row fills it in: keys in the
# serializer's order, None where a pending approval has no value yet.
_BLANK = {**dict.fromkeys(_SERIALIZED), "status": _PENDING}


def _pending_out(row: tuple) -> dict[str, Any]:
    """A pending approval's row as `approvals_app.api.ApprovalSerializer` renders it."""
    out = _BLANK.copy()
    out.update(zip(_DIRECT, row, strict=False))  # the rest of the row is converted below
    arguments, usual, display, schema, approved_by, approval_reason, users, groups = row[_CONVERTED]
    out["arguments"] = _loads(arguments)
    out["usual_arguments"] = None if usual is None else _loads(usual)
    out["display"] = None if display is None else _loads(display)
    out["arguments_schema"] = None if schema is None else _loads(schema)
    out["first_approved_by"] = approved_by or None
    out["first_approval_reason"] = approval_reason or None
    out["assignees"] = {"user_ids": users, "group_ids": groups}
    return out


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
        # each pending row of the tenant (the cost would grow with the backlog). The page
        # is the newest pending rows walked backwards on (tenant_id, status, id), the
        # expiry checked per row: written as `expires_at IS NULL OR …`, the expiry index
        # answers it as a bitmap OR and a sort of the tenant's whole backlog, and where a
        # few tenants hold most rows the planner prefers that (0.78 ms against 0.17,
        # measured at the bench's 1 M scale with a busy tenant).
        sql = (
            f"SELECT {_PENDING_COLUMNS} FROM (SELECT * FROM {_APPROVALS}"
            " WHERE tenant_id = %s AND status = %s"
            f" AND coalesce(expires_at, 'infinity') > %s{bound}"
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
        return page, (rows[-1][-1] if more else None)
