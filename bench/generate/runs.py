"""Runs and what hangs off them: attachments, events, transitions, node executions; the
refused deletions of closed sessions.
"""

from __future__ import annotations

from ..scale import Scale
from .names import BENCH_USER
from .sql import ALL, LPAD, insert_select, number_of, part_of

RUN_STATUS = """CASE WHEN g < %(P)s THEN 'waiting_approval'
    ELSE (ARRAY['succeeded','succeeded','succeeded','succeeded','running','running',
                'failed','created','suspended','cancelled'])[1 + g %% 10] END"""


def runs(cur, t, tenant_pk, scale: Scale, now, where: str = ALL) -> None:
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


def run_children(cur, t, tenant_pk, scale: Scale, now, part: tuple[int, int] = (0, 1)) -> None:
    """Attachments, transitions and deletion receipts (after every session and run exists)."""
    run_filter = f"{number_of('r.run_id')} IS NOT NULL AND {part_of(number_of('r.run_id'), part)}"
    _attachments(cur, t, tenant_pk, scale, now, run_filter)
    _last_transitions(cur, t, tenant_pk, now, run_filter)
    _refused_deletions(cur, t, tenant_pk, now, part)


def _attachments(cur, t, tenant_pk, scale: Scale, now, run_filter: str) -> None:
    """Every run was attached to its session once. Runs 0..S-1 are the latest of
    sessions 0..S-1: still attached when both are live; all others detached."""
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
        WHERE r.tenant_id = %(t)s AND {run_filter}""",
        {"t": tenant_pk, "now": now, "S": scale.sessions_per_tenant},
    )


def _last_transitions(cur, t, tenant_pk, now, run_filter: str) -> None:
    """The last few compare-and-sets of every run (the inspector's version history)."""
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
        WHERE r.tenant_id = %(t)s AND {run_filter}""",
        {"t": tenant_pk, "now": now},
    )


def _refused_deletions(cur, t, tenant_pk, now, part: tuple[int, int]) -> None:
    """Some closed sessions had a deletion refused (legal hold at the time): receipts."""
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


def run_history(cur, t, tenant_pk, run_filter: str, events: int, transitions: int, now) -> int:
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


def some_runs(
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


def run_history_for(
    cur, t, tenant_pk: int, run_id: str, *, events: int, transitions: int, now
) -> int:
    filt = f"r.run_id = '{run_id}'"
    return run_history(cur, t, tenant_pk, filt, events, transitions, now)
