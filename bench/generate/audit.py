"""The audit log: a valid hash chain per tenant, COPYed in through a temporary table."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import psycopg

from .names import BENCH_USER, pid

AUDIT_ACTIONS = (
    "approval.approved",
    "approval.rejected",
    "session.closed",
    "session.expired",
    "run.cancelled",
    "effect.settled",
    "session.legal_hold_on",
    "session.legal_hold_off",
)


def audit_rows(tenant_pk: int, count: int, user_pk: int, now: datetime) -> list[tuple]:
    """A valid hash chain of `count` audit events (seq 1..count) for an empty tenant."""
    from audit_app.services import GENESIS_HASH, compute_hash

    rows = []
    prev = GENESIS_HASH
    start = now - timedelta(days=30)
    step = timedelta(days=29) / max(count, 1)
    for seq in range(1, count + 1):
        created_at = start + step * seq + timedelta(microseconds=seq % 997)
        event = _event(tenant_pk, seq, user_pk, created_at, prev)
        event.hash = compute_hash(event)
        prev = event.hash
        rows.append(_copy_row(event))
    return rows


def _event(tenant_pk: int, seq: int, user_pk: int, created_at: datetime, prev_hash: str):
    """The `seq`-th event: the actions in turn, each on a target of its kind, by the bench
    user (the expiries by the system's sweep)."""
    from audit_app.models import AuditEvent

    action = AUDIT_ACTIONS[seq % len(AUDIT_ACTIONS)]
    kind, _, verb = action.partition(".")
    target_id = {
        "approval": pid("apr", seq % 400),
        "session": pid("sess", seq % 200),
        "run": pid("run", seq % 1000),
        "effect": pid("eff", seq % 1000),
    }[kind]
    system = verb == "expired"
    return AuditEvent(
        tenant_id=tenant_pk,
        seq=seq,
        created_at=created_at,
        actor_type="system" if system else "user",
        actor_id="system" if system else str(user_pk),
        actor_label="sweep" if system else BENCH_USER,
        action=action,
        target_type=kind,
        target_id=target_id,
        before={"status": "pending" if kind == "approval" else "active"},
        after={"status": verb},
        reason="" if system else f"ticket #{seq}",
        request_id=uuid.UUID(int=seq).hex,
        ip=None if system else "10.0.0.7",
        prev_hash=prev_hash,
    )


def _copy_row(event) -> tuple:
    """The event's values in the order of `AUDIT_COLUMNS`."""
    return (
        event.tenant_id,
        event.seq,
        event.created_at,
        event.actor_type,
        event.actor_id,
        event.actor_label,
        event.action,
        event.target_type,
        event.target_id,
        psycopg.types.json.Jsonb(event.before),
        psycopg.types.json.Jsonb(event.after),
        event.reason,
        event.request_id,
        event.ip,
        event.user_agent,
        event.canon,
        event.prev_hash,
        event.hash,
    )


AUDIT_COLUMNS = (
    "tenant_id, seq, created_at, actor_type, actor_id, actor_label, action, target_type,"
    " target_id, before, after, reason, request_id, ip, user_agent, canon, prev_hash, hash"
)


def copy_audit(cur, t, tenant_pk: int, rows: list[tuple]) -> None:
    cur.execute(
        f"CREATE TEMP TABLE audit_stage ON COMMIT DROP AS"
        f" SELECT {AUDIT_COLUMNS} FROM {t['audit']} WHERE false"
    )
    with cur.copy(f"COPY audit_stage ({AUDIT_COLUMNS}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
    cur.execute(
        f"INSERT INTO {t['audit']} ({AUDIT_COLUMNS}) SELECT {AUDIT_COLUMNS} FROM audit_stage"
    )
    cur.execute("DROP TABLE audit_stage")
