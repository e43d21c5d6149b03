"""Approvals (pending and decided) and the external effects of the runs."""

from __future__ import annotations

from ..scale import Scale
from .names import BENCH_USER
from .sql import ALL, LPAD, insert_select

APPROVAL_TOOL = "(ARRAY['send_email','refund_payment','delete_record','run_sql'])[1 + g %% 4]"

APPROVAL_ARGS = """jsonb_build_object('target', 'cust-' || (g * 37 %% 1000), 'amount', (g * 13) %% 500,
    'note', 'Refund for order ' || md5(g::text))"""


def approvals(cur, t, tenant_pk, scale: Scale, now, where: str = ALL) -> None:
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
            # what the person decided (the dashboard's waits count decisions, not statuses)
            "decision": """CASE WHEN g < %(P)s THEN ''
                           WHEN g %% 2 = 0 THEN 'approve' ELSE 'reject' END""",
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


def effects(cur, t, tenant_pk, scale: Scale, now, where: str = ALL) -> None:
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
