"""What the dashboard shows: a tenant's approvals, runs, effects and deletions over a window.

Every figure is one aggregate statement (GROUP BY a bucket, and a status, risk or tool),
never a row per item: the page costs the same number of queries for an empty tenant and
for a busy one (tests/console/dashboard pins it). Approvals and runs are summed from two
sources in that one statement (`_summed`): the quarter-hour rollups for the quarters they
hold (stateroom.rollup: closed quarters, where nothing can change any more), and the rows
themselves for the rest (the last minutes, and the quarters a live run or an unswept
expiry keeps open). So a window of 30 days costs its quarters, not its rows, and every
count is the rows' count; a percentile of the waiting times comes from log histograms,
within one bin (9%) of PostgreSQL's `percentile_cont` and equal to it when a bin holds one
value. Buckets are hours (24 h) or days (7 d, 30 d) of the viewer's time zone: a day is
the zone's calendar day, so around a DST change it lasts 23 or 25 hours, and an hour is
a UTC hour (the same instant everywhere), labelled in the zone.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import connection
from django.db.models import (
    Case,
    CharField,
    Count,
    DateField,
    DateTimeField,
    F,
    FloatField,
    Func,
    IntegerField,
    Min,
    Q,
    Sum,
    Value,
    When,
)
from django.db.models.expressions import RawSQL
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce, TruncDate, TruncHour

from approvals_app.models import (
    ApprovalQuarter,
    ApprovalRequest,
    ApprovalRollup,
    ApprovalStatus,
    ApprovalWaitQuarter,
    ApprovalWaitSince,
)
from approvals_app.rollup import ALL_TOOLS
from approvals_app.store.base import has_status
from effects_app.models import EffectStatus, ExternalEffect
from lifecycle_app.models import Deletion, DeletionStatus, Erasure
from runs_app.models import Run, RunQuarter, RunRollup, RunSessionQuarter, RunSince, RunStatus
from stateroom.rollup import (
    State,
    interpolated,
    percentiles_sql,
    ranges,
    wait_bin_sql,
)
from tenancy_app.models import Tenant

from .rolled import Figure, Source, rolled

WAITS = Source(ApprovalWaitSince._meta.db_table, ApprovalWaitQuarter._meta.db_table)
RUNS = Source(RunSince._meta.db_table, RunQuarter._meta.db_table)

RANGES = {"24h": ("hour", 24), "7d": ("day", 7), "30d": ("day", 30)}
DEFAULT_RANGE = "7d"
TOP = 10  # rows of the "top" tables: tools, failure reasons, sessions, agents
RISKS = ["low", "medium", "high", "critical"]
DASHBOARD_WORK_MEM = "32MB"  # per sort or hash, for this page's statements only


@dataclass(frozen=True)
class Window:
    """The range shown: `start` (inclusive) to `end` (now, exclusive), cut into buckets."""

    key: str
    tz: ZoneInfo
    unit: str  # "hour" or "day"
    start: datetime
    end: datetime
    # Each bucket's key as SQL returns it (a UTC hour, or a date in `tz`) and its start.
    keys: list[Any] = field(default_factory=list)
    starts: list[datetime] = field(default_factory=list)

    def bucket(self, column: str):
        """The SQL expression of `column`'s bucket."""
        if self.unit == "hour":
            return TruncHour(column, tzinfo=UTC)
        return TruncDate(column, tzinfo=self.tz)

    def index(self, column: str) -> Func:
        """The SQL of `column`'s bucket as its number (1 for the first, 0 before the window):
        a binary search of the buckets' starts, cheaper per row than `bucket`'s conversion
        to the zone's date, for the statements that read many rows (`_summed`)."""
        return Func(
            F(column),
            Value(self.starts, output_field=ArrayField(DateTimeField())),
            function="width_bucket",
            output_field=IntegerField(),
        )

    def keyed(self, rows: list[tuple], at: int) -> list[tuple]:
        """`rows` with column `at` (a bucket's number, `index`; 0 or None: no bucket) as the
        bucket's key."""
        keys = [None, *self.keys]
        return [(*row[:at], keys[row[at] or 0], *row[at + 1 :]) for row in rows]

    def within(self, column: str) -> Q:
        return Q(**{f"{column}__gte": self.start, f"{column}__lt": self.end})

    def label(self, index: int) -> str:
        start = self.starts[index].astimezone(self.tz)
        return start.strftime("%H:%M") if self.unit == "hour" else start.strftime("%a %d %b")


def window(key: str, tz: ZoneInfo, now: datetime) -> Window:
    """The window of range `key` ending at `now`: the last 24 hours (the current hour and
    the 23 before it), or the last 7 or 30 calendar days of `tz`, today included."""
    unit, count = RANGES[key]
    if unit == "hour":
        last = now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
        keys = [last - timedelta(hours=count - 1 - n) for n in range(count)]
        starts = list(keys)
    else:
        today = now.astimezone(tz).date()
        keys = [today - timedelta(days=count - 1 - n) for n in range(count)]
        starts = [_midnight(day, tz) for day in keys]
    return Window(key=key, tz=tz, unit=unit, start=starts[0], end=now, keys=keys, starts=starts)


def _midnight(day: date, tz: ZoneInfo) -> datetime:
    """The first instant of `day` in `tz` (a day a DST change starts at 00:00 begins at 01:00)."""
    # In UTC: Python subtracts two datetimes of one tzinfo as wall times, so a 23-hour
    # day would measure 24. (A midnight skipped by a DST change maps to the next instant.)
    return datetime.combine(day, time.min, tzinfo=tz).astimezone(UTC)


def _seconds_between(start: str, end: str) -> Func:
    return Func(
        F(end) - F(start), template="EXTRACT(EPOCH FROM %(expressions)s)", output_field=FloatField()
    )


def _series(win: Window, rows, value: str = "n") -> list:
    """The values of `rows` ({"b": bucket key, value: …}) in bucket order, 0 where none."""
    found = {row["b"]: row[value] for row in rows}
    return [found.get(key, 0) or 0 for key in win.keys]


# --- The rollups: closed quarters summed from the rollup tables, the rest from the rows. ---

# Each sum's SQL type: what the rows' and the rollups' sums add up to.
_SUMS = {"n": "bigint", "tokens": "bigint", "cost": "numeric"}


@dataclass(frozen=True)
class Rollups:
    """What the approvals' and the runs' rollups hold for the tenant (stateroom.rollup)."""

    approvals: State
    runs: State


def rollups(tenant: Tenant) -> Rollups:
    """Both states, in one statement."""
    fields = ["kind", "closed_through", "open_quarters", "days_from", "days_through"]
    found = {
        kind: State(
            closed_through,
            tuple(open_quarters),
            (days_from, days_through) if days_through is not None else None,
        )
        for kind, closed_through, open_quarters, days_from, days_through in (
            ApprovalRollup.objects.filter(tenant=tenant)
            .annotate(kind=Value("approvals"))
            .values_list(*fields)
            .union(
                RunRollup.objects.filter(tenant=tenant)
                .annotate(kind=Value("runs"))
                .values_list(*fields),
                all=True,
            )
        )
    }
    return Rollups(found.get("approvals", State()), found.get("runs", State()))


def unclosed(state: State, column: str) -> Q:
    """The rows whose `column` falls in a quarter the rollup does not hold."""
    if state.closed_through is None:
        return Q()
    found = Q(**{f"{column}__gte": state.closed_through})
    for start, end in ranges(state.open_quarters):
        found |= Q(**{f"{column}__gte": start, f"{column}__lt": end})
    return found


def _summed(
    parts,
    keys: list[str],
    sums: list[str],
    *,
    top: str = "",
    win: Window | None = None,
) -> list[dict]:
    """The rows of `parts` (querysets of `values(*keys).annotate(*sums)`, in that order: the
    rows' own and the rollup's), summed per key in one statement; with `top` (an ORDER BY),
    the first TOP rows. With `win`, "b" (a bucket's number, `Window.index`) comes back as
    its key. (The waits and the runs, summed from the rollups' sums too: `rolled`.)"""
    compiled = [qs.query.sql_with_params() for qs in parts]
    sums_sql = ", ".join(f"sum({name})::{_SUMS[name]} AS {name}" for name in sums)
    sql = (
        f"SELECT {', '.join(keys)}, {sums_sql} FROM ("
        + " UNION ALL ".join(f"({part})" for part, _ in compiled)
        + f") AS parts GROUP BY {', '.join(keys)}"
    )
    if top:
        sql = (
            f"SELECT * FROM (SELECT *, row_number() OVER (ORDER BY {top}) AS rank"
            f" FROM ({sql}) AS summed) AS ranked WHERE rank <= {TOP} ORDER BY rank"
        )
    with connection.cursor() as cursor:
        cursor.execute(sql, [param for _, params in compiled for param in params])
        names = [column.name for column in cursor.description]
        rows = cursor.fetchall()
    if win is not None:
        rows = win.keyed(rows, names.index("b"))
    return [dict(zip(names, row, strict=True)) for row in rows]


def _latency(n: int, p50_lo, p50_hi, p95_lo, p95_hi) -> dict:
    return {
        "n": n,
        "p50": interpolated(n, 0.5, p50_lo, p50_hi),
        "p95": interpolated(n, 0.95, p95_lo, p95_hi),
    }


def approvals(tenant: Tenant, win: Window, now: datetime, state: State) -> dict[str, Any]:
    """Asked, decided, expired undecided and voided per bucket; time to decision (p50, p95)
    per bucket and risk and per tool and risk; the pending backlog by risk now."""
    rows = ApprovalRequest.objects.filter(tenant=tenant)

    def per_bucket(kind: str, matching, column: str):
        return (
            matching.filter(win.within(column), unclosed(state, column))
            .annotate(kind=Value(kind, output_field=CharField()), b=win.index(column))
            .values("kind", "b")
            .annotate(n=Count("id"))
            .order_by()
        )

    # Asked, expired undecided (swept or not yet: decided_at is expires_at once swept) and
    # voided, per bucket: each part grouped on its own column, and the rollup's quarters.
    counts = _summed(
        [
            per_bucket("asked", rows, "created_at"),
            per_bucket(
                "expired", rows.filter(has_status(ApprovalStatus.EXPIRED, now)), "expires_at"
            ),
            per_bucket("voided", rows.filter(status=ApprovalStatus.VOIDED), "voided_at"),
            ApprovalQuarter.objects.filter(tenant=tenant)
            .filter(win.within("quarter"))
            .annotate(b=win.index("quarter"))
            .values("kind", "b")
            .annotate(n=Sum("n"))
            .order_by(),
        ],
        ["kind", "b"],
        ["n"],
        win=win,
    )
    by_risk, by_tool = _waits(tenant, win, state, rows)
    backlog = (
        rows.filter(has_status(ApprovalStatus.PENDING, now))
        .values("risk")
        .annotate(n=Count("id"), oldest=Min("created_at"))
        .order_by()
    )
    return _approval_figures(win, now, counts, by_risk, by_tool, backlog)


def _waits(tenant: Tenant, win: Window, state: State, rows) -> tuple[dict, list]:
    """How long the approvals a person decided waited, {n, p50, p95}: per bucket and risk,
    and of the first tool and risk pairs by count (log histograms: stateroom.rollup)."""
    # Decided by a person (approve, edit, reject, respond), whatever came after (a void).
    decided = rows.filter(win.within("decided_at"), unclosed(state, "decided_at")).exclude(
        decision=""
    )
    table = ApprovalRequest._meta.db_table
    wait_bin = RawSQL(
        wait_bin_sql(f'"{table}"."created_at"', f'"{table}"."decided_at"'), [], IntegerField()
    )
    found = rolled(
        tenant,
        win,
        state,
        raw=decided.annotate(b=win.index("decided_at"), bin=wait_bin)
        .values(
            "b",
            "tool_name",
            "risk",
            "bin",
            n=Value(1),
            total=_seconds_between("created_at", "decided_at"),
        )
        .order_by(),
        source=WAITS,
        keys={"b": "int", "tool_name": "text", "risk": "text", "bin": "int"},
        sums={"n": "int", "total": "float8"},
        figures=[
            # per bucket and risk: the sums over every tool
            Figure(("risk", "bin"), per_bucket=True, where=f"x.tool_name = '{ALL_TOOLS}'"),
            Figure(("tool_name", "risk", "bin"), False, where=f"x.tool_name > '{ALL_TOOLS}'"),
        ],
        outer=lambda binned: percentiles_sql(binned, ["b", "tool_name", "risk"]),
    )
    # (b, tool_name, risk, n, the order statistics): the tool NULL per bucket, b per tool
    by_risk = {(b, risk): _latency(*stats) for b, tool, risk, *stats in found if tool is None}
    by_tool = [
        {"tool_name": tool, "risk": risk, **_latency(*stats)}
        for b, tool, risk, *stats in found
        if b is None
    ]
    by_tool.sort(key=lambda row: (-row["n"], row["tool_name"], row["risk"]))
    return by_risk, by_tool[: TOP * 2]


def _approval_figures(win, now, counts, by_risk, by_tool, backlog) -> dict:
    per_kind: dict[str, list] = {"asked": [], "expired": [], "voided": []}
    for row in counts:
        per_kind[row["kind"]].append(row)
    decided_per_bucket: dict[Any, int] = defaultdict(int)
    latency: dict[str, dict[Any, dict]] = defaultdict(dict)
    for (bucket, risk), figures in by_risk.items():
        decided_per_bucket[bucket] += figures["n"]
        latency[risk][bucket] = figures
    backlog = {row["risk"]: row for row in backlog}
    oldest = min((row["oldest"] for row in backlog.values()), default=None)
    return {
        "asked": _series(win, per_kind["asked"]),
        "decided": [decided_per_bucket.get(key, 0) for key in win.keys],
        "expired": _series(win, per_kind["expired"]),
        "voided": _series(win, per_kind["voided"]),
        # Per risk: one list per bucket of {n, p50, p95} (None: nothing decided then).
        "latency": {
            risk: [latency[risk].get(key) for key in win.keys] for risk in RISKS if risk in latency
        },
        "by_tool": by_tool,
        "backlog": [
            {"risk": risk, "n": backlog[risk]["n"], "oldest": backlog[risk]["oldest"]}
            for risk in reversed(RISKS)
            if risk in backlog
        ],
        "pending": sum(row["n"] for row in backlog.values()),
        "oldest_age": (now - oldest) if oldest else None,
    }


def runs(tenant: Tenant, win: Window, state: State) -> dict[str, Any]:
    """Runs started per bucket by their status now, with their tokens and cost; the top
    failure reasons (the error's `code`), sessions and agents by cost."""
    started = (
        Run.objects.filter(tenant=tenant)
        .filter(win.within("created_at"))
        .filter(unclosed(state, "created_at"))
    )
    # Per bucket and status, per status and failure reason, per agent: one statement.
    rows = rolled(
        tenant,
        win,
        state,
        raw=started.values(
            "status",
            b=win.index("created_at"),
            reason=Coalesce(KT("error__code"), Value(""), output_field=CharField()),
            agent=F("active_agent"),
            n=Value(1),
            tokens=F("token_used"),
            cost=F("cost_used"),
        ).order_by(),
        source=RUNS,
        keys={"b": "int", "status": "text", "reason": "text", "agent": "text"},
        sums={"n": "bigint", "tokens": "bigint", "cost": "numeric"},
        figures=[
            Figure(("status",), per_bucket=True),
            Figure(("status", "reason"), per_bucket=False),
            Figure(("agent",), per_bucket=False),
        ],
    )
    return {**_runs_figures(win, rows), "sessions": _top_sessions(tenant, win, started)}


def _runs_figures(win: Window, rows) -> dict[str, Any]:
    """The runs' figures from the rows of `runs`' figures."""
    statuses: dict[str, dict[Any, int]] = defaultdict(dict)
    tokens: dict[Any, int] = defaultdict(int)
    cost: dict[Any, Decimal] = defaultdict(Decimal)
    reasons, agents = [], []
    for b, status, reason, agent, n, used, spent in rows:
        if b is not None:
            statuses[status][b] = n
            tokens[b] += used
            cost[b] += spent
        elif status is not None:
            if status == RunStatus.FAILED:
                reasons.append({"reason": reason, "n": n})
        else:
            agents.append({"kind": "agent", "name": agent, "tokens": used, "cost": spent, "n": n})
    reasons.sort(key=lambda row: (-row["n"], row["reason"]))
    agents.sort(key=lambda row: (-row["cost"], -row["tokens"], row["name"]))
    return {
        "by_status": {
            status: [statuses[status].get(key, 0) for key in win.keys]
            for status in RunStatus.values
            if status in statuses
        },
        "tokens": [tokens.get(key, 0) for key in win.keys],
        "cost": [cost.get(key, Decimal(0)) for key in win.keys],
        "reasons": reasons[:TOP],
        "agents": agents[:TOP],
    }


def _top_sessions(tenant: Tenant, win: Window, started) -> list[dict]:
    """The top sessions by cost."""
    sessions = RunSessionQuarter.objects.filter(tenant=tenant).filter(win.within("quarter"))
    return _summed(
        [
            started.filter(session__isnull=False)
            .values(name=F("session__session_id"))
            .annotate(tokens=Sum("token_used"), cost=Sum("cost_used"), n=Count("id"))
            .order_by(),
            sessions.values(name=F("session__session_id"))
            .annotate(tokens=Sum("tokens"), cost=Sum("cost"), n=Sum("n"))
            .order_by(),
        ],
        ["name"],
        ["tokens", "cost", "n"],
        top="cost DESC, tokens DESC, name",
    )


def effects(tenant: Tenant, win: Window, now: datetime) -> dict[str, Any]:
    """Effects a person must settle now (unknown, or started and stuck), by when they were
    recorded: per bucket of the window, and how many are older than it. The same rule as
    the effects queue (`EffectStore.needing_a_person`)."""
    cutoff = now - timedelta(minutes=settings.STATEROOM_EFFECT_STUCK_MINUTES)
    rows = (
        ExternalEffect.objects.filter(tenant=tenant)
        .filter(
            Q(status=EffectStatus.UNKNOWN) | Q(status=EffectStatus.STARTED, updated_at__lt=cutoff)
        )
        .annotate(
            b=Case(
                When(created_at__lt=win.start, then=None),
                default=win.bucket("created_at"),
                output_field=DateTimeField() if win.unit == "hour" else DateField(),
            )
        )
        .values("b", "status")
        .annotate(n=Count("id"))
        .order_by()
    )
    per: dict[str, dict[Any, int]] = {EffectStatus.UNKNOWN: {}, EffectStatus.STARTED: {}}
    for row in rows:
        key = row["b"]
        if isinstance(key, datetime) and key.tzinfo is None:
            # Inside CASE, PostgreSQL's `timestamp` (UTC) comes back naive (no Trunc converter).
            key = key.replace(tzinfo=UTC)
        per[row["status"]][key] = row["n"]
    return {
        "unknown": [per[EffectStatus.UNKNOWN].get(key, 0) for key in win.keys],
        "stuck": [per[EffectStatus.STARTED].get(key, 0) for key in win.keys],
        "unknown_older": per[EffectStatus.UNKNOWN].get(None, 0),
        "stuck_older": per[EffectStatus.STARTED].get(None, 0),
        "unknown_total": sum(per[EffectStatus.UNKNOWN].values()),
        "stuck_total": sum(per[EffectStatus.STARTED].values()),
    }


RECEIPT_STATUSES = [DeletionStatus.DONE, DeletionStatus.REFUSED, DeletionStatus.FAILED]


def deletions(tenant: Tenant, win: Window, *, with_erasures: bool) -> dict[str, Any]:
    """Deletion receipts (finished jobs: done, refused, failed) per bucket of their end, and
    the erasures asked per bucket (None for a role that may not see erasures)."""
    finished = (
        Deletion.objects.filter(tenant=tenant, status__in=RECEIPT_STATUSES)
        .filter(win.within("finished_at"))
        .annotate(b=win.bucket("finished_at"))
        .values("b", "status")
        .annotate(n=Count("id"))
        .order_by()
    )
    per: dict[str, dict[Any, int]] = defaultdict(dict)
    for row in finished:
        per[row["status"]][row["b"]] = row["n"]
    found = {
        "receipts": {
            status.value: [per[status].get(key, 0) for key in win.keys]
            for status in RECEIPT_STATUSES
        },
        "erasures": None,
    }
    if with_erasures:
        asked = (
            Erasure.objects.filter(tenant=tenant)
            .filter(win.within("created_at"))
            .annotate(b=win.bucket("created_at"))
            .values("b")
            .annotate(n=Count("id"))
            .order_by()
        )
        found["erasures"] = _series(win, asked)
    return found


def dashboard(tenant: Tenant, win: Window, now: datetime, *, with_erasures: bool) -> dict:
    """Every figure of the dashboard (9 statements; 10 with the erasures), in the caller's
    transaction."""
    with connection.cursor() as cursor:
        # For this transaction: no parallel plans (their workers take longer to start, 5-8 ms
        # measured at the bench's 1 M scale, than these statements run), and room to hash
        # the grouping sets of a busy month in memory rather than sort them on disk.
        cursor.execute(
            "SELECT set_config('max_parallel_workers_per_gather', '0', true),"
            " set_config('work_mem', %s, true)",
            [DASHBOARD_WORK_MEM],
        )
    held = rollups(tenant)
    return {
        "approvals": approvals(tenant, win, now, held.approvals),
        "runs": runs(tenant, win, held.runs),
        "effects": effects(tenant, win, now),
        "deletions": deletions(tenant, win, with_erasures=with_erasures),
    }
