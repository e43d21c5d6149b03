"""A tenant's week around the spring DST change of Europe/Paris (Sunday 29 March 2026,
02:00 CET -> 03:00 CEST, 01:00 UTC), built through the stores with their clocks; and the
dashboard's figures computed again, independently, from the raw rows.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from approvals_app.models import ApprovalRequest
from approvals_app.store import ApprovalStore
from effects_app.models import ExternalEffect
from effects_app.store import EffectStore
from lifecycle_app.deletion import DeletionStore
from lifecycle_app.models import Deletion
from runs_app.models import Run
from runs_app.store import RunStateStore
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from tenancy_app.scoping import in_tenant
from tests.lifecycle.conftest import build_session

RUNTIME = Actor.system("runtime")
OPERATOR = Actor("user", "7", "otto")
NOW = datetime(2026, 3, 31, 10, 0, tzinfo=UTC)
PARIS = ZoneInfo("Europe/Paris")


def at(when: datetime):
    return lambda: when


def t(day: int, hour: int, minute: int = 0) -> datetime:
    """A UTC instant in March 2026."""
    return datetime(2026, 3, day, hour, minute, tzinfo=UTC)


def ask(tenant, approval_id: str, tool: str, risk: str, asked: datetime, **kw):
    """A run that asks for one approval at `asked` (the run starts then too)."""
    run_id = f"r-{approval_id}"
    runs = RunStateStore(tenant, RUNTIME, clock=at(asked))
    run = runs.create(run_id=run_id, active_agent=kw.pop("agent", ""))
    run = runs.compare_and_set(run_id=run_id, expected_version=1, changes={"status": "running"})
    return ApprovalStore(tenant, RUNTIME, clock=at(asked)).request(
        run_id=run_id,
        approval_id=approval_id,
        expected_version=run.version,
        tool_name=tool,
        arguments={"n": 1},
        risk=risk,
        **kw,
    )


def decide(tenant, approval_id: str, when: datetime, decision: str = "approve") -> None:
    ApprovalStore(tenant, OPERATOR, clock=at(when)).decide(
        approval_id=approval_id, decision=decision, reason="checked"
    )


# (approval id, tool, risk, asked, seconds to decision or None)
DECIDED = [
    ("a-refund-1", "refund", "high", t(30, 8), 600),
    ("a-refund-2", "refund", "high", t(30, 9), 1800),
    # asked before midnight UTC, decided after it
    ("a-refund-3", "refund", "high", t(30, 23, 50), 1200),
    # 29 March in both zones (01:30 CET)
    ("a-lookup-1", "lookup", "low", t(29, 0, 30), 60),
    # 28 March in UTC, 29 March (00:30 CET) in Paris
    ("a-lookup-2", "lookup", "low", t(28, 23, 30), 120),
    # 29 March in UTC, 30 March (00:30 CEST) in Paris
    ("a-mail-1", "send_mail", "medium", t(29, 22, 30), 300),
    # long before the window: never counted
    ("a-old", "refund", "high", t(10, 8), 60),
]


def build_week(tenant) -> None:
    """Approvals decided, expired (swept or not), voided and pending; runs that failed or
    succeeded with their usage; effects to settle; a deletion receipt."""
    with in_tenant(tenant):
        for approval_id, tool, risk, asked, wait in DECIDED:
            ask(tenant, approval_id, tool, risk, asked)
            decide(tenant, approval_id, asked + timedelta(seconds=wait))
        # expired undecided: one not swept yet (pending in the table), one swept
        ask(tenant, "a-exp-1", "refund", "critical", t(30, 12), expires_at=t(30, 13))
        ask(tenant, "a-exp-2", "lookup", "low", t(29, 10), expires_at=t(29, 11))
        ApprovalStore(tenant, RUNTIME, clock=at(NOW)).expire_overdue()
        ask(tenant, "a-void-1", "refund", "high", t(30, 14))
        ApprovalStore(tenant, RUNTIME, clock=at(t(30, 14, 5))).void(
            approval_id="a-void-1", reason_code="tool_changed", reason="schema changed"
        )
        ask(tenant, "a-pend-1", "refund", "high", t(31, 7))
        ask(tenant, "a-pend-2", "lookup", "low", t(31, 9, 30), expires_at=t(31, 12))
        _runs(tenant)
        _effects(tenant)
        session = build_session(tenant, "s-deleted", ended_at=t(30, 15))
        deletions = DeletionStore(tenant, Actor("user", "1", "ada"), clock=at(t(30, 16)))
        job = deletions.request(session_id=session.session_id, reason="asked", enqueue=False)
        deletions.run(deletion_id=job.deletion_id)


def _runs(tenant) -> None:
    for session_id in ("s-1", "s-2"):
        SessionStore(tenant, RUNTIME, clock=at(t(27, 8))).create(session_id=session_id, user_id="u")
    plans = [
        ("r-fail-1", t(30, 9), "s-1", "triage", {"code": "tool_failed"}, 1000, "0.5"),
        ("r-fail-2", t(30, 11), "s-1", "triage", {"code": "timeout"}, 200, "0.1"),
        ("r-fail-3", t(29, 11), "s-2", "billing", {"code": "tool_failed"}, 0, "0"),
        ("r-fail-4", t(29, 12), None, "billing", None, 0, "0"),
        ("r-ok-1", t(28, 23, 30), "s-2", "billing", None, 500, "0.25"),
    ]
    for run_id, started, session_id, agent, error, tokens, cost in plans:
        store = RunStateStore(tenant, RUNTIME, clock=at(started))
        store.create(run_id=run_id, session_id=session_id, active_agent=agent)
        run = store.compare_and_set(
            run_id=run_id, expected_version=1, changes={"status": "running"}
        )
        end = {"status": "failed" if run_id.startswith("r-fail") else "succeeded"}
        end |= {"token_used": tokens, "cost_used": cost}
        if error:
            end["error"] = error
        store.compare_and_set(run_id=run_id, expected_version=run.version, changes=end)


def _effects(tenant) -> None:
    RunStateStore(tenant, RUNTIME, clock=at(t(1, 8))).create(run_id="r-eff")
    RunStateStore(tenant, RUNTIME, clock=at(t(1, 8))).compare_and_set(
        run_id="r-eff", expected_version=1, changes={"status": "running"}
    )
    plans = [  # key, recorded, unknown?
        ("k-unknown-old", t(1, 9), True),  # before every window
        ("k-unknown", t(30, 10), True),
        ("k-stuck", t(31, 9), False),  # started an hour before NOW: stuck
        ("k-fresh", t(31, 9, 55), False),  # started 5 minutes before NOW: not yet
    ]
    for key, when, unknown in plans:
        store = EffectStore(tenant, RUNTIME, clock=at(when))
        effect, _ = store.record(run_id="r-eff", idempotency_key=key, tool_name="pay", request={})
        if unknown:
            store.mark_unknown(effect_id=effect.effect_id, reason="crashed")


# --- the same figures, computed from the raw rows -------------------------------------------
def bucket_of(win, when: datetime | None):
    """The window's bucket key of `when`, or None outside the window."""
    if when is None or not win.start <= when < win.end:
        return None
    if win.unit == "hour":
        return when.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    return when.astimezone(win.tz).date()


def percentile(values: list[float], fraction: float) -> float:
    """Linear interpolation between the closest ranks (PostgreSQL's percentile_cont)."""
    ordered = sorted(values)
    rank = fraction * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def expected(tenant, win, now: datetime, stuck_minutes: int = 10) -> dict:
    """Every figure of the dashboard, from the rows as stored, with Python's arithmetic."""
    with in_tenant(tenant):
        approvals = list(ApprovalRequest.objects.filter(tenant=tenant).values())
        runs = list(
            Run.objects.filter(tenant=tenant).values(
                "created_at",
                "status",
                "error",
                "token_used",
                "cost_used",
                "active_agent",
                "session__session_id",
            )
        )
        effects = list(ExternalEffect.objects.filter(tenant=tenant).values())
        deletions = list(Deletion.objects.filter(tenant=tenant).values())

    def series(dates) -> list[int]:
        counts: dict = defaultdict(int)
        for when in dates:
            key = bucket_of(win, when)
            if key is not None:
                counts[key] += 1
        return [counts.get(key, 0) for key in win.keys]

    decided = [a for a in approvals if a["decision"]]
    waits: dict = defaultdict(list)
    for a in decided:
        key = bucket_of(win, a["decided_at"])
        if key is not None:
            waits[(a["risk"], key)].append((a["decided_at"] - a["created_at"]).total_seconds())
    latency = {
        risk: [
            (len(w), percentile(w, 0.5), percentile(w, 0.95))
            if (w := waits.get((risk, k)))
            else None
            for k in win.keys
        ]
        for risk in ("low", "medium", "high", "critical")
        if any(r == risk for r, _ in waits)
    }

    def expired(a) -> bool:
        return a["status"] == "expired" or (
            a["status"] == "pending" and a["expires_at"] and a["expires_at"] <= now
        )

    pending = [a for a in approvals if a["status"] == "pending" and not expired(a)]
    in_window = [r for r in runs if bucket_of(win, r["created_at"]) is not None]
    cutoff = now - timedelta(minutes=stuck_minutes)
    to_settle = [
        e
        for e in effects
        if e["status"] == "unknown" or (e["status"] == "started" and e["updated_at"] < cutoff)
    ]
    return {
        "asked": series(a["created_at"] for a in approvals),
        "decided": series(a["decided_at"] for a in decided),
        "expired": series(a["expires_at"] for a in approvals if expired(a)),
        "voided": series(a["voided_at"] for a in approvals if a["status"] == "voided"),
        "latency": latency,
        "pending": len(pending),
        "oldest": min((a["created_at"] for a in pending), default=None),
        "runs_by_status": {
            status: series(r["created_at"] for r in runs if r["status"] == status)
            for status in {r["status"] for r in in_window}
        },
        "tokens": _sums(win, in_window, "token_used", 0),
        "cost": _sums(win, in_window, "cost_used", Decimal(0)),
        "reasons": _counted(
            (r["error"] or {}).get("code", "") for r in in_window if r["status"] == "failed"
        ),
        "unknown": series(e["created_at"] for e in to_settle if e["status"] == "unknown"),
        "stuck": series(e["created_at"] for e in to_settle if e["status"] == "started"),
        "unknown_total": sum(e["status"] == "unknown" for e in to_settle),
        "stuck_total": sum(e["status"] == "started" for e in to_settle),
        "receipts_done": series(d["finished_at"] for d in deletions if d["status"] == "done"),
    }


def _sums(win, rows, column, zero) -> list:
    sums: dict = defaultdict(lambda: zero)
    for row in rows:
        sums[bucket_of(win, row["created_at"])] += row[column]
    return [sums.get(key, zero) for key in win.keys]


def _counted(values) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for value in values:
        counts[value] += 1
    return dict(counts)


def day(d: int) -> date:
    return date(2026, 3, d)


def roll_up(tenant, now: datetime = NOW) -> None:
    """Both rollups refreshed at `now`, as beat's `refresh_rollup` jobs do."""
    from approvals_app import rollup as approvals_rollup
    from runs_app import rollup as runs_rollup

    with in_tenant(tenant):
        approvals_rollup.refresh(tenant.pk, now)
        runs_rollup.refresh(tenant.pk, now)
