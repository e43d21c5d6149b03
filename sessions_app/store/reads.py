"""SessionStore's reads: one session, pages of sessions, attachments, items by seq."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from django.db.models import Prefetch, Q, QuerySet

from stateroom.errors import Unprocessable
from stateroom.sql import hot_cursor, scope_tenant_block

from ..models import (
    TERMINAL_SESSION_STATUSES,
    Session,
    SessionAttachment,
    SessionItem,
    SessionStatus,
)
from .base import OPEN_ATTACHMENTS_ATTR, SessionStoreBase, not_found

_SESSIONS = Session._meta.db_table
_ITEMS = SessionItem._meta.db_table
# How many of the newest items a search tests one by one before it asks the index.
SEARCH_WINDOW = 5_000


@dataclass
class StoredItem:
    """A conversation item as read: what API, console and export show of it.

    A plain object, not a model: building 50 of these is a fraction of what
    50 SessionItem instances cost. Views may hang display attributes on it.
    """

    seq: int
    role: str
    item_type: str
    payload: dict[str, Any] | orjson.Fragment  # the Fragment: get_items(raw_payload=True)
    run_id: str
    created_at: datetime


@dataclass
class ItemHit:
    """A conversation item that matches a text search, with the matching words marked."""

    id: int
    session_id: str  # the session's public id
    seq: int
    role: str
    item_type: str
    created_at: datetime
    snippet: str = ""  # text with HIGHLIGHT_START/HIGHLIGHT_STOP around matches (unescaped)


HIGHLIGHT_START, HIGHLIGHT_STOP = "\u27e6", "\u27e7"  # ⟦ ⟧: the page escapes, then marks
_HEADLINE_OPTIONS = (
    f"StartSel={HIGHLIGHT_START}, StopSel={HIGHLIGHT_STOP}, MaxWords=24, MinWords=8,"
    ' MaxFragments=2, FragmentDelimiter=" … "'
)


class SessionReads(SessionStoreBase):
    def get(self, session_id: str) -> Session:
        with self.reading():
            session = Session.objects.filter(tenant=self.tenant, session_id=session_id).first()
        if session is None:
            raise not_found(session_id)
        return session

    def list_sessions(
        self,
        *,
        status: str | None = None,
        user_id: str | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
        search: str | None = None,
    ) -> QuerySet[Session]:
        """Sessions of this tenant, filtered; unordered (callers keyset by id).

        Open attachments are prefetched, so `attached_run_ids` costs no query per row.
        """
        if status is not None and status not in SessionStatus.values:
            raise Unprocessable(
                "Unknown session status.",
                details={"status": [f"must be one of {', '.join(SessionStatus.values)}"]},
            )
        queryset = Session.objects.filter(tenant=self.tenant)
        if status:
            queryset = queryset.filter(status=status)
        if user_id:
            # A case-insensitive prefix (index session_user_prefix_idx).
            queryset = queryset.filter(user_id__istartswith=user_id)
        if created_from is not None:
            queryset = queryset.filter(created_at__gte=created_from)
        if created_to is not None:
            queryset = queryset.filter(created_at__lt=created_to)
        if search:
            queryset = queryset.filter(
                Q(session_id__icontains=search) | Q(user_id__icontains=search)
            )
        return queryset.prefetch_related(
            Prefetch(
                "attachments",
                queryset=self._open_attachments_query(),
                to_attr=OPEN_ATTACHMENTS_ATTR,
            )
        )

    def attachments(self, session: Session) -> QuerySet[SessionAttachment]:
        """Every attachment of the session, open and past, in attach order."""
        return SessionAttachment.objects.filter(tenant=self.tenant, session=session).order_by(
            "attached_at", "id"
        )

    # --- what the lifecycle (sweeps, retention) selects --------------------------
    def overdue(self, *, now: datetime) -> QuerySet[Session]:
        """Live sessions whose lease has passed: what the next lease sweep expires."""
        return Session.objects.filter(
            tenant=self.tenant,
            status__in=[SessionStatus.ACTIVE, SessionStatus.IDLE],
            lease_until__lt=now,
        )

    def ended_not_held(self) -> QuerySet[Session]:
        """Closed or expired sessions that are not on legal hold."""
        return Session.objects.filter(
            tenant=self.tenant,
            status__in=TERMINAL_SESSION_STATUSES,
            legal_hold=False,
            ended_at__isnull=False,
        )

    def ended_on_hold(self) -> QuerySet[Session]:
        return Session.objects.filter(
            tenant=self.tenant, status__in=TERMINAL_SESSION_STATUSES, legal_hold=True
        )

    def attachments_of_runs(self, run_ids) -> QuerySet[SessionAttachment]:
        """Every attachment (open or past) of these runs (ids, or a values() queryset of them)."""
        return SessionAttachment.objects.filter(tenant=self.tenant, run_id__in=run_ids)

    def session_of_attached_run(self, run_id: str) -> Session | None:
        """The session a run is attached to now, or was attached to last (None: never)."""
        attachment = (
            SessionAttachment.objects.filter(tenant=self.tenant, run_id=run_id)
            .select_related("session")
            .order_by("-attached_at", "-id")
            .first()
        )
        return attachment.session if attachment is not None else None

    def get_items(
        self,
        *,
        session_id: str,
        limit: int = 50,
        after_seq: int | None = None,
        before_seq: int | None = None,
        raw_payload: bool = False,
    ) -> list[StoredItem]:
        """Items in ascending `seq`.

        With `before_seq`: the `limit` items just before it (still ascending),
        i.e. the previous page; `after_seq` then only bounds it from below.
        `raw_payload`: each payload is the JSON text PostgreSQL sent, as an
        `orjson.Fragment` the API's renderer writes as it is (not decoded
        here to be encoded again there).
        Hot path: one statement on the unique index (tenant, session, seq),
        rows read into `StoredItem`s; an unknown session is told apart from
        an empty page only when the page is empty.
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise Unprocessable("limit must be a positive integer.", details={"limit": ["min 1"]})
        sql = (
            f"SELECT seq, role, item_type, payload, run_id, created_at FROM {_ITEMS}"
            f" WHERE tenant_id = %s AND session_id = (SELECT id FROM {_SESSIONS}"
            " WHERE tenant_id = %s AND session_id = %s)"
        )
        params: list[Any] = [self.tenant.pk, self.tenant.pk, session_id]
        if after_seq is not None:
            sql += " AND seq > %s"
            params.append(after_seq)
        if before_seq is not None:
            sql += " AND seq < %s ORDER BY seq DESC LIMIT %s"
            params += [before_seq, limit]
        else:
            sql += " ORDER BY seq LIMIT %s"
            params.append(limit)
        with hot_cursor(alone=True) as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        if not rows:
            with self.reading():
                if not Session.objects.filter(tenant=self.tenant, session_id=session_id).exists():
                    raise not_found(session_id)
        if before_seq is not None:
            rows.reverse()
        loads = orjson.Fragment if raw_payload else json.loads
        return [
            StoredItem(seq, role, item_type, loads(payload), run_id, created_at)
            for seq, role, item_type, payload, run_id, created_at in rows
        ]

    def search_items(
        self, *, query: str, before_id: int | None = None, limit: int = 20
    ) -> tuple[list[ItemHit], bool]:
        """Items whose text matches `query` (web-search syntax: words, "a phrase", -not, or),
        newest first, keyset-paged on the item's id; and whether older hits follow.

        Items are found once the indexer has reached them (`sessions_app.search_index`:
        about a second after their append). The first statement sets the
        tsquery the index's policy matches (migration 0006: under row-level
        security only the policy's own match can use an index). A word most
        items say is found among the newest items: the second statement tests
        the tenant's newest `SEARCH_WINDOW` items (older than `before_id`) one
        by one, each by its index row. Only when they hold too few hits, the
        third asks the GIN index of `sessions_app_itemsearch` for the older
        ones. The last statement reads the page's rows with their highlighted
        snippets (`ts_headline` reads the payload again, so only for the rows
        shown).
        """
        if not query.strip():
            return [], False
        with scope_tenant_block(), hot_cursor() as cursor:
            ids, window_end = self._search_window(cursor, query, before_id, limit)
            if len(ids) <= limit and window_end is not None:
                ids += self._search_older(cursor, window_end, limit + 1 - len(ids))
            more, ids = len(ids) > limit, ids[:limit]
            if not ids:
                return [], False
            return self._search_page(cursor, query, ids), more

    def _search_window(
        self, cursor, query: str, before_id: int | None, limit: int
    ) -> tuple[list[int], int | None]:
        """The hits among the newest `SEARCH_WINDOW` items (at most `limit + 1`), newest first;
        and the window's last item where the window ends before the tenant's items do."""
        # The tsquery the index's policy matches (migration 0006): set first, so that in the
        # window each item's hit is whether its index row is visible.
        cursor.execute(
            "SELECT set_config('app.item_search', websearch_to_tsquery('english', %s)::text, true)",
            [query],
        )
        # -id: the order of the index item_tenant_newest (migration 0006).
        before = "" if before_id is None else " AND -i.id > -%s::bigint"
        # The window, newest first, streamed: it stops at the page's hits. Its hits,
        # and its last item (rn = SEARCH_WINDOW) where the window ends before the
        # tenant's items do.
        cursor.execute(
            "SELECT w.id, w.hit, w.rn"
            " FROM (SELECT i.id, -i.id AS newest, EXISTS (SELECT 1 FROM sessions_app_itemsearch s"
            " WHERE s.tenant_id = i.tenant_id AND s.item_id = i.id) AS hit, row_number() OVER (ORDER BY -i.id) AS rn"
            f" FROM {_ITEMS} i WHERE i.tenant_id = %s{before}"
            " ORDER BY -i.id LIMIT %s) w"
            " WHERE w.hit OR w.rn = %s ORDER BY w.newest LIMIT %s",
            [
                self.tenant.pk,
                *([] if before_id is None else [before_id]),
                SEARCH_WINDOW,
                SEARCH_WINDOW,
                limit + 2,
            ],
        )
        rows = cursor.fetchall()
        ids = [row[0] for row in rows if row[1]][: limit + 1]
        ends = [row[0] for row in rows if row[2] == SEARCH_WINDOW]
        return ids, ends[0] if ends else None

    def _search_older(self, cursor, window_end: int, want: int) -> list[int]:
        """Older hits: all of them by the index (a phrase said rarely), newest first."""
        cursor.execute(
            "WITH m AS MATERIALIZED (SELECT s.item_id FROM sessions_app_itemsearch s"
            " WHERE s.tenant_id = %s AND s.item_id < %s)"
            " SELECT item_id FROM m ORDER BY item_id DESC LIMIT %s",
            [self.tenant.pk, window_end, want],
        )
        return [row[0] for row in cursor.fetchall()]

    def _search_page(self, cursor, query: str, ids: list[int]) -> list[ItemHit]:
        """The page's rows with their highlighted snippets, newest first."""
        cursor.execute(
            "SELECT i.id, s.session_id, i.seq, i.role, i.item_type, i.created_at,"
            " ts_headline('english', stateroom_item_text(i.payload),"
            " websearch_to_tsquery('english', %s), %s)"
            f" FROM {_ITEMS} i JOIN {_SESSIONS} s ON s.tenant_id = i.tenant_id AND s.id = i.session_id"
            " WHERE i.tenant_id = %s AND i.id = ANY(%s) ORDER BY i.id DESC",
            [query, _HEADLINE_OPTIONS, self.tenant.pk, ids],
        )
        return [ItemHit(*row) for row in cursor.fetchall()]
