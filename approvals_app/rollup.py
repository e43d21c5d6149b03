"""The approvals' quarter-hour rollup: what the dashboard sums instead of scanning approvals.

Each figure counts an approval in the quarter of its own time: asked at `created_at`,
decided by a person at `decided_at` (with how long it waited, in a histogram per tool and
risk), voided at `voided_at`, expired undecided at `expires_at`. The first three are
written once, when they happen (at the store's now, so in a quarter not closed yet). The
last is the one whose row is still to be written in a past quarter: a pending approval
past its expiry reads expired (`has_status`) until the sweep, a void or its run's end
records it so. So a quarter is **closed**, and rolled up into `ApprovalQuarter` and
`ApprovalWaitQuarter`, once it is older than the commit lag (stateroom.rollup.COMMIT_LAG)
and no approval still pending in the table expires in it. Beat runs `refresh_rollup`
every minute. Deleting content keeps the approval's tool, risk and times: nothing to
reopen.
"""

from __future__ import annotations

from datetime import datetime

from stateroom import rollup
from stateroom.rollup import in_ranges, quarter_sql, wait_bin_sql

from .models import (
    ApprovalQuarter,
    ApprovalRequest,
    ApprovalRollup,
    ApprovalStatus,
    ApprovalWaitQuarter,
)

APPROVALS = ApprovalRequest._meta.db_table
PENDING = ApprovalStatus.PENDING.value


def _kind(kind: str, column: str, status: str | None = None) -> str:
    where = f" AND t.status = '{status}'" if status else ""
    return (
        f"SELECT {quarter_sql('t.' + column)} AS q, '{kind}' AS kind"
        + in_ranges(APPROVALS, column)
        + where
    )


ROLLUP = rollup.Rollup(
    state=ApprovalRollup._meta.db_table,
    tables=(ApprovalQuarter._meta.db_table, ApprovalWaitQuarter._meta.db_table),
    live=(
        f"SELECT DISTINCT {quarter_sql('expires_at')} FROM {APPROVALS}"
        f" WHERE tenant_id = %(tenant)s AND status = '{PENDING}' AND expires_at < %(through)s"
    ),
    fill=(
        f"INSERT INTO {ApprovalQuarter._meta.db_table} (tenant_id, quarter, kind, n)"
        " SELECT %(tenant)s, q, kind, count(*) FROM ("
        + " UNION ALL ".join(
            [
                _kind("asked", "created_at"),
                _kind("expired", "expires_at", ApprovalStatus.EXPIRED.value),
                _kind("voided", "voided_at", ApprovalStatus.VOIDED.value),
            ]
        )
        + ") AS counted GROUP BY q, kind ORDER BY q, kind",
        f"INSERT INTO {ApprovalWaitQuarter._meta.db_table}"
        " (tenant_id, quarter, risk, tool_name, bin, n, total)"
        f" SELECT %(tenant)s, {quarter_sql('t.decided_at')}, t.risk, t.tool_name,"
        f" {wait_bin_sql('t.created_at', 't.decided_at')}, count(*),"
        " sum(EXTRACT(EPOCH FROM t.decided_at - t.created_at)::float8)"
        + in_ranges(APPROVALS, "decided_at")
        + " AND t.decision <> '' GROUP BY 2, 3, 4, 5 ORDER BY 2, 3, 4, 5",
    ),
    first=f"SELECT min(created_at) FROM {APPROVALS} WHERE tenant_id = %(tenant)s",
)


def refresh(tenant_id: int, now: datetime) -> int:
    """Close what can be closed at `now` (in the caller's tenant transaction)."""
    return rollup.refresh(ROLLUP, tenant_id, now)
