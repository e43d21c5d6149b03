"""Run pages: the list (read-only, support and up), the run inspector with the run's approvals and
effects, and run control (one and in bulk).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpResponseBadRequest
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods

from actions_app.runs import RunActions
from approvals_app.models import ApprovalRequest
from approvals_app.store import ApprovalStore
from console_app.forms.runs import BulkControlForm, ControlForm, RunFilterForm
from effects_app.store import EffectStore
from runs_app.models import Run, RunStatus
from runs_app.store import NON_TERMINAL_STATUSES, RunStateStore, check_reason
from stateroom.actor import Actor
from stateroom.errors import Conflict, NotFound, StateroomError
from stateroom.forms import refused_fields
from stateroom.htmx import redirect_after_post, render_page, wants_fragment
from stateroom.jsonview import diff
from stateroom.pages import keyset_page, parse_cursor
from stateroom.replica import reads_replica
from stateroom.tracing import trace_url
from tenancy_app.access import require_permission
from tenancy_app.permissions import Permission


@require_permission(Permission.READ)
@require_GET
@reads_replica
def run_list(request):
    form = RunFilterForm(request.GET)
    page = None
    if form.is_valid():
        runs = RunStateStore(request.tenant, Actor.from_request(request)).list_runs(
            **form.store_filters()
        )
        page = keyset_page(runs, request.GET)
    query = request.GET.copy()
    query.pop("cursor", None)
    return render_page(
        request,
        "console/runs/list.html",
        {"nav": "runs", "form": form, "page": page, "query": query.urlencode()},
        fragment="results",
    )


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
    for event in events:
        event.explained = explain_event(event.type, event.payload)
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
        approvals = _with_edits(
            ApprovalStore(request.tenant, actor).list_approvals(run_id=run_id).order_by("-id")
        )
        context |= {
            "deadline": _deadline(run),
            "nodes": list(store.node_executions(run_id)),
            "approvals": approvals,
            # The approval the run waits on as it reads now: one past its expires_at
            # can no longer be decided, even before the sweep records it.
            "waits_on": next(
                (a for a in approvals if a.approval_id == run.pending_approval_id), None
            ),
            "preview": preview,
            "effects": sorted(
                (effect for group in preview.values() for effect in group), key=lambda e: e.id
            ),
            "can_settle": request.membership.can(Permission.SETTLE_EFFECTS),
            "controls": control_choices(run),
            # Why it was last cancelled, suspended or resumed, by whom (the person's words).
            "last_control": store.last_control(run),
            # Its trace in the tracing UI (STATEROOM_TRACE_URL); None: no template or no trace.
            "trace_url": trace_url(run.trace_id),
        }
    return render_page(request, "console/runs/detail.html", context, fragment=fragment)


def _schema_lines(name: str, old: Any, new: Any) -> dict:
    if old is None:
        return {"title": f"Tool {name} added", "changes": []}
    if new is None:
        return {"title": f"Tool {name} removed", "changes": []}
    return {"title": f"Tool {name}: its arguments schema changed", "changes": diff(old, new)}


def explain_event(kind: str, payload: Any) -> list[dict]:
    """What a resume found changed, readably: `agent.drift` (tools, model settings, approval
    policy since the checkpoint) and `approval.voided` (an approval given for the old tool).
    Each entry: a title and the changes by key path (agent-written: the template escapes)."""
    if not isinstance(payload, dict):
        return []
    if kind == "agent.drift":
        lines = [
            _schema_lines(str(name), change.get("old"), change.get("new"))
            for name, change in sorted((payload.get("tools") or {}).items())
            if isinstance(change, dict)
        ]
        if payload.get("model_settings"):
            lines.append({"title": "Model settings changed", "changes": []})
        policy = payload.get("policy")
        if isinstance(policy, dict):
            lines.append(
                {
                    "title": "Approval policy changed",
                    "changes": diff(policy.get("old") or {}, policy.get("new") or {}),
                }
            )
        return lines
    if kind == "approval.voided":
        schema = payload.get("schema") if isinstance(payload.get("schema"), dict) else {}
        title = (
            f"Approval {payload.get('approval_id', '?')} ({payload.get('status', '?')}) voided: "
            + (
                "the tool changed since this was asked; the call is asked again"
                if payload.get("reason") == "tool_changed"
                else str(payload.get("reason", ""))
            )
        )
        return [{"title": title, "changes": diff(schema.get("old") or {}, schema.get("new") or {})}]
    return []


def _with_edits(approvals: Iterable[ApprovalRequest]) -> list[ApprovalRequest]:
    """The run's approvals; an approval run with edited arguments carries the asked -> approved
    changes (`edited_changes`), so the inspector shows what ran instead of what was asked."""
    rows = list(approvals)
    for approval in rows:
        edited = approval.approved_arguments
        approval.edited_changes = (
            diff(approval.arguments, edited)
            if edited is not None and edited != approval.arguments
            else []
        )
    return rows


# --- run control: cancel, suspend, resume (one run, or every run matching a filter) -----

RUN_CONTROLS = {
    # action: (button, past tense, the statuses it applies to)
    "cancel": ("Cancel", "Cancelled", NON_TERMINAL_STATUSES),
    "suspend": ("Suspend", "Suspended", (RunStatus.RUNNING, RunStatus.WAITING_APPROVAL)),
    "resume": ("Resume", "Resumed", (RunStatus.SUSPENDED,)),
}
RUN_CONTROL_EXPLAINED = {
    "cancel": (
        "The run ends as cancelled (for good); an approval it waits on is withdrawn. "
        "Its runtime is told by webhook and its next write is refused."
    ),
    "suspend": (
        "The run pauses as suspended; an approval it waits on is withdrawn. Its runtime is "
        "told by webhook, its next write is refused, and it stops at its next checkpoint."
    ),
    "resume": (
        "The run goes back to running and its runtime is told by webhook: it claims the run "
        "and continues from its last checkpoint, asking the effect ledger before repeating "
        "anything (README, Run control)."
    ),
}
BULK_LIMIT = 1000


def _run_url(request, run_id: str) -> str:
    return reverse("runs:detail", kwargs={"tenant_slug": request.tenant.slug, "run_id": run_id})


def control_choices(run: Run) -> list[tuple[str, str]]:
    """The controls that apply to the run's status: (action, button label)."""
    return [
        (action, label)
        for action, (label, _, statuses) in RUN_CONTROLS.items()
        if run.status in statuses
    ]


@require_permission(Permission.CONTROL_RUNS)
@require_http_methods(["GET", "POST"])
def control(request, run_id: str, action: str):
    """GET: what the action does and a reason form (a panel for htmx). POST: do it, through
    the run store's compare-and-set at the version the person saw."""
    if action not in RUN_CONTROLS:
        raise Http404("No such run action")
    actions = RunActions(request.tenant, Actor.from_request(request))
    try:
        run = actions.runs.get(run_id)
    except NotFound as exc:
        raise Http404("No such run") from exc
    form = ControlForm(
        request.POST if request.method == "POST" else None,
        initial={"expected_version": run.version},
    )
    if request.method == "POST" and form.is_valid():
        label, done, _ = RUN_CONTROLS[action]
        try:
            actions.control(action=action, run_id=run_id, **form.cleaned_data)
        except Conflict as exc:
            messages.warning(request, f"Not done: {_control_conflict(exc)}")
        except StateroomError as exc:
            if not refused_fields(form, exc):
                raise
        else:
            messages.success(request, f"{done} run {run.run_id}.")
        if form.is_valid():  # not when the store refused the reason: the form shows why
            return redirect_after_post(request, _run_url(request, run_id))
    label, _, statuses = RUN_CONTROLS[action]
    return render_page(
        request,
        "console/runs/control.html",
        {
            "nav": "runs",
            "run": run,
            "action": action,
            "label": label,
            "explain": RUN_CONTROL_EXPLAINED[action],
            "applies": run.status in statuses,
            "form": form,
        },
        fragment="panel",
        status=422 if form.is_bound else 200,
    )


def _control_conflict(exc: Conflict) -> str:
    details = exc.details or {}
    if exc.code == "version_conflict":
        return (
            f"the run moved from version {details.get('expected_version')} to "
            f"{details.get('current_version')} ({details.get('status')}) since the page was "
            "shown. Look again."
        )
    if exc.code == "invalid_transition":
        return f"the run is {details.get('from')} now; that does not apply."
    return exc.message


def _control_each(actions: RunActions, action: str, matching, reason: str) -> tuple[int, int]:
    """Control each matching run: how many were done, how many had moved on (skipped)."""
    done, skipped = 0, 0
    for run_id in list(matching.order_by("id").values_list("run_id", flat=True)):
        try:  # one store call (one audit event, one webhook) per run
            actions.control(action=action, run_id=run_id, reason=reason)
        except StateroomError:
            skipped += 1  # it moved on meanwhile
        else:
            done += 1
    return done, skipped


@require_permission(Permission.CONTROL_RUNS)
@require_http_methods(["GET", "POST"])
def bulk(request):
    """Cancel, suspend or resume every run matching the list's filter, after confirming the count.

    The POST carries the count the person saw; if the matching set changed
    size meanwhile, nothing happens (409) and the new count is shown to confirm again.
    """

    data = request.POST if request.method == "POST" else request.GET
    action = data.get("action")
    if action not in RUN_CONTROLS:
        return HttpResponseBadRequest("action must be one of: " + ", ".join(RUN_CONTROLS))
    filter_form = RunFilterForm(data)
    if not filter_form.is_valid():
        return HttpResponseBadRequest("Invalid filter: " + filter_form.errors.as_text())
    actions = RunActions(request.tenant, Actor.from_request(request))
    label, done_label, statuses = RUN_CONTROLS[action]
    matching = actions.runs.list_runs(**filter_form.store_filters()).filter(status__in=statuses)
    count = matching.count()
    form = BulkControlForm(request.POST if request.method == "POST" else None)
    changed = False
    if request.method == "POST" and form.is_valid():
        changed = form.cleaned_data["expected_count"] != count
        try:  # the store's rule, checked once: refused per run, each would be "skipped"
            check_reason(form.cleaned_data["reason"])
        except StateroomError as exc:
            refused_fields(form, exc)
        if form.is_valid() and not changed and count <= BULK_LIMIT:
            done, skipped = _control_each(actions, action, matching, form.cleaned_data["reason"])
            messages.success(
                request,
                f"{done_label} {done} run{pluralize(done)}."
                + (f" {skipped} had changed and were left as they are." if skipped else ""),
            )
            query = {k: v for k, v in filter_form.cleaned_data.items() if v}
            url = reverse("runs:list", kwargs={"tenant_slug": request.tenant.slug})
            return redirect_after_post(request, f"{url}?{urlencode(query)}" if query else url)
    filters = [(k, v) for k, v in filter_form.cleaned_data.items() if v]
    return render_page(
        request,
        "console/runs/bulk.html",
        {
            "nav": "runs",
            "action": action,
            "label": label,
            "explain": RUN_CONTROL_EXPLAINED[action],
            "statuses": statuses,
            "count": count,
            "limit": BULK_LIMIT,
            "changed": changed,
            "form": form,
            "filters": filters,
            "query": urlencode(filters),
        },
        status=409 if changed else (422 if form.is_bound else 200),
    )
