"""Approvals console: the live inbox.

One approval with its conversation, run events and effects, and the decision
(whose refusals show that page again), span domains: console_app.views.approvals.
"""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_GET

from audit_app.actor import Actor
from stateroom.htmx import render_page, wants_fragment
from tenancy_app.access import require_permission
from tenancy_app.permissions import Permission

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


def inbox_page(request: HttpRequest, *, notice: str = "", notice_kind: str = "ok") -> HttpResponse:
    """The inbox, or its rows for htmx; `notice` reports a decision made from it."""
    store = _store(request)
    params = request.GET if request.method == "GET" else request.POST
    q = params.get("q", "").strip()[:200]
    rows = list(_search(store.inbox(), q)[: INBOX_LIMIT + 1])
    for approval in rows:
        approval.digest = store.digest(approval)
        # Reversed once per row here, not once per use in the template (up to five).
        approval.detail_url = _url(request, "approvals:detail", approval_id=approval.approval_id)
        approval.decide_url = _url(request, "approvals:decide", approval_id=approval.approval_id)
    return render_page(
        request,
        "approvals/inbox.html",
        {
            "nav": "approvals",
            "approvals": rows[:INBOX_LIMIT],
            "truncated": len(rows) > INBOX_LIMIT,
            "q": q,
            "can_decide": request.membership.can(Permission.DECIDE),
            "notice": notice,
            "notice_kind": notice_kind,
            "oob": wants_fragment(request),
        },
        fragment="rows",
    )


@require_permission(Permission.READ)
@require_GET
def inbox(request):
    return inbox_page(request)
