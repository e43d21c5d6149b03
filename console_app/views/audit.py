"""Audit log pages: filtered, keyset-paginated list, streamed export, chain check."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from urllib.parse import quote

from django.contrib import messages
from django.http import HttpResponseBadRequest, StreamingHttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from audit_app.models import AuditEvent
from audit_app.store import AuditStore
from console_app.forms.audit import AuditFilterForm
from stateroom.actor import Actor
from stateroom.htmx import render_page, wants_fragment
from stateroom.jsonview import diff
from stateroom.pages import keyset_slice, parse_cursor
from stateroom.replica import chunk_reads, reads_replica
from tenancy_app.access import require_permission
from tenancy_app.models import Tenant
from tenancy_app.permissions import Permission
from tenancy_app.scoping import read_in_chunks

PAGE_SIZE = 50
EXPORT_CHUNK = 500
EXPORT_FIELDS = [
    "seq",
    "created_at",
    "actor_type",
    "actor_id",
    "actor_label",
    "action",
    "target_type",
    "target_id",
    "before",
    "after",
    "reason",
    "request_id",
    "ip",
    "prev_hash",
    "hash",
]
# Console pages of each kind of audit target (effects and deletions have none of their own).
TARGET_PATHS = {
    "session": "sessions/{id}/",
    "run": "runs/{id}/",
    "task": "tasks/{id}/",
    "approval": "approvals/{id}/",
    "token": "settings/tokens/",
    "user": "settings/members/",
    "tenant": "settings/",
}


def target_url(tenant: Tenant, target_type: str, target_id: str) -> str | None:
    path = TARGET_PATHS.get(target_type)
    if path is None:
        return None
    return f"/t/{tenant.slug}/" + path.format(id=quote(target_id, safe=""))


@require_permission(Permission.READ)
@require_GET
@reads_replica
def log(request):
    form = AuditFilterForm(request.GET)
    events: list[AuditEvent] = []
    next_cursor = None
    if form.is_valid():
        store = AuditStore(request.tenant, Actor.from_request(request))
        events, more = keyset_slice(
            store.list_events(**form.store_filters()),
            cursor=parse_cursor(request.GET.get("cursor")),
            size=PAGE_SIZE,
            key="seq",
        )
        if more:
            next_cursor = events[-1].seq
    # What runtimes wrote (and decisions' reasons the model heard) is in detached
    # payloads: one read for the page, only when an event of it has one.
    payloads = AuditStore(request.tenant, Actor.from_request(request)).payloads(events)
    for event in events:
        event.content = payloads.get(event.pk)
        event.content_deleted = bool(event.payload_hash) and event.content is None
        event.changes = _changes(event)
        event.target_url = target_url(request.tenant, event.target_type, event.target_id)
    query = request.GET.copy()
    query.pop("cursor", None)
    return render_page(
        request,
        "console/audit/log.html",
        {
            "nav": "audit",
            "form": form,
            "events": events,
            "next_cursor": next_cursor,
            "query": query.urlencode(),
            "more": "cursor" in request.GET,
            "can_verify": request.membership.can(Permission.MANAGE),
        },
        # "Older events" appends rows; the filter form replaces the results.
        fragment="rows" if "cursor" in request.GET else "results",
    )


def _changes(event: AuditEvent):
    before, after = event.before, event.after
    if before is None and after is None:
        return []
    if isinstance(before, dict) or isinstance(after, dict):
        return diff(before or {}, after or {})
    return diff(before, after)


@require_permission(Permission.EXPORT_AUDIT)
@require_GET
def export(request, fmt: str):
    if fmt not in ("csv", "jsonl"):
        return HttpResponseBadRequest("Export formats: csv, jsonl.")
    form = AuditFilterForm(request.GET)
    if not form.is_valid():
        return HttpResponseBadRequest("Invalid filters: " + form.errors.as_text())
    rows = _export_rows(
        request.tenant, Actor.from_request(request), form.store_filters(), chunk_reads(request)
    )
    if fmt == "csv":
        body, content_type = _csv_lines(rows), "text/csv; charset=utf-8"
    else:
        body = (json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        content_type = "application/x-ndjson; charset=utf-8"
    response = StreamingHttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="audit-{request.tenant.slug}.{fmt}"'
    return response


def _export_rows(tenant: Tenant, actor: Actor, filters: dict, reads) -> Iterator[dict]:
    """Every matching event in seq order, read chunk by chunk (keyset on seq), each chunk
    where `reads` says (the replica, when the view may read it)."""

    def read(after: int, size: int) -> list[dict]:
        events = AuditStore(tenant, actor).list_events(**filters).filter(seq__gt=after)
        return list(events.order_by("seq").values(*EXPORT_FIELDS)[:size])

    chunks = read_in_chunks(
        tenant, read, key=lambda row: row["seq"], size=EXPORT_CHUNK, reads=reads
    )
    for row in chunks:
        row["created_at"] = row["created_at"].isoformat()
        yield row


def _csv_lines(rows: Iterator[dict]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=EXPORT_FIELDS)
    writer.writeheader()
    for row in rows:
        for key in ("before", "after"):
            row[key] = "" if row[key] is None else json.dumps(row[key], sort_keys=True)
        writer.writerow(row)
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue()


@require_permission(Permission.MANAGE)
@require_POST
def verify(request):
    broken, total = AuditStore(request.tenant, Actor.from_request(request)).verify()
    if wants_fragment(request):
        return render_page(
            request,
            "console/audit/log.html",
            {"broken": broken, "total": total, "verified": True},
            fragment="verify-result",
        )
    if broken is None:
        messages.success(request, f"Audit chain intact: {total} events verified.")
    else:
        messages.error(
            request,
            f"Audit chain broken at event #{broken.seq} ({broken.action}, "
            f"{broken.created_at:%Y-%m-%d %H:%M:%S}): it was changed or a neighbour removed.",
        )
    return redirect(reverse("audit:log", kwargs={"tenant_slug": request.tenant.slug}))
