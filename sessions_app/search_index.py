"""The search index, filled off the append path.

An append only moves its session's `last_seq`; the items it wrote wait for
the indexer, which copies their tsvectors into `sessions_app_itemsearch`
(the table the console's search reads) and moves the session's
`indexed_seq` to match: both in one statement, `stateroom_index_pending`
(migration 0009, where the rules are). Beat runs `index_items` every
`STATEROOM_SEARCH_INDEX_INTERVAL` seconds (default 0.5), so an item is
findable within about a second of its append.

Nothing is ever left unindexed: the work list is the sessions themselves
(`search_pending`, set by the append, cleared by the indexer only once
`indexed_seq` reaches the newest `last_seq`; migration 0012), in PostgreSQL,
not in a queue: a batch that dies
(a killed worker, a lost connection) rolls back and the next run does it
again; while Redis is down no run starts, and the first one after does
everything that waited. A session whose content is fenced for deletion is
not indexed any more, and its deletion removes the index rows it has.
"""

from __future__ import annotations

from dataclasses import dataclass

from stateroom.sql import hot_cursor

# Per statement: sessions, and items of one session (a batch stays short; the next one
# goes on where it stopped).
MAX_SESSIONS = 200
MAX_ITEMS = 2_000


@dataclass(frozen=True)
class Indexed:
    sessions: int
    items: int


def index_pending(*, max_sessions: int = MAX_SESSIONS, max_items: int = MAX_ITEMS) -> Indexed:
    """Index one batch of the scope's tenant: up to `max_sessions` sessions, `max_items` items
    of each; what it did (0, 0 when nothing waits, or another batch of this tenant runs)."""
    with hot_cursor(alone=True) as cursor:
        cursor.execute(
            "SELECT sessions, items FROM stateroom_index_pending(%s, %s)",
            [max_sessions, max_items],
        )
        sessions, items = cursor.fetchone()
    return Indexed(sessions, items)


def index_tenant(**limits: int) -> Indexed:
    """Batches until the scope's tenant has nothing waiting; the totals."""
    sessions = items = 0
    while True:
        batch = index_pending(**limits)
        sessions, items = sessions + batch.sessions, items + batch.items
        if batch.sessions == 0:
            return Indexed(sessions, items)
