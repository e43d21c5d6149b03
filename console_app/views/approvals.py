"""Approval pages: the live inbox, the history and its export, one approval with its conversation,
run events and effects, and the decision (whose refusals show that page again).
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Iterator

from django.contrib import messages
from django.db.models import Q, QuerySet
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    StreamingHttpResponse,
)
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from approvals_app.models import RISK_RANK, ApprovalRequest, ApprovalStatus, Risk
from approvals_app.store import ApprovalStore
from console_app.forms.approvals import DecisionForm, HistoryFilterForm
from console_app.presentation import argument_tree, arguments_problem, key_values, schema_changes
from console_app.selectors.approvals import around_approval
from console_app.selectors.assignment import (
    VIEWS,
    assigned_filter,
    name_assignees,
    request_badge,
    trail,
)
from console_app.views.assignment import reassign_form
from stateroom.actor import Actor
from stateroom.errors import Conflict, NotFound, Unprocessable
from stateroom.htmx import redirect_after_post, render_page, wants_fragment
from stateroom.jsonview import diff, highlight_json, pretty
from stateroom.pages import keyset_page, parse_cursor
from stateroom.replica import chunk_reads, reads_replica
from tenancy_app.access import require_permission
from tenancy_app.permissions import Permission
from tenancy_app.scoping import read_in_chunks

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
    parts = "|".join(
        f"{a.pk}:{a.first_approved_by_id}:{a.run.version}:{a.assigned_user_ids}:"
        f"{a.assigned_group_ids}"
        for a in rows
    )
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
    view = inbox_view(request, params.get("view", ""))
    mine = assigned_filter(request.tenant, request.user.pk, view)
    rows = list(_search(store.inbox().filter(mine), q)[: INBOX_LIMIT + 1])
    fingerprint = _fingerprint(rows)
    if request.method == "GET" and wants_fragment(request) and params.get("fp") == fingerprint:
        return HttpResponse(status=204)
    seen = parse_cursor(params.get("seen"))
    name_assignees(request.tenant, rows)
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
        "console/approvals/inbox.html",
        {
            "nav": "approvals",
            "approvals": shown,
            "truncated": len(rows) > INBOX_LIMIT,
            "q": q,
            "view": view,
            "views": VIEWS,
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


def inbox_view(request: HttpRequest, asked: str) -> str:
    """`?view=` (mine, groups, all). Without one: "mine" for someone who decides and has
    anything pending asked of them (by name or through a group), else "all"."""
    if asked in VIEWS:
        return asked
    if request.membership.can(Permission.DECIDE) and request_badge(request).mine:
        return "mine"
    return "all"


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
    "tool_outcome",  # what the approved call did, as its runtime reported it (empty: not yet)
    "tool_outcome_at",
]
HISTORY_EXPORT_CHUNK = 500


@require_permission(Permission.READ)
@require_GET
@reads_replica
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
        "console/approvals/history.html",
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

    rows = read_in_chunks(
        tenant, read, key=lambda a: a.id, size=HISTORY_EXPORT_CHUNK, reads=chunk_reads(request)
    )
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
                a.outcome,
                _iso(a.outcome_at),
            ]
        )
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()


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
    run, session = approval.run, approval.run.session
    items, events, effects = around_approval(request.tenant, actor, approval)
    edited = approval.approved_arguments
    pending = approval.status == ApprovalStatus.PENDING
    schema = approval.arguments_schema
    # Arguments that do not fit the tool's schema cannot run as asked: no plain approve.
    asked_errors = _paths(store.asked_argument_errors(approval), "arguments") if pending else []
    # Offered only if it can still happen: its session live, its content not deleted.
    live = store.can_still_happen(approval)
    name_assignees(request.tenant, [approval])
    can_reassign = pending and live and request.membership.can(Permission.DECIDE)
    context = {
        "trail": trail(request.tenant, actor, approval),
        "can_reassign": can_reassign,
        "reassign_form": reassign_form(request) if can_reassign else None,
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
        request, "console/approvals/detail.html", context, fragment="decision", status=status
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
