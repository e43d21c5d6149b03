"""The run inspector: the run, its history, events, nodes, approvals and effects."""

from __future__ import annotations

from django.http import Http404
from django.utils import timezone
from django.views.decorators.http import require_GET

from approvals_app.store import ApprovalStore
from audit_app.actor import Actor
from effects_app.store import EffectStore
from runs_app.models import Run
from runs_app.store import RunStateStore
from stateroom.errors import NotFound
from stateroom.htmx import render_page, wants_fragment
from stateroom.pages import parse_cursor
from tenancy_app.access import require_permission
from tenancy_app.permissions import Permission

HISTORY_PAGE = 50
EVENTS_PAGE = 50


def _deadline(run: Run) -> dict | None:
    """How much of the time between creation and the deadline has gone (for a <meter>)."""
    if run.deadline_at is None:
        return None
    end = timezone.now() if not run.is_terminal else run.updated_at
    total = (run.deadline_at - run.created_at).total_seconds()
    used = (end - run.created_at).total_seconds()
    percent = 100 if total <= 0 else max(0, min(100, round(100 * used / total)))
    return {"percent": percent, "overdue": end > run.deadline_at}


@require_permission(Permission.READ)
@require_GET
def run_detail(request, run_id: str):
    """The run inspector. `?before_version=` and `?events_after=` page the history and the events."""
    actor = Actor.from_request(request)
    store = RunStateStore(request.tenant, actor)
    try:
        run = store.get(run_id)
    except NotFound as exc:
        raise Http404("No such run") from exc
    before_version = parse_cursor(request.GET.get("before_version"))
    events_after = parse_cursor(request.GET.get("events_after"))
    fragment = None
    if wants_fragment(request) and "events_after" in request.GET:
        fragment = "event-rows"
    elif wants_fragment(request) and "before_version" in request.GET:
        fragment = "history-rows"

    history = store.transitions(run_id).order_by("-version")
    if before_version is not None:
        history = history.filter(version__lt=before_version)
    history = list(history[: HISTORY_PAGE + 1])
    events = store.get_events(run_id=run_id, after=events_after, limit=EVENTS_PAGE + 1)
    context = {
        "nav": "runs",
        "run": run,
        "history": history[:HISTORY_PAGE],
        "older_version": history[HISTORY_PAGE - 1].version if len(history) > HISTORY_PAGE else None,
        "events": events[:EVENTS_PAGE],
        "events_next": events[EVENTS_PAGE - 1].seq if len(events) > EVENTS_PAGE else None,
    }
    if fragment is None:
        preview = EffectStore(request.tenant, actor).resume_preview(run_id=run_id)
        context |= {
            "deadline": _deadline(run),
            "nodes": list(store.node_executions(run_id)),
            "approvals": list(
                ApprovalStore(request.tenant, actor).list_approvals(run_id=run_id).order_by("-id")
            ),
            "preview": preview,
            "effects": sorted(
                (effect for group in preview.values() for effect in group), key=lambda e: e.id
            ),
            "can_settle": request.membership.can(Permission.SETTLE_EFFECTS),
        }
    return render_page(request, "runs/detail.html", context, fragment=fragment)
