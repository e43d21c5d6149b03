"""Session pages: the list (found by its runs' ids too), bulk close or expire, the timeline
(items, runs, approvals, effects), the export with its audit events, and legal hold on and off.

Close, expire and content deletion (which settle or remove what other domains hold) are
console_app.views.lifecycle.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.db.models import QuerySet
from django.http import Http404, HttpResponseBadRequest, StreamingHttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from console_app.export import EXPORT_FORMATS, transcript, transcript_filename
from console_app.forms.sessions import BulkForm, ReasonForm, SessionFilterForm
from console_app.selectors.lifecycle import job_progress
from console_app.timeline import SessionTimeline, shown_filter
from lifecycle_app.deletion import DeletionStore
from lifecycle_app.endings import SessionEndings
from runs_app.store import RunStateStore
from sessions_app.models import TERMINAL_SESSION_STATUSES, Session
from sessions_app.store import SessionStore, check_reason
from stateroom.actor import Actor
from stateroom.errors import NotFound, StateroomError
from stateroom.forms import refused_fields
from stateroom.htmx import redirect_after_post, render_page, wants_fragment
from stateroom.pages import keyset_page, parse_cursor
from stateroom.replica import reads_replica
from tenancy_app.access import require_permission
from tenancy_app.permissions import Permission


def _store(request) -> SessionStore:
    return SessionStore(request.tenant, Actor.from_request(request))


def _get_session(store: SessionStore, session_id: str) -> Session:
    try:
        return store.get(session_id)
    except NotFound as exc:
        raise Http404("No such session") from exc


def _detail_url(request, session_id: str) -> str:
    return reverse(
        "sessions:detail", kwargs={"tenant_slug": request.tenant.slug, "session_id": session_id}
    )


# --- admin actions on one session ---------------------------------------------

_ACTIONS = {
    "hold-on": {
        "title": "Place a legal hold",
        "explain": "While held, no deletion of this session's content can run, manual or scheduled, until the hold is released.",
        "button": "Place legal hold",
        "done": "Legal hold placed.",
    },
    "hold-off": {
        "title": "Release the legal hold",
        "explain": "Releasing lets manual and scheduled (retention) deletions touch this session again.",
        "button": "Release legal hold",
        "done": "Legal hold released.",
    },
}


def session_action(request, session_id: str, kind: str, action: dict, perform):
    """GET: what the action does and a reason field. POST: `perform(store, reason)`, then back.

    Shared by the admin actions on one session (the lifecycle pages use it too).
    """
    store = _store(request)
    session = _get_session(store, session_id)
    form = ReasonForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            perform(store, form.cleaned_data["reason"])
        except NotFound as exc:
            raise Http404("No such session") from exc
        except StateroomError as exc:
            if not refused_fields(form, exc):
                messages.error(request, exc.message)
        else:
            messages.success(request, action["done"])
        if form.is_valid():  # not when the store refused a field: the form shows why
            return redirect_after_post(request, _detail_url(request, session_id))
    return render_page(
        request,
        "console/sessions/confirm.html",
        {"nav": "sessions", "session": session, "form": form, "kind": kind, **action},
        fragment="panel",
        status=422 if form.is_bound else 200,
    )


@require_permission(Permission.CLOSE)
@require_http_methods(["GET", "POST"])
def hold(request, session_id: str):
    """`?on=1` places the hold, `?on=0` releases it (the POST carries the same field)."""
    on = (request.POST if request.method == "POST" else request.GET).get("on") == "1"
    kind = "hold-on" if on else "hold-off"
    return session_action(
        request,
        session_id,
        kind,
        _ACTIONS[kind],
        lambda store, reason: store.set_legal_hold(session_id=session_id, on=on, reason=reason),
    )


# The timeline filter's choices, as the page's tabs show them ("" = everything).
TIMELINE_FILTER_LABELS = [
    ("", "Everything"),
    ("conversation", "Conversation"),
    ("runs", "Runs"),
    ("approvals", "Approvals"),
    ("lifecycle", "Lifecycle"),
]

BULK_LIMIT = 5000


def _store(request) -> SessionStore:
    return SessionStore(request.tenant, Actor.from_request(request))


def _get_session(store: SessionStore, session_id: str) -> Session:
    try:
        return store.get(session_id)
    except NotFound as exc:
        raise Http404("No such session") from exc


def _detail_url(request, session_id: str) -> str:
    return reverse(
        "sessions:detail", kwargs={"tenant_slug": request.tenant.slug, "session_id": session_id}
    )


def _filtered(request, data) -> tuple[SessionFilterForm, QuerySet[Session] | None]:
    """The sessions matching the list's filter; the search box also finds a session by its runs' ids."""
    form = SessionFilterForm(data)
    if not form.is_valid():
        return form, None
    store, filters = _store(request), form.store_filters()
    sessions = store.list_sessions(**filters)
    if filters["search"]:
        runs = RunStateStore(request.tenant, store.actor).list_runs()
        by_run = store.list_sessions(**{**filters, "search": None}).filter(
            pk__in=runs.filter(run_id__icontains=filters["search"]).values("session_id")
        )
        sessions = sessions | by_run
    return form, sessions


# --- reading ----------------------------------------------------------------


@require_permission(Permission.READ)
@require_GET
@reads_replica
def session_list(request):
    form, sessions = _filtered(request, request.GET)
    page = keyset_page(sessions, request.GET) if sessions is not None else None
    query = request.GET.copy()
    query.pop("cursor", None)
    return render_page(
        request,
        "console/sessions/list.html",
        {
            "nav": "sessions",
            "form": form,
            "page": page,
            "query": query.urlencode(),
            "can_admin": request.membership.can(Permission.CLOSE),
        },
        fragment="results",
    )


@require_permission(Permission.READ)
@require_GET
def session_detail(request, session_id: str):
    store = _store(request)
    session = _get_session(store, session_id)
    before_seq = parse_cursor(request.GET.get("before_seq"))
    show = shown_filter(request.GET.get("show"))
    deletions = DeletionStore(request.tenant, store.actor)
    latest = deletions.for_session(session_id).order_by("-id").first()
    return render_page(
        request,
        "console/sessions/detail.html",
        {
            "nav": "sessions",
            "session": session,
            "attached_run_ids": store.attached_run_ids(session),
            "page": SessionTimeline(request.tenant, store).page(
                session, before_seq=before_seq, show=show
            ),
            "show": show,
            "filters": TIMELINE_FILTER_LABELS,
            "deletion": latest,
            "progress": job_progress(deletions, latest) if latest is not None else None,
            "can_admin": request.membership.can(Permission.CLOSE),
            "tenant_hold": request.tenant.legal_hold,
        },
        fragment="timeline",
    )


@require_permission(Permission.READ)
@require_GET
def session_items(request, session_id: str):
    """The next older page of the timeline, as list entries to swap in for "Load older"."""
    before_seq = parse_cursor(request.GET.get("before_seq"))
    show = shown_filter(request.GET.get("show"))
    if not wants_fragment(request):
        query = urlencode({k: v for k, v in (("show", show), ("before_seq", before_seq)) if v})
        url = _detail_url(request, session_id)
        return redirect(f"{url}?{query}" if query else url)
    store = _store(request)
    session = _get_session(store, session_id)
    return render_page(
        request,
        "console/sessions/detail.html",
        {
            "session": session,
            "page": SessionTimeline(request.tenant, store).page(
                session, before_seq=before_seq, show=show
            ),
            "show": show,
        },
        fragment="entries",
    )


@require_permission(Permission.EXPORT_TRANSCRIPTS)
@require_GET
def export(request, session_id: str, fmt: str):
    if fmt not in EXPORT_FORMATS:
        return HttpResponseBadRequest("Export formats: " + ", ".join(EXPORT_FORMATS))
    store = _store(request)
    session = _get_session(store, session_id)
    content_type, body = EXPORT_FORMATS[fmt], transcript(request.tenant, store.actor, session, fmt)
    response = StreamingHttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{transcript_filename(session, fmt)}"'
    return response


# --- bulk actions on the list ---------------------------------------------------------


@require_permission(Permission.CLOSE)
@require_http_methods(["GET", "POST"])
def bulk(request):
    """Close or expire every live session matching the list's filter, after confirming the count.

    The POST carries the count the admin saw; if the matching set changed size
    meanwhile, nothing happens and the new count is shown to confirm again.
    """
    data = request.POST if request.method == "POST" else request.GET
    filter_form, sessions = _filtered(request, data)
    if sessions is None:
        return HttpResponseBadRequest("Invalid filter: " + filter_form.errors.as_text())
    live = sessions.exclude(status__in=TERMINAL_SESSION_STATUSES)
    count = live.count()
    form = BulkForm(request.POST if request.method == "POST" else None)
    action = data.get("action") if data.get("action") in ("close", "expire") else "close"
    changed = False
    if request.method == "POST" and form.is_valid():
        changed = form.cleaned_data["expected_count"] != count
        try:  # the store's rule, checked once: refused per session, each would be "skipped"
            check_reason(form.cleaned_data["reason"])
        except StateroomError as exc:
            refused_fields(form, exc)
        if form.is_valid() and not changed and count <= BULK_LIMIT:
            done, skipped = _bulk_apply(request, live, action, form.cleaned_data["reason"])
            verb = "Closed" if action == "close" else "Expired"
            messages.success(
                request,
                f"{verb} {done} session{'s' if done != 1 else ''}."
                + (
                    f" {skipped} had already ended or changed and were left as they are."
                    if skipped
                    else ""
                ),
            )
            url = reverse("sessions:list", kwargs={"tenant_slug": request.tenant.slug})
            query = filter_form.data.copy()
            for key in ("csrfmiddlewaretoken", "action", "expected_count", "reason"):
                query.pop(key, None)
            return redirect_after_post(request, f"{url}?{query.urlencode()}")
    query = data.copy()
    for key in ("csrfmiddlewaretoken", "expected_count", "reason", "action", "cursor"):
        query.pop(key, None)
    return render_page(
        request,
        "console/sessions/bulk.html",
        {
            "nav": "sessions",
            "action": action,
            "count": count,
            "limit": BULK_LIMIT,
            "changed": changed,
            "form": form,
            "filter_form": filter_form,
            "filters": [(k, v) for k, v in query.items() if v],
            "query": query.urlencode(),
        },
        status=409 if changed else (422 if form.is_bound else 200),
    )


def _bulk_apply(request, live, action: str, reason: str) -> tuple[int, int]:
    """One close or expire (one audit event, its waiting runs settled) per session; a session
    that ended meanwhile is skipped."""
    endings = SessionEndings(request.tenant, Actor.from_request(request))
    perform = endings.close if action == "close" else endings.expire
    done = skipped = 0
    for session_id in list(live.order_by("id").values_list("session_id", flat=True)):
        try:
            perform(session_id=session_id, reason=reason)
        except StateroomError:
            skipped += 1
        else:
            done += 1
    return done, skipped
