"""Routing pages (admins): member groups with who is on call, the ordered routing rules,
and the dry run "who would get this request?". Every change goes through a store."""

from __future__ import annotations

from django.contrib import messages
from django.db.models import Q
from django.http import Http404
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from approvals_app.routing import RoutingRules
from console_app.forms.routing import GroupForm, PreviewForm, RuleForm, metadata_text
from console_app.selectors.routing import group_rows, named, people, preview
from stateroom.actor import Actor
from stateroom.errors import NotFound, StateroomError
from stateroom.forms import refused_fields
from stateroom.htmx import redirect_after_post
from tenancy_app.access import require_permission
from tenancy_app.groups import GroupStore
from tenancy_app.permissions import Permission


def _back(request, name: str, **kwargs):
    url = reverse(name, kwargs={"tenant_slug": request.tenant.slug, **kwargs})
    return redirect_after_post(request, url)


def _groups(request) -> GroupStore:
    return GroupStore(request.tenant, Actor.from_request(request))


def _rules(request) -> RoutingRules:
    return RoutingRules(request.tenant, Actor.from_request(request))


def _refused(form, exc: StateroomError) -> None:
    if not refused_fields(form, exc):
        form.add_error(None, exc.message)


# --- groups ------------------------------------------------------------------
@require_permission(Permission.MANAGE)
@require_GET
def group_list(request):
    rows = group_rows(request.tenant, Actor.from_request(request))
    return render(
        request, "console/routing/groups.html", {"nav": "settings", "tab": "groups", "rows": rows}
    )


def _group_page(request, form, group=None, status=200):
    context = {"nav": "settings", "tab": "groups", "form": form, "group": group}
    return render(request, "console/routing/group_form.html", context, status=status)


@require_permission(Permission.MANAGE)
@require_http_methods(["GET", "POST"])
def group_edit(request, slug: str = ""):
    """Create a group (no slug) or change one: name, members in order, rotation."""
    store = _groups(request)
    try:
        group = store.get(slug) if slug else None
    except NotFound as exc:
        raise Http404 from exc
    _members, names = people(request.tenant, Actor.from_request(request))
    usernames = {name: user_id for user_id, name in names.items()}
    if request.method == "GET":
        initial = {}
        if group is not None:
            ordered = group.memberships.order_by("position").values_list("user_id", flat=True)
            initial = {
                "name": group.name,
                "members": "\n".join(named(ordered, names)),
                "rotation_days": group.rotation_days,
            }
        return _group_page(request, GroupForm(initial=initial, usernames=usernames), group)
    form = GroupForm(request.POST, usernames=usernames)
    if form.is_valid():
        data = form.cleaned_data
        try:
            saved = store.save_group(
                name=data["name"],
                user_ids=data["members"],
                slug=slug or "",
                rotation_days=data["rotation_days"],
            )
        except StateroomError as exc:
            _refused(form, exc)
        else:
            messages.success(request, f"Group {saved.name} saved.")
            return _back(request, "routing:groups")
    return _group_page(request, form, group, status=422)


@require_permission(Permission.MANAGE)
@require_http_methods(["GET", "POST"])
def group_delete(request, slug: str):
    """GET asks for confirmation; POST deletes, unless routing rules still ask the group
    (409, naming them: take it out of them first)."""
    store = _groups(request)
    try:
        group = store.get(slug)
    except NotFound as exc:
        raise Http404 from exc
    # Rules that ask the group (or escalate to it): deleting it would leave them asking
    # a group that reaches nobody, so they must let go of it first.
    asks = Q(group_ids__contains=[group.pk]) | Q(escalate_group_ids__contains=[group.pk])
    used_by = list(_rules(request).rules().filter(asks).values_list("name", flat=True))
    if request.method == "POST" and not used_by:
        store.delete_group(slug=slug)
        messages.success(request, f"Group {group.name} deleted.")
        return _back(request, "routing:groups")
    if request.method == "POST":
        messages.error(request, f"Group {group.name} is still asked by routing rules.")
    context = {"nav": "settings", "tab": "groups", "group": group, "used_by": used_by}
    status = 409 if request.method == "POST" else 200
    return render(request, "console/routing/group_delete.html", context, status=status)


# --- rules -------------------------------------------------------------------
@require_permission(Permission.MANAGE)
@require_GET
def rule_list(request):
    actor = Actor.from_request(request)
    _members, names = people(request.tenant, actor)
    groups = {
        g.pk: g.name for g in GroupStore(request.tenant, actor).groups().prefetch_related(None)
    }
    rules = list(_rules(request).rules().order_by("position", "id"))
    for rule in rules:
        rule.asks = named(rule.user_ids, names) + named(rule.group_ids, groups)
        rule.escalates = named(rule.escalate_user_ids, names) + named(
            rule.escalate_group_ids, groups
        )
    context = {
        "nav": "settings",
        "tab": "routing",
        "rules": rules,
        "preview_form": PreviewForm(initial={"risk": "high"}),
    }
    return render(request, "console/routing/rules.html", context)


def _rule_form(request, data=None, initial=None) -> RuleForm:
    actor = Actor.from_request(request)
    members, _names = people(request.tenant, actor)
    groups = list(GroupStore(request.tenant, actor).groups().prefetch_related(None))
    return RuleForm(data, initial=initial, members=members, groups=groups)


def _rule_initial(rule) -> dict:
    if rule is None:
        return {"enabled": True, "notify_admins_on_expiry": True}
    fields = RuleForm.base_fields
    initial = {name: getattr(rule, name) for name in fields if name != "session_metadata"}
    return initial | {"session_metadata": metadata_text(rule.session_metadata)}


@require_permission(Permission.MANAGE)
@require_http_methods(["GET", "POST"])
def rule_edit(request, rule_id: int | None = None):
    store = _rules(request)
    try:
        rule = store.get(rule_id) if rule_id is not None else None
    except NotFound as exc:
        raise Http404 from exc
    status = 200
    if request.method == "GET":
        form = _rule_form(request, initial=_rule_initial(rule))
    else:
        form = _rule_form(request, request.POST)
        if form.is_valid():
            try:
                saved = store.save_rule(rule_id=rule_id, **form.cleaned_data)
            except StateroomError as exc:
                _refused(form, exc)
            else:
                messages.success(request, f"Routing rule {saved.name} saved.")
                return _back(request, "routing:rules")
        status = 422
    context = {"nav": "settings", "tab": "routing", "form": form, "rule": rule}
    return render(request, "console/routing/rule_form.html", context, status=status)


@require_permission(Permission.MANAGE)
@require_http_methods(["GET", "POST"])
def rule_delete(request, rule_id: int):
    store = _rules(request)
    try:
        rule = store.get(rule_id)
    except NotFound as exc:
        raise Http404 from exc
    if request.method == "GET":
        context = {"nav": "settings", "tab": "routing", "rule": rule}
        return render(request, "console/routing/rule_delete.html", context)
    store.delete_rule(rule_id=rule_id)
    messages.success(request, f"Routing rule {rule.name} deleted.")
    return _back(request, "routing:rules")


@require_permission(Permission.MANAGE)
@require_POST
def rule_move(request, rule_id: int):
    """Up or down one place in the order (the default rule is asked last, wherever it is)."""
    store = _rules(request)
    ordered = [r.pk for r in store.rules().order_by("position", "id")]
    if rule_id not in ordered:
        raise Http404
    step = -1 if request.POST.get("direction") == "up" else 1
    store.move(rule_id=rule_id, position=max(1, ordered.index(rule_id) + 1 + step))
    return _back(request, "routing:rules")


@require_permission(Permission.MANAGE)
@require_GET
def rule_preview(request):
    """Who would get this request? Which rule matches, who it reaches now, and when the
    reminder and escalation would come. Reads only (a GET)."""
    form = PreviewForm(request.GET)
    result = None
    if form.is_valid():
        data = form.cleaned_data
        result = preview(
            request.tenant,
            Actor.from_request(request),
            tool_name=data["tool_name"],
            risk=data["risk"],
            metadata=data["session_metadata"],
            deadline_minutes=data["deadline_minutes"],
        )
    context = {"nav": "settings", "tab": "routing", "preview_form": form, "result": result}
    status = 200 if form.is_valid() else 422
    return render(request, "console/routing/preview.html", context, status=status)
