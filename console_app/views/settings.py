"""Settings pages: tokens, members, legal hold, four-eyes and the other tenant switches, and
retention.
"""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console_app.forms.settings import (
    FourEyesForm,
    LegalHoldForm,
    MemberForm,
    QuickApproveForm,
    RetentionForm,
    SessionLeaseForm,
    UnclaimedRunWarningForm,
)
from lifecycle_app import retention
from lifecycle_app.content import CLASSES
from stateroom.actor import Actor
from stateroom.errors import NotFound, StateroomError
from stateroom.forms import refused_fields
from stateroom.htmx import redirect_after_post
from tenancy_app.access import require_permission
from tenancy_app.models import RetentionPolicy, Role, TokenRole
from tenancy_app.permissions import Permission
from tenancy_app.store import TenancyStore


@require_permission(Permission.MANAGE)
@require_http_methods(["GET", "POST"])
def settings_tokens(request):
    store = TenancyStore(request.tenant, Actor.from_request(request))
    created, created_secret = None, None
    if request.method == "POST":
        try:
            created, created_secret = store.create_token(
                name=request.POST.get("name", ""),
                role=request.POST.get("role", TokenRole.RUNTIME),
                created_by=request.user,
                webhook_url=request.POST.get("webhook_url", "").strip(),
            )
        except StateroomError as exc:
            messages.error(request, exc.message)
            return redirect("tenancy:tokens", tenant_slug=request.tenant.slug)
    return render(
        request,
        "console/settings/tokens.html",
        {
            "nav": "settings",
            "tab": "tokens",
            "tokens": store.tokens().select_related("created_by"),
            "created": created,
            "created_secret": created_secret,
            "roles": TokenRole.choices,
        },
    )


@require_permission(Permission.MANAGE)
@require_POST
def revoke_token(request, token_id: int):
    store = TenancyStore(request.tenant, Actor.from_request(request))
    try:
        token = store.revoke_token(token_id=token_id, reason=request.POST.get("reason", ""))
    except NotFound as exc:
        raise Http404 from exc
    except StateroomError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Token {token.name} revoked.")
    return redirect("tenancy:tokens", tenant_slug=request.tenant.slug)


# --- settings: overview (legal hold, four-eyes) ------------------------------
def _store(request) -> TenancyStore:
    return TenancyStore(request.tenant, Actor.from_request(request))


def _back(request, name: str):
    return redirect_after_post(request, reverse(name, kwargs={"tenant_slug": request.tenant.slug}))


def _overview(request, *, hold_form=None, status=200):
    tenant = request.tenant
    return render(
        request,
        "console/settings/settings.html",
        {
            "nav": "settings",
            "tab": "overview",
            "hold_form": hold_form
            or LegalHoldForm(initial={"on": "off" if tenant.legal_hold else "on"}),
            "lease_days_max": SessionLeaseForm.base_fields["days"].max_value,
            "warning_minutes_max": UnclaimedRunWarningForm.base_fields["minutes"].max_value,
        },
        status=status,
    )


@require_permission(Permission.MANAGE)
@require_GET
def settings_overview(request):
    return _overview(request)


@require_permission(Permission.MANAGE)
@require_POST
def set_legal_hold(request):
    form = LegalHoldForm(request.POST)
    if not form.is_valid():
        return _overview(request, hold_form=form, status=422)
    on = form.cleaned_data["on"]
    try:
        _store(request).set_legal_hold(on=on, reason=form.cleaned_data["reason"])
    except StateroomError as exc:
        if refused_fields(form, exc):
            return _overview(request, hold_form=form, status=422)
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            "Legal hold is on: no content of this tenant can be deleted until it is released."
            if on
            else "Legal hold released: deletions and retention apply again.",
        )
    return _back(request, "tenancy:settings")


@require_permission(Permission.MANAGE)
@require_POST
def set_four_eyes(request):
    form = FourEyesForm(request.POST)
    if form.is_valid():
        on = form.cleaned_data["on"]
        _store(request).set_four_eyes(on=on)
        messages.success(
            request,
            "Critical approvals now need two different operators."
            if on
            else "Critical approvals need one operator again.",
        )
    else:
        messages.error(request, "Choose on or off.")
    return _back(request, "tenancy:settings")


@require_permission(Permission.MANAGE)
@require_POST
def set_require_2fa(request):
    form = FourEyesForm(request.POST)  # the same on/off choice
    if form.is_valid():
        on = form.cleaned_data["on"]
        _store(request).set_require_2fa(on=on)
        messages.success(
            request,
            "Operators and admins now need a second factor (TOTP)."
            if on
            else "A second factor is no longer required.",
        )
    else:
        messages.error(request, "Choose on or off.")
    return _back(request, "tenancy:settings")


@require_permission(Permission.MANAGE)
@require_POST
def set_quick_approve(request):
    form = QuickApproveForm(request.POST)
    if form.is_valid():
        _store(request).set_quick_approve(max_risk=form.cleaned_data["max_risk"])
        messages.success(
            request, f"Quick approval from the inbox: {form.cleaned_data['max_risk']}."
        )
    else:
        messages.error(request, "Choose none, low or medium.")
    return _back(request, "tenancy:settings")


@require_permission(Permission.MANAGE)
@require_POST
def set_session_lease(request):
    form = SessionLeaseForm(request.POST)
    if form.is_valid():
        days = form.cleaned_data["days"]
        _store(request).set_session_lease(seconds=days * 86400)
        messages.success(
            request,
            f"New sessions get a {days}-day lease; every use renews it for {days} day"
            f"{'s' if days != 1 else ''}.",
        )
    else:
        messages.error(request, "A session lease is 1 to 30 days.")
    return _back(request, "tenancy:settings")


@require_permission(Permission.MANAGE)
@require_POST
def set_unclaimed_run_warning(request):
    form = UnclaimedRunWarningForm(request.POST)
    if form.is_valid():
        minutes = form.cleaned_data["minutes"]
        _store(request).set_unclaimed_run_warning(seconds=minutes * 60)
        messages.success(
            request,
            f"A running run that no worker holds for {minutes} minute"
            f"{'s' if minutes != 1 else ''} is flagged as waiting for a worker.",
        )
    else:
        messages.error(request, "The wait is 1 to 1440 minutes.")
    return _back(request, "tenancy:settings")


# --- settings: members -----------------------------------------------------
def _members_page(request, *, form=None, status=200):
    return render(
        request,
        "console/settings/members.html",
        {
            "nav": "settings",
            "tab": "members",
            "members": _store(request).members(),
            "form": form or MemberForm(initial={"role": Role.SUPPORT}),
            "roles": Role.choices,
        },
        status=status,
    )


@require_permission(Permission.MANAGE)
@require_http_methods(["GET", "POST"])
def settings_members(request):
    """GET lists the members; POST adds a user or changes a member's role."""
    if request.method == "GET":
        return _members_page(request)
    form = MemberForm(request.POST)
    if not form.is_valid():
        return _members_page(request, form=form, status=422)
    try:
        membership = _store(request).set_member(**form.cleaned_data)
    except NotFound:
        form.add_error("username", "No user with this username. They need an account first.")
        return _members_page(request, form=form, status=422)
    except StateroomError as exc:
        messages.error(request, exc.message)
        return _back(request, "tenancy:members")
    messages.success(
        request, f"{membership.user.get_username()} is now {membership.get_role_display().lower()}."
    )
    return _back(request, "tenancy:members")


@require_permission(Permission.MANAGE)
@require_POST
def remove_member(request, user_id: int):
    try:
        _store(request).remove_member(user_id=user_id)
    except NotFound as exc:
        raise Http404 from exc
    except StateroomError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, "Member removed.")
    return _back(request, "tenancy:members")


@require_permission(Permission.MANAGE)
@require_POST
def unlock_member(request, user_id: int):
    """Lift a member's login lockout (too many wrong passwords)."""
    try:
        cleared = _store(request).unlock_member(user_id=user_id)
    except NotFound as exc:
        raise Http404 from exc
    messages.success(
        request, "Login lockout lifted." if cleared else "There was no lockout to lift."
    )
    return _back(request, "tenancy:members")


def _store(request) -> TenancyStore:
    return TenancyStore(request.tenant, Actor.from_request(request))


def _retention_page(request, *, form=None, status=200, unsaved=None):
    store = _store(request)
    policy = store.retention()
    dry_run = retention.preview(request.tenant, policy=unsaved)
    due_classes = [
        {"label": ", ".join(CLASSES[cls].label for cls in facts["classes"]), **facts}
        for facts in dry_run["retention"]["classes"].values()
    ]
    return render(
        request,
        "console/settings/retention.html",
        {
            "nav": "settings",
            "tab": "retention",
            "policy": policy,
            "preview": dry_run,
            "due_classes": due_classes,
            "form": form
            or RetentionForm(initial={f: getattr(policy, f) for f in RetentionForm.base_fields}),
            "unsaved": unsaved is not None,
        },
        status=status,
    )


@require_permission(Permission.MANAGE)
@require_http_methods(["GET", "POST"])
def settings_retention(request):
    """The tenant's retention policy, and what it would delete now (a dry run of the job)."""
    if request.method == "GET":
        return _retention_page(request)
    form = RetentionForm(request.POST)
    if not form.is_valid():
        return _retention_page(request, form=form, status=422)
    if "dry_run" in request.POST:
        # The form's values, not saved: what they would delete. A POST (not a GET
        # form) so the CSRF token never lands in a URL, its history and its logs.
        unsaved = RetentionPolicy(tenant=request.tenant, **form.cleaned_data)
        return _retention_page(request, form=form, unsaved=unsaved)
    _store(request).set_retention(**form.cleaned_data)
    messages.success(request, "Retention policy saved.")
    url = reverse("tenancy:retention", kwargs={"tenant_slug": request.tenant.slug})
    return redirect_after_post(request, url)
