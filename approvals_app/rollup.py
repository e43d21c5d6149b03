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

A quarter's histograms hold about a row per decision while a quarter sees fewer
decisions than a histogram has cells (tools x risks x bins), so a month of quarters reads
as many rows as the month's decisions. `ApprovalWaitSince` sums them from an origin to
each UTC midnight whose quarters are all closed (stateroom.rollup.sum_days): a day, or a
month, is the difference of two sums, at most the cells in use each, and a zone's day
the difference of the nearest UTC midnights' with the quarters in between
(stateroom.rollup.cover).
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
    ApprovalWaitSince,
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


STATE = ApprovalRollup._meta.db_table
WAITS = ApprovalWaitQuarter._meta.db_table
SINCE = ApprovalWaitSince._meta.db_table
ALL_TOOLS = ""  # the tool_name of the sums over every tool

# The sums up to the midnight %(day)s: those up to %(before)s (a day earlier; none at the
# origin) and that day's quarters.
ADD_DAY = (
    f"INSERT INTO {SINCE} (tenant_id, day, tool_name, risk, bin, n, total)"
    " SELECT %(tenant)s, %(day)s, tool_name, risk, bin, sum(n), sum(total) FROM ("
    f" SELECT tool_name, risk, bin, n, total FROM {SINCE}"
    " WHERE tenant_id = %(tenant)s AND day = %(before)s"
    f" UNION ALL SELECT tool_name, risk, bin, n, total FROM {WAITS}"
    " WHERE tenant_id = %(tenant)s AND quarter >= %(before)s AND quarter < %(day)s"
    ") AS summed GROUP BY tool_name, risk, bin ORDER BY tool_name, risk, bin"
)


ROLLUP = rollup.Rollup(
    state=STATE,
    tables=(ApprovalQuarter._meta.db_table, WAITS),
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
        # per tool and risk, and per risk over every tool
        f"INSERT INTO {WAITS} (tenant_id, quarter, risk, tool_name, bin, n, total)"
        f" SELECT %(tenant)s, q, risk, coalesce(tool_name, '{ALL_TOOLS}'), bin, count(*),"
        f" sum(wait) FROM (SELECT {quarter_sql('t.decided_at')} AS q, t.risk, t.tool_name,"
        f" {wait_bin_sql('t.created_at', 't.decided_at')} AS bin,"
        " EXTRACT(EPOCH FROM t.decided_at - t.created_at)::float8 AS wait"
        + in_ranges(APPROVALS, "decided_at")
        + " AND t.decision <> '') AS waited"
        " GROUP BY GROUPING SETS ((q, risk, tool_name, bin), (q, risk, bin))"
        " ORDER BY 2, 3, 4, 5",
    ),
    first=f"SELECT min(created_at) FROM {APPROVALS} WHERE tenant_id = %(tenant)s",
    since=SINCE,
    add_day=ADD_DAY,
)


def refresh(tenant_id: int, now: datetime) -> int:
    """Close what can be closed at `now` (in the caller's tenant transaction)."""
    return rollup.refresh(ROLLUP, tenant_id, now)
