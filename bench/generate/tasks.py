"""Tasks and their checkpoints (~10 KB of state each)."""

from __future__ import annotations

from ..scale import Scale
from .sql import LPAD, insert_select, number_of, part_of

CHECKPOINT_MD5S = 280  # 280 hex digests of 32 chars in a JSON array: ~10 KB per checkpoint


def tasks(cur, t, tenant_pk, scale: Scale, now, part: tuple[int, int] = (0, 1)) -> None:
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
    task_checkpoints(cur, t, tenant_pk, f"{number} IS NOT NULL AND {part_of(number, part)}", c, now)


def task_checkpoints(cur, t, tenant_pk, task_filter: str, per_task: int, now) -> int:
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


def one_task(cur, t, tenant_pk: int, task_id: str, *, status: str, checkpoints: int, now) -> int:
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
    return task_checkpoints(cur, t, tenant_pk, f"k.task_id = '{task_id}'", checkpoints, now)
