"""The closed session each deletion measurement deletes."""

from __future__ import annotations

from datetime import UTC, datetime

from ..database import connect, tenant_tx
from .runs import run_history, some_runs
from .sessions import session_items
from .sql import insert_select, tables
from .tasks import one_task


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
        _closed_session(cur, t, tenant_pk, session_id, items, now)
        n_items = session_items(
            cur, t, tenant_pk, "s.session_id = %(sid)s", items, now, {"sid": session_id}
        )
        task_id = f"task_{session_id}"
        n_ckpt = one_task(cur, t, tenant_pk, task_id, status="completed", checkpoints=20, now=now)
        some_runs(
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
        n_events = run_history(
            cur, t, tenant_pk, f"r.run_id LIKE '{session_id}\\_run%%'", events_per_run, 3, now
        )
        n_effects = _run_effects(cur, t, tenant_pk, session_id, now)
    return {
        "session_items": n_items,
        "checkpoints": n_ckpt,
        "run_rows": n_events,
        "effects": n_effects,
    }


def _closed_session(cur, t, tenant_pk: int, session_id: str, items: int, now) -> None:
    """The session itself: closed two days ago by an admin, not on hold."""
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
            "search_pending": "%(n)s > 0",  # its items wait for the indexer
            "created_at": "%(now)s - interval '40 days'",
            "last_active_at": "%(now)s - interval '2 days'",
            "ended_at": "%(now)s - interval '2 days'",
            "end_reason": "'closed by admin'",
        },
        "",
        {"t": tenant_pk, "now": now, "sid": session_id, "n": items},
    )


def _run_effects(cur, t, tenant_pk: int, session_id: str, now) -> int:
    """20 effect records per run: the deletion redacts their payloads and keeps the records."""
    return insert_select(
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
