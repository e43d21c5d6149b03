"""A week of history before the demo starts, so its dashboard has something to show.

Every row goes through the stores with a clock set in the past, as if the runtimes and
the operators had worked all week: refunds, contact updates and bulk emails asked for
approval (decided after minutes or hours, some expired, a few voided when a tool
changed), support runs with their tokens and cost (some failed, for a reason), effects
that ended unknown, and content deletions of closed sessions.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from decimal import Decimal

from django.utils import timezone

from approvals_app.store import ApprovalStore
from effects_app.store import EffectStore
from lifecycle_app.deletion import DeletionStore
from runs_app.store import RunStateStore
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant

DAYS = 7
# (tool, risk weights low/medium/high/critical, median minutes to a decision)
TOOLS = [
    ("payments.refund", (1, 4, 4, 1), 12),
    ("crm.update_contact", (6, 3, 1, 0), 4),
    ("email.send_bulk", (1, 3, 4, 2), 35),
]
RISKS = ["low", "medium", "high", "critical"]
FAILURES = ["tool_failed", "timeout", "rate_limited", "approval_rejected"]
AGENTS = ["support-assistant", "payments-agent", "crm-agent"]


def _at(when: datetime):
    return lambda: when


def _busy(hour: int) -> float:
    """How much work an hour sees: working hours, a quieter evening, a quiet night."""
    if 8 <= hour < 18:
        return 1.0
    return 0.35 if 18 <= hour < 23 else 0.1


def load_history(tenant: Tenant, operator: Actor, admin: Actor, *, seed: int = 7) -> dict:
    """A week of approvals, runs, effects and deletions, hour by hour (a few seconds).

    Loaded before the routing rules, so the past asks nobody again and sends no email;
    skipped when the tenant has its history already."""
    with in_tenant(tenant):
        if RunStateStore(tenant, admin).list_runs().filter(run_id__startswith="hist-").exists():
            return {"skipped": 1}
    rng = random.Random(f"{seed}-{tenant.slug}-history")
    runtime = Actor.system("demo-history")
    now = timezone.now()
    start = (now - timedelta(days=DAYS)).replace(minute=0, second=0, microsecond=0)
    made = {"approvals": 0, "runs": 0, "deletions": 0}
    hour = start
    n = 0
    while hour < now - timedelta(hours=2):
        with in_tenant(tenant):
            for _ in range(rng.choices([0, 1, 2, 3], weights=[3, 4, 2, 1])[0]):
                if rng.random() < _busy(hour.hour):
                    n += 1
                    when = hour + timedelta(minutes=rng.uniform(0, 59))
                    _approval(tenant, rng, runtime, (operator, admin), n, when, now)
                    made["approvals"] += 1
            for _ in range(rng.randint(1, 4)):
                if rng.random() < _busy(hour.hour):
                    n += 1
                    when = hour + timedelta(minutes=rng.uniform(0, 59))
                    _usage_run(tenant, rng, runtime, n, when)
                    made["runs"] += 1
        hour += timedelta(hours=1)
    with in_tenant(tenant):
        made["deletions"] = _deletions(tenant, runtime, admin, start)
        ApprovalStore(tenant, Actor.system("approval sweep")).expire_overdue()
    return made


def _approval(tenant, rng, runtime, people, n: int, asked: datetime, now: datetime) -> None:
    operator, admin = people
    tool, weights, median = rng.choice(TOOLS)
    risk = rng.choices(RISKS, weights=weights)[0]
    run_id = f"hist-run-{n:05d}"
    runs = RunStateStore(tenant, runtime, clock=_at(asked))
    runs.create(run_id=run_id, active_agent=rng.choice(AGENTS))
    run = runs.compare_and_set(run_id=run_id, expected_version=1, changes={"status": "running"})
    expires = asked + timedelta(hours=rng.choice([1, 2, 4]))
    approval = ApprovalStore(tenant, runtime, clock=_at(asked)).request(
        run_id=run_id,
        expected_version=run.version,
        tool_name=tool,
        arguments={"ticket": f"T-{n:05d}"},
        risk=risk,
        summary=f"{tool} for ticket T-{n:05d}",
        expires_at=expires,
    )
    fate = rng.random()
    if fate < 0.07:  # nobody decided in time: it expires
        return
    if fate < 0.10:  # the tool changed before anyone decided
        ApprovalStore(tenant, runtime, clock=_at(asked + timedelta(minutes=3))).void(
            approval_id=approval.approval_id, reason_code="tool_changed", reason="new schema"
        )
        return
    # Minutes to a decision: log-normal around the tool's median, slower at night.
    wait = min(rng.lognormvariate(0, 0.8) * median / _busy(asked.hour) ** 0.5, 55)
    decided = asked + timedelta(minutes=wait)
    if decided >= now:
        return  # still pending
    decision = "reject" if rng.random() < 0.15 else "approve"
    decided_by = [operator, admin]  # four-eyes: a critical call may need a second person
    while approval.status == "pending":
        approval = ApprovalStore(tenant, decided_by.pop(0), clock=_at(decided)).decide(
            approval_id=approval.approval_id, decision=decision, reason="checked the ticket"
        )
    end = {"status": "succeeded"} if decision == "approve" else {"status": "failed"}
    if decision == "reject":
        end["error"] = {"code": "approval_rejected", "message": "the operator said no"}
    later = RunStateStore(tenant, runtime, clock=_at(decided + timedelta(seconds=30)))
    later.compare_and_set(
        run_id=run_id, expected_version=later.get(run_id).version, changes=_usage(rng) | end
    )


def _usage(rng: random.Random) -> dict:
    tokens = int(rng.lognormvariate(8, 0.6))  # ~3,000 tokens, a long tail
    return {"token_used": tokens, "cost_used": str(Decimal(tokens) * Decimal("0.000012"))}


def _usage_run(tenant, rng, runtime, n: int, started: datetime) -> None:
    """A support conversation's run: succeeded mostly, failed for a reason sometimes."""
    session_id = f"hist-sess-{started:%m%d}-{n % 3}"
    sessions = SessionStore(tenant, runtime, clock=_at(started))
    if not sessions.list_sessions().filter(session_id=session_id).exists():
        sessions.create(session_id=session_id, user_id=f"cust-{n % 11}", lease_seconds=86400)
    run_id = f"hist-run-{n:05d}"
    runs = RunStateStore(tenant, runtime, clock=_at(started))
    runs.create(run_id=run_id, session_id=session_id, active_agent="support-assistant")
    run = runs.compare_and_set(run_id=run_id, expected_version=1, changes={"status": "running"})
    if rng.random() < 0.04:  # the worker died mid-call: the effect's outcome is unknown
        effects = EffectStore(tenant, runtime, clock=_at(started + timedelta(minutes=1)))
        effect, _ = effects.record(
            run_id=run_id, idempotency_key=f"{run_id}:crm", tool_name="crm.write", request={}
        )
        effects.mark_unknown(effect_id=effect.effect_id, reason="worker lost")
    end = {"status": "succeeded"}
    if rng.random() < 0.12:
        end = {"status": "failed", "error": {"code": rng.choice(FAILURES[:3]), "message": "x"}}
    finished = RunStateStore(tenant, runtime, clock=_at(started + timedelta(minutes=2)))
    finished.compare_and_set(run_id=run_id, expected_version=run.version, changes=_usage(rng) | end)


def _deletions(tenant, runtime, admin, start: datetime) -> int:
    """Every history session closed at its day's end; two days' deleted a day later."""
    sessions = SessionStore(tenant, runtime)
    made = 0
    for session in sessions.list_sessions().filter(session_id__startswith="hist-sess-"):
        ended = session.created_at + timedelta(hours=8)
        if session.status not in ("active", "idle") or ended >= timezone.now():
            continue
        SessionStore(tenant, runtime, clock=_at(ended)).close(
            session_id=session.session_id, reason="conversation over"
        )
        if session.created_at.date() in (
            (start + timedelta(days=2)).date(),
            (start + timedelta(days=5)).date(),
        ):
            deletions = DeletionStore(tenant, admin, clock=_at(ended + timedelta(days=1)))
            job = deletions.request(
                session_id=session.session_id, reason="retention: support chats", enqueue=False
            )
            deletions.run(deletion_id=job.deletion_id)
            made += 1
    return made
