"""One approval with its context (conversation, run events, effects) and the decision."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from approvals_app.forms import DecisionForm
from approvals_app.models import ApprovalRequest, ApprovalStatus
from approvals_app.presentation import argument_tree, arguments_problem, schema_changes
from approvals_app.store import ApprovalStore
from approvals_app.views import inbox_page, quick_approvable
from effects_app.store import EffectStore
from runs_app.store import RunStateStore
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from stateroom.errors import Conflict, NotFound, Unprocessable
from stateroom.htmx import redirect_after_post, render_page, wants_fragment
from stateroom.jsonview import diff, highlight_json, pretty
from tenancy_app.access import require_permission
from tenancy_app.permissions import Permission

CONVERSATION_ITEMS = 10
RUN_EVENTS = 20
RUN_EFFECTS = 20


def _store(request: HttpRequest) -> ApprovalStore:
    return ApprovalStore(request.tenant, Actor.from_request(request))


def _get(store: ApprovalStore, approval_id: str) -> ApprovalRequest:
    try:
        return store.get(approval_id)
    except NotFound as exc:
        raise Http404 from exc


def _url(request: HttpRequest, name: str, **kwargs) -> str:
    return reverse(name, kwargs={"tenant_slug": request.tenant.slug, **kwargs})


# --- detail --------------------------------------------------------------------
def _detail(request: HttpRequest, approval: ApprovalRequest, *, form=None, status=200):
    store, actor = _store(request), Actor.from_request(request)
    run = approval.run
    session = run.session
    items = []
    if session is not None:
        items = SessionStore(request.tenant, actor).get_items(
            session_id=session.session_id,
            limit=CONVERSATION_ITEMS,
            before_seq=session.last_seq + 1,
        )
    events = RunStateStore(request.tenant, actor).get_events(
        run_id=run.run_id, after=max(run.last_event_seq - RUN_EVENTS, 0), limit=RUN_EVENTS
    )
    effects = list(
        EffectStore(request.tenant, actor)
        .list_effects(run_id=run.run_id)
        .order_by("-id")[:RUN_EFFECTS]
    )
    for row in (*items, *events):
        row.payload_html = highlight_json(row.payload) if row.payload is not None else ""
    edited = approval.approved_arguments
    pending = approval.status == ApprovalStatus.PENDING
    schema = approval.arguments_schema
    # Arguments that do not fit the tool's schema cannot run as asked: no plain approve.
    asked_errors = _paths(store.asked_argument_errors(approval), "arguments") if pending else []
    # Offered only if it can still happen: its session live, its content not deleted.
    live = store.can_still_happen(approval)
    context = {
        "nav": "approvals",
        "approval": approval,
        "run": run,
        "session": session,
        "pending": pending,
        "arguments_tree": argument_tree(approval),
        "arguments_problem": arguments_problem(approval),
        "arguments_html": highlight_json(approval.arguments),
        "arguments_text": pretty(approval.arguments),
        "edited_html": highlight_json(edited) if edited is not None else "",
        "edited_changes": diff(approval.arguments, edited) if edited is not None else [],
        "digest": store.digest(approval),
        "items": items,
        "events": events,
        "effects": effects,
        "live": live,
        "can_decide": live and request.membership.can(Permission.DECIDE),
        # Four-eyes: the first approver may still reject, not approve again.
        "first_approver_is_me": bool(approval.first_approved_by_id)
        and approval.first_approved_by_id == f"{actor.kind}:{actor.id}",
        "form": form,
        "focus": request.GET.get("decide", ""),
        "reason_required": approval.risk in ("high", "critical"),
        "allowed": set(approval.allowed_decisions) - ({"approve"} if asked_errors else set()),
        "asked_errors": asked_errors,
        "schema_html": highlight_json(schema) if schema is not None else "",
        # Voided by its runtime: why, and what changed in the tool; asked again as which.
        "void_changes": schema_changes(approval.void_details),
        "replaced_by": getattr(approval, "replaced_by", None),
        # This asks again a voided approval's call: which, and what changed in the tool.
        "replaces": approval.replaces,
        "replaces_changes": schema_changes(approval.replaces.void_details)
        if approval.replaces_id is not None
        else [],
    }
    return render_page(
        request, "approvals/detail.html", context, fragment="decision", status=status
    )


@require_permission(Permission.READ)
@require_GET
def detail(request, approval_id: str):
    return _detail(request, _get(_store(request), approval_id))


# --- decide --------------------------------------------------------------------
@require_permission(Permission.DECIDE)
@require_POST
def decide(request, approval_id: str):
    store = _store(request)
    approval = _get(store, approval_id)
    form = DecisionForm(request.POST, approval=approval)
    from_inbox = request.POST.get("source") == "inbox"
    if not form.is_valid():
        return _refused_form(request, approval, form, from_inbox)
    if from_inbox and not quick_approvable(request.tenant, approval):
        # Above what the tenant lets be approved without opening the call, or not as asked.
        why = f"{approval.risk} risk is not approved from the inbox here"
        if store.asked_argument_errors(approval):
            why = "its arguments do not fit the tool's schema"
        return _after(
            request,
            approval,
            f"Not decided: {why}; open the call and decide there.",
            "warning",
            False,
        )
    data = form.cleaned_data
    try:
        decided = store.decide(
            approval_id=approval.approval_id,
            decision=data["decision"],
            reason=data["reason"].strip(),
            approved_arguments=data["approved_arguments"],
            response=data["response"],
            expected_digest=data["digest"],
            expected_run_version=data["run_version"],
        )
    except Unprocessable as exc:
        _map_refusal(form, exc)
        return _refused_form(request, approval, form, from_inbox)
    except Conflict as exc:
        return _after(request, approval, conflict_message(exc), "warning", from_inbox)
    return _after(request, decided, decided_message(decided), "success", from_inbox)


WHOLE = "(the arguments)"


def _map_refusal(form: DecisionForm, exc: Unprocessable) -> None:
    """The store's 422 onto the form: its fields, and an edit's schema errors by argument."""
    by_argument = _paths(exc.details, "approved_arguments")
    if any(path != WHOLE for path, _messages in by_argument):
        form.argument_errors = by_argument
        form.add_error("approved_arguments", exc.message)
        return
    fields = {name: errors for name, errors in exc.details.items() if name in form.fields}
    if exc.code != "validation_error" or not fields:
        form.add_error(None, exc.message)
    if exc.code == "validation_error":
        for field, errors in fields.items():
            form.add_error(field, errors)


def _paths(details: dict[str, list[str]], field: str) -> list[tuple[str, list[str]]]:
    """422 details under `field` (`approved_arguments.amount_cents`) as (argument path,
    messages), the arguments' own paths (`amount_cents`; `(the arguments)` for the whole)."""
    found = []
    for key, errors in details.items():
        if key == field:
            found.append((WHOLE, errors))
        elif key.startswith(field + ".") or key.startswith(field + "["):
            found.append((key[len(field) :].lstrip("."), errors))
    return found


def _refused_form(request, approval, form, from_inbox: bool) -> HttpResponse:
    if from_inbox:
        # Quick approval from the inbox failed validation: open the full form.
        errors = "; ".join(e for errs in form.errors.values() for e in errs)
        return _after(request, approval, f"Not decided: {errors}", "error", False)
    return _detail(request, approval, form=form, status=422)


def _after(request, approval, message: str, level: str, from_inbox: bool) -> HttpResponse:
    """Where a decision (or a refused one) leads: back to the list, or to the approval."""
    if from_inbox and wants_fragment(request):
        return inbox_page(
            request, notice=message, notice_kind="ok" if level == "success" else "bad"
        )
    getattr(messages, level)(request, message)
    if from_inbox or (level == "success" and approval.status != ApprovalStatus.PENDING):
        return redirect_after_post(request, _url(request, "approvals:inbox"))
    return redirect_after_post(
        request, _url(request, "approvals:detail", approval_id=approval.approval_id)
    )


def decided_message(approval: ApprovalRequest) -> str:
    if approval.status == ApprovalStatus.PENDING:
        return (
            f"First approval of {approval.tool_name} recorded. "
            "It is critical: a second operator must approve before it runs."
        )
    verb, suffix = {
        "approve": ("Approved", ""),
        "edit": ("Approved", " with edited arguments: the runtime runs those"),
        "reject": ("Rejected", ""),
        "respond": ("Answered", ": the tool does not run, the model gets your response"),
    }[approval.decision]
    return f"{verb} {approval.tool_name} ({approval.approval_id}){suffix}."


def conflict_message(exc: Conflict) -> str:
    details = exc.details
    if exc.code == "already_decided":
        when = details.get("decided_at") or ""
        return (
            f"Not recorded: this approval was already {details.get('status')} by "
            f"{details.get('decided_by') or 'the system'}"
            + (f" at {when[:19].replace('T', ' ')} UTC." if when else ".")
        )
    if exc.code == "call_changed":
        changes = []
        if "run_version" in details:
            change = details["run_version"]
            changes.append(
                f"the run moved from version {change['expected']} to {change['current']}"
            )
        if "call_digest" in details:
            changes.append("the tool call is not the one you saw")
        return (
            "Not recorded: " + " and ".join(changes) + " since the page was shown. "
            "Review the call again before deciding."
        )
    if exc.code == "second_approver_required":
        return (
            "Not recorded: you gave the first approval; "
            "a second, different operator must approve this critical call."
        )
    if exc.code == "approval_expired":
        return "Not recorded: the approval expired before your decision; the run is suspended."
    return f"Not recorded: {exc.message}"
