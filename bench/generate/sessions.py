"""Sessions and their items (each item appended 5 at a time, with an idempotency key)."""

from __future__ import annotations

from ..scale import Scale
from .sql import ALL, LPAD, insert_select


def sessions(cur, t, tenant_pk, scale: Scale, now, where: str = ALL) -> None:
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
            "search_pending": "%(n)s > 0",  # its items wait for the indexer
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


def session_items(
    cur, t, tenant_pk, session_filter: str, count: int, now, extra: dict | None = None
):
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
