"""Quarter-hour rollups: the arithmetic the dashboard's pre-aggregates share.

A rollup row counts one tenant's rows of one quarter hour (UTC, starting at :00,
:15, :30 or :45). Quarters, not hours: every time zone in use is a whole number
of quarter hours from UTC (India +5:30, Nepal +5:45), so a calendar day of any
zone, like a UTC hour, is a whole number of quarters, and a figure summed from
quarters equals the one counted from the rows.

Which quarters a rollup holds, and how it stays exact, is each owner's rule
(approvals_app.rollup, runs_app.rollup): a quarter is *closed* once nothing in
it can change any more, and only closed quarters are rolled up; the dashboard
reads the others from the rows (console_app.selectors.dashboard).

Waiting times go in a log histogram: 8 bins per doubling from 1/1024 s, each
bin keeping its count and the sum of its values. A percentile is estimated as
PostgreSQL's `percentile_cont` computes it (interpolating between the two order
statistics around the rank), each order statistic taken as the mean of its
bin: exact when a bin holds one value (or equal ones), and otherwise within
the bin, 9% wide.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import connection

QUARTER = timedelta(minutes=15)
EPOCH = datetime(2000, 1, 1, tzinfo=UTC)  # date_bin's origin (any :00 works)
# A row written with a time before this long ago may still be committing: a refresh
# closes quarters only up to `now - COMMIT_LAG`, and later quarters are read raw.
COMMIT_LAG = timedelta(minutes=5)

BINS_PER_DOUBLING = 8
SMALLEST = 2.0**-10  # seconds: bin 0 holds everything shorter
BIN_SQL = (
    ("CASE WHEN {w} < {smallest} THEN 0 ELSE 1 + floor({per} * (ln({w}) / ln(2) + 10))::int END")
    .replace("{smallest}", repr(SMALLEST))
    .replace("{per}", str(BINS_PER_DOUBLING))
)


DAY = timedelta(days=1)


def day_of(moment: datetime) -> datetime:
    """The UTC midnight starting the day of `moment`."""
    return EPOCH + DAY * ((moment - EPOCH) // DAY)


def cover(
    lo: datetime, hi: datetime, days: tuple[datetime, datetime] | None
) -> tuple[list[tuple[datetime, int]], list[tuple[datetime, datetime, int]]]:
    """[lo, hi) as sums since an origin (kept at every UTC midnight of `days`, first and last)
    and quarter ranges, each with its sign: the sum at the midnight B nearest `hi` less the
    one at the midnight A nearest `lo`, and the quarters between `lo` and A and between B
    and `hi` added or taken away (a Paris day is a UTC day less its last hour plus the one
    before it); or the quarters of [lo, hi) alone when that reads fewer."""
    whole = [(lo, hi, 1)]
    if days is None:
        return [], whole
    first, last = days

    def nearest(moment: datetime) -> datetime:
        midnight = day_of(moment + DAY / 2)
        return min(max(midnight, first), last)

    start, end = nearest(lo), nearest(hi)
    if start >= end or abs(start - lo) + abs(hi - end) >= hi - lo:
        return [], whole
    edges = [(lo, start, 1) if lo < start else (start, lo, -1)] if lo != start else []
    if hi != end:
        edges.append((end, hi, 1) if end < hi else (hi, end, -1))
    return [(end, 1), (start, -1)], edges


def quarter_of(moment: datetime) -> datetime:
    """The start of the quarter hour holding `moment`, in UTC."""
    return EPOCH + QUARTER * ((moment - EPOCH) // QUARTER)


def ranges(starts: Iterable[datetime]) -> list[tuple[datetime, datetime]]:
    """Quarters as few [start, end) ranges as they allow (adjacent ones merged), in order."""
    merged: list[list[datetime]] = []
    for start in sorted(set(starts)):
        if merged and merged[-1][1] == start:
            merged[-1][1] = start + QUARTER
        else:
            merged.append([start, start + QUARTER])
    return [(start, end) for start, end in merged]


FRACTIONS = (0.5, 0.95)


def percentiles_sql(binned: str, groups: list[str]) -> str:
    """Per group of `binned` (a statement of rows: *groups, bin, n, total), its size and the
    means of the bins holding the two order statistics around each of FRACTIONS' ranks
    (`interpolated` goes between them), so a page reads one row a group, not one a bin."""
    keys = ", ".join(groups)
    stats = []
    for fraction in FRACTIONS:
        for name, rounding in (("lo", "floor"), ("hi", "ceil")):
            rank = f"{rounding}({fraction}::float8 * (size - 1))"  # as `interpolated` does
            stats.append(
                f"min(total / n) FILTER (WHERE below <= {rank} AND {rank} < below + n)"
                f" AS p{round(fraction * 100)}_{name}"
            )
    return (
        f"SELECT {keys}, max(size)::bigint AS n, {', '.join(stats)} FROM ("
        f" SELECT {keys}, n, total, sum(n) OVER (PARTITION BY {keys} ORDER BY bin) - n AS below,"
        f" sum(n) OVER (PARTITION BY {keys}) AS size FROM ({binned}) AS binned"
        f") AS cumulative GROUP BY {keys}"
    )


def interpolated(n: int, fraction: float, low: float, high: float) -> float:
    """`percentile_cont` between the order statistics around the rank (`percentiles_sql`)."""
    rank = fraction * (n - 1)
    return low + (rank - math.floor(rank)) * (high - low)


def quarter_sql(column: str) -> str:
    """The SQL of `column`'s quarter (`quarter_of` in PostgreSQL)."""
    return f"date_bin('15 minutes', {column}, TIMESTAMPTZ '2000-01-01 00:00+00')"


def in_ranges(table: str, column: str) -> str:
    """`FROM table t … WHERE`: the tenant's rows whose `column` falls in the ranges to close
    (`%(starts)s`, `%(ends)s`) and not in a quarter left open (`%(live)s`)."""
    return (
        f" FROM {table} t JOIN unnest(%(starts)s::timestamptz[], %(ends)s::timestamptz[])"
        f" AS g(s, e) ON t.{column} >= g.s AND t.{column} < g.e"
        f" WHERE t.tenant_id = %(tenant)s AND {quarter_sql('t.' + column)} <> ALL(%(live)s)"
    )


def wait_bin_sql(start: str, end: str) -> str:
    """The SQL of the histogram bin of `end - start`: bin k >= 1 holds the waits from
    2 ** ((k - 1) / 8 - 10) s up to 2 ** (k / 8 - 10) s, bin 0 the shorter ones."""
    return BIN_SQL.replace("{w}", f"EXTRACT(EPOCH FROM {end} - {start})::float8")


@dataclass(frozen=True)
class Rollup:
    """One owner's quarter-hour rollup: its state table (a row per tenant: `closed_through`
    and `open_quarters`), its rollup tables and the statements that fill them.

    Every statement is run with `%(tenant)s`; `live` also gets `%(through)s` and returns the
    quarters before it that are not closed yet; each of `fill` also gets `%(starts)s` and
    `%(ends)s` (the ranges to close) and `%(live)s` (the quarters among them to leave open),
    and inserts the closed quarters' rows, in the order of the table's primary key (so a
    window's rows sit together on disk, and its read is one short range, not one page per
    row); `first` returns the earliest time of any row.

    `since`, when given, is a table of sums from an origin up to each UTC midnight whose
    quarters are all closed (the last KEPT days'; `sum_days`), and `add_day` the statement
    that writes those up to `%(day)s` from those up to `%(before)s` and the day's quarters.
    """

    state: str
    tables: tuple[str, ...]
    live: str
    fill: tuple[str, ...]
    first: str
    since: str | None = None
    add_day: str = ""


@dataclass(frozen=True)
class State:
    """What the rollup holds: the closed quarters are those before `closed_through` not in
    `open_quarters`; None: nothing is rolled up (every row is read raw). `days`: the first
    and last UTC midnights of the rollup's sums since an origin, if it keeps them."""

    closed_through: datetime | None = None
    open_quarters: tuple[datetime, ...] = ()
    days: tuple[datetime, datetime] | None = None


_STATE_COLUMNS = "closed_through, open_quarters, days_from, days_through"


def _locked_state(rollup: Rollup, cursor, tenant_id: int, through: datetime) -> tuple:
    """The tenant's state row, locked (created first if missing): closed through when, the
    quarters left open and the midnights its sums are held at; a first refresh closes from
    the first row on."""
    cursor.execute(
        f"INSERT INTO {rollup.state} (tenant_id, closed_through, open_quarters)"
        " VALUES (%s, NULL, '{}') ON CONFLICT (tenant_id) DO NOTHING",
        [tenant_id],
    )
    cursor.execute(
        f"SELECT {_STATE_COLUMNS} FROM {rollup.state} WHERE tenant_id = %s FOR UPDATE",
        [tenant_id],
    )
    closed_through, open_quarters, *days = cursor.fetchone()
    if closed_through is None:
        cursor.execute(rollup.first, {"tenant": tenant_id})
        first = cursor.fetchone()[0]
        closed_through = min(quarter_of(first), through) if first else through
    return closed_through, open_quarters, tuple(days)


def refresh(rollup: Rollup, tenant_id: int, now: datetime) -> int:
    """Roll up every quarter that can be closed at `now`; how many were closed.

    In the caller's tenant transaction. The state row is locked first: refreshes of one
    tenant take turns, and the ranges each closes are the ones no other closed.
    """
    through = quarter_of(now - COMMIT_LAG)
    with connection.cursor() as cursor:
        closed_through, open_quarters, days = _locked_state(rollup, cursor, tenant_id, through)
        behind = set(open_quarters)
        ahead = [(closed_through, through)] if through > closed_through else []
        # Never back (a refresh with an older now): what is closed stays closed.
        through = max(through, closed_through)
        if not behind and not ahead:
            cursor.execute(
                f"UPDATE {rollup.state} SET closed_through = %s WHERE tenant_id = %s",
                [through, tenant_id],
            )
            sum_days(rollup, tenant_id, days, None, min([through, *open_quarters]))
            return 0
        cursor.execute(rollup.live, {"tenant": tenant_id, "through": through})
        live = sorted(row[0] for row in cursor.fetchall())
        # A live row in a quarter already closed (it committed later than COMMIT_LAG allows):
        # that quarter is taken back like the open ones, its rollup rows deleted.
        behind |= {q for q in live if q < closed_through}
        todo = ranges(behind) + ahead
        params = {
            "tenant": tenant_id,
            "starts": [start for start, _ in todo],
            "ends": [end for _, end in todo],
            "live": live,
        }
        for table in rollup.tables:  # a quarter's rows are written once, by its closing
            cursor.execute(
                f"DELETE FROM {table} t USING unnest(%(starts)s::timestamptz[],"
                " %(ends)s::timestamptz[]) AS r(s, e) WHERE t.tenant_id = %(tenant)s"
                " AND t.quarter >= r.s AND t.quarter < r.e",
                params,
            )
        for statement in rollup.fill:
            cursor.execute(statement, params)
        cursor.execute(
            f"UPDATE {rollup.state} SET closed_through = %s, open_quarters = %s"
            " WHERE tenant_id = %s",
            [through, live, tenant_id],
        )
    sum_days(rollup, tenant_id, days, min(behind, default=None), min([through, *live]))
    return sum((end - start) // QUARTER for start, end in todo) - len(live)


def reopen(rollup: Rollup, tenant_id: int, quarters: Iterable[datetime]) -> None:
    """Quarters whose rows changed after they were closed (content deleted): they are read
    raw again and the next refresh closes them anew. In the caller's transaction."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {_STATE_COLUMNS} FROM {rollup.state} WHERE tenant_id = %s FOR UPDATE",
            [tenant_id],
        )
        row = cursor.fetchone()
        if row is None or row[0] is None:
            return
        closed_through, open_quarters, *days = row
        again = sorted({q for q in quarters if q < closed_through} - set(open_quarters))
        if not again:
            return
        for table in rollup.tables:
            cursor.execute(
                f"DELETE FROM {table} WHERE tenant_id = %s AND quarter = ANY(%s)",
                [tenant_id, again],
            )
        cursor.execute(
            f"UPDATE {rollup.state} SET open_quarters = %s WHERE tenant_id = %s",
            [sorted([*open_quarters, *again]), tenant_id],
        )
    sum_days(
        rollup, tenant_id, tuple(days), again[0], min([closed_through, *open_quarters, *again])
    )


KEPT = 32  # days of sums kept: a window is at most 30 days of any zone, and its edges


def sum_days(
    rollup: Rollup,
    tenant_id: int,
    held: tuple[datetime | None, ...],
    refilled: datetime | None,
    frontier: datetime,
) -> None:
    """Keep `rollup.since` at every UTC midnight of the last KEPT days up to `frontier` (every
    quarter before it closed), first dropping the sums past `refilled`, a quarter closed
    before and written anew or opened again (a sum up to D holds the quarters before D).
    `held`: the first and last midnights held, as the locked state row says; the row then
    records the new ones (`State.days`). In the transaction that locked it."""
    if rollup.since is None:
        return
    first, last = held
    target = day_of(frontier)
    with connection.cursor() as cursor:
        if last is not None and target < last and (refilled is None or target < refilled):
            refilled = target  # (what moves the frontier back is a quarter opened again)
        if last is not None and refilled is not None and refilled < last:
            last = day_of(refilled)
            if last < first:
                first = last = None
            else:
                cursor.execute(
                    f"DELETE FROM {rollup.since} WHERE tenant_id = %s AND day > %s",
                    [tenant_id, last],
                )
        if first is None or last is None:  # a new origin: nothing summed before it
            cursor.execute(f"DELETE FROM {rollup.since} WHERE tenant_id = %s", [tenant_id])
            first = last = target - KEPT * DAY
        while last < target:
            last += DAY
            cursor.execute(rollup.add_day, {"tenant": tenant_id, "day": last, "before": last - DAY})
        if first < target - KEPT * DAY:
            first = target - KEPT * DAY
            cursor.execute(
                f"DELETE FROM {rollup.since} WHERE tenant_id = %s AND day < %s", [tenant_id, first]
            )
        if (first, last) != tuple(held):
            cursor.execute(
                f"UPDATE {rollup.state} SET days_from = %s, days_through = %s WHERE tenant_id = %s",
                [first, last, tenant_id],
            )
