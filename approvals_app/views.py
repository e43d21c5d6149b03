"""Approvals console: the live inbox.

One approval with its conversation, run events and effects, and the decision
(whose refusals show that page again), span domains: console_app.views.approvals.
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Iterator
from datetime import UTC, datetime, time, timedelta

from django import forms
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, StreamingHttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET

from stateroom.actor import Actor
from stateroom.htmx import render_page, wants_fragment
from stateroom.pages import keyset_page, parse_cursor
from tenancy_app.access import require_permission
from tenancy_app.permissions import Permission
from tenancy_app.scoping import read_in_chunks

from .models import RISK_RANK, Decision, Risk
from .presentation import key_values, schema_changes
from .store import ApprovalStore

INBOX_LIMIT = 100


def _store(request: HttpRequest) -> ApprovalStore:
    return ApprovalStore(request.tenant, Actor.from_request(request))


def _url(request: HttpRequest, name: str, **kwargs) -> str:
    return reverse(name, kwargs={"tenant_slug": request.tenant.slug, **kwargs})


# --- inbox ---------------------------------------------------------------------
def _search(approvals: QuerySet, q: str) -> QuerySet:
    if not q:
        return approvals
    return approvals.filter(
        Q(tool_name__icontains=q)
        | Q(approval_id=q)
        | Q(run__run_id=q)
        | Q(run__session__session_id=q)
        | Q(run__session__user_id__icontains=q)
    )


QUICK_APPROVE_RANK = {"none": 0, "low": RISK_RANK[Risk.LOW], "medium": RISK_RANK[Risk.MEDIUM]}


def quick_approvable(tenant, approval, *, fits: bool | None = None) -> bool:
    """The tenant allows approving this call from the inbox without opening it (and it can
    run as asked: its arguments fit the tool's schema; `fits` when the caller knows)."""
    return (
        "approve" in approval.allowed_decisions
        and approval.risk_rank <= QUICK_APPROVE_RANK.get(tenant.quick_approve_max_risk, 0)
        and not approval.first_approved_by
        and (fits if fits is not None else not ApprovalStore.asked_argument_errors(approval))
    )


def _fingerprint(rows) -> str:
    """What the rows show that can change (the countdowns tick in the browser)."""
    parts = "|".join(f"{a.pk}:{a.first_approved_by_id}:{a.run.version}" for a in rows)
    return hashlib.sha256(parts.encode()).hexdigest()[:16]


def inbox_page(request: HttpRequest, *, notice: str = "", notice_kind: str = "ok") -> HttpResponse:
    """The inbox, or its rows for htmx; `notice` reports a decision made from it.

    A refresh (`fp` = the fingerprint of the rows the page shows) that would
    show the same rows answers 204: nothing is swapped, focus and screen
    readers keep their place.
    """
    store = _store(request)
    params = request.GET if request.method == "GET" else request.POST
    q = params.get("q", "").strip()[:200]
    rows = list(_search(store.inbox(), q)[: INBOX_LIMIT + 1])
    fingerprint = _fingerprint(rows)
    if request.method == "GET" and wants_fragment(request) and params.get("fp") == fingerprint:
        return HttpResponse(status=204)
    seen = parse_cursor(params.get("seen"))
    for approval in rows:
        approval.digest = store.digest(approval)
        approval.key_values = key_values(approval)
        # Arguments that do not fit the tool's schema can only be edited or rejected
        # (validated once a row: the schema check is the row's dearest step).
        fits = not store.asked_argument_errors(approval)
        approval.quick = quick_approvable(request.tenant, approval, fits=fits)
        approval.can_approve = "approve" in approval.allowed_decisions and fits
        approval.is_new = seen is not None and approval.pk > seen
        # Reversed once per row here, not once per use in the template (up to five).
        approval.detail_url = _url(request, "approvals:detail", approval_id=approval.approval_id)
        approval.decide_url = _url(request, "approvals:decide", approval_id=approval.approval_id)
        if approval.replaces_id is not None:  # asked again: the tool changed (select_related)
            approval.replaces_url = _url(
                request, "approvals:detail", approval_id=approval.replaces.approval_id
            )
            approval.schema_changes = schema_changes(approval.replaces.void_details)
    shown = rows[:INBOX_LIMIT]
    return render_page(
        request,
        "approvals/inbox.html",
        {
            "nav": "approvals",
            "approvals": shown,
            "truncated": len(rows) > INBOX_LIMIT,
            "q": q,
            "can_decide": request.membership.can(Permission.DECIDE),
            "notice": notice,
            "notice_kind": notice_kind,
            "oob": wants_fragment(request),
            "fingerprint": fingerprint,
            "newest_pk": max((a.pk for a in rows), default=seen or 0),
            "new_count": sum(1 for a in rows if a.is_new),
        },
        fragment="rows",
    )


# `?status=` on the inbox (which shows pending only) means a history tab.
STATUS_TABS = {
    "approved": "decided",
    "rejected": "decided",
    "responded": "decided",
    "expired": "expired",
    "cancelled": "cancelled",
    "voided": "voided",
}


@require_permission(Permission.READ)
@require_GET
def inbox(request):
    tab = STATUS_TABS.get(request.GET.get("status", ""))
    if tab is not None:
        url = _url(request, "approvals:history") + f"?tab={tab}"
        if tab == "decided":
            url += "&outcome=" + request.GET["status"]
        return redirect(url)
    return inbox_page(request)


# --- history -------------------------------------------------------------------
class HistoryFilterForm(forms.Form):
    tab = forms.ChoiceField(
        choices=[(t, t) for t in ApprovalStore.HISTORY_TABS], required=False, initial="decided"
    )
    risk = forms.ChoiceField(choices=[("", "Any risk"), *Risk.choices], required=False)
    # No limits of their own: a value longer than any tool, agent or decider can be matches
    # nothing (the page's maxlength is the owners': console_app.context_processors.limits).
    tool = forms.CharField(required=False, label="Tool")
    agent = forms.CharField(required=False, label="Agent")
    decider = forms.CharField(required=False, label="Decided by (starts with)")
    decision = forms.ChoiceField(choices=[("", "Any decision"), *Decision.choices], required=False)
    outcome = forms.ChoiceField(
        choices=[
            ("", "Approved, rejected or responded"),
            ("approved", "Approved"),
            ("rejected", "Rejected"),
            ("responded", "Responded"),
        ],
        required=False,
    )
    date_from = forms.DateField(required=False, label="From")
    date_to = forms.DateField(required=False, label="To")

    def store_filters(self) -> dict:
        data = self.cleaned_data
        return {
            "tab": data["tab"] or "decided",
            "risk": data["risk"] or None,
            "tool": data["tool"].strip() or None,
            "agent": data["agent"].strip() or None,
            "decider": data["decider"].strip() or None,
            "decision": data["decision"] or None,
            "outcome": data["outcome"] or None,
            "since": _day(data["date_from"]),
            "until": _day(data["date_to"], days=1),  # inclusive "to" date
        }


def _day(day, *, days: int = 0) -> datetime | None:
    if day is None:
        return None
    return datetime.combine(day + timedelta(days=days), time.min, tzinfo=UTC)


HISTORY_CSV_FIELDS = [
    "approval_id",
    "status",
    "decision",
    "risk",
    "tool_name",
    "summary",
    "run_id",
    "agent",
    "requested_at",
    "expires_at",
    "decided_by",
    "decided_at",
    "decision_reason",
    "first_approved_by",
    "first_approval_reason",
    "voided_by",
    "voided_at",
    "void_reason_code",
    "void_reason",
    "replaces_approval_id",
]
HISTORY_EXPORT_CHUNK = 500


@require_permission(Permission.READ)
@require_GET
def history(request):
    """Approvals by status tab, filtered by risk, tool, agent, decider and dates; keyset pages."""
    form = HistoryFilterForm(request.GET)
    page = None
    if form.is_valid():
        page = keyset_page(_store(request).history(**form.store_filters()), request.GET)
    query = request.GET.copy()
    query.pop("cursor", None)
    return render_page(
        request,
        "approvals/history.html",
        {
            "nav": "approvals",
            "form": form,
            "tab": (form.cleaned_data.get("tab") if form.is_valid() else None) or "decided",
            "page": page,
            "query": query.urlencode(),
        },
        fragment="results",
    )


@require_permission(Permission.READ)
@require_GET
def history_export(request):
    """The filtered history as CSV, oldest first, streamed chunk by chunk (keyset on id)."""
    form = HistoryFilterForm(request.GET)
    if not form.is_valid():
        return HttpResponseBadRequest("Invalid filters: " + form.errors.as_text())
    tenant, actor, filters = request.tenant, Actor.from_request(request), form.store_filters()

    def read(after: int, size: int) -> list:
        found = ApprovalStore(tenant, actor).history(**filters).filter(id__gt=after)
        return list(found.order_by("id")[:size])

    rows = read_in_chunks(tenant, read, key=lambda a: a.id, size=HISTORY_EXPORT_CHUNK)
    response = StreamingHttpResponse(_history_csv(rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = (
        f'attachment; filename="approvals-{filters["tab"]}-{tenant.slug}.csv"'
    )
    return response


def _iso(value) -> str:
    return value.isoformat() if value is not None else ""


def _history_csv(rows) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(HISTORY_CSV_FIELDS)
    yield buffer.getvalue()
    buffer.seek(0)
    buffer.truncate()
    for a in rows:
        writer.writerow(
            [
                a.approval_id,
                a.status,
                a.decision,
                a.risk,
                a.tool_name,
                a.summary,
                a.run.run_id,
                a.run.active_agent,
                _iso(a.created_at),
                _iso(a.expires_at),
                a.decided_by,
                _iso(a.decided_at),
                a.decision_reason,
                a.first_approved_by,
                a.first_approval_reason,
                a.voided_by,
                _iso(a.voided_at),
                a.void_code,
                a.void_reason,
                a.replaces.approval_id if a.replaces_id is not None else "",
            ]
        )
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
