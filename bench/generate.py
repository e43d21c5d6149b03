"""Realistic data, loaded fast and through row-level security.

Rows are made by PostgreSQL itself (`INSERT ... SELECT ... generate_series`),
one transaction per tenant with `app.tenant_id` set, because the bench
connects as the application role and FORCE ROW LEVEL SECURITY applies to it
(PostgreSQL refuses `COPY FROM` into a table with row-level security, so the
audit chain, which Python must hash, is COPYed into a temporary table first
and moved with one `INSERT ... SELECT`). Two connections load tenants in
parallel.

Audit events form a valid hash chain per tenant (`compute_hash` of
audit_app.services), so `manage.py verify_audit` passes on the bench
database.

Public ids are predictable (`sess_000042`, `run_000007`, `task_000003`,
`apr_000001`) so the measurements can pick objects of a known kind: see
`Catalogue`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import psycopg
from django.db import connection as django_connection
from django.db import models

from .database import connect, tenant_tx
from .scale import Scale

TIMELINE_SESSION = "sess_timeline"
INSPECT_RUN = "run_inspect"
INSPECT_TASK = "task_inspect"
BENCH_USER = "bench-admin"
TENANT_PREFIX = "bench-t"
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
CHECKPOINT_MD5S = 280  # 280 hex digests of 32 chars in a JSON array: ~10 KB per checkpoint


def tenant_slug(index: int) -> str:
    return f"{TENANT_PREFIX}{index:03d}"


def pid(prefix: str, n: int) -> str:
    return f"{prefix}_{n:06d}"


@dataclass
class Catalogue:
    """What the measurements need to know about the generated data."""

    tenant_slug: str
    tenant_pk: int
    user_pk: int
    active_sessions: list[str] = field(default_factory=list)
    running_runs: list[str] = field(default_factory=list)
    active_tasks: list[str] = field(default_factory=list)
    timeline_session: str = TIMELINE_SESSION
    timeline_items: int = 0
    inspect_run: str = INSPECT_RUN


def tables() -> dict[str, str]:
    from approvals_app.models import ApprovalRequest
    from audit_app.models import AuditEvent
    from effects_app.models import ExternalEffect
    from lifecycle_app.models import Deletion
    from runs_app.models import NodeExecution, Run, RunEvent, RunTransition
    from sessions_app.models import (
        ItemAppend,
        Session,
        SessionAttachment,
        SessionItem,
    )
    from tasks_app.models import Task, TaskCheckpoint

    return {
        "session": Session._meta.db_table,
        "item": SessionItem._meta.db_table,
        "item_append": ItemAppend._meta.db_table,
        "attachment": SessionAttachment._meta.db_table,
        "deletion": Deletion._meta.db_table,
        "run": Run._meta.db_table,
        "run_event": RunEvent._meta.db_table,
        "run_transition": RunTransition._meta.db_table,
        "node": NodeExecution._meta.db_table,
        "task": Task._meta.db_table,
        "checkpoint": TaskCheckpoint._meta.db_table,
        "approval": ApprovalRequest._meta.db_table,
        "effect": ExternalEffect._meta.db_table,
        "audit": AuditEvent._meta.db_table,
    }


def _model_for(table: str) -> type[models.Model]:
    from django.apps import apps

    for model in apps.get_models():
        if model._meta.db_table == table:
            return model
    raise LookupError(table)


def insert_select(
    cur: psycopg.Cursor, table: str, exprs: dict[str, str], tail: str, params: dict
) -> int:
    """`INSERT INTO table (...) SELECT <exprs> <tail>`.

    Columns the generator does not name (another helper may add fields after
    this was written) get their model default, or NULL when nullable, so the
    load keeps working as the models grow.
    """
    model = _model_for(table)
    params = dict(params)
    exprs = dict(exprs)
    for f in model._meta.concrete_fields:
        if f.primary_key or f.column in exprs or getattr(f, "generated", False):
            continue  # (PostgreSQL computes generated columns)
        if f.has_default():
            key = f"_default_{f.column}"
            params[key] = f.get_db_prep_save(f.get_default(), django_connection)
            exprs[f.column] = f"%({key})s"
        elif isinstance(f, models.DateTimeField) and (f.auto_now or f.auto_now_add):
            exprs[f.column] = "%(now)s"
        elif not f.null:
            raise RuntimeError(
                f"bench/generate.py does not know how to fill {table}.{f.column}: add it"
            )
    columns = ", ".join(exprs)
    values = ",\n  ".join(exprs.values())
    cur.execute(f"INSERT INTO {table} ({columns})\nSELECT {values}\n{tail}", params)
    return cur.rowcount


# --- per-tenant SQL ---------------------------------------------------------

LPAD = "lpad(({})::text, 6, '0')"
ALL = "true"


def number_of(column: str) -> str:
    """The number in a generated public id (`sess_000042` -> 42); NULL for other ids."""
    return f"CASE WHEN {column} ~ '^[a-z]+_[0-9]+$' THEN split_part({column}, '_', 2)::int END"


def part_of(expr: str, part: tuple[int, int]) -> str:
    """SQL condition: `expr` falls in chunk `part` = (index, count)."""
    index, count = part
    return ALL if count == 1 else f"({expr}) %% {int(count)} = {int(index)}"


def _sessions(cur, t, tenant_pk, scale: Scale, now, where: str = ALL) -> None:
    insert_select(
        cur,
        t["session"],
        {
            "tenant_id": "%(t)s",
            "session_id": "'sess_' || " + LPAD.format("g"),
            "user_id": "'user_' || (g %% 50)",
            "status": """CASE WHEN g %% 20 < 12 THEN 'active' WHEN g %% 20 < 16 THEN 'idle'
                         WHEN g %% 20 < 19 THEN 'closed' ELSE 'expired' END""",
            "lease_until": """CASE WHEN g %% 20 < 16 THEN %(now)s + interval '2 days'
                              ELSE %(now)s - interval '1 day' END""",
            "revision": "g %% 7",
            "metadata": """jsonb_build_object('channel', (ARRAY['web','slack','api','email'])[1 + g %% 4],
                           'locale', 'en', 'customer', 'cust-' || (g * 37 %% 1000))""",
            "legal_hold": "g %% 97 = 5",
            "last_seq": "%(n)s",
            "created_at": "%(now)s - interval '1 day' - make_interval(mins => g * 7)",
            "last_active_at": "%(now)s - make_interval(mins => g)",
            "ended_at": "CASE WHEN g %% 20 >= 16 THEN %(now)s - interval '1 day' END",
            "end_reason": "CASE WHEN g %% 20 >= 16 THEN 'user left' ELSE '' END",
        },
        f"FROM generate_series(0, %(S)s - 1) g WHERE {where}",
        {"t": tenant_pk, "now": now, "S": scale.sessions_per_tenant, "n": scale.items_per_session},
    )


ITEM_PAYLOAD = """jsonb_build_object(
    'type', 'message',
    'content', 'Turn ' || g || ': ' || md5(s.id::text || ':' || g) || ' ' || md5(g || ':' || s.id::text)
               || ' ' || md5(s.id::text || 'x' || g) || ' ' || md5('y' || g || s.id::text),
    'tokens', (g * 37) %% 500)"""


def _items(cur, t, tenant_pk, session_filter: str, count: int, now, extra: dict | None = None):
    """`count` items in each session the filter picks, appended 5 at a time with a key."""
    params = {"t": tenant_pk, "now": now, "count": count, **(extra or {})}
    insert_select(
        cur,
        t["item_append"],
        {
            "tenant_id": "%(t)s",
            "session_id": "s.id",
            "idempotency_key": "'turn-' || g",
            "request_digest": "md5(s.id::text || ':' || g) || md5(g || ':' || s.id::text)",
            "first_seq": "g",
            "last_seq": "least(g + 4, %(count)s)",
            "created_at": "s.created_at + make_interval(secs => g)",
        },
        f"""FROM {t["session"]} s CROSS JOIN generate_series(1, %(count)s, 5) g
        WHERE s.tenant_id = %(t)s AND {session_filter}""",
        params,
    )
    return insert_select(
        cur,
        t["item"],
        {
            "tenant_id": "%(t)s",
            "session_id": "s.id",
            "seq": "g",
            "role": "CASE WHEN g %% 2 = 1 THEN 'user' ELSE 'assistant' END",
            "item_type": "'message'",
            "payload": ITEM_PAYLOAD,
            "run_id": "''",
            "created_at": "s.created_at + make_interval(secs => g)",
        },
        f"""FROM {t["session"]} s CROSS JOIN generate_series(1, %(count)s) g
        WHERE s.tenant_id = %(t)s AND {session_filter}""",
        params,
    )


def _tasks(cur, t, tenant_pk, scale: Scale, now, part: tuple[int, int] = (0, 1)) -> None:
    c = scale.checkpoints_per_task
    insert_select(
        cur,
        t["task"],
        {
            "tenant_id": "%(t)s",
            "task_id": "'task_' || " + LPAD.format("g"),
            "objective": "'Reconcile the invoices of account ' || md5(g::text) || ' for Q' || (1 + g %% 4)",
            "constraints": """'["no refunds over 100 EUR", "ask before emailing"]'::jsonb""",
            "plan_version": "'plan-v' || (1 + g %% 3)",
            "completed_nodes": """'["fetch", "classify"]'::jsonb""",
            "pending_nodes": """'["reconcile", "report"]'::jsonb""",
            "pending_approvals": "'[]'::jsonb",
            "artifact_refs": "jsonb_build_array('s3://bench/artifacts/' || g || '/report.json')",
            "external_effect_records": "'[]'::jsonb",
            "latest_checkpoint_id": "'ckpt_' || " + LPAD.format("g") + " || '_' || %(c)s",
            "schema_version": "1",
            "status": """CASE WHEN g %% 10 < 7 THEN 'active' WHEN g %% 10 = 7 THEN 'waiting'
                         WHEN g %% 10 = 8 THEN 'completed' ELSE 'failed' END""",
            "version": "1 + %(c)s",
            "last_checkpoint_seq": "%(c)s",
            "created_at": "%(now)s - interval '2 days' - make_interval(mins => g)",
            "updated_at": "%(now)s - make_interval(mins => g)",
        },
        f"FROM generate_series(0, %(K)s - 1) g WHERE {part_of('g', part)}",
        {"t": tenant_pk, "now": now, "K": scale.tasks_per_tenant, "c": c},
    )
    number = number_of("k.task_id")
    _checkpoints(cur, t, tenant_pk, f"{number} IS NOT NULL AND {part_of(number, part)}", c, now)


def _checkpoints(cur, t, tenant_pk, task_filter: str, per_task: int, now) -> int:
    return insert_select(
        cur,
        t["checkpoint"],
        {
            "tenant_id": "%(t)s",
            "task_id": "k.id",
            "checkpoint_id": "'ckpt_' || substr(k.task_id, 6) || '_' || c",
            "seq": "c",
            "schema_version": "1",
            "node_id": "'node-' || c",
            "state": "st.state",
            "size_bytes": "octet_length(st.state::text)",
            "created_at": "k.created_at + make_interval(mins => c)",
        },
        f"""FROM {t["task"]} k CROSS JOIN generate_series(1, %(c)s) c
        CROSS JOIN LATERAL (
            SELECT jsonb_build_object(
                'plan_version', k.plan_version, 'cursor', c,
                'completed_nodes', jsonb_build_array('fetch', 'classify'),
                'memory', jsonb_agg(md5(k.id::text || ':' || c || ':' || m))) AS state
            FROM generate_series(1, {CHECKPOINT_MD5S}) m) st
        WHERE k.tenant_id = %(t)s AND {task_filter}""",
        {"t": tenant_pk, "now": now, "c": per_task},
    )


RUN_STATUS = """CASE WHEN g < %(P)s THEN 'waiting_approval'
    ELSE (ARRAY['succeeded','succeeded','succeeded','succeeded','running','running',
                'failed','created','suspended','cancelled'])[1 + g %% 10] END"""


def _runs(cur, t, tenant_pk, scale: Scale, now, where: str = ALL) -> None:
    insert_select(
        cur,
        t["run"],
        {
            "tenant_id": "%(t)s",
            "run_id": "'run_' || " + LPAD.format("g"),
            "session_id": "s.id",
            "task_id": "CASE WHEN g %% 2 = 0 THEN k.id END",
            "status": "st.status",
            "turn_index": "g %% 30",
            "active_agent": "(ARRAY['triage','billing','research'])[1 + g %% 3] || '-agent'",
            "current_node_id": "'node-' || (g %% 7)",
            "deadline_at": """CASE WHEN st.status IN ('succeeded','failed','cancelled') THEN NULL
                              ELSE %(now)s + interval '7 days' END""",
            "token_used": "(g * 131) %% 100000",
            "cost_used": "((g * 7) %% 1000) / 100.0",
            "pending_approval_id": "CASE WHEN g < %(P)s THEN 'apr_' || "
            + LPAD.format("g")
            + " ELSE '' END",
            "last_checkpoint_id": "''",
            "error": """CASE WHEN st.status = 'failed'
                        THEN '{"code": "tool_error", "message": "upstream 502"}'::jsonb END""",
            "version": "1 + g %% 20",
            "claimed_by": "''",
            "last_event_seq": "0",
            "created_at": "%(now)s - interval '1 day' - make_interval(mins => g)",
            "updated_at": "%(now)s - make_interval(mins => g)",
        },
        f"""FROM generate_series(0, %(R)s - 1) g
        CROSS JOIN LATERAL (SELECT {RUN_STATUS} AS status) st
        JOIN {t["session"]} s ON s.tenant_id = %(t)s
             AND s.session_id = 'sess_' || {LPAD.format("g %% %(S)s")}
        LEFT JOIN {t["task"]} k ON k.tenant_id = %(t)s
             AND k.task_id = 'task_' || {LPAD.format("g %% %(K)s")}
        WHERE {where}""",
        {
            "t": tenant_pk,
            "now": now,
            "R": scale.runs_per_tenant,
            "P": scale.pending_per_tenant,
            "D": scale.decided_per_tenant,
            "S": scale.sessions_per_tenant,
            "K": scale.tasks_per_tenant,
        },
    )


def _run_children(cur, t, tenant_pk, scale: Scale, now, part: tuple[int, int] = (0, 1)) -> None:
    """Attachments, transitions and deletion receipts (after every session and run exists)."""
    runs = f"{number_of('r.run_id')} IS NOT NULL AND {part_of(number_of('r.run_id'), part)}"
    # Every run was attached to its session once. Runs 0..S-1 are the latest of
    # sessions 0..S-1: still attached when both are live; all others detached.
    insert_select(
        cur,
        t["attachment"],
        {
            "tenant_id": "%(t)s",
            "session_id": "s.id",
            "run_id": "r.run_id",
            "attached_at": "r.created_at",
            "detached_at": """CASE WHEN r.run_id < 'run_' || """
            + LPAD.format("%(S)s")
            + """ AND r.status NOT IN ('succeeded', 'failed', 'cancelled')
                AND s.status IN ('active', 'idle') THEN NULL ELSE r.updated_at END""",
        },
        f"""FROM {t["run"]} r JOIN {t["session"]} s ON s.id = r.session_id
        WHERE r.tenant_id = %(t)s AND {runs}""",
        {"t": tenant_pk, "now": now, "S": scale.sessions_per_tenant},
    )
    # The last few compare-and-sets of every run (the inspector's version history).
    insert_select(
        cur,
        t["run_transition"],
        {
            "tenant_id": "%(t)s",
            "run_id": "r.id",
            "version": "v",
            "from_status": "CASE WHEN v = 2 THEN 'created' ELSE 'running' END",
            "to_status": "CASE WHEN v = r.version THEN r.status ELSE 'running' END",
            "changes": "jsonb_build_object('turn_index', v)",
            "actor_label": "'token:worker'",
            "created_at": "r.created_at + make_interval(secs => v * 10)",
        },
        f"""FROM {t["run"]} r CROSS JOIN LATERAL generate_series(greatest(2, r.version - 2), r.version) v
        WHERE r.tenant_id = %(t)s AND {runs}""",
        {"t": tenant_pk, "now": now},
    )
    # Some closed sessions had a deletion refused (legal hold at the time): receipts.
    insert_select(
        cur,
        t["deletion"],
        {
            "tenant_id": "%(t)s",
            "deletion_id": "'del_' || substr(s.session_id, 6)",
            "session_id": "s.id",
            "status": "'refused'",
            "requested_by": f"'{BENCH_USER}'",
            "requested_by_id": "''",
            "reason": "'customer asked'",
            "policy": "'manual'",
            "planned": """'{"session_items": 45}'::jsonb""",
            "counts": """'{"session_items": 0}'::jsonb""",
            "error": "'legal hold on the tenant'",
            "created_at": "s.ended_at",
            "started_at": "NULL",
            "finished_at": "s.ended_at",
        },
        f"""FROM {t["session"]} s WHERE s.tenant_id = %(t)s AND s.status = 'closed'
        AND {number_of("s.session_id")} IS NOT NULL
        AND {part_of(number_of("s.session_id"), part)}""",
        {"t": tenant_pk, "now": now},
    )


APPROVAL_TOOL = "(ARRAY['send_email','refund_payment','delete_record','run_sql'])[1 + g %% 4]"
APPROVAL_ARGS = """jsonb_build_object('target', 'cust-' || (g * 37 %% 1000), 'amount', (g * 13) %% 500,
    'note', 'Refund for order ' || md5(g::text))"""


def _approvals(cur, t, tenant_pk, scale: Scale, now, where: str = ALL) -> None:
    insert_select(
        cur,
        t["approval"],
        {
            "tenant_id": "%(t)s",
            "approval_id": "'apr_' || " + LPAD.format("g"),
            "run_id": "r.id",
            "tool_name": APPROVAL_TOOL,
            "arguments": APPROVAL_ARGS,
            "call_digest": f"encode(sha256(convert_to({APPROVAL_TOOL} || {APPROVAL_ARGS}::text, 'UTF8')), 'hex')",
            "run_version": "r.version",
            "risk": "(ARRAY['low','medium','high','critical'])[1 + g %% 4]",
            "risk_rank": "1 + g %% 4",
            "reason": "'The agent wants to act on a customer account'",
            "status": """CASE WHEN g < %(P)s THEN 'pending'
                         WHEN g %% 2 = 0 THEN 'approved' ELSE 'rejected' END""",
            "expires_at": """CASE WHEN g %% 5 = 0 THEN NULL
                             ELSE %(now)s + make_interval(hours => 1 + g %% 72) END""",
            "created_at": "r.created_at + interval '1 minute'",
            "first_approved_by": "''",
            "first_approved_by_id": "''",
            "decided_by": f"CASE WHEN g < %(P)s THEN '' ELSE '{BENCH_USER}' END",
            "decided_by_id": "CASE WHEN g < %(P)s THEN '' ELSE %(user)s END",
            "decided_at": "CASE WHEN g < %(P)s THEN NULL ELSE r.updated_at END",
            "decision_reason": "CASE WHEN g < %(P)s THEN '' ELSE 'checked with the customer' END",
        },
        # Pending approval g waits on run g; decided ones are spread over the other
        # runs (a run may have asked several times).
        f"""FROM generate_series(0, %(P)s + %(D)s - 1) g
        JOIN {t["run"]} r ON r.tenant_id = %(t)s AND r.run_id = 'run_' || {
            LPAD.format(
                "CASE WHEN g < %(P)s THEN g ELSE %(P)s + (g - %(P)s) %% (%(R)s - %(P)s) END"
            )
        }
        WHERE {where}""",
        {
            "t": tenant_pk,
            "now": now,
            "P": scale.pending_per_tenant,
            "D": scale.decided_per_tenant,
            "R": scale.runs_per_tenant,
            "user": "1",
        },
    )


def _effects(cur, t, tenant_pk, scale: Scale, now, where: str = ALL) -> None:
    insert_select(
        cur,
        t["effect"],
        {
            "tenant_id": "%(t)s",
            "effect_id": "'eff_' || " + LPAD.format("g"),
            "run_id": "r.id",
            "node_id": "'node-2'",
            "idempotency_key": "r.run_id || ':send_email:1'",
            "tool_name": "'send_email'",
            "request": "jsonb_build_object('to', 'customer' || g || '@example.com', 'subject', 'Invoice ' || g)",
            "request_digest": "md5(r.run_id) || md5(r.run_id || 'x')",
            "status": """(ARRAY['committed','committed','committed','committed','committed',
                          'committed','committed','committed','failed','unknown'])[1 + g %% 10]""",
            "result": """CASE WHEN g %% 10 < 8 THEN '{"message_id": "m-1"}'::jsonb END""",
            "error": """CASE WHEN g %% 10 = 8 THEN '{"message": "smtp 550"}'::jsonb END""",
            "settled_by": "''",
            "settle_reason": "''",
            "created_at": "r.created_at + interval '2 minutes'",
            "updated_at": "r.created_at + interval '3 minutes'",
        },
        f"""FROM generate_series(0, %(E)s - 1) g
        JOIN {t["run"]} r ON r.tenant_id = %(t)s AND r.run_id = 'run_' || {LPAD.format("g")}
        WHERE {where}""",
        {"t": tenant_pk, "now": now, "E": scale.effects_per_tenant},
    )


def _run_history(cur, t, tenant_pk, run_filter: str, events: int, transitions: int, now) -> int:
    """Events, transitions and node executions for the runs matching `run_filter`."""
    n = insert_select(
        cur,
        t["run_event"],
        {
            "tenant_id": "%(t)s",
            "run_id": "r.id",
            "seq": "g",
            "type": "(ARRAY['model_call','tool_call','tool_result','message'])[1 + g %% 4]",
            "node_id": "'node-' || (g %% 7)",
            "payload": "jsonb_build_object('summary', 'step ' || g, 'detail', md5(r.id::text || g) || md5(g || r.id::text))",
            "created_at": "r.created_at + make_interval(secs => g)",
            "payload_deleted_at": "NULL",
        },
        f"""FROM {t["run"]} r CROSS JOIN generate_series(1, %(events)s) g
        WHERE r.tenant_id = %(t)s AND {run_filter}""",
        {"t": tenant_pk, "now": now, "events": events},
    )
    n += insert_select(
        cur,
        t["run_transition"],
        {
            "tenant_id": "%(t)s",
            "run_id": "r.id",
            "version": "g + 1",
            "from_status": "CASE WHEN g = 1 THEN 'created' ELSE 'running' END",
            "to_status": "'running'",
            "changes": "jsonb_build_object('turn_index', g, 'token_used', g * 100)",
            "actor_label": "'token:worker'",
            "created_at": "r.created_at + make_interval(secs => g * 10)",
        },
        f"""FROM {t["run"]} r CROSS JOIN generate_series(1, %(tr)s) g
        WHERE r.tenant_id = %(t)s AND {run_filter}""",
        {"t": tenant_pk, "now": now, "tr": transitions},
    )
    cur.execute(
        f"""UPDATE {t["run"]} r SET last_event_seq = %(events)s, version = %(tr)s + 1
        WHERE r.tenant_id = %(t)s AND {run_filter}""",
        {"t": tenant_pk, "events": events, "tr": transitions},
    )
    return n


# --- audit chain ----------------------------------------------------------


def _audit_rows(tenant_pk: int, count: int, user_pk: int, now: datetime) -> list[tuple]:
    from audit_app.models import AuditEvent
    from audit_app.services import GENESIS_HASH, compute_hash

    rows = []
    prev = GENESIS_HASH
    start = now - timedelta(days=30)
    step = timedelta(days=29) / max(count, 1)
    for seq in range(1, count + 1):
        action = AUDIT_ACTIONS[seq % len(AUDIT_ACTIONS)]
        kind, _, verb = action.partition(".")
        target_type = kind
        target_id = {
            "approval": pid("apr", seq % 400),
            "session": pid("sess", seq % 200),
            "run": pid("run", seq % 1000),
            "effect": pid("eff", seq % 1000),
        }[kind]
        system = verb == "expired"
        event = AuditEvent(
            tenant_id=tenant_pk,
            seq=seq,
            created_at=start + step * seq + timedelta(microseconds=seq % 997),
            actor_type="system" if system else "user",
            actor_id="system" if system else str(user_pk),
            actor_label="sweep" if system else BENCH_USER,
            action=action,
            target_type=target_type,
            target_id=target_id,
            before={"status": "pending" if kind == "approval" else "active"},
            after={"status": verb},
            reason="" if system else f"ticket #{seq}",
            request_id=uuid.UUID(int=seq).hex,
            ip=None if system else "10.0.0.7",
            prev_hash=prev,
        )
        event.hash = compute_hash(event)
        prev = event.hash
        rows.append(
            (
                tenant_pk,
                seq,
                event.created_at,
                event.actor_type,
                event.actor_id,
                event.actor_label,
                action,
                target_type,
                target_id,
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
        )
    return rows


AUDIT_COLUMNS = (
    "tenant_id, seq, created_at, actor_type, actor_id, actor_label, action, target_type,"
    " target_id, before, after, reason, request_id, ip, user_agent, canon, prev_hash, hash"
)


def _audit(cur, t, tenant_pk: int, rows: list[tuple]) -> None:
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


# --- orchestration ----------------------------------------------------------


CHUNKS = 4  # each tenant's rows land in this many places of each table
PHASES = (1, 2, 3)  # sessions and tasks; runs; what points at them


def _load_slice(url: str, tenant_pk: int, scale: Scale, rows, main: bool, now, phase, part):
    with connect(url, client_binding=True) as conn, tenant_tx(conn, tenant_pk) as cur:
        load_tenant_rows(
            cur, tenant_pk, scale, audit_rows=rows, main=main, now=now, phase=phase, part=part
        )


def load_tenant_rows(
    cur,
    tenant_pk: int,
    scale: Scale,
    *,
    audit_rows: list[tuple],
    main: bool,
    now: datetime,
    phase: int | None = None,
    part: tuple[int, int] = (0, 1),
) -> None:
    """Rows of one tenant, on a cursor already in that tenant's transaction.

    `phase` (1: sessions and tasks, 2: runs, 3: everything that points at
    them) and `part` (chunk index, chunk count) load a slice, so the caller
    can interleave tenants: in a real database the rows of many tenants are
    mixed on disk, and a data set loaded one tenant after the other would
    make a whole-tenant index scan look cheap to the planner (perfect
    correlation of `tenant_id`). Also used by tests/bench, on Django's cursor.
    """
    t = tables()
    phases = PHASES if phase is None else (phase,)
    if 1 in phases:
        _sessions(cur, t, tenant_pk, scale, now, part_of("g", part))
        _tasks(cur, t, tenant_pk, scale, now, part)
    if 2 in phases:
        _runs(cur, t, tenant_pk, scale, now, part_of("g", part))
    if 3 in phases:
        number = number_of("s.session_id")
        _items(
            cur,
            t,
            tenant_pk,
            f"{number} IS NOT NULL AND {part_of(number, part)}",
            scale.items_per_session,
            now,
        )
        _run_children(cur, t, tenant_pk, scale, now, part)
        _approvals(cur, t, tenant_pk, scale, now, part_of("g", part))
        _effects(cur, t, tenant_pk, scale, now, part_of("g", part))
        index, count = part
        _audit(cur, t, tenant_pk, [row for row in audit_rows if row[1] % count == index])
        if main and index == 0:
            _main_tenant_extras(cur, t, tenant_pk, scale, now)


def audit_rows(tenant_pk: int, count: int, user_pk: int, now: datetime) -> list[tuple]:
    """A valid hash chain of `count` audit events (seq 1..count) for an empty tenant."""
    return _audit_rows(tenant_pk, count, user_pk, now)


def _main_tenant_extras(cur, t, tenant_pk: int, scale: Scale, now) -> None:
    """The long timeline session and the run the inspector page shows."""
    insert_select(
        cur,
        t["session"],
        {
            "tenant_id": "%(t)s",
            "session_id": "%(sid)s",
            "user_id": "'user_1'",
            "status": "'active'",
            "lease_until": "%(now)s + interval '2 days'",
            "revision": "3",
            "metadata": """'{"channel": "web", "note": "long-running support thread"}'::jsonb""",
            "legal_hold": "false",
            "last_seq": "%(n)s",
            "created_at": "%(now)s - interval '20 days'",
            "last_active_at": "%(now)s",
            "ended_at": "NULL",
            "end_reason": "''",
        },
        "",
        {"t": tenant_pk, "now": now, "sid": TIMELINE_SESSION, "n": scale.timeline_items},
    )
    _items(
        cur,
        t,
        tenant_pk,
        "s.session_id = %(sid)s",
        scale.timeline_items,
        now,
        {"sid": TIMELINE_SESSION},
    )
    _one_task(cur, t, tenant_pk, INSPECT_TASK, status="active", checkpoints=10, now=now)
    _some_runs(
        cur,
        t,
        tenant_pk,
        run_id="%(run)s",
        count=1,
        session_id=TIMELINE_SESSION,
        task_id=INSPECT_TASK,
        status="running",
        now=now,
        extra={"run": INSPECT_RUN},
    )
    _run_history_for(cur, t, tenant_pk, INSPECT_RUN, events=200, transitions=50, now=now)


def _one_task(cur, t, tenant_pk: int, task_id: str, *, status: str, checkpoints: int, now) -> int:
    """One task with `checkpoints` checkpoints of ~10 KB; returns the checkpoint count."""
    insert_select(
        cur,
        t["task"],
        {
            "tenant_id": "%(t)s",
            "task_id": "%(task)s",
            "objective": "'Answer the customer and settle the refund'",
            "constraints": "'[]'::jsonb",
            "plan_version": "'plan-v1'",
            "completed_nodes": """'["fetch"]'::jsonb""",
            "pending_nodes": """'["reply"]'::jsonb""",
            "pending_approvals": "'[]'::jsonb",
            "artifact_refs": "'[]'::jsonb",
            "external_effect_records": "'[]'::jsonb",
            "latest_checkpoint_id": "'ckpt_' || substr(%(task)s, 6) || '_' || %(c)s",
            "schema_version": "1",
            "status": "%(status)s",
            "version": "%(c)s + 1",
            "last_checkpoint_seq": "%(c)s",
            "created_at": "%(now)s - interval '3 days'",
            "updated_at": "%(now)s",
        },
        "",
        {"t": tenant_pk, "now": now, "task": task_id, "status": status, "c": checkpoints},
    )
    return _checkpoints(cur, t, tenant_pk, f"k.task_id = '{task_id}'", checkpoints, now)


def _some_runs(
    cur,
    t,
    tenant_pk: int,
    *,
    run_id: str,
    count: int,
    session_id: str,
    task_id: str | None,
    status: str,
    now,
    extra: dict | None = None,
) -> int:
    """`count` runs of one session (run_id is an SQL expression of g, 0..count-1)."""
    terminal = status in {"succeeded", "failed", "cancelled"}
    return insert_select(
        cur,
        t["run"],
        {
            "tenant_id": "%(t)s",
            "run_id": run_id,
            "session_id": "s.id",
            "task_id": "CASE WHEN g = 0 THEN (SELECT k.id FROM "
            + t["task"]
            + " k WHERE k.tenant_id = %(t)s AND k.task_id = %(task)s) END",
            "status": "%(status)s",
            "turn_index": "12",
            "active_agent": "'billing-agent'",
            "current_node_id": "'node-3'",
            "deadline_at": "NULL" if terminal else "%(now)s + interval '7 days'",
            "token_used": "48211",
            "cost_used": "1.734",
            "pending_approval_id": "''",
            "last_checkpoint_id": "''",
            "error": "NULL",
            "version": "1",
            "claimed_by": "''",
            "last_event_seq": "0",
            "created_at": "%(now)s - interval '1 hour'",
            "updated_at": "%(now)s",
        },
        f"""FROM generate_series(0, %(count)s - 1) g JOIN {t["session"]} s
            ON s.tenant_id = %(t)s AND s.session_id = %(sid)s""",
        {
            "t": tenant_pk,
            "now": now,
            "count": count,
            "sid": session_id,
            "task": task_id,
            "status": status,
            **(extra or {}),
        },
    )


def _run_history_for(
    cur, t, tenant_pk: int, run_id: str, *, events: int, transitions: int, now
) -> int:
    filt = f"r.run_id = '{run_id}'"
    return _run_history(cur, t, tenant_pk, filt, events, transitions, now)


def create_deletion_session(
    url: str, tenant_pk: int, session_id: str, items: int
) -> dict[str, int]:
    """A closed session of `items` items with runs, events and checkpoints, to delete.

    Made fresh for each measurement (the deletion consumes it), outside the timing.
    """
    t = tables()
    now = datetime.now(UTC)
    runs = 5
    events_per_run = max(10, items // 50)
    with connect(url, client_binding=True) as conn, tenant_tx(conn, tenant_pk) as cur:
        insert_select(
            cur,
            t["session"],
            {
                "tenant_id": "%(t)s",
                "session_id": "%(sid)s",
                "user_id": "'user_2'",
                "status": "'closed'",
                "lease_until": "%(now)s - interval '1 day'",
                "revision": "5",
                "metadata": """'{"channel": "api"}'::jsonb""",
                "legal_hold": "false",
                "last_seq": "%(n)s",
                "created_at": "%(now)s - interval '40 days'",
                "last_active_at": "%(now)s - interval '2 days'",
                "ended_at": "%(now)s - interval '2 days'",
                "end_reason": "'closed by admin'",
            },
            "",
            {"t": tenant_pk, "now": now, "sid": session_id, "n": items},
        )
        n_items = _items(
            cur, t, tenant_pk, "s.session_id = %(sid)s", items, now, {"sid": session_id}
        )
        task_id = f"task_{session_id}"
        n_ckpt = _one_task(cur, t, tenant_pk, task_id, status="completed", checkpoints=20, now=now)
        _some_runs(
            cur,
            t,
            tenant_pk,
            run_id="%(sid)s || '_run' || g",
            count=runs,
            session_id=session_id,
            task_id=task_id,
            status="succeeded",
            now=now,
        )
        n_events = _run_history(
            cur, t, tenant_pk, f"r.run_id LIKE '{session_id}\\_run%%'", events_per_run, 3, now
        )
        # The runs' effect records: their payloads are redacted, the records stay.
        n_effects = insert_select(
            cur,
            t["effect"],
            {
                "tenant_id": "%(t)s",
                "effect_id": "'eff_' || r.run_id || '_' || g",
                "run_id": "r.id",
                "node_id": "'node-2'",
                "idempotency_key": "r.run_id || ':send_email:' || g",
                "tool_name": "'send_email'",
                "request": "jsonb_build_object('to', 'customer@example.com', 'n', g)",
                "request_digest": "md5(r.run_id || g) || md5(g || r.run_id)",
                "status": "'committed'",
                "result": """'{"message_id": "m-1"}'::jsonb""",
                "settled_by": "''",
                "settle_reason": "''",
                "created_at": "%(now)s",
                "updated_at": "%(now)s",
            },
            f"""FROM {t["run"]} r CROSS JOIN generate_series(1, 20) g
            WHERE r.tenant_id = %(t)s AND r.run_id LIKE '{session_id}\\_run%%'""",
            {"t": tenant_pk, "now": now},
        )
    return {
        "session_items": n_items,
        "checkpoints": n_ckpt,
        "run_rows": n_events,
        "effects": n_effects,
    }


def generate(url: str, scale: Scale, log: Callable[[str], None], *, owner_url: str) -> dict:
    """Load the whole data set into an empty, migrated bench database.

    The rows go in as the app role (`url`), through row-level security; the
    statistics and the final VACUUM are the owner's (`owner_url`): PostgreSQL
    lets only a table's owner ANALYZE or VACUUM it, and skips the others'
    tables with a warning. The VACUUM also flushes the GIN indexes' pending
    lists, which a bulk load leaves long (the items' search index held 1 GB
    of them after a load at scale 10, read by every search) and which
    autovacuum would flush in a running deployment.
    """
    from django.contrib.auth import get_user_model

    from stateroom.actor import Actor
    from tenancy_app.models import Role, Tenant
    from tenancy_app.scoping import in_tenant
    from tenancy_app.store import TenancyStore

    started = time.perf_counter()
    now = datetime.now(UTC)
    Tenant.objects.bulk_create(
        [Tenant(slug=tenant_slug(i), name=f"Bench tenant {i}") for i in range(scale.tenants)]
    )
    tenants = list(Tenant.objects.filter(slug__startswith=TENANT_PREFIX).order_by("slug"))
    user = get_user_model().objects.create_user(username=BENCH_USER, password=uuid.uuid4().hex)
    log(f"hashing {scale.audit_per_tenant * scale.tenants:,} audit events into chains ...")
    chains = {t.pk: _audit_rows(t.pk, scale.audit_per_tenant, user.pk, now) for t in tenants}
    log(f"loading {scale.tenants} tenants in {CHUNKS} interleaved chunks, 2 connections ...")
    with ThreadPoolExecutor(max_workers=2) as pool:
        for phase in PHASES:
            futures = [
                pool.submit(
                    _load_slice, url, t.pk, scale, chains[t.pk], i == 0, now, phase, (c, CHUNKS)
                )
                for c in range(CHUNKS)
                for i, t in enumerate(tenants)
            ]
            for future in futures:
                future.result()
            with connect(owner_url) as conn:
                # Fresh statistics, or the next phase's joins are planned as nested loops.
                conn.execute("ANALYZE")
            log(f"  phase {phase}/3 loaded ({time.perf_counter() - started:.0f} s)")
    main = tenants[0]
    with in_tenant(main):
        TenancyStore(main, Actor.system("bench")).set_member(username=BENCH_USER, role=Role.ADMIN)
    loaded = time.perf_counter() - started
    log("VACUUM ANALYZE ...")
    with connect(owner_url) as conn:
        conn.execute("VACUUM ANALYZE")
    vacuumed = time.perf_counter() - started - loaded
    log("verifying every tenant's audit chain (what manage.py verify_audit does) ...")
    from audit_app.services import verify_chain

    broken = []
    for tenant in tenants:
        with in_tenant(tenant):
            if verify_chain(tenant) is not None:
                broken.append(tenant.slug)
    if broken:
        raise RuntimeError(f"generated audit chains do not verify: {broken}")
    return {
        "load_seconds": round(loaded, 1),
        "vacuum_analyze_seconds": round(vacuumed, 1),
        "audit_chains_verified": f"{len(tenants)}/{len(tenants)}",
    }


def catalogue(url: str, scale: Scale) -> Catalogue:
    """Find the objects the measurements use, in the first tenant."""
    from django.contrib.auth import get_user_model

    from tenancy_app.models import Tenant

    t = tables()
    tenant = Tenant.objects.get(slug=tenant_slug(0))
    user = get_user_model().objects.get(username=BENCH_USER)
    cat = Catalogue(tenant_slug=tenant.slug, tenant_pk=tenant.pk, user_pk=user.pk)
    with connect(url) as conn, tenant_tx(conn, tenant.pk) as cur:
        cat.active_sessions = [
            r[0]
            for r in cur.execute(
                f"SELECT session_id FROM {t['session']} WHERE status = 'active'"
                " AND session_id ~ '^sess_[0-9]' AND NOT legal_hold ORDER BY session_id"
            )
        ]
        cat.running_runs = [
            r[0]
            for r in cur.execute(
                f"SELECT run_id FROM {t['run']} WHERE status = 'running'"
                " AND run_id ~ '^run_[0-9]' ORDER BY run_id"
            )
        ]
        cat.active_tasks = [
            r[0]
            for r in cur.execute(
                f"SELECT task_id FROM {t['task']} WHERE status = 'active'"
                " AND task_id ~ '^task_[0-9]' ORDER BY task_id"
            )
        ]
        cat.timeline_items = cur.execute(
            f"SELECT last_seq FROM {t['session']} WHERE session_id = %s", [TIMELINE_SESSION]
        ).fetchone()[0]
    return cat


def row_counts(url: str) -> dict[str, int]:
    """Exact row counts per table, summed over tenants (read per tenant: RLS)."""
    from tenancy_app.models import Tenant

    t = tables()
    totals = dict.fromkeys(t, 0)
    pks = list(Tenant.objects.values_list("pk", flat=True))
    with connect(url) as conn:
        for tenant_pk in pks:
            with tenant_tx(conn, tenant_pk) as cur:
                for key, table in t.items():
                    totals[key] += cur.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    return totals
