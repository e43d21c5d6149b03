"""Console pages for one session's admin actions and its content deletion.

Close, expire, legal hold and delete content are for admins; the deletion's
progress is for support and up. Every action first shows what it will do and
asks for a reason (GET), then runs on POST; the stores audit it. The list,
bulk actions, timeline and export span domains: console_app.views.sessions.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from audit_app.actor import Actor
from stateroom.errors import NotFound, StateroomError
from stateroom.htmx import redirect_after_post, render_page, wants_fragment
from tenancy_app.access import require_permission
from tenancy_app.permissions import Permission

from .deletion import ContentDeletionStore, progress
from .models import Session
from .store import SessionStore

DATA_CLASSES = {
    "session_items": "Conversation items",
    "run_event_payloads": "Run event payloads",
    "checkpoint_bodies": "Checkpoint bodies",
    "effect_payloads": "Effect payloads (records kept, redacted)",
    "audit_events": "Audit events",
    "effect_records": "Effect records (idempotency key, tool, status)",
    "runs": "Runs and their status history",
}


def _rows(counts: dict) -> list[dict]:
    """Counts per data class in a stable order, labelled for people."""
    keys = [k for k in DATA_CLASSES if k in counts] + sorted(set(counts) - set(DATA_CLASSES))
    return [{"key": k, "label": DATA_CLASSES.get(k, k), "count": counts[k]} for k in keys]


def job_progress(job) -> dict:
    """The job's progress (`deletion.progress`) with per-class rows for the fragment."""
    state = progress(job)
    state["rows"] = [
        {**row, "planned": row["count"], "done": state["counts"].get(row["key"], 0)}
        for row in _rows(state["planned"])
    ]
    return state


class ReasonForm(forms.Form):
    reason = forms.CharField(max_length=2000, widget=forms.Textarea, strip=True)


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
    "close": {
        "title": "Close session",
        "explain": "Closing stops new work: no attach and no append from now on. The timeline stays readable.",
        "button": "Close session",
        "done": "Session closed.",
    },
    "expire": {
        "title": "Expire session now",
        "explain": "Expiring ends the session's lease at once: no attach and no append from now on. The timeline stays readable.",
        "button": "Expire now",
        "done": "Session expired.",
    },
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


def _session_action(request, session_id: str, kind: str, perform):
    store = _store(request)
    session = _get_session(store, session_id)
    form = ReasonForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            perform(store, form.cleaned_data["reason"])
        except NotFound as exc:
            raise Http404("No such session") from exc
        except StateroomError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, _ACTIONS[kind]["done"])
        return redirect_after_post(request, _detail_url(request, session_id))
    return render_page(
        request,
        "sessions/confirm.html",
        {"nav": "sessions", "session": session, "form": form, "kind": kind, **_ACTIONS[kind]},
        fragment="panel",
        status=422 if form.is_bound else 200,
    )


@require_permission(Permission.CLOSE)
@require_http_methods(["GET", "POST"])
def close(request, session_id: str):
    return _session_action(
        request,
        session_id,
        "close",
        lambda store, reason: store.close(session_id=session_id, reason=reason),
    )


@require_permission(Permission.CLOSE)
@require_http_methods(["GET", "POST"])
def expire(request, session_id: str):
    return _session_action(
        request,
        session_id,
        "expire",
        lambda store, reason: store.expire(session_id=session_id, reason=reason),
    )


@require_permission(Permission.CLOSE)
@require_http_methods(["GET", "POST"])
def hold(request, session_id: str):
    """`?on=1` places the hold, `?on=0` releases it (the POST carries the same field)."""
    on = (request.POST if request.method == "POST" else request.GET).get("on") == "1"
    return _session_action(
        request,
        session_id,
        "hold-on" if on else "hold-off",
        lambda store, reason: store.set_legal_hold(session_id=session_id, on=on, reason=reason),
    )


# --- content deletion ---------------------------------------------------------------


@require_permission(Permission.DELETE)
@require_http_methods(["GET", "POST"])
def delete(request, session_id: str):
    """GET: exactly what would be deleted and what is kept. POST: start the deletion job."""
    store = _store(request)
    session = _get_session(store, session_id)
    deletions = ContentDeletionStore(request.tenant, store.actor)
    form = ReasonForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            job = deletions.request(session_id=session_id, reason=form.cleaned_data["reason"])
        except NotFound as exc:
            raise Http404("No such session") from exc
        except StateroomError as exc:
            messages.error(request, exc.message)
            return redirect_after_post(request, request.path)
        return redirect_after_post(request, _deletion_url(request, session_id, job))
    preview = deletions.preview(session_id=session_id)
    return render_page(
        request,
        "sessions/delete.html",
        {
            "nav": "sessions",
            "session": session,
            "form": form,
            "preview": preview,
            "delete_rows": _rows(preview["delete"]),
            "keep_rows": _rows(preview["retain"]),
        },
        status=422 if form.is_bound else 200,
    )


def _deletion_url(request, session_id: str, job) -> str:
    return reverse(
        "sessions:deletion",
        kwargs={
            "tenant_slug": request.tenant.slug,
            "session_id": session_id,
            "deletion_id": job.deletion_id,
        },
    )


@require_permission(Permission.READ)
@require_GET
def deletion_progress(request, session_id: str, deletion_id: str):
    """The job's progress; htmx polls the fragment every 2 s and gets 286 once it has finished."""
    store = ContentDeletionStore(request.tenant, Actor.from_request(request))
    try:
        job = store.get(deletion_id)
    except NotFound as exc:
        raise Http404("No such deletion") from exc
    if job.session.session_id != session_id:
        raise Http404("No such deletion")
    state = job_progress(job)
    return render_page(
        request,
        "sessions/deletion.html",
        {"nav": "sessions", "deletion": job, "session": job.session, "progress": state},
        fragment="progress",
        status=286 if state["finished"] and wants_fragment(request) else 200,
    )
