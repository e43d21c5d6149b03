"""Full-text search over what was said and written: conversation text, approval summaries
and reasons (PostgreSQL text search, GIN-indexed, tenant-scoped, keyset-paged)."""

from __future__ import annotations

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET

from approvals_app.store import ApprovalStore
from sessions_app.store import HIGHLIGHT_START, HIGHLIGHT_STOP, SessionStore
from stateroom.actor import Actor
from stateroom.htmx import render_page
from stateroom.pages import parse_cursor
from tenancy_app.access import require_permission
from tenancy_app.permissions import Permission

PAGE = 20
MAX_QUERY = 200


def marked(snippet: str) -> SafeString:
    """The snippet escaped, then its match markers turned into <mark>."""
    html = escape(snippet or "")
    return mark_safe(html.replace(HIGHLIGHT_START, "<mark>").replace(HIGHLIGHT_STOP, "</mark>"))


@require_permission(Permission.READ)
@require_GET
def search(request):
    """`?q=` in web-search syntax ("a phrase", -word, or); `items_before` and
    `approvals_before` page each list on its own."""
    q = request.GET.get("q", "").strip()[:MAX_QUERY]
    actor = Actor.from_request(request)
    items, more_items, approvals, more_approvals = [], False, [], False
    want = request.GET.get("only")
    if q:
        if want in (None, "", "items"):
            items, more_items = SessionStore(request.tenant, actor).search_items(
                query=q, before_id=parse_cursor(request.GET.get("items_before")), limit=PAGE
            )
        if want in (None, "", "approvals"):
            approvals, more_approvals = ApprovalStore(request.tenant, actor).search(
                query=q, before_id=parse_cursor(request.GET.get("approvals_before")), limit=PAGE
            )
    for hit in [*items, *approvals]:
        hit.snippet_html = marked(hit.snippet)
    return render_page(
        request,
        "console/search/search.html",
        {
            "nav": "search",
            "q": q,
            "only": want or "",
            "items": items,
            "items_next": items[-1].id if more_items else None,
            "approvals": approvals,
            "approvals_next": approvals[-1].id if more_approvals else None,
        },
        fragment="results",
    )
