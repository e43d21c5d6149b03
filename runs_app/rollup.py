"""The runs' quarter-hour rollup: what the dashboard sums instead of scanning the runs.

A run counts in the quarter it was created in, with its status, tokens, cost, agent and
failure reason as they are now. All of those change until the run ends and never after
(a terminal status is final: RUN_TRANSITIONS), so a quarter is **closed**, and rolled up
into `RunQuarter` and `RunSessionQuarter`, once it is older than the commit lag
(stateroom.rollup.COMMIT_LAG) and no run created in it is live. A quarter with a live
run stays open (the dashboard reads its runs raw) until a refresh finds them all ended.

Deleting a session's content clears its runs' errors, and so their failure reasons:
`reopen` takes those runs' quarters back (runs_app.store.content), and the next refresh
closes them with what is left. Beat runs `refresh_rollup` every minute.

`RunSince` sums the quarters from an origin to each UTC midnight whose quarters are all
closed (stateroom.rollup.sum_days): a month's runs are two reads, not a row per quarter,
status, agent and reason; a quarter opened again drops the sums past it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from stateroom import rollup
from stateroom.rollup import in_ranges, quarter_sql

from .models import (
    TERMINAL_RUN_STATUSES,
    Run,
    RunQuarter,
    RunRollup,
    RunSessionQuarter,
    RunSince,
    RunStatus,
)

LIVE = [status for status in RunStatus.values if status not in TERMINAL_RUN_STATUSES]
RUNS = Run._meta.db_table
_IN_RANGES = in_ranges(RUNS, "created_at")
FAILED = RunStatus.FAILED.value
QUARTERS = RunQuarter._meta.db_table
SINCE = RunSince._meta.db_table
_KEYS = "status, agent, reason"
# The sums up to the midnight %(day)s: those up to %(before)s and that day's quarters.
ADD_DAY = (
    f"INSERT INTO {SINCE} (tenant_id, day, {_KEYS}, n, tokens, cost)"
    f" SELECT %(tenant)s, %(day)s, {_KEYS}, sum(n), sum(tokens), sum(cost) FROM ("
    f" SELECT {_KEYS}, n, tokens, cost FROM {SINCE}"
    " WHERE tenant_id = %(tenant)s AND day = %(before)s"
    f" UNION ALL SELECT {_KEYS}, n, tokens, cost FROM {QUARTERS}"
    " WHERE tenant_id = %(tenant)s AND quarter >= %(before)s AND quarter < %(day)s"
    f") AS summed GROUP BY {_KEYS} ORDER BY {_KEYS}"
)

ROLLUP = rollup.Rollup(
    state=RunRollup._meta.db_table,
    tables=(QUARTERS, RunSessionQuarter._meta.db_table),
    live=(
        f"SELECT DISTINCT {quarter_sql('created_at')} FROM {RUNS}"
        f" WHERE tenant_id = %(tenant)s AND status IN ({', '.join(repr(s) for s in LIVE)})"
        " AND created_at < %(through)s"
    ),
    fill=(
        f"INSERT INTO {QUARTERS}"
        " (tenant_id, quarter, status, agent, reason, n, tokens, cost)"
        f" SELECT %(tenant)s, {quarter_sql('t.created_at')}, t.status, t.active_agent,"
        f" CASE WHEN t.status = '{FAILED}' THEN COALESCE(t.error->>'code', '') ELSE '' END,"
        " count(*), sum(t.token_used), sum(t.cost_used)"
        + _IN_RANGES
        + " GROUP BY 2, 3, 4, 5 ORDER BY 2, 3, 4, 5",
        f"INSERT INTO {RunSessionQuarter._meta.db_table}"
        " (tenant_id, quarter, session_id, n, tokens, cost)"
        f" SELECT %(tenant)s, {quarter_sql('t.created_at')}, t.session_id,"
        " count(*), sum(t.token_used), sum(t.cost_used)"
        + _IN_RANGES
        + " AND t.session_id IS NOT NULL GROUP BY 2, 3 ORDER BY 2, 3",
    ),
    first=f"SELECT min(created_at) FROM {RUNS} WHERE tenant_id = %(tenant)s",
    since=SINCE,
    add_day=ADD_DAY,
)


def refresh(tenant_id: int, now: datetime) -> int:
    """Close what can be closed at `now` (in the caller's tenant transaction)."""
    return rollup.refresh(ROLLUP, tenant_id, now)


def reopen(tenant_id: int, run_pks: Iterable[int]) -> None:
    """These runs changed after their quarter closed: read their quarters raw again."""
    created = Run.objects.filter(tenant_id=tenant_id, pk__in=list(run_pks)).values_list(
        "created_at", flat=True
    )
    rollup.reopen(ROLLUP, tenant_id, {rollup.quarter_of(moment) for moment in created})
