"""A session's transcript with its audit events, as JSON Lines or Markdown, streamed.

The body is produced after the view has returned, outside the request's
tenant scope and transaction, so each chunk opens its own `in_tenant` and
reads one keyset page (items by seq, audit events by seq): memory stays flat
for a 100,000-item session and no transaction stays open between chunks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from django.db.models import Q

from approvals_app.store import ApprovalStore
from audit_app.models import AuditEvent
from audit_app.store import AuditStore
from effects_app.store import EffectStore
from runs_app.store import RunStateStore
from sessions_app.models import Session
from sessions_app.store import SessionStore, StoredItem
from stateroom.actor import Actor
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant, read_in_chunks

from .chat import as_chat, chat_text

CHUNK = 500
EXPORT_FORMATS = {
    "jsonl": "application/x-ndjson; charset=utf-8",
    "md": "text/markdown; charset=utf-8",
}


def transcript_filename(session: Session, fmt: str) -> str:
    """`session-<public id>.<fmt>`: the id people know (not a database key), safe in a header."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", session.session_id)
    return f"session-{safe}.{fmt}"


def _iso(value) -> str | None:
    return value.isoformat() if value is not None else None


def session_record(session: Session) -> dict[str, Any]:
    return {
        "type": "session",
        "session_id": session.session_id,
        "user_id": session.user_id,
        "status": session.status,
        "revision": session.revision,
        "legal_hold": session.legal_hold,
        "created_at": _iso(session.created_at),
        "last_active_at": _iso(session.last_active_at),
        "lease_until": _iso(session.lease_until),
        "ended_at": _iso(session.ended_at),
        "end_reason": session.end_reason,
        "content_deleted_at": _iso(session.content_deleted_at),
        "metadata": session.metadata,
    }


def item_record(item: StoredItem) -> dict[str, Any]:
    return {
        "type": "item",
        "seq": item.seq,
        "role": item.role,
        "item_type": item.item_type,
        "run_id": item.run_id,
        "created_at": _iso(item.created_at),
        "payload": item.payload,
    }


def audit_record(event: AuditEvent) -> dict[str, Any]:
    """The event, and what a runtime wrote for it (its detached payload) while that exists."""
    return {
        "type": "audit",
        "seq": event.seq,
        "created_at": _iso(event.created_at),
        "actor": event.actor_label,
        "actor_type": event.actor_type,
        "action": event.action,
        "target_type": event.target_type,
        "target_id": event.target_id,
        "reason": event.reason,
        "before": event.before,
        "after": event.after,
        "content": getattr(event, "payload_content", None),
    }


def records(tenant: Tenant, actor: Actor, session: Session) -> Iterator[dict[str, Any]]:
    """The session, its items in seq order, then the audit events about it, its runs, their approvals and effects."""
    yield session_record(session)

    def items(after: int, size: int) -> list[StoredItem]:
        return SessionStore(tenant, actor).get_items(
            session_id=session.session_id, after_seq=after, limit=size
        )

    for item in read_in_chunks(tenant, items, key=lambda item: item.seq, size=CHUNK):
        yield item_record(item)
    with in_tenant(tenant):
        about = _audit_targets(tenant, actor, session)

    def events(after: int, size: int) -> list[AuditEvent]:
        store = AuditStore(tenant, actor)
        found = list(store.list_events().filter(about, seq__gt=after).order_by("seq")[:size])
        payloads = store.payloads(found)
        for event in found:
            event.payload_content = payloads.get(event.pk)
        return found

    for event in read_in_chunks(tenant, events, key=lambda event: event.seq, size=CHUNK):
        yield audit_record(event)


def _audit_targets(tenant: Tenant, actor: Actor, session: Session) -> Q:
    """Audit events about the session, its runs, their approvals and their effects."""
    runs = RunStateStore(tenant, actor).list_runs(session_id=session.session_id)
    run_ids = list(runs.values_list("run_id", flat=True))
    about = Q(target_type="session", target_id=session.session_id)
    if run_ids:
        approvals = ApprovalStore(tenant, actor).list_approvals().filter(run__in=runs.values("pk"))
        effects = EffectStore(tenant, actor).list_effects().filter(run__in=runs.values("pk"))
        about |= Q(target_type="run", target_id__in=run_ids)
        about |= Q(target_type="approval", target_id__in=approvals.values("approval_id"))
        about |= Q(target_type="effect", target_id__in=effects.values("effect_id"))
    return about


def transcript(tenant: Tenant, actor: Actor, session: Session, fmt: str) -> Iterator[str]:
    rows = records(tenant, actor, session)
    if fmt == "jsonl":
        return (json.dumps(row, ensure_ascii=False, default=str) + "\n" for row in rows)
    return _markdown(rows)


def _fence(text: str) -> str:
    """A code fence longer than any backtick run inside `text`, so agent text cannot close it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


# Markdown's inline punctuation: escaped with a backslash, so a value cannot start
# emphasis, code, a link or an image (line-start markers cannot matter: the value
# is folded onto the line after a label).
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]~])")


def _inline(value: Any) -> str:
    """A value outside the fences (ids, roles, reasons) as plain text on one line.

    Runtimes write these (user ids, item types, run ids, reasons), so neither HTML
    (`<`, `>`, `&` become entities, which a viewer shows as the characters) nor
    Markdown (punctuation backslash-escaped, line breaks folded) passes through.
    """
    text = " ".join(str(value).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", text)


def _markdown(rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    session = next(rows)
    yield f"# Session {_inline(session['session_id'])}\n\n"
    for key in (
        "user_id",
        "status",
        "revision",
        "legal_hold",
        "created_at",
        "last_active_at",
        "ended_at",
        "end_reason",
        "content_deleted_at",
    ):
        value = session[key]
        yield f"- **{key}**: {_inline(value) if value not in (None, '') else '—'}\n"
    yield "\n## Transcript\n\n"
    in_items, in_audit = False, False
    for row in rows:
        if row["type"] == "item":
            in_items = True
            text = chat_text(as_chat(row["role"], row["item_type"], row["payload"]))
            lang = "text" if text else "json"
            body = text or json.dumps(
                row["payload"], indent=2, sort_keys=True, ensure_ascii=False, default=str
            )
            # Agent text goes inside a fence it cannot close: a transcript
            # viewer shows it as text, never as markup.
            fence = _fence(body)
            run = f" · run {_inline(row['run_id'])}" if row["run_id"] else ""
            heading = f"{_inline(row['role'])} · {_inline(row['item_type'])}{run}"
            yield (
                f"### #{row['seq']} {heading} · {row['created_at']}\n\n"
                f"{fence}{lang}\n{body}\n{fence}\n\n"
            )
        else:
            if not in_audit:
                if not in_items:
                    yield "_No conversation items._\n\n"
                yield "## Audit events\n\n"
                in_audit = True
            said = row["reason"] or (row["content"] or {}).get("reason") or ""
            reason = f" — reason: {_inline(said)}" if str(said).strip() else ""
            yield (
                f"- #{row['seq']} {row['created_at']} **{row['action']}** by "
                f"{_inline(row['actor'])} on {row['target_type']} "
                f"{_inline(row['target_id'])}{reason}\n"
            )
    if not in_audit:
        if not in_items:
            yield "_No conversation items._\n\n"
        yield "## Audit events\n\n_None._\n"
