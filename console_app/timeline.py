"""The session timeline: one chronological stream merged from six sources.

Conversation items are the spine. A page is a bounded range of seqs read
through `SessionStore.get_items` (the unique index (tenant, session, seq)),
so the newest page and the 2,000th page of a 100,000-item session cost the
same. The other streams (run attach/detach, run status changes, approvals,
effects) are read only for the time window the page covers:

    window of a page = [time of its oldest item, time of the next newer page's oldest item)

The newest page's window is open at the top and the oldest page's at the
bottom, so consecutive pages partition time and every side event shows on
exactly one page. The sixth stream is the session's lifecycle, read from the
audit log: closed, expired, legal hold on and off, content deletion
requested (by an admin, retention or an erasure), refused, failed and
finished, each with who and why. Each side query is capped (`SIDE_LIMIT`); a window with
more shows a note pointing to the run inspector.

Read-only and tenant-filtered like a store's reads; it spans sessions, runs,
approvals and effects, which no single store owns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Q

from approvals_app.models import ApprovalRequest
from audit_app.store import AuditStore
from effects_app.models import ExternalEffect
from runs_app.models import RunTransition
from sessions_app.models import Session, SessionAttachment
from sessions_app.store import SessionStore, StoredItem
from tenancy_app.models import Tenant

PAGE_SIZE = 50
SIDE_LIMIT = 200

# Order of kinds that share a timestamp: attaching comes before what the run did.
_KIND_RANK = {
    "attach": 0,
    "item": 1,
    "run": 2,
    "approval": 3,
    "decision": 4,
    "effect": 5,
    "detach": 6,
    "lifecycle": 7,
}
_CSS = {
    "item": "k-item",
    "attach": "k-run",
    "detach": "k-run",
    "run": "k-run",
    "approval": "k-approval",
    "decision": "k-approval",
    "effect": "k-effect",
    "lifecycle": "k-lifecycle",
}
# The timeline's filter (`?show=` in the page's URL): which kinds each choice keeps. Half a
# busy session's entries are run bookkeeping; support often wants only the conversation.
FILTERS = {
    "conversation": frozenset({"item"}),
    "runs": frozenset({"attach", "detach", "run", "effect"}),
    "approvals": frozenset({"approval", "decision"}),
    "lifecycle": frozenset({"lifecycle"}),
}


def shown_filter(value: str | None) -> str:
    """The filter a `?show=` value names; "" (everything) for none or an unknown one."""
    return value if value in FILTERS else ""


# What the timeline says of each lifecycle event about a session.
LIFECYCLE = {
    "session.closed": "Session closed",
    "session.expired": "Session expired",
    "session.legal_hold_on": "Legal hold placed",
    "session.legal_hold_off": "Legal hold released",
    "session.content_deletion_requested": "Content deletion requested",
    "session.content_deletion_refused": "Content deletion refused",
    "session.content_deletion_failed": "Content deletion failed",
    "session.content_deleted": "Content deleted",
}


@dataclass(frozen=True)
class Entry:
    kind: str  # item | attach | detach | run | approval | decision | effect | lifecycle
    at: datetime
    obj: Any
    tiebreak: int = 0

    @property
    def css(self) -> str:
        return _CSS[self.kind]

    @property
    def sort_key(self) -> tuple:
        return (self.at, _KIND_RANK[self.kind], self.tiebreak)


@dataclass
class TimelinePage:
    entries: list[Entry]
    older_cursor: int | None  # `before_seq` of the next older page, None on the oldest
    newest: bool
    truncated: list[str] = field(default_factory=list)  # side streams that hit SIDE_LIMIT


def _window(name: str, lower: datetime | None, upper: datetime | None) -> Q:
    q = Q()
    if lower is not None:
        q &= Q(**{f"{name}__gte": lower})
    if upper is not None:
        q &= Q(**{f"{name}__lt": upper})
    if lower is None and upper is None:
        q &= Q(**{f"{name}__isnull": False})
    return q


def _in(at: datetime | None, lower: datetime | None, upper: datetime | None) -> bool:
    return at is not None and (lower is None or at >= lower) and (upper is None or at < upper)


class SessionTimeline:
    def __init__(self, tenant: Tenant, store: SessionStore) -> None:
        self.tenant = tenant
        self.store = store

    def page(
        self,
        session: Session,
        *,
        before_seq: int | None = None,
        size: int = PAGE_SIZE,
        show: str = "",
    ) -> TimelinePage:
        """One page: a window of items and what happened between them. `show` (a FILTERS
        key, "" for all) keeps some kinds; the items still set the window, so pages and
        "Load older" walk the same stretches of time whatever is shown, and the streams
        not shown are not read."""
        kinds = FILTERS.get(show)
        items, boundary, has_older = self._items(session, before_seq, size)
        lower = items[0].created_at if has_older and items else None
        upper = boundary.created_at if boundary is not None else None
        entries = []
        if kinds is None or "item" in kinds:
            entries = [Entry("item", item.created_at, item, item.seq) for item in items]
        truncated: list[str] = []
        for name, kind, reader in (
            ("runs attached", "attach", self._attachments),
            ("run changes", "run", self._transitions),
            ("approvals", "approval", self._approvals),
            ("effects", "effect", self._effects),
            ("lifecycle events", "lifecycle", self._lifecycle),
        ):
            if kinds is not None and kind not in kinds:
                continue
            found, full = reader(session, lower, upper)
            entries += found
            if full:
                truncated.append(name)
        entries.sort(key=lambda entry: entry.sort_key)
        return TimelinePage(
            entries=entries,
            older_cursor=items[0].seq if has_older and items else None,
            newest=boundary is None,
            truncated=truncated,
        )

    def _items(
        self, session: Session, before_seq: int | None, size: int
    ) -> tuple[list[StoredItem], StoredItem | None, bool]:
        """The page's items, the item just newer than the page (if any), and whether older exist.

        One read of at most size + 2 rows: one older probe, the page, and the
        boundary item (the oldest of the newer page), whose time closes the window.
        """
        if before_seq is None or before_seq > session.last_seq:
            rows = self.store.get_items(
                session_id=session.session_id, before_seq=session.last_seq + 1, limit=size + 1
            )
            boundary = None
        else:
            rows = self.store.get_items(
                session_id=session.session_id, before_seq=before_seq + 1, limit=size + 2
            )
            boundary = rows.pop() if rows and rows[-1].seq == before_seq else None
        has_older = len(rows) > size
        return (rows[1:] if has_older else rows), boundary, has_older

    def _attachments(self, session, lower, upper) -> tuple[list[Entry], bool]:
        rows = list(
            SessionAttachment.objects.filter(tenant=self.tenant, session=session)
            .filter(_window("attached_at", lower, upper) | _window("detached_at", lower, upper))
            .order_by("attached_at", "id")[: SIDE_LIMIT + 1]
        )
        entries = []
        for row in rows[:SIDE_LIMIT]:
            if _in(row.attached_at, lower, upper):
                entries.append(Entry("attach", row.attached_at, row, row.id))
            if _in(row.detached_at, lower, upper):
                entries.append(Entry("detach", row.detached_at, row, row.id))
        return entries, len(rows) > SIDE_LIMIT

    def _transitions(self, session, lower, upper) -> tuple[list[Entry], bool]:
        rows = list(
            RunTransition.objects.filter(tenant=self.tenant, run__session=session)
            .filter(_window("created_at", lower, upper))
            .select_related("run")
            .order_by("created_at", "id")[: SIDE_LIMIT + 1]
        )
        return [Entry("run", r.created_at, r, r.id) for r in rows[:SIDE_LIMIT]], len(
            rows
        ) > SIDE_LIMIT

    def _approvals(self, session, lower, upper) -> tuple[list[Entry], bool]:
        rows = list(
            ApprovalRequest.objects.filter(tenant=self.tenant, run__session=session)
            .filter(_window("created_at", lower, upper) | _window("decided_at", lower, upper))
            .select_related("run")
            .order_by("created_at", "id")[: SIDE_LIMIT + 1]
        )
        entries = []
        for row in rows[:SIDE_LIMIT]:
            if _in(row.created_at, lower, upper):
                entries.append(Entry("approval", row.created_at, row, row.id))
            if _in(row.decided_at, lower, upper):
                entries.append(Entry("decision", row.decided_at, row, row.id))
        return entries, len(rows) > SIDE_LIMIT

    def _effects(self, session, lower, upper) -> tuple[list[Entry], bool]:
        rows = list(
            ExternalEffect.objects.filter(tenant=self.tenant, run__session=session)
            .filter(_window("created_at", lower, upper))
            .select_related("run")
            .order_by("created_at", "id")[: SIDE_LIMIT + 1]
        )
        return [Entry("effect", r.created_at, r, r.id) for r in rows[:SIDE_LIMIT]], len(
            rows
        ) > SIDE_LIMIT

    def _lifecycle(self, session, lower, upper) -> tuple[list[Entry], bool]:
        """Who ended, held, released or deleted the session, and why (from the audit log).

        A reason a runtime gave lives in the event's detached payload, and goes
        with the session's content.
        """
        audit = AuditStore(self.tenant, self.store.actor)
        rows = list(
            audit.list_events(target_type="session", target_id=session.session_id)
            .filter(action__in=LIFECYCLE)
            .filter(_window("created_at", lower, upper))
            .order_by("seq")[: SIDE_LIMIT + 1]
        )
        rows = rows[:SIDE_LIMIT] if len(rows) > SIDE_LIMIT else rows
        payloads = audit.payloads(rows)
        for row in rows:
            row.label = LIFECYCLE[row.action]
            after = row.after or {}
            if after.get("erasure_id"):
                row.label += f" (erasure {after['erasure_id']})"
            elif str(after.get("policy", "")).startswith("retention:"):
                row.label += " (retention policy)"
            written = payloads.get(row.pk, {}).get("reason")
            row.why = row.reason or written or ""
            row.why_deleted = bool(row.payload_hash) and row.pk not in payloads
            row.rows = (
                sum((after.get("counts") or {}).values())
                if row.action.endswith("deleted")
                else None
            )
        return [Entry("lifecycle", r.created_at, r, r.seq) for r in rows], len(rows) == SIDE_LIMIT


def item_text(payload: Any) -> str:
    """The human text of a conversation item, when its payload has one.

    Covers `{"text": …}`, `{"content": "…"}` and the Responses-API shape
    `{"content": [{"type": "output_text", "text": …}, …]}`; anything else is
    shown as JSON by the template.
    """
    if not isinstance(payload, dict):
        return ""
    for key in ("text", "content"):
        value = payload.get(key)
        if isinstance(value, str):
            return value
    parts = payload.get("content")
    if isinstance(parts, list):
        texts = [p.get("text") for p in parts if isinstance(p, dict)]
        if texts and all(isinstance(t, str) for t in texts):
            return "\n".join(texts)
    return ""
