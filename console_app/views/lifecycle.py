"""Pages of the data lifecycle: close and expire a session, delete its content, erase a user.

Closing, expiring and deleting are for admins and first show what they will
do (GET), then run on POST; the stores audit them. A deletion's progress is
for support and up. Erasing a user asks for the user id, shows how many
sessions it reaches, and runs only when the admin types the user id again.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from console_app.forms.lifecycle import EraseForm
from console_app.forms.sessions import ReasonForm
from console_app.selectors.lifecycle import CLASS_LABELS, KEPT_LABELS, job_progress, labelled_rows
from console_app.views.sessions import session_action
from lifecycle_app.deletion import DeletionStore
from lifecycle_app.endings import SessionEndings
from lifecycle_app.erasure import ErasureStore
from stateroom.actor import Actor
from stateroom.errors import NotFound, StateroomError
from stateroom.forms import refused_fields
from stateroom.htmx import redirect_after_post, render_page, wants_fragment
from tenancy_app.access import require_permission
from tenancy_app.permissions import Permission


def _detail_url(request, session_id: str) -> str:
    return reverse(
        "sessions:detail", kwargs={"tenant_slug": request.tenant.slug, "session_id": session_id}
    )


# --- close and expire -------------------------------------------------------------
_SETTLES = (
    " A run waiting on an approval is cancelled with its approval: the decision can no longer"
    " be made."
)
ACTIONS = {
    "close": {
        "title": "Close session",
        "explain": "Closing stops new work: no attach and no append from now on. The timeline "
        "stays readable." + _SETTLES,
        "button": "Close session",
        "done": "Session closed.",
    },
    "expire": {
        "title": "Expire session now",
        "explain": "Expiring ends the session's lease at once: no attach and no append from now "
        "on. The timeline stays readable." + _SETTLES,
        "button": "Expire now",
        "done": "Session expired.",
    },
}


def _endings(request) -> SessionEndings:
    return SessionEndings(request.tenant, Actor.from_request(request))


@require_permission(Permission.CLOSE)
@require_http_methods(["GET", "POST"])
def close(request, session_id: str):
    return session_action(
        request,
        session_id,
        "close",
        ACTIONS["close"],
        lambda store, reason: _endings(request).close(session_id=session_id, reason=reason),
    )


@require_permission(Permission.CLOSE)
@require_http_methods(["GET", "POST"])
def expire(request, session_id: str):
    return session_action(
        request,
        session_id,
        "expire",
        ACTIONS["expire"],
        lambda store, reason: _endings(request).expire(session_id=session_id, reason=reason),
    )


# --- content deletion ---------------------------------------------------------------
def _deletions(request) -> DeletionStore:
    return DeletionStore(request.tenant, Actor.from_request(request))


@require_permission(Permission.DELETE)
@require_http_methods(["GET", "POST"])
def delete(request, session_id: str):
    """GET: exactly what would be deleted and what is kept. POST: start the deletion job."""
    deletions = _deletions(request)
    try:
        session = deletions.owners.sessions.get(session_id)
    except NotFound as exc:
        raise Http404("No such session") from exc
    form = ReasonForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            job = deletions.request(session_id=session_id, reason=form.cleaned_data["reason"])
        except StateroomError as exc:
            if not refused_fields(form, exc):
                messages.error(request, exc.message)
                return redirect_after_post(request, request.path)
        else:
            return redirect_after_post(request, deletion_url(request, session_id, job.deletion_id))
    preview = deletions.preview(session_id=session_id)
    return render_page(
        request,
        "console/sessions/delete.html",
        {
            "nav": "sessions",
            "session": session,
            "form": form,
            "preview": preview,
            "delete_rows": labelled_rows(preview["delete"], CLASS_LABELS),
            "keep_rows": labelled_rows(preview["retain"], KEPT_LABELS),
        },
        status=422 if form.is_bound else 200,
    )


def deletion_url(request, session_id: str, deletion_id: str) -> str:
    return reverse(
        "sessions:deletion",
        kwargs={
            "tenant_slug": request.tenant.slug,
            "session_id": session_id,
            "deletion_id": deletion_id,
        },
    )


@require_permission(Permission.READ)
@require_GET
def deletion_progress(request, session_id: str, deletion_id: str):
    """The job's progress; htmx polls the fragment every 2 s and gets 286 once it has finished."""
    store = _deletions(request)
    try:
        job = store.get(deletion_id)
    except NotFound as exc:
        raise Http404("No such deletion") from exc
    if job.session.session_id != session_id:
        raise Http404("No such deletion")
    state = job_progress(store, job)
    return render_page(
        request,
        "console/sessions/deletion.html",
        {"nav": "sessions", "deletion": job, "session": job.session, "progress": state},
        fragment="progress",
        status=286 if state["finished"] and wants_fragment(request) else 200,
    )


@require_permission(Permission.ERASE)
@require_http_methods(["GET", "POST"])
def erase(request):
    """GET `?user_id=`: how many sessions an erasure reaches. POST: erase, if the id was typed."""
    store = ErasureStore(request.tenant, Actor.from_request(request))
    data = request.POST if request.method == "POST" else request.GET
    form = EraseForm(data if data.get("user_id") is not None else None)
    preview = None
    if form.is_bound and form.is_valid():
        user_id = form.cleaned_data["user_id"]
        preview = store.preview(user_id=user_id)
        if request.method == "POST":
            if form.cleaned_data["confirm"] != user_id:
                form.add_error("confirm", "Type the user id exactly as shown to confirm.")
            elif not form.cleaned_data["reason"]:
                form.add_error("reason", "Say why the user is erased.")
            else:
                try:
                    erasure = store.request(user_id=user_id, reason=form.cleaned_data["reason"])
                except StateroomError as exc:
                    if not refused_fields(form, exc):
                        raise
                else:
                    messages.success(
                        request,
                        f"Erasure of {user_id} started: {len(erasure.sessions)} session(s).",
                    )
                    return redirect_after_post(request, erasure_url(request, erasure.erasure_id))
    return render_page(
        request,
        "console/erasures/erase.html",
        {"nav": "sessions", "form": form, "preview": preview},
        status=422 if request.method == "POST" else 200,
    )


def erasure_url(request, erasure_id: str) -> str:
    return reverse(
        "lifecycle:erasure", kwargs={"tenant_slug": request.tenant.slug, "erasure_id": erasure_id}
    )


@require_permission(Permission.ERASE)
@require_GET
def erasure_progress(request, erasure_id: str):
    """The erasure's sessions and their deletions; htmx polls until every deletion is finished."""
    store = ErasureStore(request.tenant, Actor.from_request(request))
    try:
        erasure = store.get(erasure_id)
    except NotFound as exc:
        raise Http404("No such erasure") from exc
    state = store.state(erasure)
    finished = state["status"] in ("done", "failed")
    return render_page(
        request,
        "console/erasures/erasure.html",
        {"nav": "sessions", "erasure": erasure, "state": state, "finished": finished},
        fragment="progress",
        status=286 if finished and wants_fragment(request) else 200,
    )
