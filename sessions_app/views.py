"""Console pages for the session domain's own admin action: legal hold on and off.

It first shows what it will do and asks for a reason (GET), then runs on
POST; the store audits it. Close, expire and content deletion change other
domains too (pending approvals, runs, their content): they are
lifecycle_app.views. The list, bulk actions, timeline and export span
domains: console_app.views.sessions.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from stateroom.actor import Actor
from stateroom.errors import NotFound, StateroomError
from stateroom.forms import refused_fields
from stateroom.htmx import redirect_after_post, render_page
from tenancy_app.access import require_permission
from tenancy_app.permissions import Permission

from .models import Session
from .store import SessionStore


class ReasonForm(forms.Form):
    # Its limit is the stores' (sessions_app.store.MAX_REASON_LENGTH): they refuse, it shows why.
    reason = forms.CharField(widget=forms.Textarea, strip=True)


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
        "sessions/confirm.html",
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
