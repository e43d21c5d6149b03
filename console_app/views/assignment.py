"""Who is asked: take an approval, reassign it, and the nav badge of approvals asked of me."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from approvals_app.store import ApprovalStore
from console_app.forms.assignment import ReassignForm
from console_app.selectors.assignment import request_badge
from console_app.selectors.routing import people
from stateroom.actor import Actor
from stateroom.errors import Conflict, NotFound, Unprocessable
from stateroom.htmx import redirect_after_post
from tenancy_app.access import require_permission
from tenancy_app.groups import GroupStore
from tenancy_app.permissions import Permission


def _store(request) -> ApprovalStore:
    return ApprovalStore(request.tenant, Actor.from_request(request))


def _back(request, approval_id: str):
    url = reverse(
        "approvals:detail",
        kwargs={"tenant_slug": request.tenant.slug, "approval_id": approval_id},
    )
    return redirect_after_post(request, url)


def _existing(store: ApprovalStore, approval_id: str):
    try:
        return store.get(approval_id)
    except NotFound as exc:
        raise Http404 from exc


def refusal(exc) -> str:
    details = "; ".join(", ".join(errors) for errors in (exc.details or {}).values())
    if isinstance(exc, Conflict) and exc.code == "already_decided":
        return "Not changed: this approval is no longer pending."
    return f"Not changed: {exc.message}" + (f" ({details})" if details else "")


@require_permission(Permission.DECIDE)
@require_POST
def take(request, approval_id: str):
    """I take it: I become its only assignee (audited by the store)."""
    store = _store(request)
    approval = _existing(store, approval_id)
    try:
        store.take(approval_id=approval.approval_id)
    except (Conflict, Unprocessable) as exc:
        messages.error(request, refusal(exc))
    else:
        messages.success(request, "You took this approval: it is asked of you alone now.")
    return _back(request, approval.approval_id)


def reassign_form(request, data=None) -> ReassignForm:
    actor = Actor.from_request(request)
    members, _names = people(request.tenant, actor)
    groups = list(GroupStore(request.tenant, actor).groups().prefetch_related(None))
    return ReassignForm(data, members=members, groups=groups)


@require_permission(Permission.DECIDE)
@require_POST
def reassign(request, approval_id: str):
    """Ask these members and groups instead (audited with the reason by the store)."""
    store = _store(request)
    approval = _existing(store, approval_id)
    form = reassign_form(request, request.POST)
    if not form.is_valid():
        messages.error(request, "Not changed: choose members or groups of this tenant.")
        return _back(request, approval.approval_id)
    data = form.cleaned_data
    try:
        store.reassign(
            approval_id=approval.approval_id,
            user_ids=data["user_ids"],
            group_ids=data["group_ids"],
            reason=data["reason"].strip(),
        )
    except (Conflict, Unprocessable) as exc:
        messages.error(request, refusal(exc))
    else:
        messages.success(request, "Reassigned: the new assignees are notified.")
    return _back(request, approval.approval_id)


@require_permission(Permission.READ)
@require_GET
def assigned_count(request):
    """The nav badge of pending approvals asked of me (htmx polls it every 20 s)."""
    found = request_badge(request)
    context = {"assigned_count": found.mine, "assigned_newest": found.newest}
    return render(request, "console/approvals/_assigned_badge.html", context)
