"""A dashboard figure summed from a rollup's three sources in one statement.

What a rollup holds (stateroom.rollup) is read as sums since an origin, kept at each UTC
midnight, and quarters: a bucket, or the whole window, is the difference of the sums at
the midnights nearest its ends, plus or minus the quarters between those and its ends
(`stateroom.rollup.cover`). The rows the rollup does not hold (the last minutes, the
quarters left open) are read as they are. So a 30-day window reads about two sums per
day and the quarters at each day's edges, whatever the tenant did in it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db import connection

from stateroom.rollup import State, cover

if TYPE_CHECKING:
    from collections.abc import Callable

    from django.db.models import QuerySet

    from tenancy_app.models import Tenant

    from .dashboard import Window

# Counts are summed as float8 (exact below 2 ** 53; a bigint's sum is a slower numeric).
_COUNTS = ("int", "bigint")


@dataclass(frozen=True)
class Figure:
    """One grouping of a `rolled` statement: the keys it keeps (the others come back
    NULL), per bucket or over the whole window, and which of the rollup's rows it reads."""

    keys: tuple[str, ...]
    per_bucket: bool
    where: str = ""  # a condition on the rollup's rows (alias x)


@dataclass(frozen=True)
class Source:
    """A rollup's tables: its sums since an origin and its quarters (same column names)."""

    since: str
    quarters: str


def _columns(rows: list[tuple], width: int) -> list[list]:
    """`rows` as `width` arrays, a parameter each (for `unnest`)."""
    return [list(column) for column in zip(*rows, strict=True)] if rows else [[]] * width


def pieces(win: Window, state: State) -> tuple[tuple[list, list], tuple[list, list]]:
    """What a figure reads of the rollup, per bucket and for the whole window: sums since
    the origin as (bucket's number, midnight, sign), quarters as (…, from, to, sign); the
    window's with no bucket (None)."""
    per_bucket: tuple[list, list] = ([], [])
    window: tuple[list, list] = ([], [])
    if state.closed_through is None:  # nothing rolled up: every row is read raw
        return per_bucket, window
    bounds = [*win.starts, win.end]
    spans = [(n, bounds[n - 1], bounds[n], per_bucket) for n in range(1, len(bounds))]
    for b, lo, hi, (days, edges) in [*spans, (None, win.start, win.end, window)]:
        summed, between = cover(lo, hi, state.days)
        days += [(b, day, sign) for day, sign in summed]
        edges += [(b, start, end, sign) for start, end, sign in between]
    return per_bucket, window


def _keeps(figure: Figure, name: str) -> bool:
    return figure.per_bucket if name == "b" else name in figure.keys


def _raw_select(raw_sql: str, keys: dict[str, str], sums: dict[str, str], figures) -> str:
    """The raw rows, summed per key first (a busy tenant's live runs are thousands of rows
    and a few dozen keys), then once per figure (g.k): a figure's keys, the others NULL."""
    columns = []
    for name, kind in keys.items():
        holders = [str(n) for n, figure in enumerate(figures) if _keeps(figure, name)]
        if len(holders) == len(figures):
            columns.append(f"r.{name}")
        elif holders:
            columns.append(f"CASE WHEN g.k IN ({', '.join(holders)}) THEN r.{name} END AS {name}")
        else:
            columns.append(f"NULL::{kind} AS {name}")
    grouped = (
        f"SELECT {', '.join(keys)}, {', '.join(f'sum({name}) AS {name}' for name in sums)}"
        f" FROM ({raw_sql}) AS raw GROUP BY {', '.join(keys)}"
    )
    return (
        f"SELECT {', '.join(columns)}, {', '.join(f'r.{name}' for name in sums)}"
        f" FROM ({grouped}) AS r CROSS JOIN (VALUES"
        f" {', '.join(f'({n})' for n in range(len(figures)))}) AS g(k)"
    )


def _piece_selects(tenant, source, figure, days, edges, keys, sums, params: list) -> list[str]:
    """The statements reading `figure`'s pieces (their parameters appended to `params`):
    each piece one range of the primary key, a nested loop whatever the statistics say
    (OFFSET 0 keeps the planner from flattening it into a join it may misjudge)."""
    head = ", ".join(
        ("v.b" if name == "b" else f"x.{name}") if _keeps(figure, name) else f"NULL::{kind}"
        for name, kind in keys.items()
    ) + "".join(f", v.sign * x.{name}" for name in sums)
    where = f" AND {figure.where}" if figure.where else ""
    selects = []
    if days:
        selects.append(
            f"SELECT {head} FROM unnest(%s::int[], %s::timestamptz[], %s::int[])"
            f" AS v(b, day, sign) CROSS JOIN LATERAL (SELECT * FROM {source.since} x"
            f" WHERE x.tenant_id = %s AND x.day = v.day{where} OFFSET 0) AS x"
        )
        params += [*_columns(days, 3), tenant.pk]
    if edges:
        selects.append(
            f"SELECT {head} FROM unnest(%s::int[], %s::timestamptz[], %s::timestamptz[],"
            " %s::int[]) AS v(b, lo, hi, sign) CROSS JOIN LATERAL (SELECT *"
            f" FROM {source.quarters} x WHERE x.tenant_id = %s AND x.quarter >= v.lo"
            f" AND x.quarter < v.hi{where} OFFSET 0) AS x"
        )
        params += [*_columns(edges, 4), tenant.pk]
    return selects


def rolled(
    tenant: Tenant,
    win: Window,
    state: State,
    *,
    raw: QuerySet,
    source: Source,
    keys: dict[str, str],
    sums: dict[str, str],
    figures: list[Figure],
    outer: Callable[[str], str] | None = None,
) -> list[tuple]:
    """Each of `figures` summed in one statement from `raw` (a queryset of the rows the
    rollup does not hold: `keys` and `sums` by name, "b" a bucket's number) and from what
    `source` holds, each read with its sign; groups whose count ("n") is 0 are left out.
    `keys` and `sums` map names to SQL types; `outer(sql)` is a statement over the sums.
    Rows as tuples (keys, then sums; or `outer`'s columns), "b" as its bucket's key."""
    raw_sql, params = raw.query.sql_with_params()
    params = list(params)
    selects = [_raw_select(raw_sql, keys, sums, figures)]
    per_bucket, window = pieces(win, state)
    for figure in figures:
        days, edges = per_bucket if figure.per_bucket else window
        selects += _piece_selects(tenant, source, figure, days, edges, keys, sums, params)
    summed = ", ".join(
        f"sum({name}::float8)::{kind} AS {name}"
        if kind in _COUNTS
        else f"sum({name})::{kind} AS {name}"
        for name, kind in sums.items()
    )
    group = ", ".join(keys)
    sql = (
        f"SELECT {group}, {summed} FROM ({' UNION ALL '.join(selects)}) AS parts"
        f" GROUP BY {group} HAVING sum(n::float8) > 0"
    )
    with connection.cursor() as cursor:
        cursor.execute(outer(sql) if outer else sql, params)
        at = [column.name for column in cursor.description].index("b")
        return win.keyed(cursor.fetchall(), at)
